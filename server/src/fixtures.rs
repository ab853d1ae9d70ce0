//! The real tool outputs tests read (`shared/fixtures/` beside the repository,
//! never copied into it). `SLEUTH_FIXTURES` points elsewhere; a missing fixture
//! fails the test that needs it rather than skipping it.

use std::path::PathBuf;

pub fn dir() -> PathBuf {
    let candidates = [
        std::env::var_os("SLEUTH_FIXTURES").map(PathBuf::from),
        Some(PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures"))),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|d| d.is_dir())
        .unwrap_or_else(|| panic!("no fixtures: put shared/fixtures beside the checkout, or set SLEUTH_FIXTURES to it"))
}

pub fn read(relative: &str) -> String {
    let path = dir().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}
