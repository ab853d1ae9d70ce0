//! The SSH layer's [`KeyStore`] on Sleuth's store: pinned and offered host keys
//! are rows (migration 0020), shared by every replica.

use crate::db::Store;
use crate::ssh::{KeyStore, KeysError};

pub struct StoredKeys {
    store: Store,
}

impl StoredKeys {
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

fn failed(e: crate::db::StoreError) -> KeysError {
    KeysError::Store(Box::new(e))
}

#[async_trait::async_trait]
impl KeyStore for StoredKeys {
    async fn pinned(&self, pattern: &str) -> Result<Vec<(String, String)>, KeysError> {
        self.store.host_keys(pattern).await.map_err(failed)
    }
    async fn all_pinned(&self) -> Result<Vec<(String, String)>, KeysError> {
        self.store.all_host_keys().await.map_err(failed)
    }
    async fn pin(&self, pattern: &str, algorithm: &str, key: &str) -> Result<(), KeysError> {
        self.store.pin_host_key(pattern, algorithm, key).await.map_err(failed)
    }
    async fn offer(&self, pattern: &str, key: &str) -> Result<(), KeysError> {
        self.store.offer_host_key(pattern, key).await.map_err(failed)
    }
    async fn offered(&self, pattern: &str) -> Result<Option<String>, KeysError> {
        self.store.host_key_offer(pattern).await.map_err(failed)
    }
}
