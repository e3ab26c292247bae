//! `explain`: why a Change's current subject does not qualify, task by
//! task, from what the authority holds: the reason in words, and for a
//! command step what the authority imported from the signed record (exit
//! status, duration, the bounded output tails, the runtime identity); for
//! a review step its findings only (never the reviewer process's output).
//! Nothing an agent said is shown: only the signed record's fields.
//!
//! A separate read, never a field of `qualification` (whose shape the
//! spec fixes): it runs qualification's own read in the same snapshot and
//! explains its failures, so the two never disagree. Authorisation is
//! qualification's (another owner's Change is `forbidden`, another
//! profile's is `not_found` through the endpoint).

use super::ctx::AgentCtx;
use crate::clock::{Clock, unix_millis};
use crate::contract::Actor;
use crate::contract::{ActionClass, Next};
use crate::error::{Code, Error, Result};
use crate::store::Connection;
use crate::store::DataDir;
use crate::workflow::authority::admin::{self, Authenticated};
use crate::workflow::authority::change::{self, ChangeSel, Scope};
use crate::workflow::authority::{evaluate, evidence, receipt};
use crate::workflow::journal::{self, Now};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::Path;

/// Most findings of a review shown per task.
pub const MAX_FINDINGS: usize = 32;
/// Most bytes of a finding's message shown.
const MAX_FINDING_BYTES: usize = 2000;

pub use super::requests::ExplainRequest;

/// The answer: what keeps the current subject from qualifying.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Explanation {
    /// The Change.
    pub change_id: String,
    /// Its current version (0: never checkpointed).
    pub version: u64,
    /// The subject's revision, when there is one.
    pub revision: Option<String>,
    /// Whether the subject is current.
    pub subject_current: bool,
    /// Whether it qualifies (nothing to explain).
    pub qualified: bool,
    /// The subject as a whole, in words.
    pub summary: String,
    /// Each task that keeps it from qualifying (or the one asked about).
    pub tasks: Vec<ExplainedTask>,
    /// The typed next action (qualification's, as it answers it).
    pub next: NextView,
    /// The command of this CLI to run for `next` (none for `none`).
    pub hint: Option<String>,
}

/// One task that keeps the subject from qualifying.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainedTask {
    /// The task.
    pub task_id: String,
    /// Its step.
    pub step_id: String,
    /// Its action class.
    pub action_class: ActionClass,
    /// Whether the subject needs it.
    pub required: bool,
    /// Its qualification state.
    pub state: String,
    /// Its stable failure codes (qualification's).
    pub codes: Vec<String>,
    /// Why, in words.
    pub reason: String,
    /// Whether a signed record of its attempt was imported.
    pub record_imported: bool,
    /// What the import retained, when it was.
    pub record: Option<ExplainedRecord>,
}

/// What the authority imported from a task's signed record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainedRecord {
    /// `command` or `review`.
    pub kind: String,
    /// The retained transfer.
    pub transfer_digest: String,
    /// The attempt it answers.
    pub attempt_id: String,
    /// `passed` or `failed`.
    pub outcome: String,
    /// The record's status (`completed`, `timed_out`, … or a review failure).
    pub status: String,
    /// The runtime identity the collector observed.
    pub runtime: RuntimeIdentity,
    /// A command step's run (absent for a review).
    pub run: Option<RunFacts>,
    /// A review step's findings (absent for a command).
    pub review: Option<ReviewFacts>,
}

/// The runtime identity of a signed record's header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeIdentity {
    /// Runtime kind (`bwrap`, `oci`, `review`).
    pub runtime: String,
    /// Observed runtime identity digest.
    pub digest: Option<String>,
    /// The agent-task version that collected.
    pub agent_task_version: String,
}

/// A command's run as the record has it (tails bounded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFacts {
    /// Exit code, when it exited.
    pub exit_code: Option<i64>,
    /// Signal, when one ended it.
    pub signal: Option<i64>,
    /// Whether it ran out of time.
    pub timed_out: Option<bool>,
    /// Whether its output was capped.
    pub output_capped: Option<bool>,
    /// Wall time.
    pub duration_ms: Option<u64>,
    /// The last bytes of stdout.
    pub stdout_tail: Option<String>,
    /// The last bytes of stderr.
    pub stderr_tail: Option<String>,
    /// The record's short typed detail (a run that did not complete).
    pub detail: Option<String>,
}

/// A review's result: its failure and findings only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewFacts {
    /// The first reason it failed.
    pub failure: Option<String>,
    /// The first findings.
    pub findings: Vec<Finding>,
    /// How many findings the answers gave.
    pub findings_total: Option<u64>,
}

/// One review finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// Criterion.
    pub criterion: String,
    /// Severity.
    pub severity: String,
    /// Path, if given.
    pub path: Option<String>,
    /// Line, if given.
    pub line: Option<u64>,
    /// The reviewer's words (bounded).
    pub message: String,
}

/// A failure code, in words.
pub fn reason(code: &str) -> String {
    let s = match code {
        "task_pending" => "it has not run on this subject yet",
        "attempt_in_progress" => "an attempt is running under a live lease",
        "attempt_uncertain" => {
            "its attempt expired or was cancelled and is uncertain until reconciled"
        }
        "collector_not_passed" => "the collector ran it and it did not pass",
        "result_failed" => "its attempt finished without a passing result",
        "prior_subject_unresolved" => "an older subject's attempt for the same step is unresolved",
        "protected_path_changed" => "the revision changes a protected path",
        "receipt_missing" => "every required task passed but no receipt was created yet",
        "receipt_outdated" => "the receipt no longer matches the evidence",
        "unknown_state" => "its attempt is in a state the rules do not know",
        c if c.starts_with("review_") => "the review did not pass",
        _ => "its evidence does not satisfy the step",
    };
    s.to_owned()
}

fn text(m: &Map<String, Value>, k: &str) -> Option<String> {
    m.get(k).and_then(Value::as_str).map(str::to_owned)
}

/// What the import retained of a task's record, from the stored transfer.
fn record_of(
    dir: &DataDir,
    row: &crate::workflow::authority::collector::ImportedRow,
) -> Result<ExplainedRecord> {
    let (h, rec) = evidence::retained_record(dir, &row.transfer_digest, row.size)?;
    let mut m = Map::new();
    evidence::record_fields(&h.kind, &rec, &mut m);
    let (run, review) = if h.kind == "review" {
        let findings = rec
            .get("findings")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .take(MAX_FINDINGS)
                    .map(|f| Finding {
                        criterion: f["criterion"].as_str().unwrap_or_default().to_owned(),
                        severity: f["severity"].as_str().unwrap_or_default().to_owned(),
                        path: f["path"].as_str().map(str::to_owned),
                        line: f["line"].as_u64(),
                        message: evidence::head(
                            f["message"].as_str().unwrap_or_default(),
                            MAX_FINDING_BYTES,
                        )
                        .to_owned(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        (
            None,
            Some(ReviewFacts {
                failure: text(&m, "review_failure"),
                findings,
                findings_total: m.get("findings_total").and_then(Value::as_u64),
            }),
        )
    } else {
        (
            Some(RunFacts {
                exit_code: m.get("exit_code").and_then(Value::as_i64),
                signal: m.get("signal").and_then(Value::as_i64),
                timed_out: m.get("timed_out").and_then(Value::as_bool),
                output_capped: m.get("output_capped").and_then(Value::as_bool),
                duration_ms: m.get("duration_ms").and_then(Value::as_u64),
                stdout_tail: text(&m, "stdout_tail"),
                stderr_tail: text(&m, "stderr_tail"),
                detail: text(&m, "detail"),
            }),
            None,
        )
    };
    Ok(ExplainedRecord {
        kind: h.kind.clone(),
        transfer_digest: row.transfer_digest.clone(),
        attempt_id: row.attempt_id.clone(),
        outcome: row.outcome.clone(),
        status: row.status.clone(),
        runtime: RuntimeIdentity {
            runtime: h.collector_identity.runtime.clone(),
            digest: h
                .collector_identity
                .runtime_identity_digest
                .as_ref()
                .map(ToString::to_string),
            agent_task_version: h.collector_identity.agent_task_version.clone(),
        },
        run,
        review,
    })
}

/// `explain`: one read snapshot (qualification's, then the evaluation and
/// the retained records it names).
pub fn explain(cx: &AgentCtx<'_>, req: &ExplainRequest) -> Result<Explanation> {
    cx.read(|j, a, who, now| explain_in(cx.root, cx.scope.as_ref(), req, j, a, who, now))
}

/// The operator's `explain` of any Change of the data directory at `root`
/// (the dashboard: no token, the data directory is the operator's), read
/// in one snapshot without the lock, as [`super::overview::operator`]
/// reads; the Change is read as its owner reads it.
pub fn operator(root: &Path, clock: &dyn Clock, req: &ExplainRequest) -> Result<Explanation> {
    let (dir, ac) = admin::open_read(root)?;
    ac.begin_read()?;
    let jc = dir.open_read_cached(&journal::SPEC)?;
    if let Some(j) = &jc {
        j.begin_read()?;
    }
    let now = Now {
        ms: unix_millis(clock.now()),
    };
    let ch = change::select_in(&ac, &req.change, None)?;
    let owner = Authenticated {
        actor: Actor {
            owner_id: ch.owner_id.clone(),
            agent_id: ch.agent_id.clone(),
        },
        grant_generation: 0,
    };
    explain_in(root, None, req, jc.as_deref(), &ac, &owner, now)
}

fn explain_in(
    root: &Path,
    scope: Option<&Scope>,
    req: &ExplainRequest,
    j: Option<&Connection>,
    a: &Connection,
    who: &Authenticated,
    now: Now,
) -> Result<Explanation> {
    let sel: &ChangeSel = &req.change;
    {
        let q = receipt::qualify(root, sel, scope)(j, a, who, now)?;
        let ch = change::select_in(a, sel, scope)?;
        let next = serde_json::from_value::<NextView>(q["next"].clone()).unwrap_or(NextView {
            operation: "none".into(),
            task_id: None,
        });
        let qualified = q["qualified"] == true;
        let current = q["subject_current"] == true;
        let mut out = Explanation {
            change_id: ch.change_id.clone(),
            version: ch.version,
            revision: q["revision"].as_str().map(str::to_owned),
            subject_current: current,
            qualified,
            summary: String::new(),
            tasks: Vec::new(),
            hint: crate::contract::next_hint(&Next::from(&next), &ch.change_id),
            next,
        };
        if ch.version == 0 {
            out.summary = "the Change has no checkpoint yet: nothing has been checked".into();
            return Ok(out);
        }
        if !current {
            out.summary =
                "the subject is not current (a newer version or a changed context): checkpoint again"
                    .into();
            return Ok(out);
        }
        let s = change::current_subject(a, &ch)?;
        if let Some(t) = &req.task_id
            && !s.tasks.iter().any(|x| &x.task_id == t)
        {
            return Err(Error::new(
                Code::NotFound,
                "no such task in the change's current subject",
            )
            .with("task_id", t.clone()));
        }
        let mut codes: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for f in q["failures"].as_array().into_iter().flatten() {
            if let (Some(t), Some(c)) = (f["task_id"].as_str(), f["code"].as_str()) {
                let v = codes.entry(t.to_owned()).or_default();
                if !v.iter().any(|x| x == c) {
                    v.push(c.to_owned());
                }
            }
        }
        let evals = evaluate::evaluate(j, a, &s, now.ms)?;
        let mut dir: Option<DataDir> = None;
        for e in &evals {
            let t = &e.task;
            let asked = req.task_id.as_deref() == Some(t.task_id.as_str());
            let failing = codes.get(&t.task_id).cloned().unwrap_or_default();
            if !asked && (req.task_id.is_some() || failing.is_empty()) {
                continue;
            }
            let codes = if failing.is_empty() {
                e.code.map(|c| vec![c.to_owned()]).unwrap_or_default()
            } else {
                failing
            };
            let reason = match codes.first() {
                Some(c) => reason(c),
                None => "nothing: it succeeded".to_owned(),
            };
            let record = match &e.transfer {
                Some(row) => {
                    if dir.is_none() {
                        dir = Some(DataDir::open(root)?);
                    }
                    match &dir {
                        Some(d) => Some(record_of(d, row)?),
                        None => None,
                    }
                }
                None => None,
            };
            out.tasks.push(ExplainedTask {
                task_id: t.task_id.clone(),
                step_id: t.subject.step_id.clone(),
                action_class: t.action_class,
                required: t.required,
                state: e.state.to_owned(),
                codes,
                reason,
                record_imported: record.is_some(),
                record,
            });
        }
        out.summary = if qualified {
            "the subject qualifies: nothing keeps it from landing".into()
        } else if codes.is_empty() {
            "the subject does not qualify".into()
        } else {
            format!("{} task(s) keep the subject from qualifying", codes.len())
        };
        Ok(out)
    }
}

/// `next` as qualification's answer carries it: `operation`, and the
/// `task_id` of a `collector_claim` or `reconcile`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NextView {
    /// One of the five operations.
    pub operation: String,
    /// The task it applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

impl From<&NextView> for Next {
    fn from(n: &NextView) -> Next {
        let op: &'static str = match n.operation.as_str() {
            "collector_claim" => "collector_claim",
            "reconcile" => "reconcile",
            "collector_finalize" => "collector_finalize",
            "checkpoint" => "checkpoint",
            _ => "none",
        };
        match &n.task_id {
            Some(t) => Next::task(op, t.as_str()),
            None => Next::op(op),
        }
    }
}

/// Shows `s` inert on a terminal: control characters (C0 but newline
/// and tab, DEL, C1 such as a one-byte CSI) and bidirectional overrides
/// are escaped (`\x1b`, `\u{202e}`), and a backslash is doubled, so
/// test output cannot move the cursor, recolour or rewrite the lines
/// around it. (Invalid UTF-8 was already replaced when the record was
/// made: a record is JSON text.)
pub fn inert(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if (0x80..0xa0).contains(&(c as u32)) || is_bidi_control(c) => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// A bidirectional mark, embedding, override or isolate: invisible, and
/// able to reorder what a terminal shows around it (an agent-written
/// title or test output could make one line read as another).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c as u32, 0x200e | 0x200f | 0x202a..=0x202e | 0x2066..=0x2069)
}

fn indent(s: &str, prefix: &str) -> String {
    let body = inert(s);
    let body = body.strip_suffix('\n').unwrap_or(&body);
    body.lines().map(|l| format!("{prefix}{l}\n")).collect()
}

/// The first 12 characters of a digest (never a byte slice: the value
/// may come from an endpoint).
fn short(d: &str) -> String {
    d.chars().take(12).collect()
}

fn yes(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    }
}

/// The explanation as a text block for a terminal (no colour; every
/// value from a record shown inert).
pub fn render_text(e: &Explanation) -> String {
    let mut o = String::new();
    let rev = e
        .revision
        .as_deref()
        .map(|r| format!(", revision {}", short(r)))
        .unwrap_or_default();
    o.push_str(&format!(
        "Change {} (version {}{}): {}\n",
        inert(&e.change_id),
        e.version,
        inert(&rev),
        inert(&e.summary)
    ));
    for t in &e.tasks {
        o.push_str(&format!(
            "\n  task {} (step {}, {}{}): {}\n",
            inert(&t.task_id),
            inert(&t.step_id),
            t.state,
            if t.required { "" } else { ", optional" },
            inert(&t.reason)
        ));
        if !t.codes.is_empty() {
            o.push_str(&format!("    codes: {}\n", inert(&t.codes.join(", "))));
        }
        let Some(r) = &t.record else {
            o.push_str("    no signed record was imported for its attempt\n");
            continue;
        };
        o.push_str(&format!(
            "    signed record: {} {} ({}), transfer {}\n",
            inert(&r.kind),
            inert(&r.outcome),
            inert(&r.status),
            inert(&short(&r.transfer_digest))
        ));
        o.push_str(&format!(
            "    runtime {}, identity {}, agent-task {}\n",
            inert(&r.runtime.runtime),
            inert(r.runtime.digest.as_deref().unwrap_or("not observed")),
            inert(&r.runtime.agent_task_version)
        ));
        if let Some(run) = &r.run {
            let ended = match (run.exit_code, run.signal) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(s)) => format!("signal {s}"),
                (None, None) => "no exit status".to_owned(),
            };
            let took = run
                .duration_ms
                .map(|d| format!(" after {d} ms"))
                .unwrap_or_default();
            o.push_str(&format!(
                "    {ended}{took}; timed out: {}; output capped: {}\n",
                yes(run.timed_out),
                yes(run.output_capped)
            ));
            if let Some(d) = &run.detail {
                o.push_str(&format!("    detail: {}\n", inert(d)));
            }
            for (name, tail) in [("stderr", &run.stderr_tail), ("stdout", &run.stdout_tail)] {
                match tail.as_deref() {
                    Some(t) if !t.is_empty() => {
                        o.push_str(&format!("    {name} (last bytes):\n"));
                        o.push_str(&indent(t, "      | "));
                    }
                    _ => o.push_str(&format!("    {name}: empty\n")),
                }
            }
        }
        if let Some(rv) = &r.review {
            if let Some(f) = &rv.failure {
                o.push_str(&format!("    review failure: {}\n", inert(f)));
            }
            o.push_str(&format!(
                "    findings: {} (showing {})\n",
                rv.findings_total.unwrap_or(rv.findings.len() as u64),
                rv.findings.len()
            ));
            for f in &rv.findings {
                let at = match (&f.path, f.line) {
                    (Some(p), Some(l)) => format!(" {p}:{l}"),
                    (Some(p), None) => format!(" {p}"),
                    _ => String::new(),
                };
                o.push_str(&format!(
                    "      - [{}] {}{}: {}\n",
                    inert(&f.severity),
                    inert(&f.criterion),
                    inert(&at),
                    inert(&f.message)
                ));
            }
        }
    }
    let task = e
        .next
        .task_id
        .as_deref()
        .map(|t| format!(" {}", inert(t)))
        .unwrap_or_default();
    o.push_str(&format!("\nnext: {}{}", e.next.operation, task));
    match &e.hint {
        Some(h) => o.push_str(&format!(" (run: {})\n", inert(h))),
        None => o.push('\n'),
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_text_is_inert() {
        let s = "a\x1b[31mred\x07\r\u{9b}2J\u{202e}x\\y\nz\t";
        let i = inert(s);
        assert_eq!(i, "a\\x1b[31mred\\x07\\x0d\\u{9b}2J\\u{202e}x\\\\y\nz\t");
        assert!(!i.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
    }
}
