use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath, OptionalJson};
use crate::handlers::Created;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::response::NoContent;
use axum::response::Response;
use domain::error::ApiError;
use domain::hosts::{ConnectionReport, Host, HostImport, HostPatch, ImportReport, NewHost};
use serde::Deserialize;

pub async fn list(Caller(actor): Caller, State(state): State<AppState>) -> Result<Json<Vec<Host>>, AppError> {
    Ok(Json(state.notebook.hosts(&actor).await?))
}

pub async fn create(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiJson(new): ApiJson<NewHost>,
) -> Result<Created<Host>, AppError> {
    let host = state.notebook.add_host(&actor, new).await?;
    Ok(Created::at(format!("/api/v1/hosts/{}", host.name), host))
}

/// The pinned host keys as an OpenSSH known_hosts file (`ssh-keygen -lf -`,
/// `ssh -o UserKnownHostsFile=`).
pub async fn known_hosts(Caller(actor): Caller, State(state): State<AppState>) -> Result<Response, AppError> {
    let text = state.notebook.known_hosts(&actor).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}

pub async fn show(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Host>, AppError> {
    Ok(Json(state.notebook.host(&actor, &name).await?))
}

pub async fn update(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(new): ApiJson<NewHost>,
) -> Result<Json<Host>, AppError> {
    Ok(Json(state.notebook.update_host(&actor, &name, new).await?))
}

/// `{"price_per_hour": 3.2}` (`null` removes it): what the fields given say, the rest as it was.
pub async fn patch(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(patch): ApiJson<HostPatch>,
) -> Result<Json<Host>, AppError> {
    Ok(Json(state.notebook.patch_host(&actor, &name, patch).await?))
}

pub async fn delete(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<NoContent, AppError> {
    state.notebook.remove_host(&actor, &name).await?;
    Ok(NoContent)
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Trust {
    fingerprint: String,
}

pub async fn trust(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(trust): ApiJson<Trust>,
) -> Result<Json<Host>, AppError> {
    Ok(Json(state.notebook.trust_host(&actor, &name, &trust.fingerprint).await?))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Passphrase {
    passphrase: String,
}

pub async fn passphrase(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<Passphrase>,
) -> Result<NoContent, AppError> {
    state.notebook.set_passphrase(&actor, &name, body.passphrase).await?;
    Ok(NoContent)
}

pub async fn test(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<ConnectionReport>, AppError> {
    Ok(Json(state.notebook.test_host(&actor, &name).await?))
}

pub async fn import(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiJson(source): ApiJson<HostImport>,
) -> Result<Json<ImportReport>, AppError> {
    Ok(Json(state.notebook.import_hosts(&actor, source).await?))
}

#[derive(serde::Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaptureFacts {
    #[serde(default)]
    python: Option<String>,
}

/// Captures the host's facts now: GPUs, links, CPU/NUMA, package versions.
pub async fn capture_facts(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    // No body: the host's default python3.
    OptionalJson(request): OptionalJson<CaptureFacts>,
) -> Result<Json<domain::hosts::HostFacts>, AppError> {
    Ok(Json(state.notebook.capture_facts(&actor, &name, request.python).await?))
}

pub async fn facts(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<domain::hosts::HostFacts>, AppError> {
    let facts = state.notebook.facts(&actor, &name).await?;
    Ok(Json(facts.ok_or_else(|| {
        ApiError::not_found(format!("No facts captured for {name:?} yet; POST to this address to capture them."))
    })?))
}

/// One capture by id, as a run's `facts_id` names it.
pub async fn facts_by_id(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<domain::hosts::HostFacts>, AppError> {
    Ok(Json(state.notebook.facts_by_id(&actor, id).await?))
}

pub async fn access(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<domain::accounts::HostAccess>, AppError> {
    Ok(Json(state.notebook.host_access(&actor, &name).await?))
}

/// Who may run on the host; admins only.
pub async fn set_access(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(access): ApiJson<domain::accounts::HostAccess>,
) -> Result<Json<domain::accounts::HostAccess>, AppError> {
    Ok(Json(state.notebook.set_host_access(&actor, &name, access).await?))
}

/// The patches runs left on the host: dirty ones (new runs are refused
/// until an admin restores or accepts them), and any applied now.
pub async fn patches(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Vec<domain::steps::patch::PatchOnHost>>, AppError> {
    Ok(Json(state.notebook.host_patches(&actor, &name).await?))
}

/// Admins: a dirty patch's originals put back over whatever is there, and verified.
pub async fn restore_patch(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath((name, run)): ApiPath<(String, i64)>,
) -> Result<Json<domain::steps::patch::PatchOnHost>, AppError> {
    Ok(Json(state.notebook.settle_host_patch(&actor, &name, run, true).await?))
}

/// Admins: a dirty patch's host taken as it is.
pub async fn accept_patch(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath((name, run)): ApiPath<(String, i64)>,
) -> Result<Json<domain::steps::patch::PatchOnHost>, AppError> {
    Ok(Json(state.notebook.settle_host_patch(&actor, &name, run, false).await?))
}

/// The routes of hosts, their keys, access and facts (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/hosts", routing::get(list).post(create))
        .at("/hosts/import", routing::post(import))
        .at("/known_hosts", routing::get_with(known_hosts, crate::openapi::text))
        .at("/hosts/{name}", routing::get(show).put(update).patch(patch).delete(delete))
        .at("/hosts/{name}/trust", routing::post(trust))
        .at("/hosts/{name}/passphrase", routing::post(passphrase))
        .at("/hosts/{name}/test", routing::post(test))
        .at("/hosts/{name}/facts", routing::get(facts).post(capture_facts))
        .at("/hosts/{name}/access", routing::get(access).put(set_access))
        .at("/hosts/{name}/patches", routing::get(patches))
        .at("/hosts/{name}/patches/{run}/restore", routing::post(restore_patch))
        .at("/hosts/{name}/patches/{run}/accept", routing::post(accept_patch))
        .at("/facts/{id}", routing::get(facts_by_id))
}
