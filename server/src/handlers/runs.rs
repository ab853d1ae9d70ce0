use crate::auth::Caller;
use crate::auth::middleware::Reauth;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath, ApiQuery, OptionalJson};
use crate::guarded::streams::{Output, Which};
use crate::handlers::Created;
use crate::state::AppState;
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::NoContent;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use domain::error::ApiError;
use domain::runs::{Run, RunRequest};
use domain::steps::snippet::SourceCandidates;
use futures::{Stream, StreamExt};
use serde::Deserialize;
use std::convert::Infallible;
use std::time::Duration;

pub async fn start(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(step_id): ApiPath<i64>,
    // No body: one run, no warm-up.
    OptionalJson(request): OptionalJson<RunRequest>,
) -> Result<Created<Vec<Run>>, AppError> {
    let runs = state.notebook.start_runs(&actor, step_id, request).await?;
    Ok(Created::new(runs))
}

/// The longest `?wait=` a script may ask for.
pub const MAX_WAIT_S: u64 = 60;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowQuery {
    /// Seconds to wait for the run to finish before answering (a long poll).
    wait: Option<u64>,
}

/// A run; with `?wait=30`, as soon as it has finished (or after 30 s, as it is then).
pub async fn show(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiQuery(query): ApiQuery<ShowQuery>,
) -> Result<Json<Run>, AppError> {
    Ok(Json(match query.wait {
        None | Some(0) => state.notebook.run(&actor, id).await?,
        Some(s) if s <= MAX_WAIT_S => state.notebook.wait_for_run(&actor, id, Duration::from_secs(s)).await?,
        Some(s) => {
            return Err(ApiError::invalid(format!("`wait` is at most {MAX_WAIT_S} seconds, not {s}.")).into());
        }
    }))
}

/// The GPUs' telemetry during the run (`domain::telemetry::Telemetry`).
pub async fn telemetry(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<domain::telemetry::Telemetry>, AppError> {
    Ok(Json(state.notebook.telemetry(&actor, id).await?))
}

/// The engine's own signals during the run (`domain::engine::series::EngineSeries`).
pub async fn engine(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<domain::engine::series::EngineSeries>, AppError> {
    Ok(Json(state.notebook.engine(&actor, id).await?))
}

pub async fn sweep(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<domain::sweeps::Sweep>, AppError> {
    Ok(Json(state.notebook.sweep(&actor, id).await?))
}

pub async fn cancel_sweep(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<domain::sweeps::Sweep>, AppError> {
    Ok(Json(state.notebook.cancel_sweep(&actor, id).await?))
}

pub async fn cancel(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<Run>, AppError> {
    Ok(Json(state.notebook.cancel_run(&actor, id).await?))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareQuery {
    /// `3,7`: two to eight run numbers, the first the reference.
    runs: String,
}

/// Runs side by side: what differs, and every metric they share against the first.
pub async fn compare(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<CompareQuery>,
) -> Result<Json<domain::run_pages::RunsCompared>, AppError> {
    let runs = domain::run_pages::compared_runs(&query.runs)?;
    Ok(Json(state.notebook.compare_runs(&actor, runs).await?))
}

/// A finished run, with everything kept of it here and its directory on the host.
pub async fn delete(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<NoContent, AppError> {
    state.notebook.delete_run(&actor, id).await?;
    Ok(NoContent)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct OutputQuery {
    /// `client` (the default: the command's output) or `server` (its server's log).
    #[serde(default)]
    stream: Which,
    #[serde(default)]
    offset: u64,
    limit: Option<u64>,
    /// Any value: answer as a file download.
    download: Option<String>,
}

/// The raw bytes of a run's output (both streams, as they arrived), from
/// `offset`, at most `limit` bytes. `X-Output-Length` tells the total so far.
pub async fn output(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiQuery(query): ApiQuery<OutputQuery>,
) -> Result<Response, AppError> {
    let output = state.notebook.output(&actor, id, query.stream, query.offset, query.limit).await?;
    Ok(output_response(id, &query, output))
}

/// A run's output through a share link that shows hosts (no sign-in).
pub async fn shared_output(
    State(state): State<AppState>,
    ApiPath((token, id)): ApiPath<(String, i64)>,
    ApiQuery(query): ApiQuery<OutputQuery>,
) -> Result<Response, AppError> {
    let output = state.notebook.shared_output(&token, id, query.stream, query.offset, query.limit).await?;
    Ok(output_response(id, &query, output))
}

fn output_response(id: i64, query: &OutputQuery, output: Output) -> Response {
    let len = match &output {
        Output::Whole(_, len) | Output::Range(_, len) => *len,
    };
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert("x-output-length", len.into());
    if query.download.is_some() {
        let suffix = if query.stream == Which::Server { "-server" } else { "" };
        let value = format!("attachment; filename=\"sleuth-run-{id}{suffix}.log\"");
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(header::CONTENT_DISPOSITION, value);
        }
    }
    match output {
        // A stream, never all at once: output can be gigabytes.
        Output::Whole(stream, _) => (headers, Body::from_stream(stream)).into_response(),
        Output::Range(bytes, _) => (headers, bytes).into_response(),
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct StreamQuery {
    #[serde(default)]
    stream: Which,
    #[serde(default)]
    offset: u64,
    /// Events without data, only their offsets: for a client that reads the
    /// bytes from `…/output` (as `sleuth run` does); nothing is rendered for it.
    #[serde(default)]
    offsets_only: bool,
}

/// Server-Sent Events with the run's output from `offset` as HTML (ANSI colors
/// kept, escaped): `event: output` per batch of complete lines, its id the byte
/// offset after it, then `event: end` once the run is over and all was sent.
/// A client that reconnects sends `Last-Event-ID` and resumes there. The
/// frames come from the run's shared feed (`runs::feed`).
pub async fn stream(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiQuery(query): ApiQuery<StreamQuery>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let resume = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    let reauth = Reauth::new(state.auth.clone(), headers);
    let offset = resume.unwrap_or(query.offset);
    let output = state.notebook.follow_run(&actor, id, query.stream, offset, query.offsets_only, reauth).await?;
    Ok(event_stream(with_keep_alive(output)))
}

/// A response of SSE frames.
fn event_stream(frames: impl Stream<Item = Bytes> + Send + 'static) -> Response {
    let headers = [
        (header::CONTENT_TYPE, "text/event-stream"),
        (header::CACHE_CONTROL, "no-cache"),
        // Proxies (nginx) pass each frame on at once.
        (header::HeaderName::from_static("x-accel-buffering"), "no"),
    ];
    (headers, Body::from_stream(frames.map(Ok::<_, Infallible>))).into_response()
}

/// `stream`, with an SSE comment after 15 s without anything, so proxies and
/// browsers keep a quiet connection open.
fn with_keep_alive(stream: impl Stream<Item = Bytes> + Send + 'static) -> impl Stream<Item = Bytes> + Send {
    let stream = Box::pin(stream);
    futures::stream::unfold(stream, |mut stream| async move {
        match tokio::time::timeout(Duration::from_secs(15), stream.next()).await {
            Ok(Some(bytes)) => Some((bytes, stream)),
            Ok(None) => None,
            Err(_) => Some((Bytes::from_static(b": keep-alive\n\n"), stream)),
        }
    })
}

/// Server-Sent Events for an investigation: `event: run` with the run as JSON
/// whenever one of its runs is queued, starts or ends (and `{"sync":true}` on
/// connecting if `?known=` is not the current runs fingerprint).
#[derive(Deserialize, schemars::JsonSchema)]
pub struct EventsQuery {
    /// The runs fingerprint the client shows (see `domain::runs::runs_fingerprint`).
    known: Option<u64>,
}

pub async fn investigation_events(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiQuery(query): ApiQuery<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let reauth = Reauth::new(state.auth.clone(), headers);
    let events = state.notebook.follow_investigation(&actor, &investigation, query.known, reauth).await?;
    Ok(event_stream(with_keep_alive(events)))
}

/// The files kept from the run's directory: name, size, sha256, download URL.
pub async fn artifacts(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<Vec<domain::runs::Artifact>>, AppError> {
    Ok(Json(state.notebook.artifacts(&actor, id).await?))
}

/// One artifact, as a download: an attachment of no particular type, so a
/// browser saves it and never renders it on Sleuth's origin (an HTML file a
/// run wrote cannot run script here).
pub async fn artifact(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath((run, artifact)): ApiPath<(i64, i64)>,
) -> Result<Response, AppError> {
    artifact_response(state.notebook.artifact(&actor, run, artifact).await?)
}

/// A run's artifact through a share link that shows hosts (no sign-in).
pub async fn shared_artifact(
    State(state): State<AppState>,
    ApiPath((token, run, artifact)): ApiPath<(String, i64, i64)>,
) -> Result<Response, AppError> {
    artifact_response(state.notebook.shared_artifact(&token, run, artifact).await?)
}

/// A run's telemetry through a share link that shows hosts (no sign-in).
pub async fn shared_telemetry(
    State(state): State<AppState>,
    ApiPath((token, run)): ApiPath<(String, i64)>,
) -> Result<Json<domain::telemetry::Telemetry>, AppError> {
    Ok(Json(state.notebook.shared_telemetry(&token, run).await?))
}

fn artifact_response((name, len, output): (String, u64, Output)) -> Result<Response, AppError> {
    let Output::Whole(bytes, _) = output else { return Err(ApiError::internal().into()) };
    let file = name.rsplit('/').next().unwrap_or("artifact");
    // The name as typed goes in `filename*` (RFC 5987); the plain `filename` keeps safe characters only.
    let plain: String =
        file.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    let encoded: String = file
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"._-".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }
        })
        .collect();
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    headers.insert(header::CONTENT_LENGTH, len.into());
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("default-src 'none'; sandbox"));
    let disposition = format!("attachment; filename=\"{plain}\"; filename*=UTF-8''{encoded}");
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok((headers, Body::from_stream(bytes)).into_response())
}

/// Runs of a step, oldest first.
pub async fn of_step(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(step_id): ApiPath<i64>,
) -> Result<Json<Vec<Run>>, AppError> {
    Ok(Json(state.notebook.step(&actor, step_id).await?.runs))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceQuery {
    file: String,
    line: u64,
}

/// The files on the run's host that a reference in its output may name. A
/// POST: it runs a search on the host, which no link or image may start.
pub async fn source(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(query): ApiJson<SourceQuery>,
) -> Result<Json<SourceCandidates>, AppError> {
    Ok(Json(state.notebook.source_candidates(&actor, id, &query.file, query.line).await?))
}

/// The routes of runs, sweeps and their output (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/shared/{token}/runs/{run_id}/output", routing::get_with(shared_output, crate::openapi::text))
        .at("/shared/{token}/runs/{run_id}/telemetry", routing::get(shared_telemetry))
        .at(
            "/shared/{token}/runs/{run_id}/artifacts/{artifact_id}",
            routing::get_with(shared_artifact, crate::openapi::file),
        )
        .at("/investigations/{id}/events", routing::get_with(investigation_events, crate::openapi::events))
        .at("/steps/{step_id}/runs", routing::get(of_step).post(start))
        .at("/runs/{run_id}", routing::get(show).delete(delete))
        .at("/runs/{run_id}/cancel", routing::post(cancel))
        .at("/runs/{run_id}/output", routing::get_with(output, crate::openapi::text))
        .at("/runs/{run_id}/stream", routing::get_with(stream, crate::openapi::events))
        .at("/runs/{run_id}/source", routing::post(source))
        .at("/runs/{run_id}/telemetry", routing::get(telemetry))
        .at("/runs/{run_id}/engine", routing::get(engine))
        .at("/runs/{run_id}/artifacts", routing::get(artifacts))
        .at("/runs/{run_id}/artifacts/{artifact_id}", routing::get_with(artifact, crate::openapi::file))
        .at("/compare", routing::get(compare))
        .at("/sweeps/{sweep_id}", routing::get(sweep))
        .at("/sweeps/{sweep_id}/cancel", routing::post(cancel_sweep))
}
