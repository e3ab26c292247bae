//! Test builds only: an authority and a journal in memory (every
//! migration applied) holding one repository, an installed requirement,
//! one actor, one Change checkpointed once with a command task and a
//! review task, and a registration with a command collector profile for
//! the command step. Rows are written as the authority writes them (the
//! context bytes under their digest, the tasks as canonical JSON), so the
//! authority's own readers load them; the unit tests of the authority's
//! decisions change one row at a time and look at what each decision
//! says.

use super::change::{ChangeContext, DOMAIN_CONTEXT};
use crate::collector::runtime::RuntimeKind;
use crate::collector::transfer::{CollectorProfile, Limits};
use crate::contract::workflow::Recipe;
use crate::contract::{
    ActionClass, Actor, Criterion, WorkflowTask, WorkflowTaskSubject, canonical_bytes,
};
use crate::store::{Connection, params};
use crate::wire::digest::{Sha256Hex, domain_digest};

/// Repository id.
pub const REPO: &str = "demo/basic";
/// Workflow profile.
pub const PROFILE: &str = "default";
/// The Change.
pub const CHANGE: &str = "chg_fixture";
/// The owner of the Change and its agent.
pub const OWNER: &str = "alice";
/// The agent.
pub const AGENT: &str = "a1";
/// The registration enrolled for the command step.
pub const REG: &str = "reg_fixture";
/// The command step and the review step.
pub const COMMAND_STEP: &str = "tests";
/// The review step.
pub const REVIEW_STEP: &str = "review";
/// The seed of the registration's signing key.
pub const SEED: [u8; 32] = [7; 32];
/// The wall clock the fixture's attempts are claimed at.
pub const NOW_MS: i64 = 1_900_000_000_000;

/// The in-memory authority and journal.
pub struct Fixture {
    /// `authority.sqlite`.
    pub a: Connection,
    /// `journal.sqlite`.
    pub j: Connection,
    /// The command task of the Change's first subject.
    pub command: WorkflowTask,
    /// Its review task.
    pub review: WorkflowTask,
}

fn hex(tag: &str) -> Sha256Hex {
    Sha256Hex::digest(tag.as_bytes())
}

fn migrated(spec: &crate::store::DbSpec) -> Connection {
    let c = crate::store::in_memory();
    for m in spec.migrations {
        c.execute_batch(m.sql).expect("migration");
    }
    c
}

/// The registration's signing key.
pub fn keypair() -> crate::wire::ed25519::Keypair {
    crate::wire::ed25519::Keypair::from_seed(&SEED)
}

/// The registration's key id.
pub fn key_id() -> String {
    crate::contract::key_id(&keypair().public_key())
}

/// The actor owning the fixture's Change.
pub fn actor() -> Actor {
    Actor {
        owner_id: OWNER.into(),
        agent_id: AGENT.into(),
    }
}

/// The command profile installed for [`REG`] and [`COMMAND_STEP`].
pub fn command_profile() -> CollectorProfile {
    let mut p = CollectorProfile {
        version: 1,
        profile_id: String::new(),
        repository: REPO.into(),
        profile: PROFILE.into(),
        step_id: COMMAND_STEP.into(),
        registration: crate::collector::transfer::RegistrationBinding {
            registration_id: REG.into(),
            executor_id: "exec1".into(),
            epoch: 1,
            key_id: key_id(),
        },
        requirement_digest: hex("requirement"),
        recipe: Recipe {
            argv: vec!["./test.sh".into()],
            timeout_ms: 60_000,
            network: false,
        },
        runtime: RuntimeKind::Bwrap,
        runtime_identity_digest: hex("runtime"),
        oci_image: None,
        basis: "observed".into(),
        limits: Limits {
            timeout_ms: 60_000,
            max_output_bytes: 1024,
            tail_bytes: 64,
            sandbox: None,
        },
    };
    let d = p.digest().expect("profile digest");
    p.profile_id = format!("cp_{}", &d.as_str()[..32]);
    p
}

fn task(ctx: &Sha256Hex, epoch: u64, step: &str, class: ActionClass) -> WorkflowTask {
    WorkflowTask {
        version: 1,
        task_id: crate::contract::task_id_for(ctx, step),
        subject: WorkflowTaskSubject {
            repository: REPO.into(),
            profile: PROFILE.into(),
            target: "main".into(),
            target_head: Some(hex("head")),
            revision: hex("revision"),
            change_id: CHANGE.into(),
            change_version: 1,
            context_digest: ctx.clone(),
            policy_epoch: epoch,
            requirement_digest: hex("requirement"),
            plan_digest: hex("plan"),
            skill_digest: hex("skill"),
            step_id: step.into(),
        },
        action_class: class,
        required: true,
        depends_on: vec![],
        criteria: vec![Criterion {
            id: "passes".into(),
            required: true,
            controller_only: true,
            text: "the suite passes".into(),
        }],
        references: vec![],
        instructions: String::new(),
    }
}

/// The fixture (see the module docs).
pub fn fixture() -> Fixture {
    let a = migrated(&super::schema::SPEC);
    let j = migrated(&crate::workflow::journal::SPEC);
    let head = hex("head");
    let requirement = hex("requirement");
    a.execute_batch(&format!(
        "INSERT INTO meta(key, value) VALUES ('data_dir_id', 'dd_fixture');
         INSERT INTO repositories VALUES ('{REPO}', '/src', 'main', '{head}', 't');
         INSERT INTO revisions VALUES ('{rev}', '{manifest}', 10, 1, 't');
         INSERT INTO requirements VALUES ('{requirement}', x'7b7d', 'basic');
         INSERT INTO installed_requirements VALUES ('{REPO}', '{PROFILE}', '{requirement}', 0, 't');
         INSERT INTO actors VALUES ('{OWNER}', '{AGENT}', 'tokenhash', 1, 't', NULL);
         INSERT INTO registrations VALUES ('{REG}', '{REPO}', '{PROFILE}', '{COMMAND_STEP}', 'exec1', '{pk}', '{kid}', 1, 0, 't');",
        pk = data_encoding::HEXLOWER.encode(&keypair().public_key()),
        kid = key_id(),
        rev = hex("revision"),
        manifest = hex("manifest"),
    ))
    .expect("rows");
    let epoch = super::policy_epoch(&a).expect("epoch");
    let ctx = ChangeContext {
        version: 1,
        repository: REPO.into(),
        profile: PROFILE.into(),
        change_id: CHANGE.into(),
        change_version: 1,
        base_revision: head.clone(),
        revision: hex("revision"),
        target: "main".into(),
        target_head: head.clone(),
        requirement_digest: requirement,
        policy_epoch: epoch,
    };
    let ctx_bytes = canonical_bytes(&ctx).expect("context bytes");
    let ctx_digest = domain_digest(DOMAIN_CONTEXT, &ctx_bytes);
    let command = task(&ctx_digest, epoch, COMMAND_STEP, ActionClass::Command);
    let review = task(&ctx_digest, epoch, REVIEW_STEP, ActionClass::Review);
    let tasks = vec![command.clone(), review.clone()];
    a.execute(
        "INSERT INTO changes(change_id, repo_id, profile_id, workspace, owner_id, agent_id, base_revision, current_version, created_at) \
         VALUES (?1, ?2, ?3, '/ws', ?4, ?5, ?6, 1, 't')",
        params![CHANGE, REPO, PROFILE, OWNER, AGENT, head.as_str()],
    )
    .expect("change");
    a.execute(
        "INSERT INTO change_versions(change_id, version, revision, context_digest, context_bytes, tasks_json, created_at) \
         VALUES (?1, 1, ?2, ?3, ?4, ?5, 't')",
        params![
            CHANGE,
            hex("revision").as_str(),
            ctx_digest.as_str(),
            ctx_bytes,
            canonical_bytes(&tasks).expect("tasks")
        ],
    )
    .expect("version");
    for t in &tasks {
        a.execute(
            "INSERT INTO subject_tasks VALUES (?1, ?2, 1, ?3)",
            params![t.task_id, CHANGE, t.subject.step_id],
        )
        .expect("task index");
    }
    install(&a, &command_profile());
    Fixture {
        a,
        j,
        command,
        review,
    }
}

/// Installs `p` as the collector profile of its registration and step
/// (as `profile install` stores it).
pub fn install(a: &Connection, p: &CollectorProfile) {
    let d = p.digest().expect("digest");
    a.execute(
        "INSERT INTO collector_profiles VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, 't')",
        params![
            p.profile_id,
            d.as_str(),
            p.registration.registration_id,
            p.repository,
            p.profile,
            p.step_id,
            canonical_bytes(p).expect("profile bytes")
        ],
    )
    .expect("profile");
}
