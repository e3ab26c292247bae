//! A test CA and a leaf for `localhost` and `127.0.0.1` signed by it
//! (`serve --tls-…`, the S3 store's `ca_file`).

use crate::common::TestEnv;
use std::os::unix::fs::PermissionsExt;

pub struct Pki {
    pub ca_pem: String,
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
}

/// A CA, and a leaf for `localhost` and `127.0.0.1` signed by it, written
/// as PEM files (the key 0600).
pub fn pki(env: &TestEnv) -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "agent-task test CA");
    let ca_cert = ca.self_signed(&ca_key).expect("ca cert");
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate().expect("leaf key");
    let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .expect("leaf params")
        .signed_by(&leaf_key, &issuer)
        .expect("leaf cert");
    let cert = env.path("leaf.pem");
    let key = env.path("leaf.key");
    std::fs::write(&cert, leaf.pem()).expect("write cert");
    std::fs::write(&key, leaf_key.serialize_pem()).expect("write key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    Pki {
        ca_pem: ca_cert.pem(),
        cert,
        key,
    }
}
