//! Candidates as pull requests (GitHub) or merge requests (GitLab):
//! `propose` pushes a Change's candidate commit to `agent-task/<change>`
//! and opens (or updates) its request; a landed Change's request is
//! closed (`land --push`, `forge sync`); `forge sync` records the
//! forge-side merges of qualified trees as landings and pushes their
//! notes (docs/forge.md, section 5). The API rules (one header, no
//! redirect, bounded answers, typed errors, retries only where a repeat
//! changes nothing) are [`super::api_request`]'s.

use super::{
    Credentials, Method, NOTES_REF, Secret, api_request, candidate_branch, check_credential_file,
    check_url, git_fetch, git_push_to, helper_command, unavailable,
};
use crate::clock::Clock;
use crate::error::{Code, Error, Result};
use crate::workflow::service;
use crate::workflow::service::forge::{Forge, ForgeKind};
use crate::workflow::service::propose::{ForgeLanded, ForgeRequest, ProposalPlan, ProposeRequest};
use serde::Serialize;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// The largest answer read for a request or a list of them (a pull
/// request on GitHub is tens of kilobytes).
pub const MAX_REQUEST_ANSWER: u64 = 1024 * 1024;
/// The agent's title, at most this many characters are quoted.
pub const MAX_AGENT_TITLE: usize = 256;
/// The agent's body, at most this many characters are quoted.
pub const MAX_AGENT_BODY: usize = 8 * 1024;
/// The most commits one `forge sync` walks.
pub const MAX_SYNC_COMMITS: usize = 200;

/// `text` without control characters but newlines and tabs, cut to `max`
/// characters (an ellipsis line marks the cut).
fn bounded(text: &str, max: usize) -> String {
    let clean: String = text
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect();
    if clean.chars().count() <= max {
        return clean;
    }
    let mut out: String = clean.chars().take(max).collect();
    out.push_str("\n[… cut by agent-task]");
    out
}

/// `text` as a fenced code block whose fence (backticks) is longer than
/// any run of backticks in it, so nothing in it can close the block:
/// Markdown renders no `@mention`, image, link or HTML inside.
pub fn fenced(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}text\n{text}\n{fence}")
}

/// Product text for inline code: no backtick can end it early.
fn code(s: &str) -> String {
    format!("`{}`", s.replace('`', "'"))
}

/// The request's title: product text only (a forge renders a title as
/// plain text, but notifies nobody only when nobody is named in it).
pub fn request_title(p: &ProposalPlan) -> String {
    format!(
        "agent-task: Change {} v{}{}",
        p.proposal.change_id,
        p.proposal.change_version,
        if p.proposal.qualified {
            " (qualified)"
        } else {
            " (not qualified yet)"
        }
    )
}

/// The request's body (Markdown): the qualification (tasks, receipt
/// digest, attestation key id), the agent's title and description
/// quoted in a fenced block, and how to `verify` after the merge.
pub fn request_body(p: &ProposalPlan) -> String {
    let pr = &p.proposal;
    let mut b = format!(
        "agent-task proposes version {} of Change {} in {}, to land on {}.\n\n",
        pr.change_version,
        code(&pr.change_id),
        code(&pr.repo_id),
        code(&p.target)
    );
    match (&pr.receipt_digest, &p.not_qualified) {
        (Some(r), _) => b.push_str(&format!(
            "**Qualified.** Every required step passed on exactly this tree (revision {}); \
             receipt {}. The candidate commit carries the authority's signed statements in the \
             git note `{NOTES_REF}` (authority key id {}).\n\n",
            code(&pr.revision),
            code(r),
            code(&p.key_id)
        )),
        (None, why) => b.push_str(&format!(
            "**Not qualified yet** ({}). The commit statuses of context {} follow the \
             Change; do not merge before it is `success`.\n\n",
            why.as_deref().unwrap_or("no receipt"),
            code(&format!("agent-task/{}", p.profile))
        )),
    }
    b.push_str("| step | task | required | evidence (retained transfer) |\n|---|---|---|---|\n");
    for t in &p.tasks {
        b.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            code(&t.step_id),
            code(&t.task_id),
            if t.required { "yes" } else { "no" },
            t.transfer_digest
                .as_deref()
                .map(code)
                .unwrap_or_else(|| "—".into())
        ));
    }
    let agent = match (&p.title, &p.body) {
        (None, None) => None,
        (t, b) => Some(format!(
            "{}\n\n{}",
            bounded(t.as_deref().unwrap_or(""), MAX_AGENT_TITLE),
            bounded(b.as_deref().unwrap_or(""), MAX_AGENT_BODY)
        )),
    };
    if let Some(text) = agent {
        b.push_str(
            "\n### The Change as the agent described it\n\nQuoted, not rendered: the agent wrote it.\n\n",
        );
        b.push_str(&fenced(text.trim_end()));
        b.push('\n');
    }
    b.push_str(&format!(
        "\n### Checking it\n\nMerge only with \"require branches to be up to date before \
         merging\" on, so that the merged tree is this tested tree. After the merge, the operator \
         runs `agent-task forge sync --repo {}`, which writes the attestation note for the \
         merged commit and pushes it. Then anyone with the authority's public key checks the \
         target:\n\n```sh\ngit fetch origin {NOTES_REF}:{NOTES_REF}\nagent-task verify --commit \
         origin/{} --key authority.pem\n```\n",
        p.proposal.repo_id.replace('`', "'"),
        p.target.replace('`', "'")
    ));
    b
}

fn project_path(forge: &Forge) -> String {
    url::form_urlencoded::byte_serialize(forge.project.as_bytes()).collect()
}

/// The head branch's name (`agent-task/<change>`).
fn head_branch(change_id: &str) -> String {
    candidate_branch(change_id)
        .trim_start_matches("refs/heads/")
        .to_owned()
}

/// A request as the forge answered it.
#[derive(Debug, Clone)]
struct Answered {
    number: u64,
    url: String,
}

fn answered(forge: &Forge, what: &str, status: u16, v: &Value) -> Result<Answered> {
    let (n, u) = match forge.kind {
        ForgeKind::Github => ("number", "html_url"),
        ForgeKind::Gitlab => ("iid", "web_url"),
    };
    match (v[n].as_u64(), v[u].as_str()) {
        (Some(number), Some(url)) if number > 0 => Ok(Answered {
            number,
            url: url.chars().take(2048).collect(),
        }),
        _ => Err(unavailable(
            forge,
            what,
            Some(status),
            "the answer is not a pull or merge request",
        )),
    }
}

/// Opens the request (never retried: a repeat would open a second one;
/// the intent recorded before it makes a rerun look it up instead).
fn create(forge: &Forge, secret: &Secret, p: &ProposalPlan) -> Result<Answered> {
    let what = "open a pull or merge request";
    let head = head_branch(&p.proposal.change_id);
    let (url, body) = match forge.kind {
        ForgeKind::Github => (
            format!("{}/repos/{}/pulls", forge.api_url, forge.project),
            json!({"title": request_title(p), "head": head, "base": p.target,
                   "body": request_body(p), "maintainer_can_modify": false}),
        ),
        ForgeKind::Gitlab => (
            format!(
                "{}/projects/{}/merge_requests",
                forge.api_url,
                project_path(forge)
            ),
            json!({"source_branch": head, "target_branch": p.target,
                   "title": request_title(p), "description": request_body(p)}),
        ),
    };
    let (status, v) = api_request(
        forge,
        secret,
        Method::Post,
        &url,
        Some(&body),
        &[201],
        false,
        what,
        MAX_REQUEST_ANSWER,
    )?;
    answered(forge, what, status, &v)
}

/// The open request whose head is `agent-task/<change>`, if the forge
/// has one (GitHub `GET /repos/{o}/{r}/pulls?head=owner:branch&state=open`,
/// GitLab `GET /projects/:id/merge_requests?source_branch=…&state=opened`).
fn find_open(forge: &Forge, secret: &Secret, change_id: &str) -> Result<Option<Answered>> {
    let what = "look a pull or merge request up";
    let head = head_branch(change_id);
    let enc = |s: &str| -> String { url::form_urlencoded::byte_serialize(s.as_bytes()).collect() };
    let url = match forge.kind {
        ForgeKind::Github => {
            let owner = forge.project.split('/').next().unwrap_or_default();
            format!(
                "{}/repos/{}/pulls?head={}&state=open",
                forge.api_url,
                forge.project,
                enc(&format!("{owner}:{head}"))
            )
        }
        ForgeKind::Gitlab => format!(
            "{}/projects/{}/merge_requests?source_branch={}&state=opened",
            forge.api_url,
            project_path(forge),
            enc(&head)
        ),
    };
    let (status, v) = api_request(
        forge,
        secret,
        Method::Get,
        &url,
        None,
        &[200],
        true,
        what,
        MAX_REQUEST_ANSWER,
    )?;
    let list = v
        .as_array()
        .ok_or_else(|| unavailable(forge, what, Some(status), "the answer is not a list"))?;
    list.first()
        .map(|r| answered(forge, what, status, r))
        .transpose()
}

/// Updates the request: title and body (`content`), and its state
/// (`open` or `closed`). GitHub `PATCH /repos/{o}/{r}/pulls/{number}`,
/// GitLab `PUT /projects/:id/merge_requests/:iid` with `state_event`.
fn update(
    forge: &Forge,
    secret: &Secret,
    number: u64,
    content: Option<&ProposalPlan>,
    state: &str,
) -> Result<Answered> {
    let what = if state == "closed" {
        "close a pull or merge request"
    } else {
        "update a pull or merge request"
    };
    let (method, url, mut body) = match forge.kind {
        ForgeKind::Github => (
            Method::Patch,
            format!("{}/repos/{}/pulls/{number}", forge.api_url, forge.project),
            json!({"state": state}),
        ),
        ForgeKind::Gitlab => (
            Method::Put,
            format!(
                "{}/projects/{}/merge_requests/{number}",
                forge.api_url,
                project_path(forge)
            ),
            json!({"state_event": if state == "closed" { "close" } else { "reopen" }}),
        ),
    };
    if let Some(p) = content {
        body["title"] = request_title(p).into();
        let key = match forge.kind {
            ForgeKind::Github => "body",
            ForgeKind::Gitlab => "description",
        };
        body[key] = request_body(p).into();
    }
    let (status, v) = api_request(
        forge,
        secret,
        method,
        &url,
        Some(&body),
        &[200],
        true,
        what,
        MAX_REQUEST_ANSWER,
    )?;
    answered(forge, what, status, &v)
}

/// `propose`'s request part of the output.
#[derive(Debug, Serialize)]
pub struct RequestOutput {
    /// `pull_request` (GitHub) or `merge_request` (GitLab).
    pub kind: &'static str,
    /// Its number (GitHub) or iid (GitLab).
    pub number: u64,
    /// Its web URL.
    pub url: String,
    /// `opened` (this run opened it), `found` (an earlier run's opening
    /// was answered by the forge but not recorded: found by its head
    /// branch and updated), `updated` (a new subject or new text),
    /// `unchanged`.
    pub action: &'static str,
}

/// `propose`'s report.
#[derive(Debug, Serialize)]
pub struct ProposeOutput {
    /// The Change.
    pub change_id: String,
    /// The proposed version.
    pub change_version: u64,
    /// Its revision (the candidate commit's tree).
    pub revision: String,
    /// Whether the subject qualified (then the commit has its note).
    pub qualified: bool,
    /// Why it does not (`--unqualified`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_qualified: Option<String>,
    /// The receipt.
    pub receipt_digest: Option<String>,
    /// The candidate commit.
    pub git_commit: String,
    /// The branch it was pushed to.
    pub branch: String,
    /// Whether this run pushed it (false: an earlier run had).
    pub pushed: bool,
    /// The remote.
    pub remote_url: String,
    /// The note on the candidate commit (null when not qualified).
    pub attestation: Value,
    /// The pull or merge request.
    pub request: RequestOutput,
}

/// `agent-task propose`: the candidate commit of the Change's current
/// subject (qualified, or with `--unqualified` a fresh one that is not
/// yet) written as `land` would and recorded, pushed with git to
/// `agent-task/<change>` (forced: the branch is agent-task's) with the
/// notes, then its request opened, or the Change's request updated. The
/// target branch does not move. Each step is recorded before the next
/// leaves the machine, so a rerun after a failure completes it once: the
/// same commit, no second request (an opening that was not recorded is
/// looked up by its head branch).
pub fn propose(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    req: &ProposeRequest,
) -> Result<ProposeOutput> {
    // Before anything is written: a forge, and a credential that passes.
    let forge = service::forge::forge_of(root, &req.repo_id)?
        .ok_or_else(|| service::forge::no_forge(&req.repo_id))?;
    check_url("the forge's remote URL", &forge.remote_url)?;
    check_url("the forge's API URL", &forge.api_url)?;
    check_credential_file(&forge.credential)?;
    let plan = service::propose::prepare(root, timeout, clock, req)?;
    let p = &plan.proposal;
    let branch = candidate_branch(&p.change_id);
    let pushed = p.state != "pushed";
    if pushed {
        let helper = helper_command(root, &req.repo_id)?;
        git_push_to(
            &plan.source,
            &plan.forge,
            &helper,
            &format!("+{}:{branch}", p.git_commit),
        )?;
        if p.qualified {
            git_push_to(
                &plan.source,
                &plan.forge,
                &helper,
                &format!("{NOTES_REF}:{NOTES_REF}"),
            )?;
        }
        service::propose::mark_pushed(root, timeout, clock, p)?;
    }
    let secret = Credentials::default().secret(&plan.forge, clock)?;
    let (answered, action) = match &plan.request {
        None => open(root, timeout, clock, &plan, &secret, false)?,
        Some(r) if r.state == "opening" => open(root, timeout, clock, &plan, &secret, true)?,
        Some(r) => {
            let number = r
                .number
                .ok_or_else(|| Error::internal("an open request without a number"))?;
            if r.state == "open"
                && r.head_sha.as_deref() == Some(p.git_commit.as_str())
                && r.change_version == Some(p.change_version)
            {
                (
                    Answered {
                        number,
                        url: r.url.clone().unwrap_or_default(),
                    },
                    "unchanged",
                )
            } else {
                let a = update(&plan.forge, &secret, number, Some(&plan), "open")?;
                record_open(root, timeout, clock, &plan, &a)?;
                (a, "updated")
            }
        }
    };
    Ok(ProposeOutput {
        change_id: p.change_id.clone(),
        change_version: p.change_version,
        revision: p.revision.clone(),
        qualified: p.qualified,
        not_qualified: plan.not_qualified.clone(),
        receipt_digest: p.receipt_digest.clone(),
        git_commit: p.git_commit.clone(),
        branch,
        pushed,
        remote_url: plan.forge.remote_url.clone(),
        attestation: plan.attestation.clone(),
        request: RequestOutput {
            kind: match plan.forge.kind {
                ForgeKind::Github => "pull_request",
                ForgeKind::Gitlab => "merge_request",
            },
            number: answered.number,
            url: answered.url,
            action,
        },
    })
}

fn record_open(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    plan: &ProposalPlan,
    a: &Answered,
) -> Result<ForgeRequest> {
    service::propose::request_open(root, timeout, clock, &plan.proposal, a.number, &a.url)
}

/// Opens the Change's request: the intent recorded first; on a rerun
/// (`lookup`) the forge is asked for an open request of the head branch
/// before a new one is opened.
fn open(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    plan: &ProposalPlan,
    secret: &Secret,
    lookup: bool,
) -> Result<(Answered, &'static str)> {
    let p = &plan.proposal;
    if !lookup {
        service::propose::request_intent(
            root,
            timeout,
            clock,
            &ForgeRequest {
                change_id: p.change_id.clone(),
                repo_id: p.repo_id.clone(),
                kind: plan.forge.kind.as_str().to_owned(),
                head_branch: head_branch(&p.change_id),
                base_branch: plan.target.clone(),
                number: None,
                url: None,
                head_sha: None,
                change_version: None,
                state: "opening".into(),
                close_reason: None,
            },
        )?;
    }
    if lookup && let Some(found) = find_open(&plan.forge, secret, &p.change_id)? {
        let a = update(&plan.forge, secret, found.number, Some(plan), "open")?;
        record_open(root, timeout, clock, plan, &a)?;
        return Ok((a, "found"));
    }
    let a = create(&plan.forge, secret, plan)?;
    record_open(root, timeout, clock, plan, &a)?;
    Ok((a, "opened"))
}

/// One request closed (or found merged) by `land --push` or `forge sync`.
#[derive(Debug, Serialize)]
pub struct ClosedRequest {
    /// The Change.
    pub change_id: String,
    /// The request's number (GitHub) or iid (GitLab), when it has one.
    pub number: Option<u64>,
    /// `landed` (closed on the forge after agent-task landed the Change)
    /// or `merged` (the forge merged it: recorded, nothing sent).
    pub reason: &'static str,
}

/// Closes the still-open requests of `repo_id`'s landed Changes (only
/// `change_id`'s when given): a Change that `land` landed has its request
/// closed on the forge (`PATCH state=closed`, GitLab `state_event=close`;
/// one that is already closed or merged there counts as closed); one the
/// forge merged (`forge sync`) is recorded as merged without a call.
pub fn close_landed(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    repo_id: &str,
    change_id: Option<&str>,
) -> Result<Vec<ClosedRequest>> {
    let rows = service::propose::requests_of_landed(root, repo_id)?;
    let mut out = Vec::new();
    let mut creds = Credentials::default();
    for (r, how) in rows {
        if change_id.is_some_and(|c| c != r.change_id) {
            continue;
        }
        if how == "forge_sync" {
            service::propose::request_closed(root, timeout, clock, &r.change_id, "merged")?;
            out.push(ClosedRequest {
                change_id: r.change_id,
                number: r.number,
                reason: "merged",
            });
            continue;
        }
        let forge = service::forge::forge_of(root, repo_id)?
            .ok_or_else(|| service::forge::no_forge(repo_id))?;
        let secret = creds.secret(&forge, clock)?;
        let number = match r.number {
            Some(n) => Some(n),
            None => find_open(&forge, &secret, &r.change_id)?.map(|a| a.number),
        };
        if let Some(n) = number {
            close_one(&forge, &secret, n)?;
        }
        service::propose::request_closed(root, timeout, clock, &r.change_id, "landed")?;
        out.push(ClosedRequest {
            change_id: r.change_id,
            number,
            reason: "landed",
        });
    }
    Ok(out)
}

/// Closes request `n`; a forge that refuses because it is already closed
/// or merged (GitHub answers 422 for a merged pull request) is asked
/// for its state, and a closed or merged one counts as closed.
fn close_one(forge: &Forge, secret: &Secret, n: u64) -> Result<()> {
    match update(forge, secret, n, None, "closed") {
        Ok(_) => Ok(()),
        Err(e)
            if e.details()
                .and_then(|d| d.get("forge_status"))
                .and_then(Value::as_u64)
                == Some(422) =>
        {
            let url = match forge.kind {
                ForgeKind::Github => {
                    format!("{}/repos/{}/pulls/{n}", forge.api_url, forge.project)
                }
                ForgeKind::Gitlab => format!(
                    "{}/projects/{}/merge_requests/{n}",
                    forge.api_url,
                    project_path(forge)
                ),
            };
            let (_, v) = api_request(
                forge,
                secret,
                Method::Get,
                &url,
                None,
                &[200],
                true,
                "read a pull or merge request",
                MAX_REQUEST_ANSWER,
            )?;
            let state = v["state"].as_str().unwrap_or_default();
            if matches!(state, "closed" | "merged") {
                Ok(())
            } else {
                Err(e)
            }
        }
        Err(e) => Err(e),
    }
}

/// A commit of the forge's target whose tree is no qualified revision.
#[derive(Debug, Serialize)]
pub struct Unmatched {
    /// The commit.
    pub git_commit: String,
    /// Its tree's revision, recomputed as `verify` does.
    pub tree_revision: String,
}

/// `forge sync`'s report.
#[derive(Debug, Serialize)]
pub struct SyncOutput {
    /// The repository.
    pub repository: String,
    /// The forge's target commit fetched.
    pub fetched: String,
    /// The target branch.
    pub target: String,
    /// New first-parent commits walked (oldest first).
    pub walked: usize,
    /// Whether more than [`MAX_SYNC_COMMITS`] were new (the newest were
    /// walked; the older ones are never walked).
    pub truncated: bool,
    /// Commits recorded as landings of qualified Changes, with their
    /// notes.
    pub landed: Vec<ForgeLanded>,
    /// Commits whose tree equals no qualified revision: no note.
    pub unmatched: Vec<Unmatched>,
    /// Whether `refs/notes/agent-task` was pushed.
    pub notes_pushed: bool,
    /// What happened to the source's target branch: `up_to_date`,
    /// `fast_forwarded`, `ahead`, `diverged`, `checked_out_elsewhere` or
    /// `worktree_not_clean` (the last four leave it as it was).
    pub local_target: &'static str,
    /// Requests closed: of Changes landed locally without a push
    /// (`landed`), of Changes the forge merged (`merged`).
    pub closed_requests: Vec<ClosedRequest>,
}

fn git_line(source: &Path, args: &[&str]) -> Result<Option<String>> {
    let mut c = service::git::command(source);
    c.args(args);
    let (code, out, _) = service::git::output(c, None)?;
    Ok((code == 0).then(|| String::from_utf8_lossy(&out).trim().to_owned()))
}

/// `agent-task forge sync --repo R`: fetches the forge's target with git
/// (the same credential helper as the pushes), walks the first-parent
/// commits new since the last sync (or since the source's target), at
/// most [`MAX_SYNC_COMMITS`], oldest first, and for each whose tree,
/// recomputed as `verify` does, is the current qualified revision of a
/// Change of the repository that has not landed, records the landing and
/// writes its note (signed by the authority key, the note `land`
/// writes); then pushes the notes, fast-forwards the source's target
/// when it can, and closes the requests of Changes landed locally.
pub fn sync(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    repo_id: &str,
) -> Result<SyncOutput> {
    let plan = service::propose::sync_plan(root, repo_id)?;
    check_url("the forge's remote URL", &plan.forge.remote_url)?;
    check_credential_file(&plan.forge.credential)?;
    let helper = helper_command(root, repo_id)?;
    let tracking = format!("refs/agent-task/forge/{}", plan.target);
    git_fetch(
        &plan.source,
        &plan.forge,
        &helper,
        &format!("+refs/heads/{}:{tracking}", plan.target),
    )?;
    let tip = git_line(
        &plan.source,
        &[
            "rev-parse",
            "--verify",
            "-q",
            &format!("{tracking}^{{commit}}"),
        ],
    )?
    .ok_or_else(|| {
        Error::new(
            Code::NotFound,
            format!("the forge has no branch {}", plan.target),
        )
    })?;
    let local = git_line(
        &plan.source,
        &[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/{}^{{commit}}", plan.target),
        ],
    )?;
    let known = |c: &String| {
        git_line(
            &plan.source,
            &["cat-file", "-e", &format!("{c}^{{commit}}")],
        )
        .ok()
        .flatten()
        .is_some()
    };
    let stop = plan
        .last_synced
        .clone()
        .filter(known)
        .or(local.clone().filter(known));
    let max = MAX_SYNC_COMMITS.to_string();
    let mut args = vec![
        "rev-list",
        "--first-parent",
        "--max-count",
        max.as_str(),
        tip.as_str(),
    ];
    let not_stop = stop.as_ref().map(|s| format!("^{s}"));
    if let Some(n) = &not_stop {
        args.push(n);
    }
    args.push("--");
    let listed = git_line(&plan.source, &args)?
        .ok_or_else(|| Error::new(Code::Io, "git rev-list failed"))?;
    let mut commits: Vec<String> = listed.lines().map(str::to_owned).collect();
    let truncated = commits.len() == MAX_SYNC_COMMITS
        && commits.last().is_some_and(|c| {
            let parent = git_line(
                &plan.source,
                &["rev-parse", "--verify", "-q", &format!("{c}^1")],
            )
            .ok()
            .flatten();
            parent.is_some() && parent != stop
        });
    commits.reverse();
    let mut landed = Vec::new();
    let mut unmatched = Vec::new();
    for c in &commits {
        let parent = git_line(
            &plan.source,
            &["rev-parse", "--verify", "-q", &format!("{c}^1")],
        )?;
        let revision = service::forge::commit_revision(&plan.source, c)?;
        match service::propose::land_forge_commit(
            root,
            timeout,
            clock,
            repo_id,
            c,
            parent.as_deref(),
            &revision,
        )? {
            Some(l) => landed.push(l),
            None => unmatched.push(Unmatched {
                git_commit: c.clone(),
                tree_revision: revision,
            }),
        }
    }
    let notes_pushed = !landed.is_empty();
    if notes_pushed {
        git_push_to(
            &plan.source,
            &plan.forge,
            &helper,
            &format!("{NOTES_REF}:{NOTES_REF}"),
        )?;
    }
    let local_target = service::propose::advance_target(&plan.source, &plan.target, &tip)?;
    service::propose::set_synced(root, timeout, clock, repo_id, &tip)?;
    let closed_requests = close_landed(root, timeout, clock, repo_id, None)?;
    Ok(SyncOutput {
        repository: repo_id.to_owned(),
        fetched: tip,
        target: plan.target,
        walked: commits.len(),
        truncated,
        landed,
        unmatched,
        notes_pushed,
        local_target,
        closed_requests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_is_longer_than_any_backtick_run_inside() {
        assert_eq!(fenced("plain"), "```text\nplain\n```");
        let hostile =
            "x\n````\n@everyone ![img](http://e.invalid/x.png) [l](http://e.invalid)\n`````";
        let f = fenced(hostile);
        assert!(f.starts_with("``````text\n"), "{f}");
        assert!(f.ends_with("\n``````"), "{f}");
        // Nothing inside can close it: no run of six backticks.
        assert!(!hostile.contains("``````"));
    }

    #[test]
    fn agent_text_is_bounded_and_cleaned() {
        let t = bounded(&format!("a\u{7}b\n{}", "x".repeat(10)), 5);
        assert!(t.starts_with("ab\nxx"), "{t}");
        assert!(t.ends_with("[… cut by agent-task]"), "{t}");
        assert_eq!(code("a`b"), "`a'b`");
    }
}
