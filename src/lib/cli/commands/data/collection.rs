//! `data collection create|list`.

use crate::cli::ctx::Ctx;
use crate::error::{Code, Error, Result};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// `data collection` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum CollectionCommand {
    /// Define a collection (idempotent; a different definition is `collection_conflict`).
    Create(CreateArgs),
    /// List every collection, ordered by id.
    List,
}

/// Arguments of `data collection create`.
#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// A JSON file holding the definition (`-` for stdin).
    #[arg(long, value_name = "F", conflicts_with_all = ["id", "name", "description", "schema_version", "visibility", "max_record_bytes", "allowed_media_types"])]
    pub file: Option<PathBuf>,
    /// Collection id.
    #[arg(long, required_unless_present = "file")]
    pub id: Option<String>,
    /// Display name.
    #[arg(long)]
    pub name: Option<String>,
    /// Description.
    #[arg(long)]
    pub description: Option<String>,
    /// `schema.version` (default "1").
    #[arg(long, value_name = "V")]
    pub schema_version: Option<String>,
    /// `policy.visibility`: private (default) or public.
    #[arg(long)]
    pub visibility: Option<String>,
    /// `policy.max_record_bytes`.
    #[arg(long, value_name = "N")]
    pub max_record_bytes: Option<u64>,
    /// An allowed media type (repeatable); `--allowed-media-type ''` alone
    /// gives an empty allow-list, which denies everything.
    #[arg(long = "allowed-media-type", value_name = "TYPE")]
    pub allowed_media_types: Vec<String>,
}

const MAX_FILE: u64 = 1 << 20;

pub(super) fn run(ctx: &Ctx, c: CollectionCommand) -> Result<Value> {
    let node = super::open_node(ctx)?;
    match c {
        CollectionCommand::List => node.collections(),
        CollectionCommand::Create(a) => {
            let def = match &a.file {
                Some(f) => read_def(f)?,
                None => from_flags(&a),
            };
            node.create_collection(&def)
        }
    }
}

fn read_def(f: &std::path::Path) -> Result<Value> {
    use std::io::Read;
    let mut bytes = Vec::new();
    if f.as_os_str() == "-" {
        std::io::stdin()
            .take(MAX_FILE + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::new(Code::Io, format!("reading stdin: {e}")))?;
    } else {
        std::fs::File::open(f)
            .map_err(|e| Error::io("open", f, e))?
            .take(MAX_FILE + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read", f, e))?;
    }
    if bytes.len() as u64 > MAX_FILE {
        return Err(Error::new(
            Code::TooLarge,
            "collection definition is over 1 MiB",
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::new(
            Code::InvalidJson,
            format!("collection definition is not JSON: {e}"),
        )
    })
}

fn from_flags(a: &CreateArgs) -> Value {
    let mut d = Map::new();
    if let Some(id) = &a.id {
        d.insert("id".into(), id.clone().into());
    }
    if let Some(n) = &a.name {
        d.insert("name".into(), n.clone().into());
    }
    if let Some(n) = &a.description {
        d.insert("description".into(), n.clone().into());
    }
    if let Some(v) = &a.schema_version {
        d.insert("schema".into(), serde_json::json!({"version": v}));
    }
    let mut p = Map::new();
    if let Some(v) = &a.visibility {
        p.insert("visibility".into(), v.clone().into());
    }
    if let Some(n) = a.max_record_bytes {
        p.insert("max_record_bytes".into(), n.into());
    }
    if !a.allowed_media_types.is_empty() {
        let types: Vec<Value> = a
            .allowed_media_types
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| Value::String(t.clone()))
            .collect();
        p.insert("allowed_media_types".into(), Value::Array(types));
    }
    d.insert("policy".into(), Value::Object(p));
    Value::Object(d)
}
