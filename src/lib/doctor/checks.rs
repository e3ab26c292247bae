//! The check catalogue (checks as data), per-check outcomes and the pure
//! verdict function.

use serde::Serialize;

/// Conformance profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// Discovery and the unauthenticated auth boundary.
    Public,
    /// `public` plus authenticated read-only probes.
    Read,
    /// `read` plus the mutating fixture lifecycle.
    Slice1,
}

/// Phase of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Manifests.
    Discovery,
    /// Bearer boundary.
    Auth,
    /// Collection list (unused by the current catalogue, kept for the schema).
    Collections,
    /// Query route.
    Query,
    /// Change feed.
    Changes,
    /// Collect and exact read.
    Records,
    /// Tombstones.
    Tombstones,
    /// Error semantics.
    Errors,
}

/// Whether a check counts for the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Counts for the verdict.
    Required,
    /// Reported only.
    Advisory,
}

/// Status of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Observed as required.
    Pass,
    /// Observed contrary to the profile.
    Fail,
    /// Not run by design.
    Skip,
    /// Could not be decided (transport, rate limit, prerequisite, ...).
    Inconclusive,
}

/// Overall verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every required check passed.
    Pass,
    /// At least one required check failed.
    Fail,
    /// No required failure, but a required check was inconclusive or skipped.
    Inconclusive,
}

impl Verdict {
    /// Process exit code: 0 pass, 1 fail, 3 inconclusive.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Pass => 0,
            Verdict::Fail => 1,
            Verdict::Inconclusive => 3,
        }
    }
}

/// One entry of the catalogue.
#[derive(Debug, Clone, Copy)]
pub struct CheckDef {
    /// Stable check id.
    pub id: &'static str,
    /// Phase.
    pub phase: Phase,
    /// Level in the profile it is listed for.
    pub level: Level,
    /// Human description.
    pub description: &'static str,
}

const fn req(id: &'static str, phase: Phase, description: &'static str) -> CheckDef {
    CheckDef {
        id,
        phase,
        level: Level::Required,
        description,
    }
}

/// A. Discovery.
pub const DISCOVERY: &[CheckDef] = &[
    req(
        "discovery.well_known",
        Phase::Discovery,
        "GET /.well-known/agent-data without Authorization returns a valid manifest",
    ),
    req(
        "discovery.versioned_manifest",
        Phase::Discovery,
        "GET /v1/data/manifest without Authorization returns a valid manifest",
    ),
    req(
        "discovery.manifest_equivalence",
        Phase::Discovery,
        "Both manifests agree on every standard field except generated_at",
    ),
    req(
        "discovery.manifest_privacy",
        Phase::Discovery,
        "Neither manifest exposes a collection list or a blob_ref",
    ),
];

/// The six protected routes probed by the auth boundary, in order.
pub const AUTH_ROUTES: &[&str] = &[
    "collections",
    "collect",
    "query",
    "record",
    "changes",
    "tombstone",
];

/// B. Auth boundary, generated from [`AUTH_ROUTES`].
pub const AUTH: &[CheckDef] = &[
    req(
        "auth.missing_bearer.collections",
        Phase::Auth,
        "GET /v1/data/collections without a bearer is refused with a Bearer challenge",
    ),
    req(
        "auth.wrong_bearer.collections",
        Phase::Auth,
        "GET /v1/data/collections with a wrong bearer is refused with a Bearer challenge",
    ),
    req(
        "auth.missing_bearer.collect",
        Phase::Auth,
        "POST /v1/data/collect without a bearer is refused before body parsing",
    ),
    req(
        "auth.wrong_bearer.collect",
        Phase::Auth,
        "POST /v1/data/collect with a wrong bearer is refused before body parsing",
    ),
    req(
        "auth.missing_bearer.query",
        Phase::Auth,
        "POST /v1/data/query without a bearer is refused before body parsing",
    ),
    req(
        "auth.wrong_bearer.query",
        Phase::Auth,
        "POST /v1/data/query with a wrong bearer is refused before body parsing",
    ),
    req(
        "auth.missing_bearer.record",
        Phase::Auth,
        "GET /v1/data/records/{id} without a bearer is refused before id validation",
    ),
    req(
        "auth.wrong_bearer.record",
        Phase::Auth,
        "GET /v1/data/records/{id} with a wrong bearer is refused before id validation",
    ),
    req(
        "auth.missing_bearer.changes",
        Phase::Auth,
        "GET /v1/data/changes without a bearer is refused with a Bearer challenge",
    ),
    req(
        "auth.wrong_bearer.changes",
        Phase::Auth,
        "GET /v1/data/changes with a wrong bearer is refused with a Bearer challenge",
    ),
    req(
        "auth.missing_bearer.tombstone",
        Phase::Auth,
        "POST /v1/data/records/{id}/tombstone without a bearer is refused before parsing",
    ),
    req(
        "auth.wrong_bearer.tombstone",
        Phase::Auth,
        "POST /v1/data/records/{id}/tombstone with a wrong bearer is refused before parsing",
    ),
];

/// C. Authenticated core, before the advisory skips.
pub const CORE_HEAD: &[CheckDef] = &[
    req(
        "auth.valid_bearer.collections",
        Phase::Auth,
        "GET /v1/data/collections with the bearer returns a valid collection list",
    ),
    req(
        "query.empty_collection_filter",
        Phase::Query,
        "A local query over an empty collection list returns no records",
    ),
];

/// C. The advisory skips of the read profile.
pub const READ_SKIPS: &[CheckDef] = &[
    CheckDef {
        id: "changes.page_shape",
        phase: Phase::Changes,
        level: Level::Advisory,
        description: "Live change pages are not requested by the read profile",
    },
    CheckDef {
        id: "changes.cursor_replay",
        phase: Phase::Changes,
        level: Level::Advisory,
        description: "Cursor replay is not requested by the read profile",
    },
];

/// C. Authenticated core, after the advisory skips.
pub const CORE_TAIL: &[CheckDef] = &[
    req(
        "changes.corrupt_cursor",
        Phase::Changes,
        "A corrupt change cursor gives 400 invalid_cursor",
    ),
    req(
        "errors.query_limit",
        Phase::Errors,
        "A query limit above max_query_limit gives 400 limit_exceeded",
    ),
    req(
        "errors.change_limit",
        Phase::Errors,
        "A change limit above max_change_limit gives 400 limit_exceeded",
    ),
    req(
        "errors.unsupported_consistency",
        Phase::Errors,
        "A non-local query consistency gives 400 unsupported_consistency",
    ),
    req(
        "errors.json_content_type",
        Phase::Errors,
        "A JSON route with a text/plain body gives 415 unsupported_media_type",
    ),
];

/// D. Fixture lifecycle (slice1).
pub const FIXTURE: &[CheckDef] = &[
    req(
        "changes.fixture_baseline",
        Phase::Changes,
        "The scratch collection feed drains to a bounded terminal cursor",
    ),
    req(
        "records.fixture_prerequisite",
        Phase::Records,
        "The scratch fixture prerequisites hold and a change baseline exists",
    ),
    req(
        "records.collect_owned_fixture",
        Phase::Records,
        "Collecting the owned text fixture inserts one valid record",
    ),
    req(
        "records.collect_idempotent",
        Phase::Records,
        "Re-collecting the same fixture returns the first envelope as existing",
    ),
    req(
        "records.collect_distinct_control",
        Phase::Records,
        "Collecting the control fixture inserts a distinct record",
    ),
    req(
        "changes.fixture_create_pagination",
        Phase::Changes,
        "Created events page one at a time from the baseline, replay-stable",
    ),
    req(
        "changes.cursor_filter_binding",
        Phase::Changes,
        "A filtered cursor is refused without its collection filter",
    ),
    req(
        "records.resolve_and_verify_digest",
        Phase::Records,
        "Exact reads return the envelope and the fixture bytes with matching digest",
    ),
    req(
        "query.owned_fixture_active",
        Phase::Query,
        "A where-id query finds the active owned fixture",
    ),
    req(
        "tombstones.reason_limit_nonmutating",
        Phase::Tombstones,
        "An over-long tombstone reason is refused and changes nothing",
    ),
    req(
        "tombstones.append_owned_fixture",
        Phase::Tombstones,
        "Tombstoning the owned fixture returns the tombstone",
    ),
    req(
        "tombstones.read_gone",
        Phase::Tombstones,
        "An exact read of the tombstoned record gives 410 record_tombstoned",
    ),
    req(
        "tombstones.query_isolation",
        Phase::Tombstones,
        "Queries exclude the tombstoned fixture and keep the control",
    ),
    req(
        "tombstones.change_event",
        Phase::Tombstones,
        "Exactly one tombstone event follows the created events",
    ),
    req(
        "tombstones.idempotent",
        Phase::Tombstones,
        "A repeated tombstone returns the first tombstone and appends nothing",
    ),
    req(
        "tombstones.fixture_finalization",
        Phase::Tombstones,
        "Every still-active owned fixture is tombstoned",
    ),
];

/// The ordered check list of a profile.
pub fn catalogue(profile: Profile) -> Vec<CheckDef> {
    let mut out: Vec<CheckDef> = DISCOVERY.iter().chain(AUTH).copied().collect();
    match profile {
        Profile::Public => {}
        Profile::Read => {
            out.extend(CORE_HEAD.iter().chain(READ_SKIPS).chain(CORE_TAIL));
        }
        Profile::Slice1 => {
            out.extend(CORE_HEAD.iter().chain(CORE_TAIL).chain(FIXTURE));
        }
    }
    out
}

/// Counts over all checks, advisory included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Passed checks.
    pub passed: u64,
    /// Failed checks.
    pub failed: u64,
    /// Skipped checks.
    pub skipped: u64,
    /// Inconclusive checks.
    pub inconclusive: u64,
}

/// Counts of `(level, status)` pairs.
pub fn summary(checks: &[(Level, Status)]) -> Summary {
    let mut s = Summary::default();
    for (_, st) in checks {
        match st {
            Status::Pass => s.passed += 1,
            Status::Fail => s.failed += 1,
            Status::Skip => s.skipped += 1,
            Status::Inconclusive => s.inconclusive += 1,
        }
    }
    s
}

/// The verdict: only required checks count. Any required fail gives fail;
/// otherwise any required inconclusive or skip gives inconclusive;
/// otherwise pass.
pub fn verdict(checks: &[(Level, Status)]) -> Verdict {
    let required = || checks.iter().filter(|(l, _)| *l == Level::Required);
    if required().any(|(_, s)| *s == Status::Fail) {
        Verdict::Fail
    } else if required().any(|(_, s)| matches!(s, Status::Inconclusive | Status::Skip)) {
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Level::*;
    use Status::*;
    use std::collections::HashSet;

    #[test]
    fn profile_counts_match_the_reference() {
        assert_eq!(catalogue(Profile::Public).len(), 16);
        assert_eq!(catalogue(Profile::Read).len(), 25);
        assert_eq!(catalogue(Profile::Slice1).len(), 39);
    }

    #[test]
    fn ids_are_unique_and_well_formed_and_auth_follows_routes() {
        for p in [Profile::Public, Profile::Read, Profile::Slice1] {
            let c = catalogue(p);
            let ids: HashSet<_> = c.iter().map(|d| d.id).collect();
            assert_eq!(ids.len(), c.len());
            for d in &c {
                assert!(d.id.starts_with(|ch: char| ch.is_ascii_lowercase()));
                assert!(d.id.chars().all(|ch| ch.is_ascii_lowercase()
                    || ch.is_ascii_digit()
                    || "_.-".contains(ch)));
                assert!(!d.description.is_empty());
            }
        }
        let want: Vec<String> = AUTH_ROUTES
            .iter()
            .flat_map(|r| {
                [
                    format!("auth.missing_bearer.{r}"),
                    format!("auth.wrong_bearer.{r}"),
                ]
            })
            .collect();
        let got: Vec<String> = AUTH.iter().map(|d| d.id.to_owned()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn verdict_counts_required_only() {
        assert_eq!(verdict(&[]), Verdict::Pass);
        assert_eq!(
            verdict(&[(Required, Pass), (Advisory, Skip)]),
            Verdict::Pass
        );
        assert_eq!(
            verdict(&[(Required, Pass), (Advisory, Fail)]),
            Verdict::Pass
        );
        assert_eq!(
            verdict(&[(Required, Pass), (Advisory, Inconclusive)]),
            Verdict::Pass
        );
        assert_eq!(verdict(&[(Required, Skip)]), Verdict::Inconclusive);
        assert_eq!(
            verdict(&[(Required, Inconclusive), (Required, Pass)]),
            Verdict::Inconclusive
        );
        assert_eq!(
            verdict(&[(Required, Inconclusive), (Required, Fail)]),
            Verdict::Fail
        );
        assert_eq!(
            verdict(&[(Required, Fail), (Required, Skip)]),
            Verdict::Fail
        );
        assert_eq!(Verdict::Pass.exit_code(), 0);
        assert_eq!(Verdict::Fail.exit_code(), 1);
        assert_eq!(Verdict::Inconclusive.exit_code(), 3);
    }

    #[test]
    fn summary_counts_everything() {
        let s = summary(&[
            (Required, Pass),
            (Advisory, Skip),
            (Advisory, Skip),
            (Required, Fail),
            (Required, Inconclusive),
        ]);
        assert_eq!(
            s,
            Summary {
                passed: 1,
                failed: 1,
                skipped: 2,
                inconclusive: 1
            }
        );
    }
}
