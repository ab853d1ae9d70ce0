//! Sleuth's own crates have no import circles (docs/development.md, "Layers").

use std::path::Path;

fn check(crate_dir: &str) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(crate_dir).join("src");
    let graph = imports::read_crate(&src).unwrap_or_else(|e| panic!("cannot read {crate_dir}: {e}"));
    let report = imports::report(crate_dir, &graph);
    println!("{report}");
    assert!(graph.files.len() > 20, "{crate_dir}: only {} files found", graph.files.len());
    assert!(graph.circles().is_empty(), "import circles (see docs/development.md, \"Layers\"):\n{report}");
}

#[test]
fn the_server_has_no_import_circles() {
    check("server");
}

#[test]
fn the_app_has_no_import_circles() {
    // Until the app's model moves out of its views (issue 24, step 5): no new circle meanwhile.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../app/src");
    let graph = imports::read_crate(&src).unwrap_or_else(|e| panic!("cannot read app: {e}"));
    assert!(graph.circles().len() <= 1, "{}", imports::report("app", &graph));
}
