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
    /// Manage users (works while a server runs on the same data).
    #[command(subcommand)]
    User(UserCommand),
    /// Manage API tokens (works while a server runs on the same data).
    #[command(subcommand)]
    Token(TokenCommand),
    /// Copy a SQLite notebook (a --data dir) into an empty PostgreSQL database:
    /// every investigation, run output, user, session, token, host key and
    /// audit entry. Stop the server on that data dir first.
    Migrate(MigrateArgs),
    /// Copy a SQLite notebook while it serves: a consistent snapshot of the
    /// database (`VACUUM INTO`) and every run's output, into DEST (new or
    /// empty). With PostgreSQL, says how to use pg_dump instead.
    Backup(BackupArgs),
    /// Put a backup made by `sleuth backup` into an empty --data dir.
    Restore(RestoreArgs),
}

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// Where the copy goes: a directory that does not exist yet, or is empty.
    pub dest: PathBuf,
    #[command(flatten)]
    pub store: DataArg,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// A directory `sleuth backup` wrote.
    pub src: PathBuf,
    #[command(flatten)]
    pub store: DataArg,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The data dir of the SQLite notebook (what `sleuth serve --data` used).
    #[arg(long)]
    pub from: PathBuf,
    /// The PostgreSQL database to fill: `postgres://user@host/db`, empty (Sleuth
    /// creates its tables). Or set SLEUTH_DATABASE, which keeps the password off
    /// the command line.
    #[arg(long, env = "SLEUTH_DATABASE", hide_env_values = true)]
    pub to: String,
}

#[derive(Debug, Args)]
pub struct DataArg {
    /// Directory for the SQLite database and everything else Sleuth keeps.
    #[arg(long, env = "SLEUTH_DATA", default_value = "data")]
    pub data: PathBuf,
    /// The server's PostgreSQL database (`postgres://user@host/db`), when it uses one.
    #[arg(long, env = "SLEUTH_DATABASE", hide_env_values = true)]
    pub database: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a user. The password is read from standard input (one line).
    Add {
        name: String,
        /// May manage users and hosts.
        #[arg(long)]
        admin: bool,
        /// Read the password from standard input (required: never on the command line).
        #[arg(long, required = true)]
        password_stdin: bool,
        #[command(flatten)]
        data: DataArg,
    },
    /// List users: name, admin or not, when added.
    List {
        #[command(flatten)]
        data: DataArg,
    },
    /// Set a user's password (read from standard input); signs them out everywhere.
    Password {
        name: String,
        /// Read the password from standard input (required: never on the command line).
        #[arg(long, required = true)]
        password_stdin: bool,
        #[command(flatten)]
        data: DataArg,
    },
    /// Remove a user: their sessions, API tokens, roles and host-list entries go too.
    /// What they wrote stays, under their name. The last admin cannot be removed.
    Remove {
        name: String,
        #[command(flatten)]
        data: DataArg,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an API token for a user and print it (shown this once).
    Create {
        #[arg(long)]
        user: String,
        /// What the token is for, as the tokens page lists it.
        #[arg(long, default_value = "cli")]
        label: String,
        #[command(flatten)]
        data: DataArg,
    },
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
    /// Keep the store in PostgreSQL instead of SQLite in --data: `postgres://user@host/db`
    /// (a team server; the database must exist). Prefer the environment variable or
    /// ~/.pgpass for the password: command lines are visible to other local users.
    #[arg(long, env = "SLEUTH_DATABASE", hide_env_values = true)]
    pub database: Option<String>,
    /// The built site (JS/wasm bundle, CSS, static files), as `./dev build` makes it.
    #[arg(long, env = "SLEUTH_SITE", default_value = "target/site")]
    pub site: PathBuf,
    /// Trust a host's key the first time Sleuth connects to it, without asking.
    /// Changed keys are still refused.
    #[arg(long, env = "SLEUTH_TRUST_ON_FIRST_USE")]
    pub trust_on_first_use: bool,
    /// No accounts: every request is the local admin. Only on a loopback address.
    #[arg(long, env = "SLEUTH_NO_AUTH")]
    pub no_auth: bool,
    /// Mark session cookies `Secure` (Sleuth is reached over https, behind a proxy).
    #[arg(long, env = "SLEUTH_SECURE_COOKIES")]
    pub secure_cookies: bool,
    /// On SIGTERM (a deploy), how long running runs may go on before they are
    /// ended `interrupted`; no new runs start meanwhile, and pages are served.
    #[arg(long, env = "SLEUTH_SHUTDOWN_GRACE", default_value_t = 30, value_name = "SECONDS")]
    pub shutdown_grace: u64,
    /// New runs are refused while less than this is free under --data (SQLite):
    /// `2G`, `500M`, `5%`. Default: 2 GiB, or 5 % of a smaller disk.
    #[arg(long, env = "SLEUTH_MIN_FREE", value_name = "SIZE")]
    pub min_free: Option<crate::operations::MinFree>,
    /// How long a host's GPU sampler (one `nvidia-smi` shared by its runs)
    /// stays after the host's last run, so that the next run finds it running.
    #[arg(long, env = "SLEUTH_TELEMETRY_LINGER", default_value_t = 120, value_name = "SECONDS")]
    pub telemetry_linger: u64,
}
