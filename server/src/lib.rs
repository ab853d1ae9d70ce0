//! The `sleuth` server: HTTP routes (pages, server functions, JSON API), the
//! store, and the notebook logic between them. `main.rs` only parses the command
//! line; everything testable is here.

pub mod audit;
pub mod auth;
pub mod backup;
pub mod charts;
pub mod cli;
pub mod client;
mod comments;
pub mod db;
pub mod engine;
pub mod error;
mod export;
mod extract;
pub mod facts;
/// Test support: where the shared real-output fixtures are.
#[doc(hidden)]
pub mod fixtures;
pub mod guarded;
pub mod handlers;
pub mod headers;
pub mod hosts;
mod hypotheses;
pub(crate) mod ids;
mod investigations;
pub mod listen;
mod markdown;
mod members;
pub mod metrics;
pub mod migrate;
pub mod notebook;
pub mod openapi;
pub mod operations;
pub mod output;
pub mod patches;
pub mod policy;
mod replays;
pub mod reports;
pub mod router;
pub mod runs;
pub mod search;
pub mod serve;
mod shares;
pub mod snippets;
pub mod ssh;
pub mod state;
mod steps;
pub mod telemetry;
pub mod time;
pub mod user_regex;
pub mod watches;

pub use router::app;
pub use state::AppState;
