//! The `sleuth` command line.

use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(name = "sleuth", version, about = "A notebook for investigating LLM-serving performance on GPU hosts")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the web UI and the JSON API.
    Serve(ServeArgs),
    /// Print the measurements found in benchmark output files as JSON.
    Extract(ExtractArgs),
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// Files of benchmark output (`-` reads standard input). With more than one,
    /// each measurement names its file in `"source"`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// A user-defined extractor, `NAME:UNIT:REGEX` with one capture group, e.g.
    /// `decode:tok/s:decode throughput: ([\d.]+) tok/s`. Repeatable.
    #[arg(long = "extractor", value_name = "NAME:UNIT:REGEX")]
    pub extractors: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. Port 0 picks a free port (printed at start).
    #[arg(long, env = "SLEUTH_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,
    /// Directory for the SQLite database and everything else Sleuth keeps.
    #[arg(long, env = "SLEUTH_DATA", default_value = "data")]
    pub data: PathBuf,
    /// The built site (JS/wasm bundle, CSS, static files), as `./dev build` makes it.
    #[arg(long, env = "SLEUTH_SITE", default_value = "target/site")]
    pub site: PathBuf,
    /// Trust a host's key the first time Sleuth connects to it, without asking.
    /// Changed keys are still refused.
    #[arg(long, env = "SLEUTH_TRUST_ON_FIRST_USE")]
    pub trust_on_first_use: bool,
}
