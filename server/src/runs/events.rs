//! An investigation's event stream, as SSE frames: `run` when one of its runs
//! is queued, starts or ends (the run's JSON, framed once in [`RunEvent::new`]
//! and shared by every reader), `change` when anyone edits it, `presence` with
//! who else has it open. Readers that miss events (a full broadcast buffer) get
//! an empty `run` or `change`, which makes a page read everything again.

use super::live::{Change, Live, RunEvent};
use super::sse::frame;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use std::sync::Arc;
use tokio::sync::broadcast::{Receiver, error::RecvError};

/// What `me` sees of `investigation` from now on. `in_sync`: the reader's page
/// shows the runs as they are; otherwise a first `{"sync":true}` tells it that
/// something changed between its page load and this subscription.
pub fn follow(live: &Arc<Live>, investigation: String, me: String, in_sync: bool) -> impl Stream<Item = Bytes> + use<> {
    // Subscribed before joining, so this stream hears its own arrival too.
    let changes = live.subscribe_changes();
    let presence = live.join(&investigation, &me);
    let others = futures::stream::unfold((changes, presence), {
        let investigation = investigation.clone();
        move |(mut changes, presence)| {
            let (investigation, me) = (investigation.clone(), me.clone());
            async move {
                let frame = next_change(&mut changes, &investigation, &me).await?;
                Some((frame, (changes, presence)))
            }
        }
    });
    let runs = futures::stream::unfold(live.subscribe(), move |mut receiver| {
        let investigation = investigation.clone();
        async move {
            let frame = next_run(&mut receiver, &investigation).await?;
            Some((frame, receiver))
        }
    });
    let sync = futures::stream::iter((!in_sync).then(|| frame("run", "{\"sync\":true}")));
    futures::stream::select(sync.chain(runs), others)
}

async fn next_run(receiver: &mut Receiver<RunEvent>, investigation: &str) -> Option<Bytes> {
    loop {
        match receiver.recv().await {
            Ok(event) if event.investigation_id == investigation => return Some(event.frame.clone()),
            Ok(_) => continue,
            Err(RecvError::Lagged(_)) => return Some(frame("run", "{}")),
            Err(RecvError::Closed) => return None,
        }
    }
}

async fn next_change(changes: &mut Receiver<Change>, investigation: &str, me: &str) -> Option<Bytes> {
    loop {
        match changes.recv().await {
            Ok(change) if change.investigation_id().is_none_or(|i| i == investigation) => {
                return Some(match change {
                    Change::Edited { by, .. } => frame("change", &serde_json::json!({ "by": by }).to_string()),
                    // Everyone but this reader (their other tabs are them too).
                    Change::Viewers { names, .. } => {
                        let others: Vec<&String> = names.iter().filter(|n| *n != me).collect();
                        frame("presence", &serde_json::json!(others).to_string())
                    }
                    // News may have been lost: an empty `run` makes the page read everything.
                    Change::Resync => frame("run", "{}"),
                });
            }
            Ok(_) => continue,
            Err(RecvError::Lagged(_)) => return Some(frame("change", "{}")),
            Err(RecvError::Closed) => return None,
        }
    }
}
