//! `cargo run -p imports -- server/src app/src`: each crate's files, edges and
//! import circles (with one loop through each). Exits 1 if there is a circle.

fn main() -> std::process::ExitCode {
    let mut dirs: Vec<String> = std::env::args().skip(1).collect();
    // `--edges FILE`: also list what FILE names and what names it.
    let focus = dirs.iter().position(|a| a == "--edges").map(|at| {
        dirs.remove(at);
        if at < dirs.len() { dirs.remove(at) } else { String::new() }
    });
    if dirs.is_empty() {
        eprintln!("usage: imports SRC_DIR...   (e.g. server/src app/src)");
        return std::process::ExitCode::from(2);
    }
    let mut circles = 0;
    for dir in &dirs {
        match imports::read_crate(std::path::Path::new(dir)) {
            Ok(graph) => {
                circles += graph.circles().len();
                print!("{}", imports::report(dir, &graph));
                if let Some(focus) = &focus {
                    for &(from, to) in &graph.edges {
                        let (from, to) = (&graph.files[from], &graph.files[to]);
                        if from == focus || to == focus {
                            println!("  {from} → {to}");
                        }
                    }
                }
            }
            Err(e) => {
                eprintln!("imports: {e}");
                return std::process::ExitCode::from(2);
            }
        }
    }
    if circles == 0 { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE }
}
