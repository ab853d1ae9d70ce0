//! Rows kept in memory per investigation while a counter the database bumps
//! (in the same transaction as their changes) says they are current.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Rows kept in all (~200 bytes each): past it, the keeping starts again.
const ROWS: usize = 400_000;

pub struct Kept<T>(Mutex<HashMap<String, (i64, Arc<[T]>)>>);

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Self(Mutex::new(HashMap::new()))
    }
}

impl<T> Kept<T> {
    /// The rows read at `version`, if those are what is kept.
    pub fn get(&self, investigation: &str, version: i64) -> Option<Arc<[T]>> {
        let map = self.0.lock().ok()?;
        map.get(investigation).filter(|(v, _)| *v == version).map(|(_, rows)| rows.clone())
    }

    pub fn put(&self, investigation: &str, version: i64, rows: Arc<[T]>) {
        let Ok(mut map) = self.0.lock() else { return };
        let held: usize = map.iter().filter(|(k, _)| k.as_str() != investigation).map(|(_, (_, r))| r.len()).sum();
        if held + rows.len() > ROWS {
            map.clear();
        }
        map.insert(investigation.to_owned(), (version, rows));
    }
}
