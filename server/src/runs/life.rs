//! What the runner and the server beside a run share about the run's life:
//! what it knows of the run (`Context`), why it was stopped (`Stop`) and how it
//! ended (`OwnedEnd`), and its timeout (`Deadline`). A leaf: `runner` and
//! `beside` both build on it.

use super::live::{Live, RunEvent};
use super::run_from_row;
use crate::db::Store;
use crate::ssh::Target;
use domain::runs::{Run, RunStatus};
use tokio::sync::watch;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Stop {
    Cancel,
    Timeout,
    /// The server beside the command ended while it ran.
    ServerEnded,
}

/// What a run's life needs to know about it.
pub(super) struct Context<'a> {
    pub(super) investigation: &'a str,
    pub(super) run: &'a Run,
    pub(super) plan: &'a super::Plan,
    pub(super) target: &'a Target,
    /// The name of its directory on the host (`dir::name`).
    pub(super) dir: &'a str,
}

pub(super) struct OwnedEnd {
    pub(super) status: RunStatus,
    pub(super) exit_code: Option<i64>,
    pub(super) exit_signal: Option<String>,
    pub(super) error: Option<String>,
    /// The GPU sampler, still storing what it sampled.
    pub(super) telemetry: Option<tokio::task::JoinHandle<usize>>,
}

impl OwnedEnd {
    pub(super) fn new(status: RunStatus) -> Self {
        Self { status, exit_code: None, exit_signal: None, error: None, telemetry: None }
    }
    pub(super) fn error(status: RunStatus, error: String) -> Self {
        Self { error: Some(error), ..Self::new(status) }
    }
    /// `succeeded (exit 0)`, `failed (signal KILL)`, `lost: why`: for the audit log.
    pub(super) fn describe(&self) -> String {
        let status = self.status.as_str();
        match (self.exit_code, &self.exit_signal, &self.error) {
            (Some(code), _, _) => format!("{status} (exit {code})"),
            (None, Some(signal), _) => format!("{status} (signal {signal})"),
            (None, None, Some(error)) => format!("{status}: {error}"),
            _ => status.to_string(),
        }
    }
    pub(super) fn stopped(stop: Stop, why: &str) -> Self {
        let status = match stop {
            Stop::Cancel => RunStatus::Cancelled,
            Stop::Timeout => RunStatus::TimedOut,
            Stop::ServerEnded => RunStatus::Failed,
        };
        Self::error(status, why.to_string())
    }
}

/// The step's timeout, one clock for every phase of a run (connecting,
/// starting its server, running): each selects on [`Deadline::reached`].
pub(super) struct Deadline(Option<std::pin::Pin<Box<tokio::time::Sleep>>>);

impl Deadline {
    pub(super) fn after(timeout_s: Option<u64>) -> Self {
        Self(timeout_s.map(|s| Box::pin(tokio::time::sleep(std::time::Duration::from_secs(s)))))
    }

    /// Resolves once the timeout has passed (again at once when asked again),
    /// or never for a step without one.
    pub(super) async fn reached(&mut self) {
        match &mut self.0 {
            Some(sleep) => sleep.as_mut().await,
            None => std::future::pending().await,
        }
    }
}

/// Resolves once Cancel was pressed (or never, if the switch is gone).
pub(super) async fn cancel_requested(switch: &mut watch::Receiver<bool>) {
    if switch.wait_for(|c| *c).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Tells the run's viewers its row as it is now.
pub(super) async fn publish(store: &Store, live: &Live, investigation: &str, run: i64) {
    match store.run(run).await.map_err(crate::error::Error::from).and_then(|row| row.map(run_from_row).transpose()) {
        Ok(Some(row)) => live.publish(RunEvent::new(investigation, row)),
        Ok(None) => {}
        Err(e) => tracing::error!(run, "cannot tell the run's viewers: {e}"),
    }
}
