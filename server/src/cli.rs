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
    /// Sign this terminal in to a Sleuth server: checks an API token (read
    /// from standard input, not echoed) and keeps it for the commands below,
    /// in ~/.config/sleuth/credentials.json (mode 0600). SLEUTH_URL and
    /// SLEUTH_TOKEN, when set, are used instead.
    Login(LoginArgs),
    /// Add a command step to an investigation and run it on a host: its output
    /// streams here as it comes, and sleuth exits with the command's exit code
    /// (124 timed out, 130 cancelled). Ctrl-C cancels the run.
    Run(RunArgs),
    /// Add a note (Markdown) to an investigation; prints its URL.
    Note(NoteArgs),
    /// Follow a run's output until it ends, and exit with its exit code; or a
    /// sweep's progress until its last run ends (exit 1 if any did not
    /// succeed). Ctrl-C stops watching, not the run.
    Watch(WatchArgs),
    /// Print the page URL of an investigation, a step or a run.
    Open(OpenArgs),
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The server, as its pages are opened: `https://sleuth.example.com`.
    pub url: String,
    /// The server runs with --no-auth: keep its URL, no token.
    #[arg(long)]
    pub no_token: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The investigation (its ID, as in /i/ID).
    #[arg(long, short = 'i')]
    pub investigation: String,
    /// The host, by its name in Sleuth.
    #[arg(long)]
    pub host: String,
    /// An environment variable for the command: NAME=VALUE. Repeatable.
    #[arg(long = "env", short = 'e', value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// The directory the command runs in, on the host.
    #[arg(long)]
    pub cwd: Option<String>,
    /// Seconds before the run is stopped and ends `timed_out`.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// A server started beside the run and stopped after it (`vllm serve …`).
    #[arg(long, value_name = "COMMAND")]
    pub server: Option<String>,
    /// The server is ready when a GET of this URL, made on the host, answers 200.
    #[arg(long, value_name = "URL", requires = "server")]
    pub ready_url: Option<String>,
    /// The server is ready when a line of its log matches this regular expression.
    #[arg(long, value_name = "REGEX", requires = "server")]
    pub ready_log: Option<String>,
    /// The server is ready when this port on the host accepts a connection.
    #[arg(long, value_name = "PORT", requires = "server")]
    pub ready_port: Option<u16>,
    /// Seconds the server may take to be ready (default 600).
    #[arg(long, value_name = "SECONDS", requires = "server")]
    pub ready_timeout: Option<u64>,
    /// Stream the server's log to standard error as it comes.
    #[arg(long, requires = "server")]
    pub server_log: bool,
    /// The server's log as the host wrote it, escape sequences and all (on a
    /// terminal they are removed by default: a host's log may not drive your terminal).
    #[arg(long, requires = "server_log")]
    pub raw: bool,
    /// The engine's Prometheus metrics, scraped on the host while the run goes
    /// (`http://127.0.0.1:8000/metrics`): queue, KV cache, preemptions on the run's page.
    #[arg(long, value_name = "URL", requires = "server")]
    pub server_metrics: Option<String>,
    /// Files the run leaves in $SLEUTH_RUN_DIR to keep: a glob. Repeatable.
    #[arg(long = "artifact", value_name = "GLOB")]
    pub artifacts: Vec<String>,
    /// The command: one word is a command line as typed (`'nvidia-smi | head'`);
    /// several are words, each quoted (`sh -c 'echo hi; exit 3'`).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct NoteArgs {
    #[arg(long, short = 'i')]
    pub investigation: String,
    /// The note, in Markdown; `-` reads it from standard input.
    pub text: String,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The run's number.
    #[arg(required_unless_present = "sweep")]
    pub run: Option<i64>,
    /// A sweep's number instead (as its step's page shows it).
    #[arg(long, conflicts_with_all = ["run", "server_log"])]
    pub sweep: Option<i64>,
    /// Also stream the run's server log to standard error.
    #[arg(long)]
    pub server_log: bool,
    /// The server's log as the host wrote it (see `sleuth run --raw`).
    #[arg(long, requires = "server_log")]
    pub raw: bool,
}

#[derive(Debug, Args)]
pub struct OpenArgs {
    /// An investigation's ID (with --step or --run: where the step or run is).
    pub id: Option<String>,
    #[arg(long, conflicts_with = "run")]
    pub step: Option<i64>,
    #[arg(long, conflicts_with = "step")]
    pub run: Option<i64>,
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
    /// Where people open this Sleuth (`https://sleuth.example.com`): links in
    /// webhook messages point there. Default: the address each watch was made through.
    #[arg(long, env = "SLEUTH_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,
    /// Inside addresses webhooks may reach (`10.0.0.0/8,fd00::/8`): by default a
    /// webhook reaches only the outside (no loopback, private or link-local address).
    #[arg(long, env = "SLEUTH_WEBHOOK_ALLOW", value_name = "CIDR,…")]
    pub webhook_allow: Option<String>,
    /// The shortest schedule a watch may have, in seconds.
    #[arg(long, env = "SLEUTH_WATCH_MIN_EVERY", default_value_t = crate::watches::MIN_EVERY_S, value_name = "SECONDS")]
    pub watch_min_every: u64,
}
