//! `sleuth-wasm-split IN.wasm OUT_DIR NAME`: splits `IN.wasm` (built with
//! `-C link-args=--emit-relocs`) into `OUT_DIR/NAME_split.wasm`, the main
//! module for wasm-bindgen, and one `.wasm` per lazily loaded chunk, with the
//! loader leptos expects (`__wasm_split.______________________.js`) and the
//! manifest its `HydrationScripts` reads to preload the chunks a page needs
//! (`__wasm_split_manifest.json`). What cargo-leptos does with `--split`.

use std::path::PathBuf;
use std::process::ExitCode;

/// The loader's name leptos looks for (without file hashing).
const LINK_NAME: &str = "./__wasm_split.______________________.js";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, out_dir, name] = args.as_slice() else {
        eprintln!("usage: sleuth-wasm-split IN.wasm OUT_DIR NAME");
        return ExitCode::from(2);
    };
    match split(input, out_dir, name) {
        Ok(chunks) => {
            println!("{chunks}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sleuth-wasm-split: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Returns how many chunks were split off.
fn split(input: &str, out_dir: &str, name: &str) -> Result<usize, String> {
    let wasm = std::fs::read(input).map_err(|e| format!("reading {input}: {e}"))?;
    let out_dir = PathBuf::from(out_dir);
    let main_out = out_dir.join(format!("{name}_split.wasm"));
    let main_module = format!("/pkg/{name}.js");
    let mut options = wasm_split_cli_support::Options::new(&wasm);
    options.output_dir = &out_dir;
    options.main_out_path = &main_out;
    options.main_module = &main_module;
    options.link_name = LINK_NAME;
    let split = wasm_split_cli_support::transform(options).map_err(|e| format!("{e:#}"))?;
    let manifest = serde_json::to_string_pretty(&split.prefetch_map).map_err(|e| e.to_string())?;
    let path = out_dir.join("__wasm_split_manifest.json");
    std::fs::write(&path, manifest).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(split.split_modules.len())
}
