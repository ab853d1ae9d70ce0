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

    let client = match Cli::parse().command {
        Command::Login(args) => server::client::login(args).await,
        Command::Run(args) => server::client::run(args).await,
        Command::Note(args) => server::client::note(args).await,
        Command::Watch(args) => server::client::watch(args).await,
        Command::Open(args) => server::client::open(args).await,
        command => return admin(command).await,
    };
    client.unwrap_or_else(|error| {
        // A server's error message is its text, not a terminal's commands.
        eprintln!("sleuth: {}", server::client::terminal::printable(&error.to_string()));
        ExitCode::FAILURE
    })
}

/// The server and the commands that work on its data directly.
async fn admin(command: Command) -> ExitCode {
    let result = match command {
        Command::Serve(args) => server::serve::run(args).await,
        Command::Extract(args) => server::metrics::command::run(args),
        Command::User(command) => server::auth::command::user(command).await,
        Command::Token(command) => server::auth::command::token(command).await,
        Command::Migrate(args) => server::migrate::run(args).await,
        Command::Backup(args) => server::backup::backup(args).await,
        Command::Restore(args) => server::backup::restore(args).await,
        Command::Login(_) | Command::Run(_) | Command::Note(_) | Command::Watch(_) | Command::Open(_) => Ok(()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sleuth: {error}");
            ExitCode::FAILURE
        }
    }
}
