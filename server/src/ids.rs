//! Investigation ids: short, URL-safe, unguessable enough to not enumerate.

use rand::Rng;

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
