//! Commands on a host's pooled connection, read as a stream of [`Event`]s.
//! This is the one place that reads a channel's messages: runs, GPU telemetry,
//! servers beside runs and short captures (connection tests, fetches, greps)
//! all go through [`Exec`]. Each caller keeps its own loop of what to wait for
//! besides the host (a cancel, a deadline, a flush), and signals the same
//! `Exec` from it.

use super::{Pool, SessionChannel, SshError, Target};
use bytes::Bytes;
use russh::{ChannelMsg, Sig};

/// What the host sent.
#[derive(Debug)]
pub enum Event {
    Stdout(Bytes),
    Stderr(Bytes),
    /// How the command ended: sent before the channel closes (if at all).
    Exit(Exit),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(u32),
    /// The signal's name without `SIG` (`INT`, `KILL`, `TERM` …).
    Signal(String),
}

/// A command running on a channel of its own.
pub struct Exec {
    session: SessionChannel,
    exit: Option<Exit>,
    closed: bool,
}

/// A channel opened but not yet given its command: opening can wait for a free
/// session (MaxSessions) or a connection, and callers may give up on that alone.
pub struct Opened(SessionChannel);

impl Opened {
    /// Starts `script` (run by the login shell of the host's user).
    pub async fn start(self, script: &str) -> Result<Exec, SshError> {
        let session = self.0;
        if let Err(e) = session.channel.exec(true, script.as_bytes()).await {
            return Err(SshError::Lost {
                host: session.connection.host().to_string(),
                reason: format!("could not start the command: {e}"),
            });
        }
        Ok(Exec { session, exit: None, closed: false })
    }
}

/// A new channel on `target`'s pooled connection.
pub async fn open(pool: &Pool, target: &Target) -> Result<Opened, SshError> {
    Ok(Opened(pool.session(target).await?))
}

/// Opens a channel and starts `script` on it.
pub async fn start(pool: &Pool, target: &Target, script: &str) -> Result<Exec, SshError> {
    open(pool, target).await?.start(script).await
}

impl Exec {
    /// The next thing the host sent; `None` once the channel is closed.
    pub async fn next(&mut self) -> Option<Event> {
        while !self.closed {
            match self.session.channel.wait().await {
                Some(ChannelMsg::Data { data }) => return Some(Event::Stdout(data)),
                Some(ChannelMsg::ExtendedData { data, ext: 1 }) => return Some(Event::Stderr(data)),
                Some(ChannelMsg::ExitStatus { exit_status }) => {
                    let exit = Exit::Code(exit_status);
                    self.exit = Some(exit.clone());
                    return Some(Event::Exit(exit));
                }
                Some(ChannelMsg::ExitSignal { signal_name, .. }) => {
                    let exit = Exit::Signal(signal_name_of(&signal_name));
                    self.exit = Some(exit.clone());
                    return Some(Event::Exit(exit));
                }
                Some(ChannelMsg::Close) | None => self.closed = true,
                Some(_) => {}
            }
        }
        None
    }

    /// How the command ended, once the host said so.
    pub fn exit(&self) -> Option<&Exit> {
        self.exit.as_ref()
    }

    /// Whether the connection under the channel is gone (the host, or the
    /// network): a channel that closed without an exit then lost its command.
    pub fn connection_lost(&self) -> bool {
        self.session.connection.is_closed()
    }

    pub fn host(&self) -> &str {
        self.session.connection.host()
    }

    /// How long the host has not answered (see `Connection::silent_for`).
    pub fn host_silent_for(&self) -> std::time::Duration {
        self.session.connection.silent_for()
    }

    /// Sends a signal to the command (OpenSSH passes it to the process the
    /// session started); failures mean the channel is going anyway.
    pub async fn signal(&self, signal: Sig) {
        let _ = self.session.channel.signal(signal).await;
    }

    /// Closes the command's stdin.
    pub async fn eof(&self) {
        let _ = self.session.channel.eof().await;
    }

    /// Writes to the command's stdin.
    pub async fn write(&self, data: &[u8]) -> Result<(), SshError> {
        self.session.channel.data(data).await.map_err(|e| SshError::Lost {
            host: self.host().to_string(),
            reason: format!("could not write to the command: {e}"),
        })
    }

    /// Closes the channel (sshd then hangs up the session's processes).
    pub async fn close(&self) {
        let _ = self.session.channel.close().await;
    }
}

fn signal_name_of(sig: &Sig) -> String {
    match sig {
        Sig::Custom(name) => name.clone(),
        other => format!("{other:?}"),
    }
}

/// A short command's whole output.
pub struct Captured {
    pub exit_code: Option<u32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Output beyond `limit` was dropped.
    pub truncated: bool,
}

/// Runs `script` and collects at most `limit` bytes of each stream.
pub async fn capture(pool: &Pool, target: &Target, script: &str, limit: usize) -> Result<Captured, SshError> {
    collect(start(pool, target, script).await?, target, limit).await
}

/// [`capture`], with `input` on the script's stdin (then closed): bytes too
/// many for a command line (the kernel takes at most 128 KiB in one argument).
pub async fn capture_with_input(
    pool: &Pool,
    target: &Target,
    script: &str,
    input: &[u8],
    limit: usize,
) -> Result<Captured, SshError> {
    let exec = start(pool, target, script).await?;
    for piece in input.chunks(32 * 1024) {
        exec.write(piece).await?;
    }
    exec.eof().await;
    collect(exec, target, limit).await
}

async fn collect(mut exec: Exec, target: &Target, limit: usize) -> Result<Captured, SshError> {
    let mut captured = Captured { exit_code: None, stdout: Vec::new(), stderr: Vec::new(), truncated: false };
    while let Some(event) = exec.next().await {
        match event {
            Event::Stdout(data) => keep(&mut captured.stdout, &data, limit, &mut captured.truncated),
            Event::Stderr(data) => keep(&mut captured.stderr, &data, limit, &mut captured.truncated),
            Event::Exit(Exit::Code(code)) => captured.exit_code = Some(code),
            Event::Exit(Exit::Signal(_)) => {}
        }
    }
    if captured.exit_code.is_none() && exec.connection_lost() {
        return Err(SshError::Lost {
            host: target.name.clone(),
            reason: "the connection closed before the command finished".into(),
        });
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
