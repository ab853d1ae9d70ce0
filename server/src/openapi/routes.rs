//! A resource's API routes, each documented by construction.

use crate::state::AppState;
use aide::axum::ApiRouter;
use aide::axum::routing::ApiMethodRouter;

/// The routes of one resource (each handler module's `routes()`), merged into
/// the API by `router.rs`. Built only through [`Routes::at`], which is aide's
/// `api_route`: there is no plain `.route` here, so no route can escape the
/// OpenAPI document. The paths are kept, so the coverage test can ask the
/// router itself which methods each serves.
pub struct Routes {
    router: ApiRouter<AppState>,
    paths: Vec<&'static str>,
}

impl Default for Routes {
    fn default() -> Self {
        Self { router: ApiRouter::new(), paths: Vec::new() }
    }
}

impl Routes {
    /// `path` (under `/api/v1`), answered by `methods` (`routing::get(list).post(create)`).
    pub fn at(mut self, path: &'static str, methods: ApiMethodRouter<AppState>) -> Self {
        self.router = self.router.api_route(path, methods);
        self.paths.push(path);
        self
    }

    /// Another resource's routes beside these.
    pub fn merge(mut self, other: Routes) -> Self {
        self.router = self.router.merge(other.router);
        self.paths.extend(other.paths);
        self
    }

    /// Every path, in the order they were added.
    pub fn paths(&self) -> &[&'static str] {
        &self.paths
    }

    pub fn into_router(self) -> ApiRouter<AppState> {
        self.router
    }
}
