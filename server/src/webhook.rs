//! Telling a webhook: one JSON POST over HTTP/1.1 (TLS for https, the
//! system's roots), answered within [`WITHIN`]. What it answered is kept, as a
//! sentence, never the URL's path (a Slack webhook's path is its secret).

use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A webhook that has not answered by then has failed.
pub const WITHIN: Duration = Duration::from_secs(10);

/// POSTs `body` (JSON) to `url`: `Ok(status)` or why not.
pub async fn post(url: &str, body: &str) -> Result<u16, String> {
    tokio::time::timeout(WITHIN, send(url, body))
        .await
        .map_err(|_| format!("no answer within {} s", WITHIN.as_secs()))?
}

async fn send(url: &str, body: &str) -> Result<u16, String> {
    let (tls, rest) = match url.split_once("://") {
        Some(("https", rest)) => (true, rest),
        Some(("http", rest)) => (false, rest),
        _ => return Err("a webhook is an http:// or https:// URL".into()),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, p.parse::<u16>().map_err(|_| "its port is not a number".to_string())?),
        _ => (authority, if tls { 443 } else { 80 }),
    };
    let stream = tokio::net::TcpStream::connect((host, port)).await.map_err(|e| format!("cannot connect: {e}"))?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: sleuth\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    if tls {
        let mut roots = tokio_rustls::rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        let config = tokio_rustls::rustls::ClientConfig::builder_with_provider(Arc::new(
            tokio_rustls::rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let name = tokio_rustls::rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|_| format!("{host:?} is not a name TLS can check"))?;
        let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, stream)
            .await
            .map_err(|e| format!("TLS: {e}"))?;
        exchange(stream, &request).await
    } else {
        exchange(stream, &request).await
    }
}

/// Writes the request; reads the status line.
async fn exchange(mut stream: impl AsyncRead + AsyncWrite + Unpin, request: &str) -> Result<u16, String> {
    stream.write_all(request.as_bytes()).await.map_err(|e| format!("cannot send: {e}"))?;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(2).any(|w| w == b"\r\n") && head.len() < 8192 {
        let n = stream.read(&mut buf).await.map_err(|e| format!("cannot read the answer: {e}"))?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&head);
    line.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| "it answered, but not with an HTTP status".to_string())
}
