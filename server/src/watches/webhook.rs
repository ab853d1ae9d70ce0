//! Telling a webhook: one JSON POST, to the outside only.
//!
//! A webhook is a URL someone typed, and Sleuth's server sends to it: left
//! unchecked it is a way to make the server talk to what only it can reach
//! (loopback, the private network, cloud metadata at 169.254.169.254). So a
//! webhook's host is read as browsers read it (WHATWG: `127.1`, `0177.0.0.1`,
//! `0x7f.1` and `2130706433` are all 127.0.0.1; `[::ffff:127.0.0.1]` is too),
//! refused when made if it is an inside address, and at sending its name is
//! resolved once, every address checked, and the request sent to the checked
//! address (a name that resolves inside — or starts to — is refused then). An
//! admin's `--webhook-allow CIDR,…` lets internal receivers through.
//!
//! What happened is kept as a category ([`Delivery`]): never a socket's error
//! text (a port scanner's answer), never the URL's path (a Slack webhook's
//! path is its secret). At most [`READ_AT_MOST`] of the answer is read.

use crate::client::http::{HttpError, Origin};
use hyper::Method;
use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// A webhook that has not answered by then has failed.
pub const WITHIN: Duration = Duration::from_secs(10);
/// How much of a webhook's answer is read (the rest is dropped with the connection).
pub const READ_AT_MOST: usize = 4096;

/// Why a webhook is not allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("The webhook is an http:// or https:// URL (one line, up to 2000 characters).")]
    NotAUrl,
    #[error(
        "The webhook's host {host} is {kind}: a webhook reaches only the outside (an admin may allow inside ranges with --webhook-allow)."
    )]
    Inside { host: String, kind: &'static str },
    #[error("The webhook's host {0} cannot be found.")]
    Unknown(String),
}

/// What kind of inside address `ip` is, or none for the outside.
pub fn inside(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => inside_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return inside_v4(v4).or(Some("an IPv4-mapped address"));
            }
            let segments = v6.segments();
            // IPv4-compatible (::a.b.c.d, deprecated) reads as its IPv4 address.
            if segments[..6].iter().all(|s| *s == 0) && !v6.is_loopback() && !v6.is_unspecified() {
                return Some("an IPv4-compatible address");
            }
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if v6.is_multicast() {
                Some("multicast")
            } else if (segments[0] & 0xffc0) == 0xfe80 {
                Some("link-local")
            } else if (segments[0] & 0xfe00) == 0xfc00 {
                Some("private (unique local)")
            } else if segments[0] == 0x2002 || (segments[0] == 0x2001 && segments[1] == 0) || segments[0] == 0x64 {
                // 6to4, Teredo and NAT64 carry an IPv4 address inside.
                Some("a tunnel address")
            } else {
                None
            }
        }
    }
}

fn inside_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_broadcast() || a >= 240 {
        Some("reserved")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else {
        None
    }
}

/// Whether `ip` may be reached: the outside, or an admin's allowed range.
fn allowed(ip: IpAddr, allow: &[IpNet]) -> Result<(), &'static str> {
    match inside(ip) {
        None => Ok(()),
        Some(_) if allow.iter().any(|net| net.contains(&ip)) => Ok(()),
        Some(kind) => Err(kind),
    }
}

/// A webhook URL read and checked: its host and port, and the address when
/// the host is one. Names are checked when they are resolved.
pub struct Checked {
    pub url: url::Url,
    host: url::Host<String>,
    port: u16,
}

/// Reads `text` as a webhook: an http(s) URL whose host, if an address in any
/// spelling, is outside (or allowed).
pub fn check(text: &str, allow: &[IpNet]) -> Result<Checked, Refused> {
    if !domain::steps::command::is_host_url(text) {
        return Err(Refused::NotAUrl);
    }
    let url = url::Url::parse(text.trim()).map_err(|_| Refused::NotAUrl)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refused::NotAUrl);
    }
    let host = url.host().ok_or(Refused::NotAUrl)?.to_owned();
    let port = url.port_or_known_default().ok_or(Refused::NotAUrl)?;
    let ip = match &host {
        url::Host::Ipv4(v4) => Some(IpAddr::V4(*v4)),
        url::Host::Ipv6(v6) => Some(IpAddr::V6(*v6)),
        url::Host::Domain(name)
            if {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                name == "localhost" || name.ends_with(".localhost")
            } =>
        {
            Some(IpAddr::V4(Ipv4Addr::LOCALHOST))
        }
        url::Host::Domain(_) => None,
    };
    if let Some(ip) = ip {
        allowed(ip, allow).map_err(|kind| Refused::Inside { host: host.to_string(), kind })?;
    }
    Ok(Checked { url, host, port })
}

impl Checked {
    /// Every address it resolves to, each checked; the first to send to.
    pub async fn resolve(&self, allow: &[IpNet]) -> Result<SocketAddr, Refused> {
        let addrs: Vec<SocketAddr> = match &self.host {
            url::Host::Ipv4(v4) => vec![SocketAddr::new(IpAddr::V4(*v4), self.port)],
            url::Host::Ipv6(v6) => vec![SocketAddr::new(IpAddr::V6(*v6), self.port)],
            url::Host::Domain(name) => tokio::net::lookup_host((name.as_str(), self.port))
                .await
                .map_err(|_| Refused::Unknown(name.clone()))?
                .collect(),
        };
        for addr in &addrs {
            allowed(addr.ip(), allow)
                .map_err(|kind| Refused::Inside { host: format!("{} ({})", self.host, addr.ip()), kind })?;
        }
        addrs.into_iter().next().ok_or_else(|| Refused::Unknown(self.host.to_string()))
    }
}

/// What telling a webhook came to, as kept on the watch and shown to its readers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    Delivered(u16),
    /// It answered, but not 2xx.
    RefusedByReceiver(u16),
    NotReachable,
    TimedOut,
    NotAllowed(Refused),
}

impl std::fmt::Display for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Delivered(status) => write!(f, "delivered ({status})"),
            Self::RefusedByReceiver(status) => {
                write!(f, "refused by the receiver ({}xx)", status / 100)
            }
            Self::NotReachable => f.write_str("not reachable"),
            Self::TimedOut => write!(f, "timed out (no answer within {} s)", WITHIN.as_secs()),
            Self::NotAllowed(why) => write!(f, "not sent: {why}"),
        }
    }
}

/// POSTs `body` to `url`, to the address it was checked at; reads at most
/// [`READ_AT_MOST`] of the answer. Redirects are not followed.
pub async fn post(url: &str, body: &serde_json::Value, allow: &[IpNet]) -> Delivery {
    let checked = match check(url, allow) {
        Ok(checked) => checked,
        Err(why) => return Delivery::NotAllowed(why),
    };
    let send = async {
        let addr = match checked.resolve(allow).await {
            Ok(addr) => addr,
            Err(why) => return Delivery::NotAllowed(why),
        };
        let Ok((origin, path)) = Origin::endpoint(checked.url.as_str()) else {
            return Delivery::NotAllowed(Refused::NotAUrl);
        };
        let response = match origin.send_to(Some(addr), Method::POST, &path, None, Some(body)).await {
            Ok(response) => response,
            Err(HttpError::Slow { .. }) => return Delivery::TimedOut,
            Err(_) => return Delivery::NotReachable,
        };
        let status = response.status().as_u16();
        // Read a little of the answer, then drop the connection with the rest.
        let mut response = response;
        let mut read = 0;
        while read < READ_AT_MOST {
            match response.chunk().await {
                Ok(Some(piece)) => read += piece.len(),
                _ => break,
            }
        }
        if (200..300).contains(&status) { Delivery::Delivered(status) } else { Delivery::RefusedByReceiver(status) }
    };
    tokio::time::timeout(WITHIN, send).await.unwrap_or(Delivery::TimedOut)
}

/// A `--webhook-allow` entry that is neither a range nor an address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a CIDR range (10.0.0.0/8) or an address")]
pub struct NotARange(pub String);

/// `--webhook-allow 10.0.0.0/8,fd00::/8` (a lone address is its /32 or /128).
pub fn parse_allow(text: &str) -> Result<Vec<IpNet>, NotARange> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<IpNet>().or_else(|_| s.parse::<IpAddr>().map(IpNet::from)).map_err(|_| NotARange(s.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_an_inside_address_is_refused() {
        for url in [
            "http://127.0.0.1:9000/x",
            "http://localhost/x",
            "http://api.localhost/x",
            "http://2130706433/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://0x7f.1/",
            "http://0.0.0.0/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::1]:8080/",
            "http://[::]/",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]/",
            "http://[fd00::1]/",
            "http://224.0.0.1/",
            "http://100.64.0.1/",
            "http://[::127.0.0.1]/",
            "http://[2002:7f00:1::]/",
            "http://[64:ff9b::7f00:1]/",
        ] {
            assert!(matches!(check(url, &[]), Err(Refused::Inside { .. })), "{url}");
        }
        for fine in
            ["https://hooks.slack.com/services/T0/B0/x", "http://93.184.216.34/hook", "http://[2606:4700::1111]/"]
        {
            assert!(check(fine, &[]).is_ok(), "{fine}");
        }
        for bad in ["file:///etc/passwd", "gopher://x", "http://", "javascript:alert(1)"] {
            assert_eq!(check(bad, &[]).err(), Some(Refused::NotAUrl), "{bad}");
        }
    }

    #[test]
    fn an_admins_allow_list_lets_inside_ranges_through() {
        let allow = parse_allow("10.0.0.0/8, 127.0.0.1").unwrap();
        assert!(check("http://10.9.8.7/hook", &allow).is_ok());
        assert!(check("http://127.0.0.1:9000/hook", &allow).is_ok());
        assert!(check("http://127.0.0.2/hook", &allow).is_err(), "only what was allowed");
        assert!(check("http://192.168.0.1/hook", &allow).is_err());
        assert!(parse_allow("10.0.0.0/33").is_err() && parse_allow("ten").is_err());
    }

    #[test]
    fn what_happened_is_a_category_without_the_path_or_socket_text() {
        assert_eq!(Delivery::Delivered(204).to_string(), "delivered (204)");
        assert_eq!(Delivery::RefusedByReceiver(404).to_string(), "refused by the receiver (4xx)");
        assert_eq!(Delivery::NotReachable.to_string(), "not reachable");
        let refused = Delivery::NotAllowed(check("http://127.0.0.1/secret/path", &[]).err().unwrap()).to_string();
        assert!(refused.contains("loopback") && !refused.contains("secret"), "{refused}");
    }

    #[tokio::test]
    async fn a_name_that_resolves_inside_is_refused_at_sending() {
        // `localhost.` (a name, not the literal): resolved, then refused.
        let checked = check("http://localhost.:9/x", &[]);
        let refused = match checked {
            Ok(c) => c.resolve(&[]).await.err(),
            Err(e) => Some(e),
        };
        assert!(matches!(refused, Some(Refused::Inside { .. })), "{refused:?}");
        let delivery = post("http://localhost.:9/x", &serde_json::json!({}), &[]).await;
        assert!(matches!(delivery, Delivery::NotAllowed(_)), "{delivery:?}");
    }
}
