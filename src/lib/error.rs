//! The one error type of the toolkit.
//!
//! Every failure carries a stable snake_case [`Code`], a human message and
//! optional structured details. The code is mapped to a process exit code in
//! exactly one place ([`Code::exit_code`]) and to an HTTP status in exactly one
//! place ([`Code::http_status`]). Exit code 2 is never used: Claude Code and
//! Codex read exit 2 from a hook as "block".

use serde_json::{Map, Value};
use std::fmt;

/// Result alias used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal => exit $exit:literal, http $http:literal; )*) => {
        /// Stable machine-readable error codes. The string form is an interface:
        /// scripts, agents and remote clients branch on it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Code {
            $( $(#[$doc])* $variant, )*
        }

        impl Code {
            /// Every code, in declaration order (used by docs and tests).
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The stable snake_case name of this code.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            /// The process exit code (sysexits meanings; never 2).
            pub fn exit_code(self) -> u8 {
                match self { $(Code::$variant => $exit,)* }
            }

            /// The HTTP status the shim answers with.
            pub fn http_status(self) -> u16 {
                match self { $(Code::$variant => $http,)* }
            }
        }
    };
}

codes! {
    /// Command-line usage error (unknown flag, missing argument).
    Usage = "usage" => exit 64, http 400;
    /// Input that is syntactically or semantically invalid.
    InvalidInput = "invalid_input" => exit 65, http 400;
    /// Input exceeds a documented bound.
    TooLarge = "too_large" => exit 65, http 413;
    /// The named object does not exist.
    NotFound = "not_found" => exit 66, http 404;
    /// An id prefix names more than one id the caller may view (the CLI's
    /// prefixes; `details.candidates` lists them).
    AmbiguousId = "ambiguous_id" => exit 65, http 400;
    /// The data directory (or a store inside it) has not been initialised.
    NotInitialized = "not_initialized" => exit 66, http 503;
    /// The same identity already exists with different content.
    Conflict = "conflict" => exit 65, http 409;
    /// Stored bytes do not match their recorded size or digest.
    IntegrityError = "integrity_error" => exit 65, http 500;
    /// The data directory's blob store (an S3-compatible bucket) could not be reached or refused the request (connection, timeout, 5xx after retries, credentials, a missing bucket); nothing was committed.
    BlobStoreUnavailable = "blob_store_unavailable" => exit 69, http 503;
    /// A repository's forge could not be reached or refused the request (connection, timeout, an HTTP error status, an answer that is not what its API describes); `details.forge_status` holds the forge's HTTP status when it answered. Nothing but the forge outbox changed locally.
    ForgeUnavailable = "forge_unavailable" => exit 69, http 502;
    /// The forge's git remote refused a pushed ref (`land --push`: the target is not a fast-forward of the landed commit, or a protection rule declined it); the local landing stays recorded, and `land --push` again completes the push once the remote is fixed.
    PushRejected = "push_rejected" => exit 75, http 409;
    /// Another writer holds the data-directory lock; nothing was done.
    Busy = "busy" => exit 75, http 503;
    /// A path or file has unsafe ownership or permissions.
    InsecurePermissions = "insecure_permissions" => exit 77, http 500;
    /// A trusted path is a symbolic link.
    SymlinkRefused = "symlink_refused" => exit 77, http 500;
    /// The caller is not authenticated.
    Unauthorized = "unauthorized" => exit 77, http 401;
    /// The caller is authenticated but not allowed to do this.
    Forbidden = "forbidden" => exit 77, http 403;
    /// Configuration is missing or wrong.
    Config = "config" => exit 78, http 500;
    /// A database was written by a newer agent-task; this binary refuses it.
    SchemaTooNew = "schema_too_new" => exit 78, http 500;
    /// A database predates this binary and a read path cannot migrate it.
    SchemaOutdated = "schema_outdated" => exit 78, http 503;
    /// A pinned sandbox runtime is missing or cannot isolate on this host.
    RuntimeUnavailable = "runtime_unavailable" => exit 69, http 503;
    /// The runtime on this host is not the one a collector profile pins.
    RuntimeIdentityMismatch = "runtime_identity_mismatch" => exit 78, http 409;
    /// An operating-system I/O failure.
    Io = "io_error" => exit 74, http 500;
    /// A bug or an unexpected state inside agent-task.
    Internal = "internal" => exit 70, http 500;
    /// A URL that cannot be parsed as an absolute URL.
    InvalidUrl = "invalid_url" => exit 65, http 400;
    /// A URL whose scheme is not `http` or `https`.
    InvalidUrlScheme = "invalid_url_scheme" => exit 65, http 400;
    /// A URL that carries userinfo (credentials).
    InvalidUrlCredentials = "invalid_url_credentials" => exit 65, http 400;
    /// An outbound fetch whose destination is private, loopback or reserved.
    HttpPrivateNetworkBlocked = "http_private_network_blocked" => exit 77, http 422;
    /// DNS resolution of an outbound fetch failed or found no address.
    HttpDnsFailed = "http_dns_failed" => exit 68, http 422;
    /// An outbound fetch met more redirects than allowed.
    HttpRedirectLimit = "http_redirect_limit" => exit 69, http 422;
    /// A redirect response without a usable `Location` header.
    HttpRedirectInvalid = "http_redirect_invalid" => exit 76, http 502;
    /// An outbound fetch ran out of time (DNS, all hops and the body read).
    HttpTimeout = "http_timeout" => exit 75, http 422;
    /// Any other failure of an outbound fetch (connect, TLS, protocol).
    HttpCollectionFailed = "http_collection_failed" => exit 69, http 422;
    /// Collected content exceeds the effective byte limit.
    ContentTooLarge = "content_too_large" => exit 65, http 413;
    /// The conformance target is not a URL.
    InvalidTarget = "invalid_target" => exit 64, http 400;
    /// The conformance target is not http or https.
    InvalidTargetScheme = "invalid_target_scheme" => exit 64, http 400;
    /// The conformance target URL carries credentials.
    TargetUrlCredentials = "target_url_credentials" => exit 64, http 400;
    /// The conformance target has a path, query or fragment.
    TargetNotOrigin = "target_not_origin" => exit 64, http 400;
    /// Plain http to a conformance target that is not loopback.
    InsecureTarget = "insecure_target" => exit 64, http 400;
    /// A bearer was passed as a command-line value.
    CredentialInArgv = "credential_in_argv" => exit 64, http 400;
    /// More than one bearer source was named.
    CredentialSourceConflict = "credential_source_conflict" => exit 64, http 400;
    /// The public conformance profile takes no bearer.
    PublicProfileToken = "public_profile_token" => exit 64, http 400;
    /// The profile needs a bearer and no source was named.
    CredentialSourceMissing = "credential_source_missing" => exit 64, http 400;
    /// A mutation option was given outside the slice1 profile.
    MutationOptionWithoutSlice1 = "mutation_option_without_slice1" => exit 64, http 400;
    /// slice1 needs --scratch-collection, --expected-node-id and --allow-mutations.
    MutationGateMissing = "mutation_gate_missing" => exit 64, http 400;
    /// --token-stdin refuses an interactive terminal.
    CredentialStdinTty = "credential_stdin_tty" => exit 64, http 400;
    /// The bearer read from stdin exceeds 16,384 bytes.
    CredentialTooLarge = "credential_too_large" => exit 64, http 400;
    /// The named bearer environment variable is unset.
    CredentialEnvMissing = "credential_env_missing" => exit 64, http 400;
    /// The bearer is not 1-16,384 printable ASCII characters without spaces.
    InvalidCredential = "invalid_credential" => exit 64, http 400;
    /// The bearer is empty or contains NUL, CR or LF.
    CredentialNotSingleLine = "credential_not_single_line" => exit 64, http 400;
    // agent-data/v1 node codes (spec/agent-data-facts.md §12.3): names and
    // HTTP statuses are the reference node's, byte for byte.
    /// HTTP data access is disabled until a node bearer is configured.
    DataAuthNotConfigured = "data_auth_not_configured" => exit 78, http 503;
    /// A known path was requested with the wrong method.
    MethodNotAllowed = "method_not_allowed" => exit 64, http 405;
    /// A JSON route was called without an `application/json` body.
    UnsupportedMediaType = "unsupported_media_type" => exit 65, http 415;
    /// The request body exceeds the node's body limit.
    RequestTooLarge = "request_too_large" => exit 65, http 413;
    /// The `Content-Length` header is malformed.
    InvalidContentLength = "invalid_content_length" => exit 65, http 400;
    /// A body or JSON field is not valid JSON or not an object.
    InvalidJson = "invalid_json" => exit 65, http 400;
    /// A query-string parameter is malformed.
    InvalidQuery = "invalid_query" => exit 65, http 400;
    /// The request's `Host` (or MCP `Origin`) is not a name this server answers to.
    MisdirectedRequest = "misdirected_request" => exit 65, http 421;
    /// A path segment is not valid percent-encoding.
    InvalidPath = "invalid_path" => exit 65, http 400;
    /// A request field has the wrong type or is out of bounds.
    InvalidRequest = "invalid_request" => exit 65, http 400;
    /// A number is not a positive safe integer.
    InvalidNumber = "invalid_number" => exit 65, http 400;
    /// A limit is over the node's maximum.
    LimitExceeded = "limit_exceeded" => exit 65, http 400;
    /// A consistency other than `local` was asked for.
    UnsupportedConsistency = "unsupported_consistency" => exit 65, http 400;
    /// A text query has more terms than the node's cap.
    QueryTooComplex = "query_too_complex" => exit 65, http 400;
    /// A change cursor is malformed or belongs to another filter.
    InvalidCursor = "invalid_cursor" => exit 65, http 400;
    /// A collection id does not match the id syntax.
    InvalidCollectionId = "invalid_collection_id" => exit 65, http 400;
    /// A record id does not match `rec_<64 hex>`.
    InvalidRecordId = "invalid_record_id" => exit 65, http 400;
    /// A media type does not normalise.
    InvalidMediaType = "invalid_media_type" => exit 65, http 400;
    /// A timestamp is not strict RFC 3339 with a zone.
    InvalidDate = "invalid_date" => exit 65, http 400;
    /// The file collector's path is not a readable regular file under a root.
    InvalidFile = "invalid_file" => exit 65, http 400;
    /// The collection does not exist.
    CollectionNotFound = "collection_not_found" => exit 66, http 404;
    /// The collector is not registered on this node.
    CollectorNotFound = "collector_not_found" => exit 66, http 404;
    /// The record does not exist.
    RecordNotFound = "record_not_found" => exit 66, http 404;
    /// The record's blob is missing.
    BlobNotFound = "blob_not_found" => exit 66, http 404;
    /// The record was tombstoned.
    RecordTombstoned = "record_tombstoned" => exit 66, http 410;
    /// A collector returned more items than the node allows.
    CollectorItemLimit = "collector_item_limit" => exit 65, http 413;
    /// The collection's media allow-list rejects this type.
    MediaTypeNotAllowed = "media_type_not_allowed" => exit 65, http 422;
    /// `supersedes_id` names no record.
    SupersededRecordNotFound = "superseded_record_not_found" => exit 65, http 422;
    /// `supersedes_id` names a record of another collection.
    SupersededRecordCollectionMismatch = "superseded_record_collection_mismatch" => exit 65, http 422;
    /// A stored blob does not match its reference.
    BlobIntegrityError = "blob_integrity_error" => exit 65, http 500;
    /// A stored blob does not match its record's size or digest.
    RecordIntegrityError = "record_integrity_error" => exit 65, http 500;
    /// A collector produced malformed output.
    InvalidCollectorOutput = "invalid_collector_output" => exit 70, http 500;
    /// A collection definition is invalid.
    InvalidCollection = "invalid_collection" => exit 65, http 400;
    /// A collection id exists with a different definition.
    CollectionConflict = "collection_conflict" => exit 65, http 409;
    /// A configured node id differs from the persisted one.
    NodeIdConflict = "node_id_conflict" => exit 65, http 409;
    /// A change-feed id is malformed (a sync page request's `expected_feed_id`;
    /// a persisted one is refused when the node opens, before any HTTP request).
    InvalidFeedId = "invalid_feed_id" => exit 65, http 400;
    /// Node limit overrides are invalid.
    InvalidLimits = "invalid_limits" => exit 78, http 400;
    /// The HTTP collector's final response status is not 2xx.
    HttpStatusError = "http_status_error" => exit 69, http 422;
    /// A non-loopback bind was asked for without a node bearer.
    UnsafeServerBind = "unsafe_server_bind" => exit 78, http 500;
    /// The server could not bind its address.
    ServerBindFailed = "server_bind_failed" => exit 69, http 500;
    /// The request head (request line and headers) is over the server's size or count limit.
    HeaderTooLarge = "header_too_large" => exit 65, http 431;
    /// The client did not send a request's head or body within the server's deadline.
    RequestTimeout = "request_timeout" => exit 75, http 408;
    /// The server is at its connection cap; retry later.
    ServerBusy = "server_busy" => exit 75, http 503;
    /// A signature or key failed strict verification.
    SignatureInvalid = "signature_invalid" => exit 65, http 400;
    /// The same request id was used with different bytes or another kind.
    IdempotencyConflict = "idempotency_conflict" => exit 65, http 409;
    /// A mutation named a fence that is not the attempt's current fence.
    StaleFence = "stale_fence" => exit 65, http 409;
    /// The task cannot be claimed in its current state.
    TaskNotClaimable = "task_not_claimable" => exit 65, http 409;
    /// A dependency of the task is not complete.
    DependencyIncomplete = "dependency_incomplete" => exit 65, http 409;
    /// An older subject of the same change, profile and step is unresolved.
    PriorSubjectUnresolved = "prior_subject_unresolved" => exit 65, http 409;
    /// The attempt's lease has expired (expiry is not proof that work stopped).
    LeaseExpired = "lease_expired" => exit 65, http 409;
    /// The attempt is finished, cancelled or replaced and takes no such mutation.
    AttemptClosed = "attempt_closed" => exit 65, http 409;
    /// The task's subject is no longer current (new checkpoint, policy act, …).
    SubjectStale = "subject_stale" => exit 65, http 409;
    /// The executor registration is unknown, out of scope or revoked.
    EnrollmentInvalid = "enrollment_invalid" => exit 77, http 403;
    /// A collector transfer is malformed, unsigned or does not bind the authority's state.
    TransferInvalid = "transfer_invalid" => exit 65, http 400;
    /// A collector profile is missing, not current or not allowed in this build.
    ProfileInvalid = "profile_invalid" => exit 77, http 403;
    /// A collector descriptor does not match what the authority derives now.
    DescriptorMismatch = "descriptor_mismatch" => exit 65, http 409;
    /// The receipt graph is not complete (a required task has no passing evidence).
    ReceiptIncomplete = "receipt_incomplete" => exit 65, http 409;
    /// Admission refused: no current receipt passes the live checks.
    NotQualified = "not_qualified" => exit 65, http 409;
    /// A live origin or executor authorization check refused.
    AuthorizationChanged = "authorization_changed" => exit 77, http 403;
    /// A collector transfer could not be delivered to a workspace endpoint (retry-upload resends the same bytes).
    UploadFailed = "upload_failed" => exit 69, http 502;
    /// An OCI image reference is not pinned by digest (`NAME@sha256:<64 hex>`).
    OciImageReferenceInvalid = "oci_image_reference_invalid" => exit 65, http 400;
    /// The pinned OCI image is not in the engine's local store (it is never pulled).
    OciImageUnavailable = "oci_image_unavailable" => exit 69, http 503;
    // agent-data-sync/v1 (spec/agent-data-sync-facts.md §12): names and
    // HTTP statuses are the reference's.
    /// A sync request has unknown members, a wrong type or an inconsistent pair.
    InvalidSyncRequest = "invalid_sync_request" => exit 65, http 400;
    /// A sync request names another protocol than `agent-data-sync/v1`.
    UnsupportedSyncProtocol = "unsupported_sync_protocol" => exit 65, http 400;
    /// A sync cursor is not a 1-4096 character string.
    InvalidSyncCursor = "invalid_sync_cursor" => exit 65, http 400;
    /// A sync page limit is above the source's maximum.
    SyncLimitExceeded = "sync_limit_exceeded" => exit 65, http 400;
    /// A sync recipient is malformed or its key id is not its fingerprint.
    InvalidRecipient = "invalid_recipient" => exit 65, http 400;
    /// The source's feed is not the one the destination's checkpoint names.
    SyncFeedMismatch = "sync_feed_mismatch" => exit 65, http 409;
    /// The next record alone exceeds the page's plaintext budget.
    SyncRecordTooLarge = "sync_record_too_large" => exit 65, http 413;
    /// A page cannot fit the response ceiling even with one change (source side).
    SyncResponseTooLarge = "sync_response_too_large" => exit 65, http 413;
    /// A peer's page exceeds the destination's response or plaintext ceiling
    /// (destination side; same wire name as the source's 413, answered 502).
    PeerSyncResponseTooLarge = "sync_response_too_large" => exit 76, http 502;
    /// One sync payload exceeds the response ceiling.
    SyncObjectTooLarge = "sync_object_too_large" => exit 65, http 413;
    /// The page route has no page authority configured.
    PageAuthNotConfigured = "page_auth_not_configured" => exit 78, http 503;
    /// The page bearer's authority does not cover this collection or recipient.
    PageScopeDenied = "page_scope_denied" => exit 77, http 403;
    /// A peer's page has the wrong shape (checked before any decryption).
    InvalidSyncPage = "invalid_sync_page" => exit 76, http 502;
    /// A grant was issued by another key than the pinned publisher.
    UnexpectedSyncPublisher = "unexpected_sync_publisher" => exit 76, http 502;
    /// An encrypted sync object fails ADDS verification or decryption.
    SyncObjectInvalid = "sync_object_invalid" => exit 76, http 502;
    /// The page-control object does not bind the visible page.
    SyncPageControlInvalid = "sync_page_control_invalid" => exit 76, http 502;
    /// A page or its collection object is for another collection.
    SyncCollectionMismatch = "sync_collection_mismatch" => exit 76, http 502;
    /// A page does not continue from the checkpoint's cursor.
    SyncCursorConflict = "sync_cursor_conflict" => exit 65, http 409;
    /// A page with changes did not move the cursor.
    SyncCursorStalled = "sync_cursor_stalled" => exit 76, http 502;
    /// A change header does not match its decrypted object.
    SyncChangeMismatch = "sync_change_mismatch" => exit 76, http 502;
    /// The peer could not be reached (connect, TLS, redirect, deadline before headers).
    PeerUnreachable = "peer_unreachable" => exit 69, http 502;
    /// The peer answered a non-2xx status (its error code is in the message).
    PeerResponseError = "peer_response_error" => exit 76, http 502;
    /// The peer's response is not UTF-8 JSON of type application/json.
    PeerResponseInvalid = "peer_response_invalid" => exit 76, http 502;
    /// The page's origin node id is not the peer's configured node id.
    UnexpectedPeerNode = "unexpected_peer_node" => exit 76, http 502;
    /// No peer with this alias is configured.
    PeerNotConfigured = "peer_not_configured" => exit 66, http 404;
    /// Another pull (or reset) of the same peer and collection is running.
    SyncInProgress = "sync_in_progress" => exit 75, http 409;
    /// The checkpoint was made for another origin, node id or publisher.
    SyncCheckpointPeerMismatch = "sync_checkpoint_peer_mismatch" => exit 78, http 409;
    /// A stored checkpoint row fails validation.
    InvalidCheckpoint = "invalid_checkpoint" => exit 65, http 400;
    /// A peer configuration is invalid.
    InvalidPeer = "invalid_peer" => exit 65, http 400;
    /// A peer alias does not match the id syntax.
    InvalidPeerId = "invalid_peer_id" => exit 65, http 400;
    /// A peer alias is already configured.
    DuplicatePeer = "duplicate_peer" => exit 65, http 409;
    /// A page authority or another server option is invalid.
    InvalidServerOption = "invalid_server_option" => exit 78, http 400;
    /// The node has no sync identity yet (`sync keygen`).
    SyncIdentityMissing = "sync_identity_missing" => exit 78, http 503;
    /// A replica's origin node id is malformed.
    InvalidReplicaOrigin = "invalid_replica_origin" => exit 65, http 400;
    /// A replica envelope's id is not the id derived from it.
    ReplicaRecordIdMismatch = "replica_record_id_mismatch" => exit 65, http 422;
    /// A replica's bytes do not have the envelope's size.
    ReplicaContentSizeMismatch = "replica_content_size_mismatch" => exit 65, http 422;
    /// A replica's bytes do not have the envelope's SHA-256.
    ReplicaContentHashMismatch = "replica_content_hash_mismatch" => exit 65, http 422;
    /// A replica's schema version is not the local collection's.
    ReplicaSchemaMismatch = "replica_schema_mismatch" => exit 65, http 409;
    /// A replica id exists locally with another envelope.
    ReplicaRecordConflict = "replica_record_conflict" => exit 65, http 409;
    /// A replica tombstone names a record of another collection.
    ReplicaTombstoneCollectionMismatch = "replica_tombstone_collection_mismatch" => exit 65, http 409;
    /// A replica tombstone differs from the existing tombstone.
    ReplicaTombstoneConflict = "replica_tombstone_conflict" => exit 65, http 409;
    /// A candidate revision changes a path the workflow protects (relative to the target head).
    ProtectedPathChanged = "protected_path_changed" => exit 65, http 409;
    /// A workspace path git would refuse or alias (`.git` in any case or alias, a symlinked `.gitmodules`, …).
    PathNotRepresentable = "path_not_representable" => exit 65, http 422;
    /// A revision's files add up to more than the checkpoint's size cap.
    RevisionTooLarge = "revision_too_large" => exit 65, http 413;
    /// The git tree `land` wrote differs from the revision's manifest; nothing was moved.
    LandedTreeMismatch = "landed_tree_mismatch" => exit 65, http 500;
    /// Retained collector state fails its MAC (planted or edited); nothing is signed.
    CollectorStateTampered = "collector_state_tampered" => exit 65, http 500;
    /// Another `collect` of the same execution operation is running; nothing was run or written (rerun it for the retained outcome).
    ExecutionInProgress = "execution_in_progress" => exit 75, http 409;
    /// The runtime lets candidate code reach the collector's key, state or files outside its scratch.
    RuntimeNotIsolating = "runtime_not_isolating" => exit 78, http 409;
    /// A sandbox limit the profile pins cannot be applied on this host.
    SandboxLimitUnavailable = "sandbox_limit_unavailable" => exit 69, http 503;
    /// An attestation envelope, statement or predicate is malformed, or a commit's set of attestations is incomplete or inconsistent.
    AttestationInvalid = "attestation_invalid" => exit 65, http 400;
    /// An envelope's payload type is not `application/vnd.in-toto+json`.
    AttestationPayloadTypeUnsupported = "attestation_payload_type_unsupported" => exit 65, http 415;
    /// No signature of an envelope is by the given key (signed by another key).
    AttestationKeyMismatch = "attestation_key_mismatch" => exit 65, http 400;
    /// A statement's `gitCommit` subject is not the commit being verified (the envelope was moved).
    AttestationCommitMismatch = "attestation_commit_mismatch" => exit 65, http 409;
    /// A statement's revision subject is not the revision recomputed from the commit's tree.
    AttestationRevisionMismatch = "attestation_revision_mismatch" => exit 65, http 409;
    /// A landed commit's attestations verify but do not qualify it: the operator's `land --allow-protected-change` let it in without a receipt (`verify --allow-override` accepts it).
    AttestationUnqualified = "attestation_unqualified" => exit 65, http 409;
    /// A review record is not what the controller derives by replaying its own trace.
    ReviewReplayMismatch = "review_replay_mismatch" => exit 65, http 422;
    /// A remote checkpoint's manifest is not a canonical, sorted, valid revision manifest.
    ManifestInvalid = "manifest_invalid" => exit 65, http 400;
    /// Uploaded blob bytes do not hash to the digest (or size) they were sent under; nothing of that blob is stored.
    BlobDigestMismatch = "blob_digest_mismatch" => exit 65, http 422;
    /// An uploaded blob is not one the Change's open checkpoint session asked for.
    BlobNotRequested = "blob_not_requested" => exit 65, http 409;
    /// A checkpoint commit names blobs the authority does not hold (upload them, or negotiate again).
    BlobsMissing = "blobs_missing" => exit 65, http 409;
    /// The caller's blobs not yet referenced by a revision, or its open checkpoint sessions, are at their quota.
    UploadQuotaExceeded = "upload_quota_exceeded" => exit 75, http 507;
    /// The workspace endpoint could not be reached or did not answer.
    EndpointUnreachable = "endpoint_unreachable" => exit 69, http 502;
    /// The workspace endpoint answered something that is not a valid answer of its protocol.
    EndpointResponseInvalid = "endpoint_response_invalid" => exit 76, http 502;
    /// An `AGENT_TASK_*` variable switched the command to a form a flag on its command line contradicts (`details.variable` names it).
    EnvConflict = "env_conflict" => exit 64, http 400;
    /// `install-stop` refused to write a hook that could reach neither a readable data directory nor an endpoint that accepts the token for the named repository and profile (`details.reason`).
    HookAuthorityUnreachable = "hook_authority_unreachable" => exit 78, http 422;
    /// The Change has landed and is closed: no further checkpoint (open a new Change).
    ChangeClosed = "change_closed" => exit 65, http 409;
    /// `land`: the target branch is checked out in a non-bare work tree and `--update-worktree` was not given (or it is checked out elsewhere); no ref moved.
    WorktreeCheckedOut = "worktree_checked_out" => exit 65, http 409;
    /// `land --update-worktree`: the checked-out work tree or its index is not clean; no ref moved.
    WorktreeDirty = "worktree_dirty" => exit 65, http 409;
}

impl Code {
    /// The code named `name` (the first, for the one deliberate alias), if any.
    pub fn from_name(name: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A typed failure: code, message and optional JSON details.
#[derive(Debug, Clone)]
pub struct Error {
    code: Code,
    message: String,
    details: Option<Map<String, Value>>,
    /// For [`Code::Internal`]: answered under the data node's wire name
    /// [`INTERNAL_ERROR`] instead of `internal`.
    data_node: bool,
}

/// The second documented wire name of [`Code::Internal`]: the data node's
/// HTTP routes answer an internal failure as the reference names it,
/// `internal_error` (docs/data-node.md); everything else says `internal`.
/// One variant, two names, chosen here ([`Error::wire_name`]).
pub const INTERNAL_ERROR: &str = "internal_error";

impl Error {
    /// A new error with a code and a message.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            details: None,
            data_node: false,
        }
    }

    /// Adds one detail field.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details
            .get_or_insert_with(Map::new)
            .insert(key.to_owned(), value.into());
        self
    }

    /// An I/O error with the path and operation that failed.
    pub fn io(op: &str, path: &std::path::Path, err: std::io::Error) -> Self {
        Error::new(Code::Io, format!("{op} {}: {err}", path.display()))
            .with("path", path.display().to_string())
    }

    /// An internal error (a bug, or a state that should be impossible).
    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(Code::Internal, message)
    }

    /// An internal failure as the data node answers it (wire name
    /// [`INTERNAL_ERROR`]; the same exit code and HTTP status as
    /// `internal`).
    pub fn internal_error(message: impl Into<String>) -> Self {
        Error {
            data_node: true,
            ..Error::internal(message)
        }
    }

    /// The error a wire name and message describe (either name of
    /// [`Code::Internal`] included), if the name is known.
    pub fn from_wire(name: &str, message: impl Into<String>) -> Option<Error> {
        if name == INTERNAL_ERROR {
            return Some(Error::internal_error(message));
        }
        Code::from_name(name).map(|c| Error::new(c, message))
    }

    /// The name this error has on the wire: its code's, except that an
    /// internal failure of the data node says [`INTERNAL_ERROR`].
    pub fn wire_name(&self) -> &'static str {
        if self.code == Code::Internal && self.data_node {
            INTERNAL_ERROR
        } else {
            self.code.as_str()
        }
    }

    /// The stable code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The human message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Structured details, if any.
    pub fn details(&self) -> Option<&Map<String, Value>> {
        self.details.as_ref()
    }

    /// The wire form: `{"error", "message", "details"?}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("error".into(), Value::String(self.wire_name().into()));
        m.insert("message".into(), Value::String(self.message.clone()));
        if let Some(d) = &self.details {
            m.insert("details".into(), Value::Object(d.clone()));
        }
        Value::Object(m)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.wire_name(), self.message)
    }
}

impl std::error::Error for Error {}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ffi::ErrorCode;
        match &e {
            rusqlite::Error::SqliteFailure(f, _)
                if matches!(f.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) =>
            {
                Error::new(Code::Busy, format!("database is busy: {e}"))
            }
            rusqlite::Error::SqliteFailure(f, _) if f.code == ErrorCode::DatabaseCorrupt => {
                Error::new(Code::IntegrityError, format!("database is corrupt: {e}"))
            }
            _ => Error::internal(format!("sqlite: {e}")),
        }
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::new(Code::InvalidInput, format!("invalid JSON: {e}"))
    }
}

/// The table of every code, its exit code and HTTP status, as it appears in
/// `docs/errors.md` (kept in step by a test).
pub fn code_table_markdown() -> String {
    let mut out = String::from("| code | exit | HTTP |\n|---|---|---|\n");
    for c in Code::ALL {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            c.as_str(),
            c.exit_code(),
            c.http_status()
        ));
        if *c == Code::Internal {
            out.push_str(&format!(
                "| `{INTERNAL_ERROR}` | {} | {} |\n",
                c.exit_code(),
                c.http_status()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const BEGIN: &str = "<!-- codes:begin (generated: UPDATE_DOCS=1 cargo test --lib error) -->\n";
    const END: &str = "<!-- codes:end -->";

    #[test]
    fn docs_list_every_code() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/errors.md");
        let doc = std::fs::read_to_string(path).expect("docs/errors.md");
        let (head, rest) = doc.split_once(BEGIN).expect("begin marker");
        let (_, tail) = rest.split_once(END).expect("end marker");
        let want = format!("{head}{BEGIN}{}{END}{tail}", code_table_markdown());
        if crate::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(path, &want).expect("write docs/errors.md");
        }
        assert!(
            doc == want,
            "docs/errors.md is stale: run UPDATE_DOCS=1 cargo test --lib error"
        );
    }

    #[test]
    fn codes_are_unique_snake_case_and_never_exit_2() {
        let mut seen = HashSet::new();
        for c in Code::ALL {
            let s = c.as_str();
            // The one deliberate alias: the reference answers
            // sync_response_too_large 413 as a source and 502 as a destination.
            if *c != Code::PeerSyncResponseTooLarge {
                assert!(seen.insert(s), "duplicate code {s}");
            }
            assert!(
                s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit()),
                "{s}"
            );
            assert_ne!(c.exit_code(), 2, "{s} must not exit 2");
            assert_ne!(c.exit_code(), 0, "{s} must not exit 0");
            assert!((400..600).contains(&c.http_status()), "{s}");
        }
    }

    #[test]
    fn one_internal_variant_two_wire_names() {
        let wf = Error::internal("bug");
        let dn = Error::internal_error("The data node could not complete the request");
        assert_eq!((wf.code(), dn.code()), (Code::Internal, Code::Internal));
        assert_eq!(wf.to_json()["error"], "internal");
        assert_eq!(dn.to_json()["error"], "internal_error");
        assert_eq!(
            dn.to_string(),
            "internal_error: The data node could not complete the request"
        );
        let back = Error::from_wire("internal_error", "x").expect("known");
        assert_eq!(
            (back.code(), back.wire_name()),
            (Code::Internal, INTERNAL_ERROR)
        );
        assert_eq!(
            Error::from_wire("internal", "x").map(|e| e.wire_name()),
            Some("internal")
        );
        assert!(Error::from_wire("no_such_code", "x").is_none());
        assert!(
            Code::from_name(INTERNAL_ERROR).is_none(),
            "not a second variant"
        );
    }

    #[test]
    fn json_shape() {
        let e = Error::new(Code::Busy, "held").with("timeout_ms", 5);
        assert_eq!(
            e.to_json(),
            serde_json::json!({"error":"busy","message":"held","details":{"timeout_ms":5}})
        );
        assert_eq!(
            Error::new(Code::NotFound, "x").to_json().get("details"),
            None
        );
    }
}
