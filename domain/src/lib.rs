//! Sleuth's domain: the types the server, the pages and the browser share —
//! investigations and their steps, runs, measurements, hypotheses, hosts,
//! accounts — the arithmetic and anchors that go with them, and the ports
//! (`ports`) the pages call the server through. Plain data, serializable, free
//! of I/O and of the UI framework: `app` draws it, `server` stores and computes it.

pub mod accounts;
pub mod comments;
pub mod distributions;
pub mod engine;
pub mod error;
pub mod frontier;
pub mod history;
pub mod hosts;
pub mod html;
pub mod hypotheses;
pub mod metrics;
pub mod model;
pub mod ports;
pub mod profiles;
pub mod replays;
pub mod run_pages;
pub mod runs;
pub mod search;
pub mod shares;
pub mod steps;
pub mod sweeps;
pub mod telemetry;
pub mod watches;
