//! Sleuth from a terminal: `sleuth login`, `run`, `note`, `watch`, `open`
//! talk to a server's JSON API (docs/api.md) as a script would, with the
//! token `login` kept (or `SLEUTH_URL` + `SLEUTH_TOKEN`).

mod api;
pub mod credentials;
mod follow;
pub mod http;
pub mod terminal;

pub use api::{Api, ClientError};

use crate::cli::{LoginArgs, NoteArgs, OpenArgs, RunArgs, WatchArgs};
use credentials::Credentials;
use domain::model::Step;
use domain::runs::{Run, RunStatus, human_duration};
use domain::sweeps::Sweep;
use follow::Stream;
use http::Origin;
use hyper::Method;
use serde_json::json;
use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;

/// The server and token of `SLEUTH_URL`/`SLEUTH_TOKEN` or `sleuth login`.
fn signed_in() -> Result<Api, ClientError> {
    let credentials = credentials::current()?;
    Ok(Api::with(Origin::parse(&credentials.url)?, credentials.token))
}

pub async fn login(args: LoginArgs) -> Result<ExitCode, ClientError> {
    let origin = Origin::parse(&args.url)?;
    let token = if args.no_token {
        None
    } else {
        let prompt =
            format!("API token for {} (from the /tokens page or `sleuth token create --user NAME`): ", origin.url());
        Some(read_secret(&prompt)?)
    };
    let api = Api::with(origin, token);
    // Any call that needs a caller: it fails now, not at the first `sleuth run`.
    api.call::<serde_json::Value>(Method::GET, "/api/v1/status", None).await?;
    let path = credentials::write(&Credentials { url: api.url(), token: api.token().map(str::to_string) })?;
    eprintln!("Signed in to {}; the token is kept in {} (only you can read it).", api.url(), path.display());
    Ok(ExitCode::SUCCESS)
}

/// One line from standard input, not echoed when it is a terminal
/// (`rpassword` turns the echo off and back on, also when reading fails).
fn read_secret(prompt: &str) -> Result<String, ClientError> {
    let stdin = std::io::stdin();
    let read = if stdin.is_terminal() {
        rpassword::prompt_password(prompt)
    } else {
        let mut line = String::new();
        stdin.lock().read_line(&mut line).map(|_| line)
    };
    let line = read.map_err(|source| ClientError::Io { what: "reading the token".into(), source })?;
    let token = line.trim().to_string();
    if token.is_empty() {
        return Err(ClientError::Usage("No token given: paste one, or pipe it in (`… | sleuth login URL`).".into()));
    }
    Ok(token)
}

pub async fn run(args: RunArgs) -> Result<ExitCode, ClientError> {
    let api = signed_in()?;
    let body = command_step(&args)?;
    let step: Step =
        api.call(Method::POST, &format!("/api/v1/investigations/{}/steps", args.investigation), Some(body)).await?;
    let runs: Result<Vec<Run>, _> = api.call(Method::POST, &format!("/api/v1/steps/{}/runs", step.id), None).await;
    let Some(run) = runs.as_ref().ok().and_then(|runs| runs.first().cloned()) else {
        // A step whose run could not start (an untrusted host key, a full
        // disk) would stay behind as if it had been run: it goes again.
        let _ = api.call::<serde_json::Value>(Method::DELETE, &format!("/api/v1/steps/{}", step.id), None).await;
        return Err(runs.err().unwrap_or_else(|| ClientError::Usage("The server queued no run.".into())));
    };
    eprintln!("sleuth: run {} of step {} on {}: {}", run.id, step.id, run.host, api.page(&format!("/runs/{}", run.id)));
    follow_to_end(&api, run.id, args.server_log, args.raw, Interrupt::Cancels).await
}

/// The command step `sleuth run` adds. One word after `--` is a command line
/// as typed (`'nvidia-smi | head'`); more are words, each quoted, as `exec`
/// would pass them (`sh -c 'echo hello; exit 3'`).
fn command_step(args: &RunArgs) -> Result<serde_json::Value, ClientError> {
    let command = match args.command.as_slice() {
        [] => return Err(ClientError::Usage("Name the command after `--`.".into())),
        [line] => line.clone(),
        words => words.iter().map(|w| crate::ssh::quote::quote_if_needed(w)).collect::<Vec<_>>().join(" "),
    };
    let mut env = serde_json::Map::new();
    for pair in &args.env {
        let (name, value) =
            pair.split_once('=').ok_or_else(|| ClientError::Usage(format!("--env {pair:?}: write it NAME=VALUE.")))?;
        env.insert(name.to_string(), json!(value));
    }
    let mut body = json!({ "kind": "command", "host": args.host, "command": command, "env": env });
    if let Some(cwd) = &args.cwd {
        body["cwd"] = json!(cwd);
    }
    if let Some(timeout) = args.timeout {
        body["timeout_s"] = json!(timeout);
    }
    if !args.artifacts.is_empty() {
        body["artifacts"] = json!(args.artifacts);
    }
    if let Some(server) = &args.server {
        let ready = match (&args.ready_url, &args.ready_log, args.ready_port) {
            (Some(url), None, None) => json!({ "http": url }),
            (None, Some(pattern), None) => json!({ "log": pattern }),
            (None, None, Some(port)) => json!({ "tcp": port }),
            _ => {
                return Err(ClientError::Usage(
                    "Say when the server is ready with one of --ready-url, --ready-log or --ready-port.".into(),
                ));
            }
        };
        let mut spec = json!({ "command": server, "ready": ready });
        if let Some(seconds) = args.ready_timeout {
            spec["ready_timeout_s"] = json!(seconds);
        }
        if let Some(url) = &args.server_metrics {
            spec["metrics"] = json!({ "url": url });
        }
        body["server"] = spec;
    }
    Ok(body)
}

pub async fn watch(args: WatchArgs) -> Result<ExitCode, ClientError> {
    let api = signed_in()?;
    let run = match (args.run, args.sweep) {
        (_, Some(sweep)) => return watch_sweep(&api, sweep).await,
        (Some(run), None) => run,
        (None, None) => return Err(ClientError::Usage("Name a run, or --sweep N.".into())),
    };
    let run: Run = api.call(Method::GET, &format!("/api/v1/runs/{run}"), None).await?;
    eprintln!(
        "sleuth: run {} on {} ({}): {}",
        run.id,
        run.host,
        run.status.as_str(),
        api.page(&format!("/runs/{}", run.id))
    );
    follow_to_end(&api, run.id, args.server_log, args.raw, Interrupt::StopsWatching).await
}

/// How often a sweep is asked how far it is.
const SWEEP_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// A sweep's progress on stderr as it changes, until its last run ended;
/// then a bell, when stderr is a terminal (a long sweep is left running in a
/// tab).
async fn watch_sweep(api: &Api, id: i64) -> Result<ExitCode, ClientError> {
    let started = std::time::Instant::now();
    let mut shown = String::new();
    let sweep = loop {
        let sweep: Sweep = api.call(Method::GET, &format!("/api/v1/sweeps/{id}"), None).await?;
        let line = sweep.progress();
        if line != shown {
            let line = terminal::printable(&line);
            eprintln!("sleuth: [{}] {line}", human_duration(started.elapsed().as_millis() as u64));
            shown = line;
        }
        if sweep.finished() {
            break sweep;
        }
        tokio::select! {
            _ = tokio::time::sleep(SWEEP_POLL) => {}
            _ = tokio::signal::ctrl_c() => {
                eprintln!("sleuth: stopped watching sweep {id}; it goes on.");
                return Ok(ExitCode::from(130));
            }
        }
    };
    if std::io::stderr().is_terminal() {
        eprint!("\x07");
    }
    let step: Step = api.call(Method::GET, &format!("/api/v1/steps/{}", sweep.step_id), None).await?;
    eprintln!("sleuth: {}", api.page(&step.url));
    Ok(if sweep.failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// What Ctrl-C does while a run is followed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Interrupt {
    /// `sleuth run`: the run is cancelled (a second Ctrl-C leaves at once).
    Cancels,
    /// `sleuth watch`: only the watching stops.
    StopsWatching,
}

/// Output to stdout (the server's log to stderr) until the run ends; the
/// exit code says how it ended.
async fn follow_to_end(
    api: &Api,
    run: i64,
    server_log: bool,
    raw: bool,
    interrupt: Interrupt,
) -> Result<ExitCode, ClientError> {
    let output = async {
        let mut stdout = tokio::io::stdout();
        // The command's own output byte for byte; its server's log made inert
        // on a terminal (a host's log is not the command's output), unless --raw.
        let client = follow::follow(api, run, Stream::Client, &mut stdout, None);
        if server_log {
            let mut stderr = tokio::io::stderr();
            let strip = (!raw && std::io::stderr().is_terminal()).then(terminal::Strip::default);
            let (client, server) = tokio::join!(client, follow::follow(api, run, Stream::Server, &mut stderr, strip));
            server?;
            client
        } else {
            client.await
        }
    };
    tokio::pin!(output);
    let mut cancelled = false;
    loop {
        tokio::select! {
            done = &mut output => {
                done?;
                break;
            }
            _ = tokio::signal::ctrl_c() => {
                if interrupt == Interrupt::StopsWatching || cancelled {
                    eprintln!("\nsleuth: stopped watching run {run}; it goes on.");
                    return Ok(ExitCode::from(130));
                }
                cancelled = true;
                eprintln!("\nsleuth: cancelling run {run} (Ctrl-C again to stop waiting)…");
                if let Err(e) = api.call::<Run>(Method::POST, &format!("/api/v1/runs/{run}/cancel"), None).await {
                    eprintln!("sleuth: {e}");
                }
            }
        }
    }
    let ended: Run = api.call(Method::GET, &format!("/api/v1/runs/{run}?wait=60"), None).await?;
    print_guards(&ended, &api.page(&format!("/runs/{run}")));
    Ok(exit_code(&ended))
}

/// A run's guards on stderr once it ended: a line saying whether any warns,
/// and each that warns or fails with its sentence (made inert: a guard may
/// quote what a host said).
fn print_guards(run: &Run, page: &str) {
    use domain::guards::Level;
    if run.guards.is_empty() {
        return;
    }
    let count = |l: Level| run.guards.iter().filter(|g| g.level == l).count();
    let (fail, warn, ok, unknown) = (count(Level::Fail), count(Level::Warn), count(Level::Ok), count(Level::Unknown));
    if fail + warn == 0 {
        eprintln!("sleuth: guards: none warns ({ok} ok, {unknown} could not see this run)");
        return;
    }
    eprintln!("sleuth: guards: {fail} fail, {warn} warn ({page}):");
    for g in run.guards.iter().filter(|g| g.level >= Level::Warn) {
        eprintln!("sleuth:   {} {}: {}", g.level.as_str(), g.name.as_str(), terminal::printable(&g.text));
    }
}

/// A run's end as a process's: the command's own code, 124 for a timeout
/// (as `timeout(1)`), 128+N for a signal, 130 when cancelled, else 1 with
/// the reason on stderr.
fn exit_code(run: &Run) -> ExitCode {
    let code = match (run.status, run.exit_code) {
        (RunStatus::Succeeded | RunStatus::Failed, Some(code)) => code.clamp(0, 255) as u8,
        (RunStatus::TimedOut, _) => 124,
        (RunStatus::Cancelled, _) => 130,
        (_, _) => match run.exit_signal.as_deref().and_then(signal_number) {
            Some(n) => 128 + n,
            None => 1,
        },
    };
    if code != 0 {
        // The reason may quote a host's server log: made inert.
        let why = terminal::printable(run.error.as_deref().unwrap_or(""));
        eprintln!("sleuth: run {} {}{}{}", run.id, run.status.as_str(), if why.is_empty() { "" } else { ": " }, why);
    }
    ExitCode::from(code)
}

fn signal_number(name: &str) -> Option<u8> {
    let name = name.trim_start_matches("SIG");
    ["HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2", "PIPE", "ALRM", "TERM"]
        .iter()
        .position(|s| *s == name)
        .map(|at| at as u8 + 1)
}

pub async fn note(args: NoteArgs) -> Result<ExitCode, ClientError> {
    let api = signed_in()?;
    let text = if args.text == "-" {
        std::io::read_to_string(std::io::stdin())
            .map_err(|source| ClientError::Io { what: "reading the note".into(), source })?
    } else {
        args.text
    };
    let body = json!({ "kind": "note", "body": text });
    let step: Step =
        api.call(Method::POST, &format!("/api/v1/investigations/{}/steps", args.investigation), Some(body)).await?;
    println!("{}", api.page(&step.url));
    Ok(ExitCode::SUCCESS)
}

pub async fn open(args: OpenArgs) -> Result<ExitCode, ClientError> {
    let api = signed_in()?;
    let url = match (&args.id, args.step, args.run) {
        (Some(id), None, None) => {
            api.call::<serde_json::Value>(Method::GET, &format!("/api/v1/investigations/{id}"), None).await?["url"]
                .as_str()
                .map(str::to_string)
        }
        // `open ID --step N` / `--run N` open the step or run (the ID is how people remember where it is).
        (_, Some(step), None) => Some(api.call::<Step>(Method::GET, &format!("/api/v1/steps/{step}"), None).await?.url),
        (_, None, Some(run)) => {
            let run: Run = api.call(Method::GET, &format!("/api/v1/runs/{run}"), None).await?;
            Some(format!("/runs/{}", run.id))
        }
        _ => {
            return Err(ClientError::Usage(
                "Name one thing to open: an investigation's ID, --step N or --run N.".into(),
            ));
        }
    };
    let url = url.ok_or_else(|| ClientError::Usage("The server's answer has no page URL.".into()))?;
    println!("{}", api.page(&url));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command: &[&str]) -> RunArgs {
        use clap::Parser;
        let mut argv = vec!["sleuth", "run", "--investigation", "abc", "--host", "gpu", "--env", "NCCL_PROTO=LL", "--"];
        argv.extend_from_slice(command);
        match crate::cli::Cli::parse_from(argv).command {
            crate::cli::Command::Run(args) => args,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn words_after_the_dashes_are_quoted_and_one_is_a_command_line() {
        let step = command_step(&args(&["sh", "-c", "echo hello; exit 3"])).unwrap();
        assert_eq!(step["command"], "sh -c 'echo hello; exit 3'");
        assert_eq!(step["env"]["NCCL_PROTO"], "LL");
        let step = command_step(&args(&["nvidia-smi | head -3"])).unwrap();
        assert_eq!(step["command"], "nvidia-smi | head -3");
    }

    #[test]
    fn a_server_says_when_it_is_ready() {
        let mut run = args(&["bench"]);
        run.server = Some("vllm serve m".into());
        assert!(matches!(command_step(&run), Err(ClientError::Usage(_))));
        run.ready_port = Some(8000);
        assert_eq!(command_step(&run).unwrap()["server"], json!({"command": "vllm serve m", "ready": {"tcp": 8000}}));
        run.server_metrics = Some("http://127.0.0.1:8000/metrics".into());
        assert_eq!(command_step(&run).unwrap()["server"]["metrics"], json!({"url": "http://127.0.0.1:8000/metrics"}));
    }

    #[test]
    fn runs_end_with_their_commands_code() {
        let mut run: Run = serde_json::from_value(json!({
            "id": 1, "step_id": 1, "host": "gpu", "command": "x", "env": [], "cwd": null, "timeout_s": null,
            "status": "failed", "exit_code": 3, "exit_signal": null, "error": null, "batch_index": 1, "batch_size": 1,
            "warmup": false, "stdout_bytes": 0, "stderr_bytes": 0, "lines": 0, "queued_at": "2026-12-04T00:00:00Z",
            "started_at": null, "finished_at": null, "duration_ms": null, "who": null,
        }))
        .unwrap_or_else(|e| panic!("a run from JSON: {e}"));
        assert_eq!(exit_code(&run), ExitCode::from(3));
        run.status = RunStatus::TimedOut;
        assert_eq!(exit_code(&run), ExitCode::from(124));
        (run.status, run.exit_code, run.exit_signal) = (RunStatus::Lost, None, Some("KILL".into()));
        assert_eq!(exit_code(&run), ExitCode::from(137));
    }
}
