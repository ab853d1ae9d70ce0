//! Sleuth's own crates have no import circles (docs/development.md, "Layers").

use std::path::Path;

fn check(crate_dir: &str) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(crate_dir).join("src");
    let graph = imports::read_crate(&src).unwrap_or_else(|e| panic!("cannot read {crate_dir}: {e}"));
    let report = imports::report(crate_dir, &graph);
    println!("{report}");
    assert!(graph.files.len() > 15, "{crate_dir}: only {} files found", graph.files.len());
    assert!(graph.circles().is_empty(), "import circles (see docs/development.md, \"Layers\"):\n{report}");
}

#[test]
fn the_server_has_no_import_circles() {
    check("server");
}

#[test]
fn the_app_has_no_import_circles() {
    check("app");
}

#[test]
fn the_domain_has_no_import_circles() {
    check("domain");
}
