//! Sleuth's domain: the types the server, the pages and the browser share —
//! investigations and their steps, runs, measurements, hypotheses, hosts,
//! accounts — the arithmetic and anchors that go with them, and the ports
//! (`ports`) the pages call the server through. Plain data, serializable, free
//! of I/O and of the UI framework: `app` draws it, `server` stores and computes it.

/// Display, FromStr and TryFrom<String> for a closed set's enum from its
/// `ALL` and `as_str()`: the word it is written as, and `$unknown` (an error
/// naming the word) for one that is none of them.
macro_rules! closed_set_words {
    ($set:ty, $unknown:ident) => {
        impl std::fmt::Display for $set {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $set {
            type Err = $unknown;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Self::ALL.into_iter().find(|v| v.as_str() == text).ok_or_else(|| $unknown(text.to_string()))
            }
        }

        impl TryFrom<String> for $set {
            type Error = $unknown;

            fn try_from(text: String) -> Result<Self, Self::Error> {
                text.parse()
            }
        }
    };
}

pub mod accounts;
pub mod comments;
pub mod distributions;
pub mod engine;
pub mod error;
pub mod frontier;
pub mod guards;
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
