//! Following a run from a terminal: its event stream, offsets only, says when
//! there is more (`event: output`, its id how far the output has got; `event:
//! end`), and the bytes come from `…/output?offset=&limit=` — exactly as the
//! host wrote them (the stream's data for pages is HTML; none is made for us).

use super::api::{Api, ClientError};
use crate::client::http::HttpError;
use futures::FutureExt;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// The stream of a run: `client` (the command's output) or `server` (its server's log).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Client,
    Server,
}

impl Stream {
    fn query(self) -> &'static str {
        match self {
            Self::Client => "stream=client",
            Self::Server => "stream=server",
        }
    }
}

/// Reconnections in a row before following gives up (a server restarting).
const RETRIES: u32 = 30;

/// Copies `stream` of run `run` to `out` from its start until the run has
/// ended and all of it was written; with `strip`, made inert for a terminal
/// (`client::terminal`). Returns the bytes read.
pub async fn follow(
    api: &Api,
    run: i64,
    stream: Stream,
    out: &mut (impl AsyncWrite + Unpin),
    mut strip: Option<super::terminal::Strip>,
) -> Result<u64, ClientError> {
    let mut offset = 0u64;
    let mut failures = 0;
    loop {
        match follow_once(api, run, stream, &mut offset, out, strip.as_mut()).await {
            Ok(true) => return Ok(offset),
            // The stream closed before its end (a restart, a proxy): resume at `offset`.
            Ok(false) => failures = 0,
            Err(ClientError::Http(e @ (HttpError::Connect { .. } | HttpError::Broken { .. })))
                if failures < RETRIES =>
            {
                failures += 1;
                tracing::debug!("following run {run} again: {e}");
            }
            // A server's log exists once the server started; a run that ended
            // without one (it failed before, or had none) has nothing to follow.
            Err(ClientError::Http(HttpError::Api { status: 404, .. })) if stream == Stream::Server => {
                let now: domain::runs::Run = api.call(hyper::Method::GET, &format!("/api/v1/runs/{run}"), None).await?;
                if now.status.is_finished() {
                    return Ok(offset);
                }
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                continue;
            }
            Err(e) => return Err(e),
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// One connection to the event stream; `Ok(true)` once `event: end` was handled.
async fn follow_once(
    api: &Api,
    run: i64,
    stream: Stream,
    offset: &mut u64,
    out: &mut (impl AsyncWrite + Unpin),
    mut strip: Option<&mut super::terminal::Strip>,
) -> Result<bool, ClientError> {
    let path = format!("/api/v1/runs/{run}/stream?{}&offset={offset}&offsets_only=true", stream.query());
    let mut body = api.open(&path).await?;
    let mut pending = Vec::new();
    let broken = |e| HttpError::of(&api.place(), e);
    // The stream says something every 15 s (keep-alives): a socket silent for
    // three times that is gone, and is opened again where it left off.
    while let Some(data) = match tokio::time::timeout(std::time::Duration::from_secs(45), body.chunk()).await {
        Ok(piece) => piece.map_err(broken)?,
        Err(_) => return Ok(false),
    } {
        pending.extend_from_slice(&data);
        // And what else has come already, without waiting.
        while let Some(piece) = body.chunk().now_or_never() {
            match piece.map_err(broken)? {
                Some(data) => pending.extend_from_slice(&data),
                None => break,
            }
        }
        // Every event that arrived meanwhile, fetched as one range: a client
        // behind a fast command asks once for many batches.
        let (mut until, mut ended) = (*offset, false);
        while let Some(at) = pending.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = pending.drain(..at + 2).collect();
            let event = String::from_utf8_lossy(&event);
            let (name, id) = parse_event(&event);
            until = until.max(id.unwrap_or(0));
            ended |= name == Some("end");
        }
        if until > *offset {
            copy(api, run, stream, offset, until, out, strip.as_deref_mut()).await?;
        }
        if ended {
            out.flush().await.map_err(|source| ClientError::Io { what: "writing the output".into(), source })?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// `event:` and `id:` of one Server-Sent Event.
fn parse_event(block: &str) -> (Option<&str>, Option<u64>) {
    let (mut name, mut id) = (None, None);
    for line in block.lines() {
        if let Some(value) = line.strip_prefix("event:") {
            name = Some(value.trim());
        } else if let Some(value) = line.strip_prefix("id:") {
            id = value.trim().parse().ok();
        }
    }
    (name, id)
}

/// The bytes `offset..until`, fetched in pieces of at most 8 MiB.
async fn copy(
    api: &Api,
    run: i64,
    stream: Stream,
    offset: &mut u64,
    until: u64,
    out: &mut (impl AsyncWrite + Unpin),
    mut strip: Option<&mut super::terminal::Strip>,
) -> Result<(), ClientError> {
    const PIECE: u64 = 8 << 20;
    while *offset < until {
        let limit = (until - *offset).min(PIECE);
        let path = format!("/api/v1/runs/{run}/output?{}&offset={offset}&limit={limit}", stream.query());
        let bytes = api.bytes(&path).await?;
        if bytes.is_empty() {
            break;
        }
        let written = match strip.as_deref_mut() {
            Some(strip) => strip.feed(&bytes),
            None => bytes.to_vec(),
        };
        out.write_all(&written)
            .await
            .map_err(|source| ClientError::Io { what: "writing the output".into(), source })?;
        out.flush().await.map_err(|source| ClientError::Io { what: "writing the output".into(), source })?;
        *offset += bytes.len() as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn events_say_their_name_and_offset() {
        assert_eq!(super::parse_event("event: output\nid: 48\ndata: a\ndata: b\n\n"), (Some("output"), Some(48)));
        assert_eq!(super::parse_event("event: end\nid: 0\n\n"), (Some("end"), Some(0)));
        assert_eq!(super::parse_event(": keep-alive\n\n"), (None, None));
    }
}
