//! The node config file `DATA_DIR/data/node.json` (documented in
//! docs/data-node.md): file-collector roots and declared collections.

use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Name of the config file inside `DATA_DIR/data/`.
pub const FILE: &str = "node.json";

/// Upper bound on the config file size.
const MAX_BYTES: u64 = 1 << 20;

/// The config file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Format version; must be 1.
    pub version: u32,
    /// Directories the `file` collector may read under (absolute).
    #[serde(default)]
    pub file_roots: Vec<PathBuf>,
    /// Collection definitions asserted by `data init` and `serve`.
    #[serde(default)]
    pub collections: Vec<serde_json::Value>,
    /// Lets the `http` collector reach private, loopback and reserved
    /// addresses (off by default).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub http_allow_private_networks: bool,
}

impl NodeConfig {
    /// Reads the config (absent: empty, version 1).
    pub fn load(data_subdir: &Path) -> Result<NodeConfig> {
        let path = data_subdir.join(FILE);
        let f = match private_fs::open_nofollow_read(&path) {
            Ok(f) => f,
            Err(e) if e.code() == Code::NotFound => {
                return Ok(NodeConfig {
                    version: 1,
                    ..NodeConfig::default()
                });
            }
            Err(e) => return Err(e),
        };
        let mut bytes = Vec::new();
        use std::io::Read;
        f.take(MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read", &path, e))?;
        if bytes.len() as u64 > MAX_BYTES {
            return Err(Error::new(
                Code::Config,
                format!("{} is over 1 MiB", path.display()),
            ));
        }
        let cfg: NodeConfig = crate::wire::json::decode(
            &bytes,
            crate::wire::json::Limits::bytes(MAX_BYTES as usize),
            Code::Config,
            &format!("{} is not a valid node config", path.display()),
        )?;
        if cfg.version != 1 {
            return Err(Error::new(
                Code::Config,
                format!(
                    "{}: unsupported node config version {}",
                    path.display(),
                    cfg.version
                ),
            ));
        }
        if cfg.file_roots.len() > 256 || cfg.collections.len() > 1024 {
            return Err(Error::new(
                Code::Config,
                "node config lists too many roots or collections",
            ));
        }
        Ok(cfg)
    }

    /// Writes the config atomically (0600).
    pub fn save(&self, data_subdir: &Path) -> Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::internal(format!("cannot render node config: {e}")))?;
        bytes.push(b'\n');
        private_fs::write_atomic(&data_subdir.join(FILE), &bytes)
    }

    /// The roots, canonicalised; a root that does not resolve to a
    /// directory is a config error.
    pub fn canonical_roots(&self) -> Result<Vec<PathBuf>> {
        self.file_roots.iter().map(|r| canonical_root(r)).collect()
    }
}

/// Canonicalises one file root (it must be an existing directory).
pub fn canonical_root(r: &Path) -> Result<PathBuf> {
    let c = std::fs::canonicalize(r).map_err(|e| {
        Error::new(
            Code::Config,
            format!("file root {} cannot be resolved: {e}", r.display()),
        )
    })?;
    if !c.is_dir() {
        return Err(Error::new(
            Code::Config,
            format!("file root {} is not a directory", r.display()),
        ));
    }
    Ok(c)
}
