//! Patches: changes to an engine's source on a host, made an experiment's arm
//! (#52). What is here so far: patch steps' bases and dry runs (`service`),
//! the diff itself (`diff`: read from what
//! `diff -u` or `git diff` prints, checked for paths that leave where they
//! point, made from edited lines, applied to a file's text by context), and
//! the host's side (`host`: its files read, written and put back, every step
//! checked by sha256).

pub mod arm;
pub mod diff;
pub mod gate;
pub mod host;
mod service;

pub use service::Patches;
