//! `ls`: the overview of Changes, tasks, attempts, receipts and landings.
//! The library builds it ([`crate::workflow::service::overview`]); this
//! file only chooses local or endpoint and renders: a plain table on a
//! terminal, one JSON value when piped or with `--json`, and under
//! `--watch` one redraw (terminal) or one JSON line (piped) per refresh.

use super::change::EndpointArgs;
use super::to_value;
use crate::cli::ctx::Ctx;
use crate::error::{Code, Error, Result};
use crate::workflow::service::change::IdKind;
use crate::workflow::service::explain;
use crate::workflow::service::facade::OperationRequest;
use crate::workflow::service::ops;
use crate::workflow::service::overview::{self, ChangeView, Overview, OverviewRequest};
use serde_json::Value;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Arguments of `ls`.
#[derive(Debug, clap::Args)]
pub struct LsArgs {
    /// The filters (the same struct the `overview` operation decodes).
    #[command(flatten)]
    pub filter: OverviewRequest,
    /// Print one JSON value even on a terminal.
    #[arg(long, conflicts_with = "table")]
    pub json: bool,
    /// Print the table even when stdout is not a terminal (a script or a
    /// pager showing it to a person).
    #[arg(long)]
    pub table: bool,
    /// Redraw until interrupted: on a terminal the screen is cleared and
    /// the table drawn again; piped, one JSON value per line per refresh.
    /// A failed refresh (a locked, migrating or missing data directory)
    /// prints its error object on stderr and the next refresh tries again.
    #[arg(long)]
    pub watch: bool,
    /// Time between refreshes under --watch, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 2000, requires = "watch",
          value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
    pub interval_ms: u64,
    /// Through a workspace endpoint: the agent's own profile's Changes only.
    #[command(flatten)]
    pub remote: EndpointArgs,
}

/// What `ls` prints once: a table on a terminal, else JSON.
pub(super) fn ls(ctx: &Ctx, a: LsArgs) -> Result<super::Reply> {
    let table = a.table || (!a.json && std::io::stdout().is_terminal());
    if a.watch {
        return watch(ctx, &a, table);
    }
    let o = read(ctx, &a)?;
    Ok(if table {
        super::Reply::text(render(&o))
    } else {
        super::Reply::from(to_value(&o)?)
    })
}

/// One overview: through the endpoint when one is named, else the local
/// data directory as the operator.
fn read(ctx: &Ctx, a: &LsArgs) -> Result<Overview> {
    match a.remote.client(ctx)? {
        Some(c) => {
            let v: Value = c.op(&OperationRequest::Overview(a.filter.clone()))?;
            serde_json::from_value(v).map_err(|e| {
                Error::new(
                    Code::EndpointResponseInvalid,
                    format!("the endpoint answered a malformed overview: {e}"),
                )
            })
        }
        None => {
            let root = ctx.data_dir()?;
            let mut filter = a.filter.clone();
            if let Some(id) = &mut filter.change {
                *id = ops::resolve_id_operator(root, IdKind::Change, id)?;
            }
            overview::operator(root, ctx.clock.as_ref(), &filter)
        }
    }
}

/// `--watch`: refreshes until interrupted or stdout closes.
#[allow(clippy::print_stderr)] // a failed refresh is reported and the watch goes on
fn watch(ctx: &Ctx, a: &LsArgs, table: bool) -> Result<super::Reply> {
    loop {
        match read(ctx, a) {
            Ok(o) => {
                let text = if table {
                    format!("\x1b[H\x1b[2J{}", render(&o))
                } else {
                    let mut t = serde_json::to_string(&o)
                        .map_err(|e| Error::internal(format!("cannot render output: {e}")))?;
                    t.push('\n');
                    t
                };
                let mut out = std::io::stdout().lock();
                if out
                    .write_all(text.as_bytes())
                    .and_then(|_| out.flush())
                    .is_err()
                {
                    // The reader went away: nothing more to show.
                    return Err(Error::new(Code::Io, "stdout closed"));
                }
            }
            Err(e) => {
                let t = serde_json::to_string(&e.to_json()).unwrap_or_default();
                let _ = writeln!(std::io::stderr().lock(), "{t}");
            }
        }
        std::thread::sleep(Duration::from_millis(a.interval_ms));
    }
}

/// Terminal text: control characters (escape sequences included) shown
/// as `?`, so nothing an agent wrote drives the terminal.
fn inert(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() || explain::is_bidi_control(c) {
                '?'
            } else {
                c
            }
        })
        .collect()
}

fn short(id: &str) -> String {
    inert(&id.chars().take(20).collect::<String>())
}

fn lease(ms: Option<i64>) -> String {
    match ms {
        None => "-".into(),
        Some(ms) if ms >= 60_000 => format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000),
        Some(ms) => format!("{}.{}s", ms / 1000, (ms % 1000) / 100),
    }
}

/// The table: one line per Change, its tasks indented below it, a blank
/// line between groups.
fn render(o: &Overview) -> String {
    let mut s = String::new();
    if o.changes.is_empty() {
        s.push_str("no changes\n");
        return s;
    }
    let _ = writeln!(
        s,
        "{:<16} {:<22} {:<16} {:<12} {:>3} {:<10} {:<9} TITLE",
        "GROUP", "CHANGE", "REPO", "AGENT", "V", "STATE", "QUALIFIED"
    );
    let mut last_group: Option<&Option<String>> = None;
    for c in &o.changes {
        if last_group.is_some_and(|g| g != &c.group) {
            s.push('\n');
        }
        last_group = Some(&c.group);
        change_lines(&mut s, c);
    }
    if o.truncated {
        let _ = writeln!(
            s,
            "(more than {} changes: narrow with filters)",
            overview::MAX_OVERVIEW_CHANGES
        );
    }
    s
}

fn change_lines(s: &mut String, c: &ChangeView) {
    let _ = writeln!(
        s,
        "{:<16} {:<22} {:<16} {:<12} {:>3} {:<10} {:<9} {}",
        c.group.as_deref().map_or_else(|| "-".into(), short),
        short(&c.change_id),
        short(&c.repository),
        short(&c.agent_id),
        c.version,
        c.state,
        if c.qualified { "yes" } else { "no" },
        c.title.as_deref().map_or_else(String::new, inert),
    );
    for t in &c.tasks {
        let _ = write!(
            s,
            "    {:<20} {:<10}{}",
            short(&t.step_id),
            t.state,
            if t.required { "" } else { " (optional)" }
        );
        if let Some(at) = &t.attempt {
            let _ = write!(
                s,
                "  attempt {} {} by {} fence {} lease {}",
                short(&at.attempt_id),
                at.state,
                short(&at.agent_id),
                at.fence,
                lease(at.lease_remaining_ms)
            );
        }
        s.push('\n');
    }
    for r in &c.receipts {
        let _ = writeln!(s, "    receipt v{} {}", r.version, short(&r.receipt_digest));
    }
    for l in &c.landings {
        let _ = writeln!(
            s,
            "    landing v{} {} {}",
            l.version,
            l.state,
            l.git_commit.as_deref().map_or_else(String::new, short)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::service::overview::{AttemptView, TaskView};

    fn change(title: &str, group: Option<&str>) -> ChangeView {
        ChangeView {
            change_id: "ch_1".into(),
            repository: "demo/basic".into(),
            profile: "default".into(),
            owner_id: "alice".into(),
            agent_id: "claude-1".into(),
            group: group.map(str::to_owned),
            title: Some(title.into()),
            version: 1,
            revision: None,
            state: "working".into(),
            qualified: false,
            subject_current: true,
            tasks: vec![TaskView {
                task_id: "t1".into(),
                step_id: "tests".into(),
                required: true,
                state: "claimed".into(),
                attempt: Some(AttemptView {
                    attempt_id: "at_1".into(),
                    state: "leased".into(),
                    owner_id: "alice".into(),
                    agent_id: "claude-1".into(),
                    executor: None,
                    fence: 3,
                    lease_expires_ms: 0,
                    lease_remaining_ms: Some(125_000),
                }),
            }],
            receipts: Vec::new(),
            landings: Vec::new(),
        }
    }

    #[test]
    fn the_table_shows_attempts_and_nothing_an_agent_wrote_drives_the_terminal() {
        let o = Overview {
            now_ms: 0,
            changes: vec![
                change("evil \x1b[2J\x07title", Some("g")),
                change("b", None),
            ],
            truncated: false,
        };
        let t = render(&o);
        assert!(!t.contains('\x1b') && !t.contains('\x07'), "{t:?}");
        assert!(t.contains("evil ?[2J?title"), "{t}");
        // A bidirectional override would reorder the row on the screen.
        assert_eq!(inert("a\u{202e}b\u{2066}c"), "a?b?c");
        assert!(
            t.contains("attempt at_1 leased by claude-1 fence 3 lease 2m05s"),
            "{t}"
        );
        // A blank line between the group and the Changes of none.
        assert_eq!(t.lines().filter(|l| l.is_empty()).count(), 1, "{t}");
        let empty = Overview {
            now_ms: 0,
            changes: Vec::new(),
            truncated: false,
        };
        assert_eq!(render(&empty), "no changes\n");
        assert_eq!(lease(Some(1_500)), "1.5s");
        assert_eq!(lease(None), "-");
    }
}
