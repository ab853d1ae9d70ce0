//! Ids and secrets: investigation ids (short, URL-safe, unguessable enough
//! not to enumerate), and the random secrets of sessions, API tokens and share
//! links, of which only a hash is stored.

use rand::Rng;
use sha2::{Digest, Sha256};

const ALPHABET: &[u8] = b"23456789abcdefghijkmnpqrstuvwxyz";
/// 10 symbols of 32 = 50 bits.
const LEN: usize = 10;

/// A fresh random id, lowercase and free of look-alikes (0/o, 1/l).
pub fn new_investigation_id() -> String {
    let mut rng = rand::rng();
    (0..LEN).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// Whether `id` could be an investigation id; anything else is a 404 without a query.
pub fn is_investigation_id(id: &str) -> bool {
    id.len() == LEN && id.bytes().all(|b| ALPHABET.contains(&b))
}

/// A fresh random secret (256 bits, base64url) and the hash it is stored as.
pub fn new_secret() -> (String, String) {
    use base64::Engine;
    let bytes: [u8; 32] = rand::random();
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let hash = hash_secret(&secret);
    (secret, hash)
}

/// A secret as it is stored: its SHA-256, hex.
pub fn hash_secret(secret: &str) -> String {
    sha256_hex(secret.as_bytes())
}

/// SHA-256 of `bytes`, lower-case hex (as `sha256sum` prints it).
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_well_formed_and_distinct() {
        let a = new_investigation_id();
        let b = new_investigation_id();
        assert!(is_investigation_id(&a), "{a}");
        assert_ne!(a, b);
        assert!(!is_investigation_id("../etc/pass"));
        assert!(!is_investigation_id("ABCDEFGHJK"));
    }
}
