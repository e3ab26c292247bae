//! TLS for `serve --tls-cert F --tls-key F`: rustls with the ring
//! provider (TLS 1.3 and 1.2, rustls's safe defaults, ALPN `http/1.1`,
//! no client certificates). The key file is a secret and is held to the
//! token-file rule (owner-private 0600, not a symbolic link); the
//! certificate chain is PEM, leaf first.

use crate::error::{Code, Error, Result};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::rustls;

/// Largest certificate chain or key file read.
const MAX_PEM_BYTES: u64 = 1024 * 1024;

fn config_error(path: &Path, what: &str) -> Error {
    Error::new(Code::Config, format!("{}: {what}", path.display()))
        .with("path", path.display().to_string())
}

fn read_bounded(mut f: impl Read, path: &Path) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    (&mut f)
        .take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", path, e))?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(config_error(path, "is over 1 MiB"));
    }
    Ok(bytes)
}

/// The server configuration from a PEM certificate chain and a PEM
/// private key (PKCS#8, PKCS#1 or SEC1).
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>> {
    let cert_file = std::fs::File::open(cert).map_err(|e| Error::io("open", cert, e))?;
    let cert_bytes = read_bounded(cert_file, cert)?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_bytes)
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| config_error(cert, &format!("is not a PEM certificate chain: {e}")))?;
    if chain.is_empty() {
        return Err(config_error(cert, "holds no PEM certificate"));
    }
    let key_file = crate::store::private_fs::open_private_read(key)?
        .ok_or_else(|| config_error(key, "does not exist"))?;
    let key_bytes = read_bounded(key_file, key)?;
    let private = PrivateKeyDer::from_pem_slice(&key_bytes)
        .map_err(|e| config_error(key, &format!("is not a PEM private key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::new(Code::Config, format!("TLS configuration: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            Error::new(
                Code::Config,
                format!(
                    "the TLS certificate and key do not form a usable pair ({} / {}): {e}",
                    cert.display(),
                    key.display()
                ),
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
