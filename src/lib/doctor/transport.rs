//! The probe transport (facts §15.2): fixed paths on the exact target
//! origin, manual redirects (every 3xx refused), one timeout per request, a
//! response cap, and a fixed classification order. The bearer is only ever
//! sent to `origin + fixed path`; proxies from the environment are ignored.

use super::Outcome;
use crate::error::Result;
use serde_json::{Map, Value};
use std::time::Duration;

/// Which Authorization header a probe carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// No Authorization header.
    None,
    /// The operator's bearer.
    Valid,
    /// A freshly generated random bearer.
    Wrong,
}

/// One probe request.
pub struct Probe {
    /// `GET` or `POST`.
    pub post: bool,
    /// Fixed path (with query) on the origin.
    pub path: String,
    /// Authorization header kind.
    pub auth: Auth,
    /// Body: content type and raw bytes.
    pub body: Option<(&'static str, Vec<u8>)>,
}

impl Probe {
    /// A `GET`.
    pub fn get(path: impl Into<String>, auth: Auth) -> Probe {
        Probe {
            post: false,
            path: path.into(),
            auth,
            body: None,
        }
    }

    /// A `POST` with a JSON body.
    pub fn post_json(path: impl Into<String>, auth: Auth, body: &Value) -> Probe {
        Probe {
            post: true,
            path: path.into(),
            auth,
            body: Some(("application/json", body.to_string().into_bytes())),
        }
    }

    /// A `POST` with raw bytes and an explicit content type.
    pub fn post_raw(
        path: impl Into<String>,
        auth: Auth,
        content_type: &'static str,
        bytes: &[u8],
    ) -> Probe {
        Probe {
            post: true,
            path: path.into(),
            auth,
            body: Some((content_type, bytes.to_vec())),
        }
    }
}

/// A response that passed classification: a JSON object body.
#[derive(Debug, Clone)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Every `WWW-Authenticate` value.
    pub www_authenticate: Vec<String>,
    /// The JSON object body.
    pub body: Map<String, Value>,
}

/// The HTTP client of one run.
pub struct Transport {
    origin: String,
    agent: ureq::Agent,
    max_bytes: u64,
    bearer: Option<String>,
    /// Set when a response URL differed from the request URL.
    pub followed_redirect_observed: bool,
}

impl Transport {
    /// A transport for `origin` (already reduced to an origin).
    pub fn new(
        origin: &str,
        timeout: Duration,
        max_bytes: u64,
        bearer: Option<String>,
    ) -> Transport {
        let config = probe_config(timeout);
        Transport {
            origin: origin.to_owned(),
            agent: ureq::Agent::new_with_config(config),
            max_bytes,
            bearer,
            followed_redirect_observed: false,
        }
    }

    /// Sends one probe and classifies the response. `Err` carries the
    /// check outcome (fail or inconclusive) that the response forces.
    pub fn send(&mut self, p: &Probe) -> std::result::Result<Answer, Outcome> {
        let url = format!("{}{}", self.origin, p.path);
        let auth_value = match p.auth {
            Auth::None => None,
            Auth::Valid => match &self.bearer {
                Some(b) => Some(format!("Bearer {b}")),
                None => return Err(Outcome::inconclusive("credential_missing")),
            },
            Auth::Wrong => match random_bearer() {
                Ok(b) => Some(format!("Bearer {b}")),
                Err(_) => return Err(Outcome::inconclusive("runner_internal_error")),
            },
        };
        let sent = if p.post {
            let mut rb = self.agent.post(&url).header("accept", "application/json");
            if let Some(a) = &auth_value {
                rb = rb.header("authorization", a);
            }
            let (ct, bytes) = match &p.body {
                Some((ct, b)) => (*ct, b.as_slice()),
                None => ("application/json", &b""[..]),
            };
            rb.header("content-type", ct).send(bytes)
        } else {
            let mut rb = self.agent.get(&url).header("accept", "application/json");
            if let Some(a) = &auth_value {
                rb = rb.header("authorization", a);
            }
            rb.call()
        };
        // 1. Transport exceptions.
        let mut resp = sent.map_err(transport_outcome)?;
        // 2. A response URL other than the request URL.
        {
            use ureq::ResponseExt;
            let got = resp.get_uri().to_string();
            if got != url {
                self.followed_redirect_observed = true;
                return Err(Outcome::fail("response_url_changed"));
            }
        }
        let status = resp.status().as_u16();
        // 3. Status range.
        if !(100..=599).contains(&status) {
            return Err(Outcome::inconclusive("invalid_response_status"));
        }
        // 4. Every redirect is refused.
        if (300..400).contains(&status) {
            return Err(Outcome::fail("redirect_refused").status(status));
        }
        // 5. Rate limits and server errors (except the auth-boundary 503).
        if status == 429 {
            return Err(Outcome::inconclusive("target_rate_limited").status(status));
        }
        let auth_503 = status == 503 && p.path.starts_with("/v1/data/") && p.auth != Auth::Valid;
        if status >= 500 && !auth_503 {
            return Err(Outcome::inconclusive("target_server_error").status(status));
        }
        // 6. The operator bearer rejected.
        if p.auth == Auth::Valid && (status == 401 || status == 403) {
            return Err(Outcome::inconclusive("credential_rejected").status(status));
        }
        // 7. JSON object body.
        let headers = resp.headers();
        let ct = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let essence = ct.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("application/json") {
            return Err(Outcome::fail("invalid_response_content_type").status(status));
        }
        if let Some(cl) = headers.get("content-length") {
            let n = cl
                .to_str()
                .ok()
                .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|s| s.parse::<u64>().ok());
            match n {
                None => {
                    return Err(Outcome::fail("invalid_response_content_length").status(status));
                }
                Some(n) if n > self.max_bytes => {
                    return Err(Outcome::inconclusive("response_too_large").status(status));
                }
                Some(_) => {}
            }
        }
        let www_authenticate = headers
            .get_all("www-authenticate")
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(self.max_bytes)
            .read_to_vec()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(_) => {
                    Outcome::inconclusive("response_too_large").status(status)
                }
                other => transport_outcome(other),
            })?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| Outcome::fail("invalid_response_utf8").status(status))?;
        let value: Value = serde_json::from_str(text)
            .map_err(|_| Outcome::fail("invalid_response_json").status(status))?;
        match value {
            Value::Object(body) => Ok(Answer {
                status,
                www_authenticate,
                body,
            }),
            _ => Err(Outcome::fail("response_not_json_object").status(status)),
        }
    }
}

/// The ureq configuration of the probes: no proxy, no automatic
/// redirects (a 3xx is returned and judged), statuses returned rather than
/// raised, one timeout per request.
fn probe_config(timeout: Duration) -> ureq::config::Config {
    crate::net::client_builder(Some(timeout))
        .user_agent(concat!("agent-task-doctor/", env!("CARGO_PKG_VERSION")))
        .build()
}

fn transport_outcome(e: ureq::Error) -> Outcome {
    let timeout = match &e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::TimedOut,
        _ => false,
    };
    if timeout {
        Outcome::inconclusive("request_timeout")
    } else {
        Outcome::inconclusive("request_failed")
    }
}

/// base64url (no padding) of 32 random bytes: 43 characters.
pub fn random_bearer() -> Result<String> {
    let b = crate::wire::random_bytes::<32>()?;
    Ok(data_encoding::BASE64URL_NOPAD.encode(&b))
}

/// The flat-error check: exact status, `error` equal to `code`, a non-empty
/// `message`, `details` absent or an object.
pub fn expect_error(a: &Answer, status: u16, code: &str) -> std::result::Result<(), Outcome> {
    if a.status != status {
        return Err(Outcome::fail("unexpected_http_status").status(a.status));
    }
    match a.body.get("error") {
        Some(Value::String(s)) if s == code => {}
        Some(Value::String(_)) => {
            return Err(Outcome::fail("unexpected_error_code").status(a.status));
        }
        _ => return Err(Outcome::fail("missing_error_code").status(a.status)),
    }
    match a.body.get("message") {
        Some(Value::String(s)) if !s.is_empty() => {}
        _ => return Err(Outcome::fail("missing_error_message").status(a.status)),
    }
    match a.body.get("details") {
        None | Some(Value::Object(_)) => Ok(()),
        Some(_) => Err(Outcome::fail("invalid_error_details").status(a.status)),
    }
}

/// True when a `WWW-Authenticate` value offers the Bearer scheme:
/// `(^|,\s*)Bearer(\s|$)`, case-insensitive.
pub fn has_bearer_challenge(values: &[String]) -> bool {
    values.iter().any(|v| {
        let lower = v.to_ascii_lowercase();
        let bytes = lower.as_bytes();
        let mut i = 0;
        while let Some(pos) = lower[i..].find("bearer") {
            let start = i + pos;
            let end = start + "bearer".len();
            let before_ok = start == 0 || lower[..start].trim_end().ends_with(',');
            let after_ok = end == bytes.len() || bytes[end].is_ascii_whitespace();
            if before_ok && after_ok {
                return true;
            }
            i = end;
        }
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_ignore_proxies_and_refuse_to_follow() {
        let c = probe_config(Duration::from_millis(5));
        assert!(c.proxy().is_none());
        assert_eq!(c.max_redirects(), 0);
        assert!(!c.http_status_as_error());
    }

    #[test]
    fn bearer_challenge_pattern() {
        let t = |s: &str| has_bearer_challenge(&[s.to_owned()]);
        assert!(t("Bearer"));
        assert!(t("bearer realm=\"agent-data-node\""));
        assert!(t("Basic realm=x, Bearer"));
        assert!(t("Basic realm=x,Bearer realm=y"));
        assert!(!t("Basic realm=x"));
        assert!(!t("Bearerx"));
        assert!(!t(" Bearer"));
        assert!(!t("xBearer realm=y"));
        assert!(!t("Basic Bearer"));
        assert!(!t(""));
        assert!(!has_bearer_challenge(&[]));
    }

    #[test]
    fn random_bearer_shape() {
        let b = random_bearer().expect("random");
        assert_eq!(b.len(), 43);
        assert_ne!(b, random_bearer().expect("random"));
    }

    #[test]
    fn flat_error_rules() {
        let a = |status, body: Value| Answer {
            status,
            www_authenticate: vec![],
            body: body.as_object().cloned().expect("object"),
        };
        let ok = a(400, serde_json::json!({"error":"x","message":"m"}));
        assert!(expect_error(&ok, 400, "x").is_ok());
        let r = |ans: &Answer| expect_error(ans, 400, "x").expect_err("fails").reason;
        assert_eq!(
            r(&a(401, serde_json::json!({"error":"x","message":"m"}))).as_deref(),
            Some("unexpected_http_status")
        );
        assert_eq!(
            r(&a(400, serde_json::json!({"message":"m"}))).as_deref(),
            Some("missing_error_code")
        );
        assert_eq!(
            r(&a(400, serde_json::json!({"error":"y","message":"m"}))).as_deref(),
            Some("unexpected_error_code")
        );
        assert_eq!(
            r(&a(400, serde_json::json!({"error":"x","message":""}))).as_deref(),
            Some("missing_error_message")
        );
        assert_eq!(
            r(&a(
                400,
                serde_json::json!({"error":"x","message":"m","details":[]})
            ))
            .as_deref(),
            Some("invalid_error_details")
        );
        assert!(
            expect_error(
                &a(
                    400,
                    serde_json::json!({"error":"x","message":"m","details":{}})
                ),
                400,
                "x"
            )
            .is_ok()
        );
    }
}
