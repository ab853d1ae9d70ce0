use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::handlers::Created;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::response::NoContent;
use axum::response::Response;
use domain::error::ApiError;
use domain::metrics::{ExtractorDef, NewMeasurement, Overview, StoredMeasurement};
use domain::ports::Actor;

pub async fn list(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
) -> Result<Json<Vec<StoredMeasurement>>, AppError> {
    Ok(Json(state.notebook.measurements(&actor, &investigation).await?))
}

pub async fn create(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiJson(new): ApiJson<NewMeasurement>,
) -> Result<Created<StoredMeasurement>, AppError> {
    Ok(Created::new(state.notebook.add_measurement(&actor, &investigation, new).await?))
}

/// The investigation's chart (JSON with the groups and the SVG); 404 while nothing
/// was measured twice.
pub async fn overview(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiQuery(query): ApiQuery<domain::metrics::OverviewQuery>,
) -> Result<Json<Overview>, AppError> {
    Ok(Json(chart(&state, &actor, &investigation, &query).await?))
}

/// A step's history of a metric and where it changed.
pub async fn history(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(step): ApiPath<i64>,
    ApiQuery(query): ApiQuery<domain::history::HistoryQuery>,
) -> Result<Json<domain::history::History>, AppError> {
    Ok(Json(state.notebook.history(&actor, step, &query).await?))
}

/// A sweep step's frontier: each configuration's means, which nothing beats,
/// the best under the SLO, and its chart.
pub async fn frontier(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(step): ApiPath<i64>,
    ApiQuery(query): ApiQuery<domain::frontier::FrontierQuery>,
) -> Result<Json<domain::frontier::Frontier>, AppError> {
    Ok(Json(state.notebook.frontier(&actor, step, &query).await?))
}

/// The same chart as an SVG file, to embed or export as it is.
pub async fn chart_svg(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiQuery(query): ApiQuery<domain::metrics::OverviewQuery>,
) -> Result<Response, AppError> {
    let overview = chart(&state, &actor, &investigation, &query).await?;
    Ok(([(header::CONTENT_TYPE, "image/svg+xml")], overview.svg).into_response())
}

async fn chart(
    state: &AppState,
    actor: &Actor,
    investigation: &str,
    query: &domain::metrics::OverviewQuery,
) -> Result<Overview, AppError> {
    state.notebook.overview(actor, investigation, query).await?.ok_or_else(|| {
        ApiError::not_found("Nothing was measured in two runs of this investigation yet: no chart.").into()
    })
}

pub async fn delete(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> Result<NoContent, AppError> {
    state.notebook.delete_measurement(&actor, id).await?;
    Ok(NoContent)
}

pub async fn extractors(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
) -> Result<Json<Vec<ExtractorDef>>, AppError> {
    Ok(Json(state.notebook.extractors(&actor, &investigation).await?))
}

pub async fn add_extractor(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiJson(def): ApiJson<ExtractorDef>,
) -> Result<Created<ExtractorDef>, AppError> {
    Ok(Created::new(state.notebook.add_extractor(&actor, &investigation, def).await?))
}

pub async fn slo(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
) -> Result<Json<Option<domain::distributions::SloView>>, AppError> {
    Ok(Json(state.notebook.slo(&actor, &investigation).await?))
}

pub async fn set_slo(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiJson(input): ApiJson<domain::distributions::SloInput>,
) -> Result<Json<Option<domain::distributions::SloView>>, AppError> {
    Ok(Json(state.notebook.set_slo(&actor, &investigation, input).await?))
}

pub async fn guard_bounds(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
) -> Result<Json<domain::guards::GuardBounds>, AppError> {
    Ok(Json(state.notebook.guard_bounds(&actor, &investigation).await?))
}

pub async fn set_guard_bounds(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiJson(input): ApiJson<domain::guards::BoundsInput>,
) -> Result<Json<domain::guards::GuardBounds>, AppError> {
    Ok(Json(state.notebook.set_guard_bounds(&actor, &investigation, input).await?))
}

pub async fn derived(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
) -> Result<Json<Vec<domain::metrics::DerivedDef>>, AppError> {
    Ok(Json(state.notebook.derived_metrics(&actor, &investigation).await?))
}

pub async fn add_derived(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath(investigation): ApiPath<String>,
    ApiJson(def): ApiJson<domain::metrics::DerivedDef>,
) -> Result<Created<domain::metrics::DerivedDef>, AppError> {
    Ok(Created::new(state.notebook.add_derived(&actor, &investigation, def).await?))
}

pub async fn remove_derived(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath((investigation, name)): ApiPath<(String, String)>,
) -> Result<NoContent, AppError> {
    state.notebook.remove_derived(&actor, &investigation, &name).await?;
    Ok(NoContent)
}

pub async fn remove_extractor(
    Caller(actor): Caller,
    State(state): State<AppState>,
    ApiPath((investigation, name)): ApiPath<(String, String)>,
) -> Result<NoContent, AppError> {
    state.notebook.remove_extractor(&actor, &investigation, &name).await?;
    Ok(NoContent)
}

/// The routes of measurements, extractors, derived metrics, SLO, guard bounds, frontier and history (under `/api/v1`).
pub fn routes() -> crate::openapi::Routes {
    use aide::axum::routing;
    crate::openapi::Routes::default()
        .at("/investigations/{id}/measurements", routing::get(list).post(create))
        .at("/investigations/{id}/overview", routing::get(overview))
        .at("/investigations/{id}/chart.svg", routing::get_with(chart_svg, crate::openapi::svg))
        .at("/investigations/{id}/extractors", routing::get(extractors).post(add_extractor))
        .at("/investigations/{id}/extractors/{name}", routing::delete(remove_extractor))
        .at("/investigations/{id}/derived", routing::get(derived).post(add_derived))
        .at("/investigations/{id}/slo", routing::get(slo).put(set_slo))
        .at("/investigations/{id}/guards", routing::get(guard_bounds).put(set_guard_bounds))
        .at("/investigations/{id}/derived/{name}", routing::delete(remove_derived))
        .at("/measurements/{id}", routing::delete(delete))
        .at("/steps/{step_id}/frontier", routing::get(frontier))
        .at("/steps/{step_id}/history", routing::get(history))
}
