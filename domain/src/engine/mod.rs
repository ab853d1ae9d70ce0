//! The engine's own signals (vLLM's and SGLang's Prometheus `/metrics`):
//! [`exposition`] reads the text format and says what a run's scrapes mean;
//! [`series`] keeps a run's scrapes compactly and makes them back.

pub mod exposition;
pub mod series;

pub use exposition::*;
