//! Short commands whose whole output is wanted at once (connection tests, and
//! later file fetches and greps), on the pooled connection.

use super::{Pool, SshError, Target};
use russh::ChannelMsg;

pub struct Captured {
    pub exit_code: Option<u32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Output beyond `limit` was dropped.
    pub truncated: bool,
}

/// Runs `script` and collects at most `limit` bytes of each stream.
pub async fn capture(pool: &Pool, target: &Target, script: &str, limit: usize) -> Result<Captured, SshError> {
    let session = pool.session(target).await?;
    let mut channel = session.channel;
    let lost = |reason: String| SshError::Lost { host: target.name.clone(), reason };
    channel.exec(true, script.as_bytes()).await.map_err(|e| lost(e.to_string()))?;
    let mut captured = Captured { exit_code: None, stdout: Vec::new(), stderr: Vec::new(), truncated: false };
    while let Some(msg) = channel.wait().await {
        match msg {
            ChannelMsg::Data { data } => keep(&mut captured.stdout, &data, limit, &mut captured.truncated),
            ChannelMsg::ExtendedData { data, .. } => keep(&mut captured.stderr, &data, limit, &mut captured.truncated),
            ChannelMsg::ExitStatus { exit_status } => captured.exit_code = Some(exit_status),
            ChannelMsg::Close => break,
            _ => {}
        }
    }
    if captured.exit_code.is_none() && session.connection.is_closed() {
        return Err(lost("the connection closed before the command finished".into()));
    }
    Ok(captured)
}

fn keep(buffer: &mut Vec<u8>, data: &[u8], limit: usize, truncated: &mut bool) {
    let room = limit.saturating_sub(buffer.len());
    if data.len() > room {
        *truncated = true;
    }
    buffer.extend_from_slice(&data[..data.len().min(room)]);
}
