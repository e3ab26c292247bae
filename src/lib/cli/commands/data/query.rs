//! `data query`.

use crate::cli::ctx::Ctx;
use crate::data::QueryRequest;
use crate::error::Result;
use serde_json::{Map, Value};

/// Arguments of `data query`.
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// A whole QueryRequest as JSON (`{collections?, text?, where?, limit?, consistency?}`).
    #[arg(conflicts_with_all = ["text", "where_", "limit", "collections"])]
    pub request: Option<String>,
    /// Full-text search words (ANDed, no prefix matching).
    #[arg(long)]
    pub text: Option<String>,
    /// A JSON object matched as a subset of each record envelope.
    #[arg(long = "where", value_name = "JSON")]
    pub where_: Option<String>,
    /// Most hits (default 20, at most 100).
    #[arg(long)]
    pub limit: Option<u64>,
    /// Restrict to a collection (repeatable).
    #[arg(long = "collection", value_name = "ID")]
    pub collections: Vec<String>,
}

pub(super) fn run(ctx: &Ctx, a: &QueryArgs) -> Result<Value> {
    let body = match &a.request {
        Some(r) => super::json_object("the query request", r)?,
        None => {
            let mut m = Map::new();
            if let Some(t) = &a.text {
                m.insert("text".into(), t.clone().into());
            }
            if let Some(w) = &a.where_ {
                m.insert(
                    "where".into(),
                    Value::Object(super::json_object("--where", w)?),
                );
            }
            if let Some(l) = a.limit {
                m.insert("limit".into(), l.into());
            }
            if !a.collections.is_empty() {
                m.insert(
                    "collections".into(),
                    Value::Array(a.collections.iter().cloned().map(Value::String).collect()),
                );
            }
            m
        }
    };
    let node = super::open_node(ctx)?;
    node.query(&QueryRequest::from_json(&body))
}
