//! `explain`: why a Change's current subject does not qualify, from the
//! signed evidence. A text block on a terminal, one JSON value when piped
//! or with `--json`.

use super::Reply;
use super::change::AgentChangeArgs;
use crate::cli::ctx::Ctx;
use crate::error::{Code, Error, Result};
use crate::workflow::service::change::{ChangeSel, IdKind};
use crate::workflow::service::explain::{self, Explanation};
use crate::workflow::service::facade::{ExplainRequest, OperationRequest};
use crate::workflow::service::ops;

/// Arguments of `explain`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Shows only what the authority imported from the signed record of each task's \
attempt (exit status, duration, the bounded output tails, the runtime identity; a review's \
findings), never anything an agent said. Without a token, locally, the operator may explain \
any Change of the data directory; with one (or through an endpoint), an agent its own. Control characters in test output are shown escaped \
(\\x1b), never interpreted."
)]
pub struct ExplainArgs {
    /// The Change, here or through an endpoint.
    #[command(flatten)]
    pub change: AgentChangeArgs,
    /// Only this task of the current subject.
    #[arg(long, value_name = "TASK")]
    pub task: Option<String>,
    /// One JSON value, even on a terminal.
    #[arg(long, conflicts_with = "text")]
    pub json: bool,
    /// The text block, even when stdout is not a terminal.
    #[arg(long)]
    pub text: bool,
}

pub(super) fn run(ctx: &Ctx, a: ExplainArgs) -> Result<Reply> {
    // The operator, local and without an agent token, reads every Change
    // of the data directory (as `ls` does); an agent, with its token here
    // or through an endpoint, its own.
    let operator = ctx.token_file().is_none() && a.change.remote.authority()?.is_none();
    let value = if operator {
        let root = ctx.data_dir()?;
        let change = match a.change.sel.sel()? {
            ChangeSel::Id(id) => {
                ChangeSel::Id(ops::resolve_id_operator(root, IdKind::Change, &id)?)
            }
            other => other,
        };
        let task_id = match a.task {
            Some(t) => Some(ops::resolve_id_operator(root, IdKind::Task, &t)?),
            None => None,
        };
        super::to_value(&explain::operator(
            root,
            ctx.clock.as_ref(),
            &ExplainRequest { change, task_id },
        )?)?
    } else {
        let change = super::task::change_sel(ctx, &a.change)?;
        super::task::run(
            ctx,
            &a.change.remote,
            OperationRequest::Explain(ExplainRequest {
                change,
                task_id: a.task,
            }),
        )?
    };
    let as_text = a.text || (!a.json && crate::cli::output::stdout_is_terminal());
    let text = if as_text {
        let e: Explanation = serde_json::from_value(value.clone()).map_err(|e| {
            Error::new(
                Code::EndpointResponseInvalid,
                format!("the explanation is malformed: {e}"),
            )
        })?;
        Some(explain::render_text(&e))
    } else {
        None
    };
    Ok(Reply {
        value,
        exit_code: 0,
        text,
    })
}
