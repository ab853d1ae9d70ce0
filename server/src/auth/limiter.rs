//! Slows down password guessing: after `FAILURES` wrong passwords within
//! `WINDOW` for one name, or from one client address, sign-in is refused (429)
//! until the oldest of them is older than the window. A success clears the name.

use app::error::{ApiError, ErrorCode};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const FAILURES: usize = 5;
pub const WINDOW: Duration = Duration::from_secs(15 * 60);

#[derive(Default)]
pub struct Limiter {
    failures: Mutex<HashMap<String, VecDeque<Instant>>>,
}

fn keys(name: &str, client: &str) -> [String; 2] {
    [format!("name:{}", name.to_lowercase()), format!("client:{client}")]
}

impl Limiter {
    pub fn check(&self, name: &str, client: &str) -> Result<(), ApiError> {
        let now = Instant::now();
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        for key in keys(name, client) {
            let Some(times) = map.get_mut(&key) else { continue };
            while times.front().is_some_and(|t| now.duration_since(*t) > WINDOW) {
                times.pop_front();
            }
            if times.len() >= FAILURES {
                let wait = times.front().map_or(WINDOW, |t| WINDOW.saturating_sub(now.duration_since(*t)));
                return Err(ApiError::new(
                    ErrorCode::TooManyRequests,
                    format!("Too many wrong passwords; try again in {} minutes.", wait.as_secs().div_ceil(60).max(1)),
                ));
            }
        }
        Ok(())
    }

    pub fn failed(&self, name: &str, client: &str) {
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        for key in keys(name, client) {
            map.entry(key).or_default().push_back(Instant::now());
        }
    }

    pub fn succeeded(&self, name: &str, _client: &str) {
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(&keys(name, "")[0]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_failures_lock_the_name_and_the_client() {
        let limiter = Limiter::default();
        for _ in 0..FAILURES {
            assert!(limiter.check("ada", "10.0.0.1").is_ok());
            limiter.failed("ada", "10.0.0.1");
        }
        let refused = limiter.check("ADA", "10.0.0.2").unwrap_err();
        assert_eq!(refused.code, ErrorCode::TooManyRequests);
        assert!(refused.message.contains("15 minutes"), "{}", refused.message);
        assert!(limiter.check("bob", "10.0.0.1").is_err(), "the same client guessing another name");
        assert!(limiter.check("bob", "10.0.0.3").is_ok());
    }
}
