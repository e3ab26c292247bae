//! `data query`.

use crate::cli::ctx::Ctx;
use crate::data::QueryRequest;
use crate::error::Result;
use serde_json::{Map, Value};

/// Arguments of `data query`.
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// A whole QueryRequest as JSON (`{collections?, text?, where?, limit?, consistency?}`);
    /// any other key is refused (`invalid_input`).
    #[arg(conflicts_with_all = ["text", "where_", "limit", "collections"])]
    pub request: Option<String>,
    /// Full-text search words (ANDed, no prefix matching). The characters
    /// `"*:^(){}[]~+-` become spaces (`foo-bar` searches `foo` AND `bar`) and
    /// `OR`, `AND`, `NOT`, `NEAR` are plain words; a warning on stderr says
    /// when either happened.
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
    // The CLI refuses a key the request does not have (HTTP and MCP ignore
    // it, as the reference does), and says what the text search did to
    // the words it was given.
    let req = QueryRequest::from_json_strict(&body)?;
    let node = super::open_node(ctx)?;
    let out = node.query(&req)?;
    if let Some(Value::String(text)) = &req.text {
        let notes = crate::data::syntax::query_text_notes(text);
        if !notes.is_empty() {
            crate::cli::output::warning(&text_warning(&notes));
        }
    }
    Ok(out)
}

/// The stderr warning for a query text's notes: one JSON object
/// `{"warning","message","details"}`, the shape of an error object.
fn text_warning(n: &crate::data::syntax::QueryTextNotes) -> Value {
    let mut parts = Vec::new();
    if !n.replaced.is_empty() {
        let chars: Vec<String> = n.replaced.iter().map(|c| format!("{c:?}")).collect();
        parts.push(format!(
            "replaced {} by a space (words either side are searched separately, all ANDed)",
            chars.join(" ")
        ));
    }
    if !n.literal.is_empty() {
        parts.push(format!(
            "searched {} as plain words, not operators",
            n.literal.join(" ")
        ));
    }
    serde_json::json!({
        "warning": "query_text_rewritten",
        "message": parts.join("; "),
        "details": {"replaced": n.replaced.iter().map(|c| c.to_string()).collect::<Vec<_>>(), "literal": n.literal},
    })
}
