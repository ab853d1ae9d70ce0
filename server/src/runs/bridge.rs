//! Live across replicas: on PostgreSQL, what this replica's [`Live`] hears is
//! sent to the others with NOTIFY, and what they send arrives by LISTEN and is
//! applied here. Payloads are small — ids, offsets, names — and the rest (a
//! run's row, its output bytes) is read from the store, so a notice never
//! carries output and the 8000-byte NOTIFY limit is never near.
//!
//! A payload is `{"from": REPLICA, "n": [notice, …]}`: what queued up while the
//! last one was being sent goes out together, with a running run's output
//! notices folded into its newest length. When the listening connection drops,
//! notices sent meanwhile are lost: the runs followed for others are read
//! again from the store and every page is told to read everything again.

use super::live::{Live, Notice};
use super::{RunEvent, run_from_row};
use crate::db::Store;
use crate::output::{OutputKey, Outputs};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// NOTIFY takes up to 8000 bytes; a payload stays below this.
const PAYLOAD_BYTES: usize = 7000;

#[derive(Serialize, Deserialize)]
struct Payload {
    from: String,
    n: Vec<Notice>,
}

/// Starts sending and receiving (once per server, on PostgreSQL).
pub fn spawn(store: &Store, live: &Arc<Live>, outputs: &Outputs) {
    let Some(outbox) = live.bridge() else { return };
    tokio::spawn(send(store.clone(), outbox));
    tokio::spawn(receive(Replica { store: store.clone(), live: live.clone(), outputs: outputs.clone() }));
}

/// What the receiving side reads and tells: this replica's store, viewers and output.
struct Replica {
    store: Store,
    live: Arc<Live>,
    outputs: Outputs,
}

/// Joins notices into payloads: several output notices of one run become its
/// newest length; each payload stays under [`PAYLOAD_BYTES`].
fn payloads(from: &str, mut notices: Vec<Notice>) -> Vec<String> {
    let key = |notice: &Notice| match notice {
        Notice::Output { run, .. } => Some(OutputKey::Run(*run)),
        Notice::LogOutput { log, .. } => Some(OutputKey::Log(*log)),
        _ => None,
    };
    let mut newest: std::collections::HashMap<OutputKey, usize> = std::collections::HashMap::new();
    for (i, notice) in notices.iter().enumerate() {
        if let Some(key) = key(notice) {
            newest.insert(key, i);
        }
    }
    let mut i = 0;
    notices.retain(|notice| {
        let keep = match key(notice) {
            Some(key) => newest.get(&key) == Some(&i),
            None => true,
        };
        i += 1;
        keep
    });
    let mut out = Vec::new();
    let mut batch: Vec<Notice> = Vec::new();
    let mut size = 0;
    let json = |n: Vec<Notice>| serde_json::to_string(&Payload { from: from.to_string(), n }).unwrap_or_default();
    for notice in notices {
        let cost = serde_json::to_string(&notice).map_or(0, |s| s.len() + 1);
        if !batch.is_empty() && size + cost > PAYLOAD_BYTES - from.len() - 20 {
            out.push(json(std::mem::take(&mut batch)));
            size = 0;
        }
        size += cost;
        batch.push(notice);
    }
    if !batch.is_empty() {
        out.push(json(batch));
    }
    out
}

async fn send(store: Store, mut outbox: mpsc::UnboundedReceiver<Notice>) {
    while let Some(first) = outbox.recv().await {
        let mut notices = vec![first];
        while let Ok(more) = outbox.try_recv() {
            notices.push(more);
        }
        for payload in payloads(store.replica(), notices) {
            if let Err(e) = store.notify(&payload).await {
                // The others will resync when they notice; nothing to retry into.
                tracing::error!("cannot tell the other replicas: {e}");
            }
        }
    }
}

async fn receive(replica: Replica) {
    let live = replica.live.clone();
    let closed = live.closed();
    tokio::pin!(closed);
    let mut notices = loop {
        match replica.store.listen().await {
            Ok(Some(notices)) => {
                // Viewers who came before this replica listened may follow a
                // run whose news went by unheard.
                resync(&replica, &live).await;
                break notices;
            }
            Ok(None) => return,
            Err(e) => {
                tracing::error!("cannot listen to the other replicas (retrying): {e}");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    () = &mut closed => return,
                }
            }
        }
    };
    loop {
        let next = tokio::select! {
            next = notices.next() => next,
            () = &mut closed => return,
        };
        match next {
            Ok(Some(payload)) => apply(&replica, &live, &payload).await,
            Ok(None) => {
                tracing::warn!("lost the connection that hears other replicas; reading again what may be missed");
                resync(&replica, &live).await;
            }
            Err(e) => {
                tracing::error!("listening to the other replicas: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

async fn apply(replica: &Replica, live: &Live, payload: &str) {
    let payload: Payload = match serde_json::from_str(payload) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!("an unreadable notice from another replica: {e}");
            return;
        }
    };
    if payload.from == replica.store.replica() {
        return;
    }
    for notice in payload.n {
        match notice {
            Notice::Run { investigation, run } => match replica.store.run(run).await {
                Ok(Some(row)) => match run_from_row(row) {
                    Ok(row) => live.publish_remote(RunEvent::new(&investigation, row)),
                    Err(e) => tracing::error!(run, "cannot tell a run another replica changed: {e}"),
                },
                Ok(None) => {}
                Err(e) => tracing::error!(run, "cannot read a run another replica changed: {e}"),
            },
            Notice::Output { run, len } => live.output_remote(run, len),
            Notice::LogOutput { run, log, len } => {
                // A viewer here may follow the log from now on.
                live.watch_remote(OutputKey::Log(log), run, len);
                live.output_remote(OutputKey::Log(log), len);
            }
            Notice::Change { investigation, by } => live.changed_remote(&investigation, &by),
            Notice::Viewers { investigation, names } => live.viewers_remote(&payload.from, &investigation, names),
        }
    }
}

/// After lost notices: the runs followed for others as the store has them now,
/// and every page told to read everything again.
async fn resync(replica: &Replica, live: &Live) {
    for (key, run) in live.remote_runs() {
        if let Ok(len) = replica.outputs.len(key).await {
            live.output_remote(key, len);
        }
        if key != OutputKey::Run(run) {
            continue;
        }
        let (Ok(Some(row)), Ok(Some(investigation))) =
            (replica.store.run(run).await, replica.store.run_investigation(run).await)
        else {
            continue;
        };
        match run_from_row(row) {
            Ok(row) => live.publish_remote(RunEvent::new(&investigation, row)),
            Err(e) => tracing::error!(run, "cannot tell a run after lost notices: {e}"),
        }
    }
    live.resync();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_notices_fold_and_payloads_stay_small() {
        let mut notices = vec![
            Notice::Output { run: 1, len: 10 },
            Notice::Change { investigation: "i".into(), by: "ada".into() },
            Notice::Output { run: 2, len: 5 },
            Notice::Output { run: 1, len: 30 },
        ];
        let one = payloads("r", notices.clone());
        assert_eq!(one.len(), 1);
        let parsed: Payload = serde_json::from_str(&one[0]).unwrap();
        assert_eq!(
            parsed.n,
            vec![
                Notice::Change { investigation: "i".into(), by: "ada".into() },
                Notice::Output { run: 2, len: 5 },
                Notice::Output { run: 1, len: 30 },
            ]
        );
        for i in 0..2000 {
            notices.push(Notice::Viewers { investigation: format!("inv{i}"), names: vec!["someone".into()] });
        }
        let many = payloads("replica-with-a-long-name", notices);
        assert!(many.len() > 1);
        let mut total = 0;
        for p in &many {
            assert!(p.len() < 8000, "{}", p.len());
            total += serde_json::from_str::<Payload>(p).unwrap().n.len();
        }
        assert_eq!(total, 2003, "every notice once");
    }
}
