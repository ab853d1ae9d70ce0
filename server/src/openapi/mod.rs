//! `GET /api/v1/openapi.json`: the API described from the router itself.
//!
//! aide reads each route's handler signature: the body from `ApiJson<T>`, the
//! query from `ApiQuery<T>`, the answer from `Json<T>`, `Created<T>` or
//! `NoContent`, errors from `AppError`; the schemas are the domain types' own
//! (`schemars`, which follows their serde attributes). What a signature cannot
//! say — a path parameter's name, a body that is not JSON — is added here, once
//! per kind, and named on the route's line in its resource's `routes()`
//! (`routing::get_with(output, crate::openapi::text)`).

mod page;
mod routes;

pub use routes::Routes;

use crate::auth::Caller;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiPath, ApiQuery, OptionalJson};
use crate::handlers::Created;
use aide::generate::GenContext;
use aide::openapi::{
    self, MediaType, OpenApi, Operation, Parameter, ParameterData, ParameterSchemaOrContent, PathStyle, ReferenceOr,
    Response, SchemaObject, SecurityRequirement, SecurityScheme,
};
use aide::transform::TransformOperation;
use aide::{OperationInput, OperationOutput};
use axum::Json;
use axum::http::header;
use axum::response::IntoResponse;
use indexmap::IndexMap;
use schemars::JsonSchema;

/// The two ways a request says who it is: an API token, or a browser's session.
const SCHEMES: [&str; 2] = ["bearer", "session"];

/// Where `ApiPath<T>` leaves its schemas for [`finish`] to name from the route.
const PATH_TYPES: &str = "x-sleuth-path-types";

/// The document, made once when the router is built, and its page; served as they are.
#[derive(Clone)]
pub struct Document {
    json: bytes::Bytes,
    page: bytes::Bytes,
}

impl Document {
    /// The document as JSON Schema 2020-12 wants it (OpenAPI 3.1's dialect):
    /// schemars, through aide, writes draft-07, whose tuples (`items: [..]`,
    /// the `[name, value]` pairs of a run's `env`) 2020-12 spells `prefixItems`.
    pub fn of(api: OpenApi) -> Self {
        // Serializing types we built cannot fail; were it to, the route says so.
        let value = serde_json::to_value(&api).map(|mut value| {
            to_2020_12(&mut value);
            value
        });
        let json = value
            .as_ref()
            .map_err(|e| e.to_string())
            .and_then(|v| serde_json::to_vec_pretty(v).map_err(|e| e.to_string()));
        let json =
            json.unwrap_or_else(|e| format!("{{\"error\":\"the document did not serialize: {e}\"}}").into_bytes());
        let page = value.map(|v| page::render(&v)).unwrap_or_default();
        Self { json: json.into(), page: page.into() }
    }
}

fn to_2020_12(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(object) => {
            if object.get("items").is_some_and(serde_json::Value::is_array) {
                if let Some(items) = object.remove("items") {
                    object.insert("prefixItems".into(), items);
                }
                if let Some(rest) = object.remove("additionalItems") {
                    object.insert("items".into(), rest);
                }
            }
            object.values_mut().for_each(to_2020_12);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(to_2020_12),
        _ => {}
    }
}

pub async fn serve(axum::Extension(document): axum::Extension<Document>) -> axum::response::Response {
    ([(header::CONTENT_TYPE, "application/json")], document.json).into_response()
}

/// The document as a page (`page.rs`).
pub async fn page(axum::Extension(document): axum::Extension<Document>) -> axum::response::Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], document.page).into_response()
}

/// This document as a page.
pub fn html(op: TransformOperation<'_>) -> TransformOperation<'_> {
    non_json(op, &["text/html"], "The document as a page to read.")
}

/// This document's own route.
pub fn document(op: TransformOperation<'_>) -> TransformOperation<'_> {
    non_json(op, &["application/json"], "This document: OpenAPI 3.1.")
}

/// Completes what aide generated: the base path, path parameters named from
/// the route (`{id}`, `{run_id}`), the security schemes, the error body.
pub fn finish(mut api: OpenApi, prefix: &str) -> OpenApi {
    api.openapi = "3.1.0".into();
    api.info = openapi::Info {
        title: "Sleuth".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        description: Some(
            "Sleuth's JSON API v1. Errors are `{\"error\":{\"code\",\"message\"}}` with the status that fits the code \
             (docs/api.md). Requests carry `Authorization: Bearer TOKEN` (`sleuth token create`) or a session cookie."
                .into(),
        ),
        ..Default::default()
    };
    let components = api.components.get_or_insert_with(Default::default);
    components.security_schemes.insert(
        "bearer".into(),
        ReferenceOr::Item(SecurityScheme::Http {
            scheme: "bearer".into(),
            bearer_format: Some("an API token from `sleuth token create` or the /tokens page".into()),
            description: None,
            extensions: Default::default(),
        }),
    );
    components.security_schemes.insert(
        "session".into(),
        ReferenceOr::Item(SecurityScheme::ApiKey {
            location: openapi::ApiKeyLocation::Cookie,
            name: crate::auth::SESSION_COOKIE.into(),
            description: Some("a browser's session, from signing in".into()),
            extensions: Default::default(),
        }),
    );
    let paths = api.paths.take().unwrap_or_default();
    let mut prefixed = openapi::Paths::default();
    for (path, item) in paths.paths {
        let ReferenceOr::Item(mut item) = item else { continue };
        let names = path_names(&path);
        let operations = [
            ("get", &mut item.get),
            ("put", &mut item.put),
            ("post", &mut item.post),
            ("delete", &mut item.delete),
            ("patch", &mut item.patch),
        ];
        for (method, operation) in operations {
            let Some(operation) = operation else { continue };
            name_path_parameters(operation, &names);
            // What client generators name their methods by, and group them by.
            operation.operation_id = Some(operation_id(method, &path));
            operation.tags = path.split('/').find(|s| !s.is_empty()).map(|s| vec![s.to_string()]).unwrap_or_default();
        }
        prefixed.paths.insert(format!("{prefix}{path}"), ReferenceOr::Item(item));
    }
    api.paths = Some(prefixed);
    api
}

/// `get_runs_run_id_output` for `GET /runs/{run_id}/output`: unique, since a
/// method and a path are, and stable while the route is.
fn operation_id(method: &str, path: &str) -> String {
    let words = path.split(['/', '{', '}', '.']).filter(|w| !w.is_empty());
    std::iter::once(method).chain(words).collect::<Vec<_>>().join("_")
}

/// `{id}` and `{run_id}` in `/steps/{id}/runs/{run_id}`, in order.
fn path_names(path: &str) -> Vec<String> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(str::to_string)
        .collect()
}

/// The route's names on `ApiPath`'s schemas (one per name, in order); a
/// parameter the handler does not read is a string.
fn name_path_parameters(operation: &mut Operation, names: &[String]) {
    let types: Vec<schemars::Schema> = operation
        .extensions
        .shift_remove(PATH_TYPES)
        .and_then(|types| serde_json::from_value(types).ok())
        .unwrap_or_default();
    for (at, name) in names.iter().enumerate() {
        let schema = types.get(at).cloned().unwrap_or_else(|| schemars::json_schema!({"type": "string"}));
        operation.parameters.push(ReferenceOr::Item(Parameter::Path {
            parameter_data: ParameterData {
                name: name.clone(),
                description: None,
                required: true,
                format: ParameterSchemaOrContent::Schema(SchemaObject {
                    json_schema: schema,
                    example: None,
                    external_docs: None,
                }),
                extensions: Default::default(),
                deprecated: None,
                example: None,
                examples: Default::default(),
                explode: None,
            },
            style: PathStyle::Simple,
        }));
    }
}

/// The body of every error answer.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct ErrorBody {
    error: domain::error::ApiError,
}

impl OperationOutput for AppError {
    type Inner = Self;

    fn operation_response(ctx: &mut GenContext, _: &mut Operation) -> Option<Response> {
        Some(json_response::<ErrorBody>(
            ctx,
            "An error: its code and a sentence that says what to do. The status fits the code \
             (400 bad_request, 401 unauthenticated, 403 forbidden, 404 not_found, 409 conflict, 422 invalid, \
             503 store_unavailable, 507 store_full, …).",
        ))
    }

    fn inferred_responses(ctx: &mut GenContext, operation: &mut Operation) -> Vec<(Option<u16>, Response)> {
        Self::operation_response(ctx, operation).map(|r| (None, r)).into_iter().collect()
    }
}

impl<T: JsonSchema> OperationOutput for Created<T> {
    type Inner = T;

    fn operation_response(ctx: &mut GenContext, _: &mut Operation) -> Option<Response> {
        Some(json_response::<T>(ctx, "Created; `Location` names it where it has a URL of its own."))
    }

    fn inferred_responses(ctx: &mut GenContext, operation: &mut Operation) -> Vec<(Option<u16>, Response)> {
        Self::operation_response(ctx, operation).map(|r| (Some(201), r)).into_iter().collect()
    }
}

fn json_response<T: JsonSchema>(ctx: &mut GenContext, description: &str) -> Response {
    let schema = ctx.schema.subschema_for::<T>();
    Response {
        description: description.into(),
        content: IndexMap::from_iter([(
            "application/json".into(),
            MediaType {
                schema: Some(SchemaObject { json_schema: schema, example: None, external_docs: None }),
                ..Default::default()
            },
        )]),
        ..Default::default()
    }
}

impl OperationInput for Caller {
    fn operation_input(_: &mut GenContext, operation: &mut Operation) {
        operation.security =
            SCHEMES.iter().map(|scheme| SecurityRequirement::from_iter([(scheme.to_string(), Vec::new())])).collect();
    }
}

impl<T: JsonSchema> OperationInput for ApiJson<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        Json::<T>::operation_input(ctx, operation);
    }
}

impl<T: JsonSchema> OperationInput for OptionalJson<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        Json::<T>::operation_input(ctx, operation);
        if let Some(ReferenceOr::Item(body)) = operation.request_body.as_mut() {
            body.required = false;
        }
    }
}

impl<T: JsonSchema> OperationInput for ApiQuery<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        axum::extract::Query::<T>::operation_input(ctx, operation);
    }
}

impl<T: JsonSchema> OperationInput for ApiPath<T> {
    /// A handler's path type is a scalar or a tuple with no names: they come
    /// from the route, in [`finish`].
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        let schema = ctx.schema.subschema_for::<T>();
        let types = match schema.get("prefixItems").or_else(|| schema.get("items")) {
            Some(serde_json::Value::Array(items)) if schema.get("type").and_then(|t| t.as_str()) == Some("array") => {
                items.clone()
            }
            _ => vec![schema.to_value()],
        };
        operation.extensions.insert(PATH_TYPES.into(), serde_json::Value::Array(types));
    }
}

/// A 200 whose body is not JSON: what it is, as the route's line says.
fn non_json<'t>(mut op: TransformOperation<'t>, media: &[&str], description: &str) -> TransformOperation<'t> {
    let response = Response {
        description: description.into(),
        content: media.iter().map(|m| (m.to_string(), MediaType::default())).collect(),
        ..Default::default()
    };
    let responses = op.inner_mut().responses.get_or_insert_with(Default::default);
    responses.responses.insert(openapi::StatusCode::Code(200), ReferenceOr::Item(response));
    op
}

/// Plain text (a run's output, `known_hosts`, Prometheus metrics).
pub fn text(op: TransformOperation<'_>) -> TransformOperation<'_> {
    non_json(op, &["text/plain"], "Text.")
}

/// Server-Sent Events, until the end.
pub fn events(op: TransformOperation<'_>) -> TransformOperation<'_> {
    non_json(op, &["text/event-stream"], "Server-Sent Events (docs/api.md says which).")
}

/// A file as it was kept.
pub fn file(op: TransformOperation<'_>) -> TransformOperation<'_> {
    non_json(op, &["application/octet-stream"], "The file, byte for byte.")
}

/// An export: `?format=` picks which.
pub fn export(op: TransformOperation<'_>) -> TransformOperation<'_> {
    non_json(op, &["text/markdown", "text/html", "application/zip"], "The export, as a file.")
}

pub fn svg(op: TransformOperation<'_>) -> TransformOperation<'_> {
    non_json(op, &["image/svg+xml"], "An SVG chart.")
}

/// The audit log: JSON, or CSV with `?format=csv`.
pub fn json_or_csv<T: JsonSchema>(op: TransformOperation<'_>) -> TransformOperation<'_> {
    let mut op = op.response::<200, Json<T>>();
    let ok = op.inner_mut().responses.as_mut().and_then(|r| r.responses.get_mut(&openapi::StatusCode::Code(200)));
    if let Some(ReferenceOr::Item(response)) = ok {
        response.content.insert("text/csv".into(), MediaType::default());
    }
    op
}

/// `POST /extract`: benchmark output as text, or JSON with extractors.
pub fn text_or_json<T: JsonSchema>(mut op: TransformOperation<'_>) -> TransformOperation<'_> {
    let schema = aide::generate::in_context(|ctx| ctx.schema.subschema_for::<T>());
    let media = |schema| MediaType {
        schema: Some(SchemaObject { json_schema: schema, example: None, external_docs: None }),
        ..Default::default()
    };
    op.inner_mut().request_body = Some(ReferenceOr::Item(openapi::RequestBody {
        description: Some("The output as `text/plain`, or JSON with extractors of your own.".into()),
        content: IndexMap::from_iter([
            ("text/plain".into(), media(schemars::json_schema!({"type": "string"}))),
            ("application/json".into(), media(schema)),
        ]),
        required: true,
        extensions: Default::default(),
    }));
    op
}

/// The routes of the API's own document and its page (under `/api/v1`).
pub fn routes() -> Routes {
    use aide::axum::routing;
    Routes::default()
        .at("/openapi.json", routing::get_with(serve, document))
        .at("/openapi.html", routing::get_with(page, html))
}
