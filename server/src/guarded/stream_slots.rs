//! How many live streams each person holds open: one viewer opening
//! thousands would hold the server's files and the store's connections from
//! everyone (`guarded/streams.rs` takes a slot per stream).

use domain::error::ApiError;
use domain::ports::Actor;
use std::sync::Arc;

/// Live streams each person holds open at once: one viewer opening thousands
/// would hold the server's files and the store's connections from everyone.
pub const STREAMS_PER_PERSON: usize = 64;

/// The live streams open now, by who opened them.
#[derive(Default)]
pub struct Streams {
    open: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
}

/// One open stream, counted until it is dropped.
pub struct StreamSlot {
    open: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
    who: String,
}

impl Streams {
    /// A slot for one more of `actor`'s streams; 429 beyond [`STREAMS_PER_PERSON`].
    pub fn take(&self, actor: &Actor) -> Result<StreamSlot, ApiError> {
        let mut open = self.open.lock().map_err(|_| ApiError::internal())?;
        let n = open.entry(actor.name.clone()).or_default();
        if *n >= STREAMS_PER_PERSON {
            return Err(ApiError::new(
                domain::error::ErrorCode::TooManyRequests,
                format!(
                    "You have {STREAMS_PER_PERSON} live streams open (pages, runs followed); close some, or try again in a few seconds."
                ),
            ));
        }
        *n += 1;
        Ok(StreamSlot { open: self.open.clone(), who: actor.name.clone() })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.open.lock()
            && let Some(n) = open.get_mut(&self.who)
        {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.who);
            }
        }
    }
}
