//! Integration tests: the real router over a real SQLite store in a temp dir.
//! One test binary (faster to link); one module per resource.

mod accounts;
mod comments;
mod disk;
mod engine;
mod evidence;
mod guards;
mod helpers;
mod history;
mod hypotheses;
mod investigations;
mod metrics;
mod migrate;
mod openapi;
mod operations;
mod pages;
mod patches;
mod permissions;
mod replays;
mod replicas;
mod reports;
mod runs;
mod search;
mod security;
mod serving;
mod shares;
mod snippets;
mod sshd;
mod steps;
mod stored;
mod sweeps;
mod upgrade;
mod watches;
