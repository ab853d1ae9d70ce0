use clap::Parser;
use server::cli::{Cli, Command};
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn")))
        .with_writer(std::io::stderr)
        .init();

    let result = match Cli::parse().command {
        Command::Serve(args) => server::serve::run(args).await,
        Command::Extract(args) => server::metrics::command::run(args),
        Command::User(command) => server::auth::command::user(command).await,
        Command::Token(command) => server::auth::command::token(command).await,
        Command::Migrate(args) => server::migrate::run(args).await,
        Command::Backup(args) => server::backup::backup(args).await,
        Command::Restore(args) => server::backup::restore(args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sleuth: {error}");
            ExitCode::FAILURE
        }
    }
}
