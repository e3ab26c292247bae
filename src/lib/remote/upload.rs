//! The collector upload client: what `collect --endpoint` and
//! `retry-upload --endpoint` send a retained transfer with (the server side
//! is the workspace route `…/agent-tasks/collector-upload`,
//! `docs/workspace-http.md`).

use crate::error::{Code, Error, Result};
use serde_json::Value;
use std::time::Duration;

/// Time limit of one upload.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// Uploads retained transfers to a workspace endpoint (the HTTP side of
/// `collect --endpoint` and `retry-upload --endpoint`): the exact bytes,
/// bearer = the agent token, answer = the authority's import result.
pub struct HttpUpload {
    /// Full URL of the collector-upload route.
    pub url: String,
    /// The agent token.
    pub token: String,
}

impl HttpUpload {
    /// The upload route of `endpoint` for `repository`/`profile`.
    pub fn new(endpoint: &str, repository: &str, profile: &str, token: String) -> HttpUpload {
        let seg = |s: &str| {
            percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
        };
        HttpUpload {
            url: format!(
                "{}/v1/hub/workspace/repositories/{}/profiles/{}/agent-tasks/collector-upload",
                endpoint.trim_end_matches('/'),
                seg(repository),
                seg(profile)
            ),
            token,
        }
    }
}

/// Largest upload answer read.
const MAX_UPLOAD_ANSWER: u64 = 1024 * 1024;

impl crate::collector::collect::Uploader for HttpUpload {
    fn upload(&self, bytes: &[u8]) -> Result<Value> {
        let agent: ureq::Agent = crate::net::client_builder(Some(UPLOAD_TIMEOUT))
            .build()
            .into();
        let failed = |m: String| Error::new(Code::UploadFailed, m);
        let mut resp = agent
            .post(&self.url)
            .header("authorization", &format!("Bearer {}", self.token))
            .header("content-type", "application/octet-stream")
            .send(bytes)
            .map_err(|e| failed(format!("the upload request failed: {e}")))?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_UPLOAD_ANSWER)
            .read_to_vec()
            .map_err(|e| failed(format!("reading the upload answer failed: {e}")))?;
        let v: Value = serde_json::from_slice(&body)
            .map_err(|_| failed(format!("the upload answer (HTTP {status}) is not JSON")))?;
        if status != 200 {
            let remote = v.get("error").and_then(Value::as_str).unwrap_or("unknown");
            let code = match status {
                401 => Code::Unauthorized,
                403 => Code::Forbidden,
                _ => Code::UploadFailed,
            };
            return Err(Error::new(
                code,
                format!("the endpoint refused the upload (HTTP {status}, {remote})"),
            )
            .with("remote_error", remote.chars().take(64).collect::<String>()));
        }
        match v.get("result") {
            Some(r) if v.get("operation").and_then(Value::as_str) == Some("collector_upload") => {
                Ok(r.clone())
            }
            _ => Err(failed(
                "the upload answer is not a collector_upload envelope".into(),
            )),
        }
    }
}
