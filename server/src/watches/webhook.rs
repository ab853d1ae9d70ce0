//! Telling a webhook: one JSON POST (`client::http`), answered within
//! [`WITHIN`]. What it answered is kept, as a sentence, never the URL's path
//! (a Slack webhook's path is its secret).

use crate::client::http::{self, HttpError, Origin};
use hyper::Method;
use std::time::Duration;

/// A webhook that has not answered by then has failed.
pub const WITHIN: Duration = Duration::from_secs(10);

/// POSTs `body` to `url`: the status it answered.
pub async fn post(url: &str, body: &serde_json::Value) -> Result<u16, HttpError> {
    let (origin, path) = Origin::endpoint(url)?;
    let place = origin.place();
    let send = async {
        let response = origin.send(Method::POST, &path, None, Some(body)).await?;
        // Read to its end, so the connection closes cleanly; what it says is not kept.
        let (status, _) = http::body(&place, response).await?;
        Ok(status.as_u16())
    };
    tokio::time::timeout(WITHIN, send).await.map_err(|_| HttpError::Slow { place: place.clone(), within: WITHIN })?
}
