//! Rows kept in memory per investigation while a counter the database bumps
//! (in the same transaction as their changes) says they are current.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Held<T> = HashMap<String, (i64, Arc<[T]>)>;

/// Rows kept per investigation, at most `max` in all: past it, the keeping
/// starts again.
pub struct Kept<T> {
    held: Mutex<Held<T>>,
    max: usize,
}

impl<T> Kept<T> {
    pub fn new(max: usize) -> Self {
        Self { held: Mutex::new(HashMap::new()), max }
    }

    /// The rows read at `version`, if those are what is kept.
    pub fn get(&self, investigation: &str, version: i64) -> Option<Arc<[T]>> {
        let map = self.held.lock().ok()?;
        map.get(investigation).filter(|(v, _)| *v == version).map(|(_, rows)| rows.clone())
    }

    pub fn put(&self, investigation: &str, version: i64, rows: Arc<[T]>) {
        let Ok(mut map) = self.held.lock() else { return };
        let held: usize = map.iter().filter(|(k, _)| k.as_str() != investigation).map(|(_, (_, r))| r.len()).sum();
        if held + rows.len() > self.max {
            map.clear();
        }
        map.insert(investigation.to_owned(), (version, rows));
    }
}
