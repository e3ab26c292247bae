//! The authority's signing identity: one current Ed25519 key in the data
//! directory, and every public key it ever had, kept for verification.
//!
//! ```text
//! DATA_DIR/attest/              0700
//!   signing-key.ed25519         0600  the current key's 32-byte seed, hex (never printed)
//!   public-keys.json            0600  {"version":1,"keys":[{key_id, public_key, created_at, retired_at}]}
//! ```
//!
//! The key id is the lowercase hex SHA-256 of the raw 32-byte public key
//! (the `keyid` of every DSSE signature this toolkit writes). `init`
//! creates the key; an existing data directory without one gets it from
//! the next `init`, `land` or `authority key rotate` (read commands,
//! `attest` included, never create it). Rotation writes the new seed
//! first and then the list, so a crash between the two leaves the new key
//! current and the list one entry short; the next writer adds the missing
//! entry and marks the old one retired. Old private keys are not kept.

use crate::error::{Code, Error, Result};
use crate::store::private_fs::{self, Kind};
use crate::store::{DataDir, DirLock};
use crate::wire::digest::Sha256Hex;
use crate::wire::ed25519::{self, Keypair};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Directory of the signing identity inside the data directory.
pub const KEY_DIR: &str = "attest";
/// The current key's seed.
pub const SEED_FILE: &str = "signing-key.ed25519";
/// Every public key, current and retired.
pub const KEYS_FILE: &str = "public-keys.json";
/// Largest public-key list.
pub const MAX_KEYS_FILE_BYTES: u64 = 1 << 20;
/// Most keys the list holds.
pub const MAX_KEYS: usize = 4096;
/// Largest public-key file `verify --key` reads.
pub const MAX_PUBLIC_KEY_FILE: u64 = 8192;

/// The key id: lowercase hex SHA-256 of the raw public key.
pub fn key_id(public_key: &[u8; 32]) -> String {
    Sha256Hex::digest(public_key).as_str().to_owned()
}

/// The current signing key.
pub struct AuthorityKey {
    keypair: Keypair,
    public_key: [u8; 32],
    key_id: String,
}

impl AuthorityKey {
    fn from_seed(seed: &[u8; 32]) -> AuthorityKey {
        let keypair = Keypair::from_seed(seed);
        let public_key = keypair.public_key();
        AuthorityKey {
            key_id: key_id(&public_key),
            keypair,
            public_key,
        }
    }

    /// The signing key pair.
    pub fn keypair(&self) -> &Keypair {
        &self.keypair
    }

    /// The raw public key.
    pub fn public_key(&self) -> &[u8; 32] {
        &self.public_key
    }

    /// The public key as 64 lowercase hex characters.
    pub fn public_key_hex(&self) -> String {
        data_encoding::HEXLOWER.encode(&self.public_key)
    }

    /// The key id.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }
}

/// One listed public key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRecord {
    /// Hex SHA-256 of the raw public key.
    pub key_id: String,
    /// The raw public key, 64 lowercase hex characters.
    pub public_key: String,
    /// When it became current (null: found current without a list entry).
    pub created_at: Option<String>,
    /// When a rotation replaced it (null: current).
    pub retired_at: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysFile {
    version: u32,
    keys: Vec<KeyRecord>,
}

fn key_dir(dir: &DataDir) -> PathBuf {
    dir.root().join(KEY_DIR)
}

fn read_seed(path: &Path) -> Result<[u8; 32]> {
    let mut s = String::new();
    private_fs::open_nofollow_read(path)?
        .take(200)
        .read_to_string(&mut s)
        .map_err(|e| Error::io("read", path, e))?;
    let v = data_encoding::HEXLOWER
        .decode(s.trim_end().as_bytes())
        .ok()
        .filter(|v| v.len() == 32)
        .ok_or_else(|| {
            Error::new(
                Code::IntegrityError,
                "the authority signing key file is malformed",
            )
            .with("path", path.display().to_string())
        })?;
    let mut seed = [0u8; 32];
    seed.copy_from_slice(&v);
    Ok(seed)
}

/// The current key, or `None` when the data directory has none yet
/// (read-only: creates nothing).
pub fn load(dir: &DataDir) -> Result<Option<AuthorityKey>> {
    let kdir = key_dir(dir);
    if !private_fs::check_private(&kdir, Kind::Dir)? {
        return Ok(None);
    }
    let path = kdir.join(SEED_FILE);
    if !private_fs::check_private(&path, Kind::File)? {
        return Ok(None);
    }
    Ok(Some(AuthorityKey::from_seed(&read_seed(&path)?)))
}

/// The current key, or `not_found` saying how to make one.
pub fn load_required(dir: &DataDir) -> Result<AuthorityKey> {
    load(dir)?.ok_or_else(|| {
        Error::new(
            Code::NotFound,
            "this data directory has no authority signing key yet",
        )
        .with(
            "fix",
            "run `agent-task authority key rotate` (or `agent-task init`)",
        )
    })
}

fn read_list(dir: &DataDir) -> Result<Vec<KeyRecord>> {
    let path = key_dir(dir).join(KEYS_FILE);
    if !private_fs::check_private(&path, Kind::File)? {
        return Ok(Vec::new());
    }
    let mut bytes = Vec::new();
    private_fs::open_nofollow_read(&path)?
        .take(MAX_KEYS_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", &path, e))?;
    if bytes.len() as u64 > MAX_KEYS_FILE_BYTES {
        return Err(Error::new(
            Code::TooLarge,
            "the public-key list is over 1 MiB",
        ));
    }
    let f: KeysFile = serde_json::from_slice(&bytes).map_err(|e| {
        Error::new(
            Code::IntegrityError,
            format!("the public-key list is malformed: {e}"),
        )
        .with("path", path.display().to_string())
    })?;
    if f.version != 1 || f.keys.len() > MAX_KEYS {
        return Err(Error::new(
            Code::IntegrityError,
            "the public-key list has an unsupported version or too many keys",
        ));
    }
    for k in &f.keys {
        let pk = ed25519::parse_public_key_hex(&k.public_key)?;
        if key_id(&pk) != k.key_id {
            return Err(Error::new(
                Code::IntegrityError,
                "a listed key id does not match its public key",
            )
            .with("key_id", k.key_id.clone()));
        }
    }
    Ok(f.keys)
}

fn write_list(dir: &DataDir, keys: Vec<KeyRecord>) -> Result<()> {
    if keys.len() > MAX_KEYS {
        return Err(Error::new(
            Code::TooLarge,
            format!("the public-key list holds at most {MAX_KEYS} keys"),
        ));
    }
    let bytes = serde_json::to_vec(&KeysFile { version: 1, keys })
        .map_err(|e| Error::internal(format!("cannot serialise the key list: {e}")))?;
    private_fs::write_atomic(&key_dir(dir).join(KEYS_FILE), &bytes)
}

/// Brings the list in line with the current key: the current key listed
/// and not retired, every other key retired.
fn reconcile(dir: &DataDir, current: &AuthorityKey, now: &str) -> Result<Vec<KeyRecord>> {
    let mut keys = read_list(dir)?;
    let mut changed = false;
    for k in keys.iter_mut() {
        if k.key_id != current.key_id && k.retired_at.is_none() {
            k.retired_at = Some(now.to_owned());
            changed = true;
        }
    }
    if !keys.iter().any(|k| k.key_id == current.key_id) {
        keys.push(KeyRecord {
            key_id: current.key_id.clone(),
            public_key: current.public_key_hex(),
            created_at: Some(now.to_owned()),
            retired_at: None,
        });
        changed = true;
    }
    if changed {
        write_list(dir, keys.clone())?;
    }
    Ok(keys)
}

fn write_new_seed(dir: &DataDir) -> Result<AuthorityKey> {
    let (_, seed) = Keypair::generate()?;
    private_fs::write_atomic(
        &key_dir(dir).join(SEED_FILE),
        format!("{}\n", data_encoding::HEXLOWER.encode(&seed)).as_bytes(),
    )?;
    Ok(AuthorityKey::from_seed(&seed))
}

/// The current key, created when missing (under the lock). Returns the key
/// and whether this call created it.
pub fn ensure(dir: &DataDir, _lock: &DirLock, now: &str) -> Result<(AuthorityKey, bool)> {
    private_fs::ensure_private_dir(&key_dir(dir))?;
    let (key, created) = match load(dir)? {
        Some(k) => (k, false),
        None => (write_new_seed(dir)?, true),
    };
    reconcile(dir, &key, now)?;
    Ok((key, created))
}

/// What `authority key rotate` did.
#[derive(Debug, Serialize)]
pub struct RotateOutput {
    /// The new current key id.
    pub key_id: String,
    /// Its public key, hex.
    pub public_key: String,
    /// The key it replaced (null: the data directory had none).
    pub previous_key_id: Option<String>,
    /// Every listed key after the rotation.
    pub keys: Vec<KeyRecord>,
}

/// Makes a new current key; the old public key stays listed (retired).
pub fn rotate(dir: &DataDir, _lock: &DirLock, now: &str) -> Result<RotateOutput> {
    private_fs::ensure_private_dir(&key_dir(dir))?;
    let previous = load(dir)?;
    if let Some(p) = &previous {
        // The old key is listed before its seed is replaced.
        reconcile(dir, p, now)?;
    }
    let key = write_new_seed(dir)?;
    let keys = reconcile(dir, &key, now)?;
    Ok(RotateOutput {
        key_id: key.key_id.clone(),
        public_key: key.public_key_hex(),
        previous_key_id: previous.map(|p| p.key_id),
        keys,
    })
}

/// What `authority key` prints.
#[derive(Debug, Serialize)]
pub struct ShowOutput {
    /// Always `ed25519`.
    pub algorithm: &'static str,
    /// The current key id.
    pub key_id: String,
    /// `hex` or `pem`.
    pub format: &'static str,
    /// The current public key in that format.
    pub public_key: String,
    /// Every listed key (the current one included).
    pub keys: Vec<KeyRecord>,
}

/// Public key formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// 64 lowercase hex characters.
    Hex,
    /// A PEM `PUBLIC KEY` (SubjectPublicKeyInfo, RFC 8410).
    Pem,
}

/// The current key and the list (read-only: no lock, creates nothing).
pub fn show(dir: &DataDir, format: Format) -> Result<ShowOutput> {
    let key = load_required(dir)?;
    let mut keys = read_list(dir)?;
    if !keys.iter().any(|k| k.key_id == key.key_id) {
        keys.push(KeyRecord {
            key_id: key.key_id.clone(),
            public_key: key.public_key_hex(),
            created_at: None,
            retired_at: None,
        });
    }
    let (format, public_key) = match format {
        Format::Hex => ("hex", key.public_key_hex()),
        Format::Pem => ("pem", public_key_pem(&key.public_key)?),
    };
    Ok(ShowOutput {
        algorithm: "ed25519",
        key_id: key.key_id,
        format,
        public_key,
        keys,
    })
}

/// A public key as PEM (`-----BEGIN PUBLIC KEY-----`, LF line endings).
pub fn public_key_pem(public_key: &[u8; 32]) -> Result<String> {
    use ed25519_dalek::pkcs8::EncodePublicKey;
    use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
    let vk = ed25519_dalek::VerifyingKey::from_bytes(public_key)
        .map_err(|_| Error::internal("the public key is not a curve point"))?;
    vk.to_public_key_pem(LineEnding::LF)
        .map_err(|e| Error::internal(format!("cannot encode PEM: {e}")))
}

/// Parses a public key given as PEM (`PUBLIC KEY`, Ed25519) or as 64
/// lowercase hex characters, surrounding whitespace ignored; the point is
/// checked strictly (canonical, torsion-free, not of small order).
pub fn parse_public_key(text: &str) -> Result<[u8; 32]> {
    let t = text.trim();
    if t.starts_with("-----BEGIN") {
        use ed25519_dalek::pkcs8::DecodePublicKey;
        let vk = ed25519_dalek::VerifyingKey::from_public_key_pem(t).map_err(|e| {
            Error::new(
                Code::InvalidInput,
                format!("not an Ed25519 PEM public key: {e}"),
            )
        })?;
        let pk = vk.to_bytes();
        ed25519::check_point(&pk).map_err(|e| {
            Error::new(
                Code::InvalidInput,
                format!("public key refused: {}", e.message()),
            )
        })?;
        Ok(pk)
    } else {
        ed25519::parse_public_key_hex(t)
    }
}

/// Reads a public-key file (PEM or hex, at most 8 KiB).
pub fn read_public_key_file(path: &Path) -> Result<[u8; 32]> {
    let f = std::fs::File::open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::new(Code::NotFound, format!("{} does not exist", path.display()))
                .with("path", path.display().to_string())
        } else {
            Error::io("open", path, e)
        }
    })?;
    let mut bytes = Vec::new();
    f.take(MAX_PUBLIC_KEY_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", path, e))?;
    if bytes.len() as u64 > MAX_PUBLIC_KEY_FILE {
        return Err(Error::new(
            Code::TooLarge,
            "a public-key file is at most 8 KiB",
        ));
    }
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| Error::new(Code::InvalidInput, "a public-key file is text (PEM or hex)"))?;
    parse_public_key(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_and_hex_round_trip_and_refusals() {
        let k = Keypair::from_seed(&[9u8; 32]);
        let pk = k.public_key();
        let pem = public_key_pem(&pk).expect("pem");
        assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----\n"), "{pem}");
        assert_eq!(parse_public_key(&pem).expect("pem"), pk);
        let hex = data_encoding::HEXLOWER.encode(&pk);
        assert_eq!(parse_public_key(&format!("{hex}\n")).expect("hex"), pk);
        assert!(parse_public_key(&hex.to_uppercase()).is_err());
        assert!(
            parse_public_key("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
                .is_err()
        );
        // The identity point is refused in both encodings.
        let mut ident = [0u8; 32];
        ident[0] = 1;
        assert!(parse_public_key(&data_encoding::HEXLOWER.encode(&ident)).is_err());
        assert_eq!(key_id(&pk), Sha256Hex::digest(&pk).as_str());
    }

    #[test]
    fn rfc8410_example_public_key_parses() {
        // RFC 8410 §10.1: the example Ed25519 public key in PEM.
        let pem = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n";
        let pk = parse_public_key(pem).expect("rfc 8410 key");
        assert_eq!(
            data_encoding::HEXLOWER.encode(&pk),
            "19bf44096984cdfe8541bac167dc3b96c85086aa30b6b6cb0c5c38ad703166e1"
        );
        assert_eq!(public_key_pem(&pk).expect("pem"), pem);
    }
}
