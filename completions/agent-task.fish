# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_agent_task_global_optspecs
    string join \n data-dir= pretty lock-timeout-ms= token-file= h/help V/version
end

function __fish_agent_task_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_agent_task_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_agent_task_using_subcommand
    set -l cmd (__fish_agent_task_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c agent-task -n "__fish_agent_task_needs_command" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_needs_command" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_needs_command" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_needs_command" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agent-task -n "__fish_agent_task_needs_command" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "init" -d 'Create (or re-check and migrate) the owner-private data directory'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "info" -d 'Show the data directory, schema versions and counts (changes nothing)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "cas" -d 'Store, read and verify content-addressed objects'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "runtime" -d 'Sandbox runtimes for command collectors'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "man" -d 'Write a man page per subcommand into a directory'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "data" -d 'The agent-data/v1 local node'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "sync" -d 'agent-data-sync/v1: explicit encrypted pulls between data nodes'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "serve" -d 'Serve the data node over HTTP (hyper, loopback by default; limits in docs/http.md)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "repo" -d 'Operator: register and list repositories'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "requirement" -d 'Operator: install and show workflow requirements'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "token" -d 'Operator: issue and revoke agent tokens'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "keygen" -d 'Operator: create a collector signing key (the private part is never printed)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "enroll" -d 'Operator: enroll an executor public key for one repository, profile and step'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "enrollment" -d 'Operator: revoke an enrollment'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "change" -d 'Agent: open a Change on a workspace'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "checkpoint" -d 'Agent: snapshot the workspace into a new Change version (a new subject)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "capabilities" -d 'Agent: capability, schema versions and operation names'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "requirements" -d 'Agent: the installed requirement of a Change\'s profile'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "next" -d 'Agent: the typed next operation for a Change (data, never a command)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "instructions" -d 'Agent: a task\'s instruction entrypoint (or a schema mismatch)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "reference" -d 'Agent: read one named reference of a task'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "claim" -d 'Agent: claim a pending task (fresh attempt, bounded lease, new fence)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "heartbeat" -d 'Agent: renew an attempt\'s lease'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "status" -d 'Agent: exact-attempt status (side-effect free)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "cancel" -d 'Agent: cancel an attempt (execution may still run; reconcile next)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "reconcile" -d 'Agent: explicitly supersede an attempt\'s fence'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "result" -d 'Agent: submit an assertion or a signed registered observation'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "recovery" -d 'Agent: recovery envelope for a task, attempt or request (side-effect free)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "install-stop" -d 'Agent setup: register the read-only Stop hook for Claude Code or Codex'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "init-repo" -d 'Agent setup: write the managed "Workflow tasks" block into AGENTS.md and friends'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "task-stop" -d 'Stop hook for Claude Code (read-only): blocks until the Change is qualified'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "task-codex-stop" -d 'Stop hook for Codex CLI (read-only): blocks until the Change is qualified'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "profile" -d 'Operator: install an immutable collector profile'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "collector" -d 'Operator: set up collection for a privilege-separated agent (the sudo wrapper)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "collector-claim" -d 'Agent: claim a command task for the installed collector profile; prints the descriptor'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "collect" -d 'Agent/collector: run a claimed descriptor once, sign, retain and upload (exit 0 whatever the test said)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "retry-upload" -d 'Agent/collector: resend the identical retained transfer of an execution'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "finalize" -d 'Agent: create the v2 receipt of the current subject from retained transfers'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "qualify" -d 'Agent: read-only exact-subject qualification'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "land" -d 'Operator: admission rechecks, then move the target head (and commit, for git)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "sandbox-exec" -d 'Internal: the sandbox launcher a bwrap run goes through (limits, uid, then bwrap)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "authority" -d 'Operator: the authority\'s attestation signing key'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "attest" -d 'Operator: signed in-toto attestations (DSSE) of a landed or qualified Change'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "verify" -d 'Check a landed commit\'s attestations with only the repository and a public key'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "deploy" -d 'Operator: check the privilege-separated deployment; write serve\'s workspace config'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand init" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand init" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand init" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand init" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand init" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand init" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand info" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand info" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand info" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand info" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand info" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand info" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -f -a "put" -d 'Store a file (or `-` for stdin) and print its SHA-256 and size'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -f -a "cat" -d 'Verify an object and write its bytes to a file'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -f -a "fsck" -d 'Verify every object against its digest (changes nothing)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from put" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from put" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from put" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from put" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from put" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from put" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from cat" -l out -d 'Where to write the bytes (created 0600; must not exist)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from cat" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from cat" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from cat" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from cat" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from cat" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from cat" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from fsck" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from fsck" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from fsck" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from fsck" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from fsck" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from fsck" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from help" -f -a "put" -d 'Store a file (or `-` for stdin) and print its SHA-256 and size'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from help" -f -a "cat" -d 'Verify an object and write its bytes to a file'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from help" -f -a "fsck" -d 'Verify every object against its digest (changes nothing)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -f -a "probe" -d 'Print the observed identity (program digest, version, pinned arguments, isolation facts, for bwrap the pinned limits, for oci the engine and resolved image, and their digest) after a trial run (bwrap)'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l runtime -d 'Which runtime' -r -f -a "bwrap\t'bubblewrap: read-only snapshot, no network, pid namespace, sized private tmpfs, pinned limits'
unshare\t'unshare: refused (it shares the host file system with candidate code)'
oci\t'podman or docker with --network none'"
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l oci-image -d 'For `oci`: the image, pinned by digest (`NAME@sha256:<64 hex>`); it must be in the engine\'s local store (never pulled)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l sandbox-tmpfs-bytes -d 'Size of each writable tmpfs inside the sandbox (/tmp, /scratch, /dev/shm)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l sandbox-address-space-bytes -d 'Address space of each sandboxed process (RLIMIT_AS)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l sandbox-processes -d 'Processes and threads of the sandbox\'s uid (RLIMIT_NPROC)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l sandbox-file-size-bytes -d 'Largest file a sandboxed process may write (RLIMIT_FSIZE)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l sandbox-cpu-seconds -d 'CPU time of each sandboxed process (RLIMIT_CPU)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l sandbox-uid -d 'The dedicated uid (and gid) candidate code runs as; only when the collector runs as root, where it is required (default 2000000000)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from help" -f -a "probe" -d 'Print the observed identity (program digest, version, pinned arguments, isolation facts, for bwrap the pinned limits, for oci the engine and resolved image, and their digest) after a trial run (bwrap)'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand completions" -l out -d 'Write the script to this file instead of embedding it in the JSON output' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand completions" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand completions" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand completions" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand completions" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agent-task -n "__fish_agent_task_using_subcommand completions" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand man" -l out -d 'Directory to write `agent-task.1` and `agent-task-<cmd>.1` into (created, with its parents, when missing)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand man" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand man" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand man" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand man" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand man" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand man" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -f -a "init" -d 'Create (or re-check) the data node: ids, database, config, `default` collection'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -f -a "manifest" -d 'Print the capability manifest'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -f -a "collection" -d 'Define or list collections'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -f -a "collect" -d 'Collect one record (or many with --jsonl)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -f -a "query" -d 'Query records (full text and/or a `where` subset match)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -f -a "get" -d 'Exact read of one record and its verified bytes'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -f -a "changes" -d 'Read one page of the change feed'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -f -a "tombstone" -d 'Tombstone a record (idempotent; the first tombstone wins)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -f -a "doctor" -d 'Run the agent-data/v1-slice1-http conformance profile against a node'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from init manifest collection collect query get changes tombstone doctor help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from init" -l node-id -d 'Node id to assert (default on first init: `node_` + a random UUID)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from init" -l file-root -d 'A directory the `file` collector may read under (repeatable; added to the node config)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from init" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from init" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from init" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from init" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from init" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from init" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from manifest" -l origin -d 'Origin to build absolute endpoint URLs on (for example `http://127.0.0.1:7742`); without it the endpoints are paths' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from manifest" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from manifest" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from manifest" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from manifest" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from manifest" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from manifest" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collection" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collection" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collection" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collection" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collection" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collection" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collection" -f -a "create" -d 'Define a collection (idempotent; a different definition is `collection_conflict`)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collection" -f -a "list" -d 'List every collection, ordered by id'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collection" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collect" -l collection -d 'Collection id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collect" -l collector -d 'Collector id (`text`, `file`, …)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collect" -l input -d 'The collector input as a JSON object' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collect" -l jsonl -d 'Bulk ingest: a file (or `-` for stdin) with one collector input object per line. Many records share each durable transaction; after each commit one JSON line on stderr acknowledges every line up to `committed_through_line`' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collect" -l batch -d 'Lines per durable transaction in bulk mode, at most (the first batch has at most 1,024, each next one four times the last; a batch is also cut at 16 MiB of prepared records)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collect" -l flush-ms -d 'Bulk mode: a batch also commits once its first line has waited this many milliseconds, however few lines it has, so a slow producer\'s lines are acknowledged within about this long' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collect" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collect" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collect" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collect" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collect" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from collect" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from query" -l text -d 'Full-text search words (ANDed, no prefix matching)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from query" -l where -d 'A JSON object matched as a subset of each record envelope' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from query" -l limit -d 'Most hits (default 20, at most 100)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from query" -l collection -d 'Restrict to a collection (repeatable)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from query" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from query" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from query" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from query" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from query" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from query" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from get" -l content-out -d 'Write the verified bytes to this file (0600) instead of embedding them in the output' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from get" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from get" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from get" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from get" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from get" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from get" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from changes" -l collection -d 'Only changes of this collection' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from changes" -l cursor -d 'Continue after this cursor' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from changes" -l limit -d 'Page size (default 100, at most 1000)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from changes" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from changes" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from changes" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from changes" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from changes" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from changes" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from tombstone" -l reason -d 'Why (at most 1000 UTF-16 units; empty means none)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from tombstone" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from tombstone" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from tombstone" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from tombstone" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from tombstone" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from tombstone" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l profile -d 'Conformance profile' -r -f -a "public\t'Discovery and the unauthenticated auth boundary'
read\t'`public` plus authenticated read-only probes (needs a bearer)'
slice1\t'`read` plus the mutating fixture lifecycle (needs all slice1 gates)'"
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l format -d 'Report format (JSON only: every agent-task command prints JSON)' -r -f -a "json\t'One `agent-data-conformance-report/v1` JSON document on stdout'"
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l token-env -d 'Read the node bearer from this environment variable' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l scratch-collection -d 'slice1: collection provisioned for conformance fixtures' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l expected-node-id -d 'slice1: the node id the operator expects (from public discovery)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l timeout-ms -d 'Per-request timeout in milliseconds (1..=120000)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l max-response-bytes -d 'Per-response byte cap (1..=33554432)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l max-change-pages -d 'Page cap of the slice1 baseline drain (1..=1000)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l token -d 'Refused: a bearer never goes in argv (use --token-stdin or --token-env)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l bearer -d 'Refused: a bearer never goes in argv (use --token-stdin or --token-env)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l token-stdin -d 'Read the node bearer from stdin (not a terminal; one line, at most 16,384 bytes)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l allow-mutations -d 'slice1: acknowledge that fixtures leave persistent records and tombstones'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from help" -f -a "init" -d 'Create (or re-check) the data node: ids, database, config, `default` collection'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from help" -f -a "manifest" -d 'Print the capability manifest'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from help" -f -a "collection" -d 'Define or list collections'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from help" -f -a "collect" -d 'Collect one record (or many with --jsonl)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from help" -f -a "query" -d 'Query records (full text and/or a `where` subset match)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from help" -f -a "get" -d 'Exact read of one record and its verified bytes'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from help" -f -a "changes" -d 'Read one page of the change feed'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from help" -f -a "tombstone" -d 'Tombstone a record (idempotent; the first tombstone wins)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from help" -f -a "doctor" -d 'Run the agent-data/v1-slice1-http conformance profile against a node'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -f -a "keygen" -d 'Create this node\'s sync identity (Ed25519 publisher + X25519 recipient keys, owner-private)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -f -a "identity" -d 'Print the public identity another operator pins (ids, keys, key id)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -f -a "authority" -d 'Source side: page authorities (who may page which collections, for which recipient)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -f -a "peer" -d 'Destination side: peers this node pulls from'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -f -a "pull" -d 'Pull pages of one collection from a configured peer'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -f -a "status" -d 'The checkpoint status of one (peer, collection) (never the raw cursor)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -f -a "reset" -d 'Delete the checkpoint of one (peer, collection); imported data stays'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and not __fish_seen_subcommand_from keygen identity authority peer pull status reset help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from keygen" -l id -d 'The identity id (opaque, 1-2048 characters, e.g. did:example:node-a)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from keygen" -l import -d 'Restore keys from a backup instead of generating them: an owner-only JSON file {"ed25519_seed": b64u(32), "x25519_secret": b64u(32)}' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from keygen" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from keygen" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from keygen" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from keygen" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from keygen" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from keygen" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from identity" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from identity" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from identity" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from identity" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from identity" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from identity" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from authority" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from authority" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from authority" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from authority" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from authority" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from authority" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from authority" -f -a "add" -d 'Add a page authority'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from authority" -f -a "list" -d 'List page authorities (never their bearers)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from authority" -f -a "remove" -d 'Remove a page authority (its bearer stops working at once)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from authority" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from peer" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from peer" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from peer" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from peer" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from peer" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from peer" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from peer" -f -a "add" -d 'Configure a peer to pull from'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from peer" -f -a "list" -d 'List peers (never their bearers)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from peer" -f -a "remove" -d 'Remove a peer; its checkpoints stay and refuse a re-added peer with another origin, node id or publisher until `sync reset`'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from peer" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from pull" -l peer -d 'Peer alias' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from pull" -l collection -d 'Collection' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from pull" -l limit -d 'Changes per page (1-100, default 10)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from pull" -l max-pages -d 'Pages at most (1-100, default 10)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from pull" -l max-plaintext-bytes -d 'Record-content bytes per page (default 1 MiB, at most 10 MiB)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from pull" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from pull" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from pull" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from pull" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from pull" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from pull" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from status" -l peer -d 'Peer alias' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from status" -l collection -d 'Collection' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from status" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from status" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from status" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from status" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from status" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from reset" -l peer -d 'Peer alias' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from reset" -l collection -d 'Collection' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from reset" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from reset" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from reset" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from reset" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from reset" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from reset" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from help" -f -a "keygen" -d 'Create this node\'s sync identity (Ed25519 publisher + X25519 recipient keys, owner-private)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from help" -f -a "identity" -d 'Print the public identity another operator pins (ids, keys, key id)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from help" -f -a "authority" -d 'Source side: page authorities (who may page which collections, for which recipient)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from help" -f -a "peer" -d 'Destination side: peers this node pulls from'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from help" -f -a "pull" -d 'Pull pages of one collection from a configured peer'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from help" -f -a "status" -d 'The checkpoint status of one (peer, collection) (never the raw cursor)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from help" -f -a "reset" -d 'Delete the checkpoint of one (peer, collection); imported data stays'
complete -c agent-task -n "__fish_agent_task_using_subcommand sync; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l bind -d 'Address to listen on. A non-loopback host needs a node bearer, and TLS (--tls-cert/--tls-key) unless --insecure-http' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l tls-cert -d 'PEM certificate chain (leaf first): serve HTTPS with rustls' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l tls-key -d 'PEM private key of --tls-cert (owner-private 0600, not a symlink)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l public-name -d 'A host name (NAME or NAME:PORT; the bound port by default) clients use for this server, added to the allow-list checked against every request\'s Host (else 421 misdirected_request) and MCP\'s Origin. The bound address is always on it, and a loopback bind adds localhost, 127.0.0.1 and [::1]. Repeatable; required for a wildcard bind' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l data-token-file -d 'File holding the dedicated node bearer (one line; owner-private 0600, not a symlink). Without it (and without AGENT_TASK_NODE_TOKEN) every /v1/data/* route answers 503' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l workers -d 'Handler threads: the bounded pool that runs request handlers. Socket work (heads, bodies, writes) for every connection runs on two other threads, never one per connection' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l compute-threads -d 'Compute threads: the small pool that runs, in arrival order, the handlers that never wait (workspace reads, and mutations that only queue to the writer; `docs/http.md`, "Two pools"). 0: one per core' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l max-connections -d 'Requests in progress at once: a connection holds a slot from its complete request head until the answer is written. Past it, --accept-backlog more wait for a slot; every other gets 503 server_busy' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l accept-backlog -d 'Requests over --max-connections that may wait for a slot (each at most --accept-backlog-ms, then 503 server_busy)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l accept-backlog-ms -d 'How long a request over --max-connections waits for a slot' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l max-header-bytes -d 'Largest request head (request line and headers) in bytes; a larger one gets 431 header_too_large' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l max-headers -d 'Most header lines in one request; more get 431 header_too_large' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l head-budget -d 'Connections still reading a request head (a new connection, a TLS handshake, a kept-alive connection between requests) at once, apart from --max-connections. When full, the one that has waited longest is closed for a newcomer; new connections are never refused' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l first-byte-timeout-ms -d 'Deadline for the first byte of a connection\'s first request head, from the accept (a TLS handshake included); then closed without an answer. Also the grace before --min-head-rate applies' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l min-head-rate -d 'Bytes per second a request head must arrive at on average, after its first byte and --first-byte-timeout-ms of grace; a slower head gets 408 request_timeout. 0: no minimum rate' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l head-timeout-ms -d 'Deadline for a whole request head, from its first byte (for a connection\'s first request, from the accept); then 408 request_timeout' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l body-timeout-ms -d 'Deadline for a request body, from the moment the request is admitted (authenticated and within its route\'s cap); then 408 request_timeout' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l idle-timeout-ms -d 'How long a kept-alive connection may wait for the first byte of its next request before it is closed (without an answer). Meanwhile it holds a place in --head-budget, not a --max-connections slot' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l send-timeout-ms -d 'How long writing a response may make no progress (a client that does not read) before the connection is dropped' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l workspace-config -d 'Operator file of workspace task profiles (`agent_task_profiles`, version 1): mounts the workspace task endpoint, the collector upload route and MCP under /v1/hub/workspace/ (bearer: an agent token). The data routes are then mounted only when the data node is initialised' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l max-revision-bytes -d 'Remote checkpoints: refuse (`revision_too_large`) a manifest whose files add up to more than this many bytes' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l max-manifest-bytes -d 'Remote checkpoints: the largest manifest body (64 MiB holds about 500,000 entries)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l max-pack-bytes -d 'Remote checkpoints: the largest blob pack body, and so the largest single file a remote checkpoint can carry' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l staging-quota-bytes -d 'Remote checkpoints: the most bytes of uploaded blobs not yet referenced by a revision that one agent may have staged' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l staging-ttl-ms -d 'Remote checkpoints: how long a checkpoint session, and a staged blob no revision references, live before they are removed' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l write-queue -d 'Workspace mutations queued for the group-commit writer of a data directory at most; past it a mutation is answered 503 busy at once' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l write-batch -d 'Workspace mutations one batch of the writer applies and commits together at most (one commit per database a batch)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l writer-stats-ms -d 'Every MS milliseconds, one JSON line per group-commit writer on stderr when its counters moved: `{"writer_stats": {"data_dir", "batches", "mutations", "mean_batch", "largest_batch", "queued"}}`. 0: never' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l insecure-http -d 'Serve plain HTTP on a non-loopback address: bearers and agent tokens then cross the network in clear. Without it such a bind is refused'
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand serve" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and not __fish_seen_subcommand_from add list help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and not __fish_seen_subcommand_from add list help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and not __fish_seen_subcommand_from add list help" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and not __fish_seen_subcommand_from add list help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and not __fish_seen_subcommand_from add list help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and not __fish_seen_subcommand_from add list help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and not __fish_seen_subcommand_from add list help" -f -a "add" -d 'Register a source directory as a repository; its tree becomes the target head'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and not __fish_seen_subcommand_from add list help" -f -a "list" -d 'List repositories'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and not __fish_seen_subcommand_from add list help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from add" -l source -d 'Source directory' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from add" -l target -d 'Protected target name' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from add" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from add" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from add" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from add" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from add" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from add" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from list" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from list" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from list" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from list" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from help" -f -a "add" -d 'Register a source directory as a repository; its tree becomes the target head'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from help" -f -a "list" -d 'List repositories'
complete -c agent-task -n "__fish_agent_task_using_subcommand repo; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and not __fish_seen_subcommand_from install show help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and not __fish_seen_subcommand_from install show help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and not __fish_seen_subcommand_from install show help" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and not __fish_seen_subcommand_from install show help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and not __fish_seen_subcommand_from install show help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and not __fish_seen_subcommand_from install show help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and not __fish_seen_subcommand_from install show help" -f -a "install" -d 'Install a workflow file (docs/workflow-file.md) for a repository profile; bumps the policy epoch (which makes every live subject stale: `stale_subjects`) unless the file is canonically identical to the installed requirement (`unchanged: true`)'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and not __fish_seen_subcommand_from install show help" -f -a "show" -d 'Show the installed requirement of a repository profile'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and not __fish_seen_subcommand_from install show help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from install" -l repo -d 'Repository id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from install" -l profile -d 'Profile id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from install" -l file -d 'Workflow JSON file' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from install" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from install" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from install" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from install" -l bump-epoch -d 'Bump the policy epoch even when the requirement is unchanged (invalidates the evidence of every live subject)'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from install" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from install" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from install" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from show" -l repo -d 'Repository id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from show" -l profile -d 'Profile id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from show" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from show" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from show" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from show" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from help" -f -a "install" -d 'Install a workflow file (docs/workflow-file.md) for a repository profile; bumps the policy epoch (which makes every live subject stale: `stale_subjects`) unless the file is canonically identical to the installed requirement (`unchanged: true`)'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show the installed requirement of a repository profile'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirement; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and not __fish_seen_subcommand_from issue revoke help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and not __fish_seen_subcommand_from issue revoke help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and not __fish_seen_subcommand_from issue revoke help" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and not __fish_seen_subcommand_from issue revoke help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and not __fish_seen_subcommand_from issue revoke help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and not __fish_seen_subcommand_from issue revoke help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and not __fish_seen_subcommand_from issue revoke help" -f -a "issue" -d 'Issue an agent token into a new 0600 file (only its hash is kept)'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and not __fish_seen_subcommand_from issue revoke help" -f -a "revoke" -d 'Revoke an agent\'s token (bumps its grant generation)'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and not __fish_seen_subcommand_from issue revoke help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from issue" -l owner -d 'Owner id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from issue" -l agent -d 'Agent id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from issue" -l out -d 'Token file to create (must not exist)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from issue" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from issue" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from issue" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from issue" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from issue" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from issue" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from revoke" -l owner -d 'Owner id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from revoke" -l agent -d 'Agent id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from revoke" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from revoke" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from revoke" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from revoke" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from revoke" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from revoke" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from help" -f -a "issue" -d 'Issue an agent token into a new 0600 file (only its hash is kept)'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from help" -f -a "revoke" -d 'Revoke an agent\'s token (bumps its grant generation)'
complete -c agent-task -n "__fish_agent_task_using_subcommand token; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand keygen" -l collector-dir -d 'Owner-private collector directory (created 0700); the key file is 0600 and never printed' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand keygen" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand keygen" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand keygen" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand keygen" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand keygen" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand keygen" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand enroll" -l repo -d 'Repository id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand enroll" -l profile -d 'Profile id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand enroll" -l step -d 'Step id of the installed requirement' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand enroll" -l executor -d 'Executor name' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand enroll" -l public-key -d 'Ed25519 public key, 64 lowercase hex characters' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand enroll" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand enroll" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand enroll" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand enroll" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand enroll" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand enroll" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and not __fish_seen_subcommand_from revoke help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and not __fish_seen_subcommand_from revoke help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and not __fish_seen_subcommand_from revoke help" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and not __fish_seen_subcommand_from revoke help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and not __fish_seen_subcommand_from revoke help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and not __fish_seen_subcommand_from revoke help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and not __fish_seen_subcommand_from revoke help" -f -a "revoke" -d 'Revoke a registration (bumps the policy epoch; old evidence stays invalid)'
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and not __fish_seen_subcommand_from revoke help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and __fish_seen_subcommand_from revoke" -l registration -d 'Registration id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and __fish_seen_subcommand_from revoke" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and __fish_seen_subcommand_from revoke" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and __fish_seen_subcommand_from revoke" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and __fish_seen_subcommand_from revoke" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and __fish_seen_subcommand_from revoke" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and __fish_seen_subcommand_from revoke" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and __fish_seen_subcommand_from help" -f -a "revoke" -d 'Revoke a registration (bumps the policy epoch; old evidence stays invalid)'
complete -c agent-task -n "__fish_agent_task_using_subcommand enrollment; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and not __fish_seen_subcommand_from open help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and not __fish_seen_subcommand_from open help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and not __fish_seen_subcommand_from open help" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and not __fish_seen_subcommand_from open help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and not __fish_seen_subcommand_from open help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and not __fish_seen_subcommand_from open help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and not __fish_seen_subcommand_from open help" -f -a "open" -d 'Open a Change for the token\'s actor: on a workspace of this host (--repo, --profile, --workspace), or through a workspace endpoint (--endpoint, --repository, --profile), where the workspace stays the client\'s and is never named'
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and not __fish_seen_subcommand_from open help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -l repo -d 'Repository id (local)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -l profile -d 'Profile id (local: the native profile; with --endpoint: the workspace profile)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -l workspace -d 'Workspace directory (local)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -l endpoint -d 'Open through this workspace endpoint (base URL)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -l request-id -d 'Idempotency key (with --endpoint): a retry returns the Change this request opened' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -l title -d 'The Change\'s title: the landed commit\'s subject line (control characters stripped, at most 200 characters)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -l body -d 'The Change\'s body: the landed commit\'s message body (control characters stripped, at most 16 KiB; lines shaped like git trailers are indented)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from open" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from help" -f -a "open" -d 'Open a Change for the token\'s actor: on a workspace of this host (--repo, --profile, --workspace), or through a workspace endpoint (--endpoint, --repository, --profile), where the workspace stays the client\'s and is never named'
complete -c agent-task -n "__fish_agent_task_using_subcommand change; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -l change -d 'Change id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -l workspace -d 'Workspace directory of the Change' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -l max-revision-bytes -d 'Refuse (`revision_too_large`, before reading any file) a workspace whose files add up to more than this many bytes' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -s m -l message -d 'Set the Change\'s title (first line) and body (the rest): the landed commit\'s message' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -l new-subject -d 'Mint a new subject (fresh task ids) even when the tree is the current subject\'s revision and that subject still has live or pending tasks'
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand checkpoint" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand capabilities" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand capabilities" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand capabilities" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand capabilities" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand capabilities" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand capabilities" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand capabilities" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand capabilities" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand capabilities" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirements" -l change -d 'Change id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand requirements" -l workspace -d 'Workspace directory of the Change' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand requirements" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand requirements" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand requirements" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand requirements" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand requirements" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand requirements" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand requirements" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirements" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand requirements" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand next" -l change -d 'Change id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand next" -l workspace -d 'Workspace directory of the Change' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand next" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand next" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand next" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand next" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand next" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand next" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand next" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand next" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand next" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand instructions" -l schema-version -d 'Schema version the caller speaks' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand instructions" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand instructions" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand instructions" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand instructions" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand instructions" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand instructions" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand instructions" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand instructions" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand instructions" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand reference" -l schema-version -d 'Expected schema version' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reference" -l expected-sha256 -d 'Expected body SHA-256 (from instructions)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reference" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reference" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reference" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reference" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand reference" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reference" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand reference" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand reference" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand reference" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand claim" -l request-id -d 'Idempotency key (an identical retry returns the retained outcome)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand claim" -l lease-ms -d 'Requested lease' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand claim" -l executor -d 'Executor registration that will run the task' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand claim" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand claim" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand claim" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand claim" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand claim" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand claim" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand claim" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand claim" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand claim" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -l attempt -d 'Attempt id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -l fence -d 'The fence the caller holds' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -l request-id -d 'Idempotency key' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -l lease-ms -d 'Requested lease (heartbeat)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -l reason -d 'Reason (cancel, reconcile)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand heartbeat" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand status" -l task -d 'Task id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand status" -l attempt -d 'Attempt id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand status" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand status" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand status" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand status" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand status" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand status" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand status" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand status" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand status" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -l attempt -d 'Attempt id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -l fence -d 'The fence the caller holds' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -l request-id -d 'Idempotency key' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -l lease-ms -d 'Requested lease (heartbeat)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -l reason -d 'Reason (cancel, reconcile)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand cancel" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -l attempt -d 'Attempt id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -l fence -d 'The fence the caller holds' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -l request-id -d 'Idempotency key' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -l lease-ms -d 'Requested lease (heartbeat)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -l reason -d 'Reason (cancel, reconcile)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand reconcile" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand result" -l file -d 'TaskResultAssertion JSON file (`-` for stdin)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand result" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand result" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand result" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand result" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand result" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand result" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand result" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand result" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand result" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand recovery" -l task -d 'Task id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand recovery" -l attempt -d 'Attempt id (default: the task\'s current attempt)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand recovery" -l request-id -d 'Request id to resolve' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand recovery" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand recovery" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand recovery" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand recovery" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand recovery" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand recovery" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand recovery" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand recovery" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand recovery" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand install-stop" -l agent -d 'Which agent\'s settings to edit' -r -f -a "claude\t'Claude Code: `.claude/settings.local.json`, `task-stop`'
codex\t'Codex CLI: `~/.codex/hooks.json` (or the repository\'s with `--repo-hooks`), `task-codex-stop`'"
complete -c agent-task -n "__fish_agent_task_using_subcommand install-stop" -l workspace -d 'The workspace holding `.claude/` or `.codex/`' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand install-stop" -l change -d 'The Change the hook guards' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand install-stop" -l endpoint -d 'Remote workspace endpoint (base URL) the hook asks for qualification' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand install-stop" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand install-stop" -l profile -d 'Profile id (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand install-stop" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand install-stop" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand install-stop" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand install-stop" -l repo-hooks -d 'Codex only: write the repository\'s .codex/hooks.json (kept out of revisions through git\'s info/exclude) instead of the user-level $CODEX_HOME/hooks.json'
complete -c agent-task -n "__fish_agent_task_using_subcommand install-stop" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand install-stop" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agent-task -n "__fish_agent_task_using_subcommand install-stop" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand init-repo" -l workspace -d 'The workspace whose instruction files get the managed block' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand init-repo" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand init-repo" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand init-repo" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand init-repo" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand init-repo" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand init-repo" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand task-stop" -l workspace -d 'The workspace the agent edits (the Change\'s workspace)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand task-stop" -l endpoint -d 'Ask qualification from a workspace endpoint (base URL) instead of computing it from --data-dir (30 s limit)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand task-stop" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand task-stop" -l profile -d 'Profile id (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand task-stop" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand task-stop" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand task-stop" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand task-stop" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand task-stop" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand task-stop" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand task-codex-stop" -l workspace -d 'The workspace the agent edits (the Change\'s workspace)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand task-codex-stop" -l endpoint -d 'Ask qualification from a workspace endpoint (base URL) instead of computing it from --data-dir (30 s limit)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand task-codex-stop" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand task-codex-stop" -l profile -d 'Profile id (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand task-codex-stop" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand task-codex-stop" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand task-codex-stop" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand task-codex-stop" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand task-codex-stop" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand task-codex-stop" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and not __fish_seen_subcommand_from install help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and not __fish_seen_subcommand_from install help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and not __fish_seen_subcommand_from install help" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and not __fish_seen_subcommand_from install help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and not __fish_seen_subcommand_from install help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and not __fish_seen_subcommand_from install help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and not __fish_seen_subcommand_from install help" -f -a "install" -d 'Install an immutable collector profile for one current registration epoch and step: for a command step, pins the step\'s command recipe and the SHA-256 of the runtime identity (probed now, or read from --file); for a review step (`--runtime review`), copies in the step\'s criteria, coverage and budgets and pins the reviewer executable (script and interpreter, by path and SHA-256), the model and the provider'
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and not __fish_seen_subcommand_from install help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l registration -d 'Registration id (from `enroll`)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l step -d 'Step id (a command or review step of the installed requirement)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l runtime -d 'Runtime (`review` for a review step)' -r -f -a "bwrap\t'bubblewrap (command steps)'
unshare\t'unshare: refused (it shares the host file system with candidate code)'
oci\t'podman or docker with --network none (command steps)'
review\t'The finite review controller (review steps): a pinned Claude Code executable'"
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l executable -d '`review` only: the reviewer executable to pin (an npm-installed `claude`, or another program speaking Claude Code\'s print-mode JSON)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l model -d '`review` only: the full model id passed to `--model`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l provider -d '`review` only: the provider scope' -r -f -a "anthropic\t'Anthropic\'s API through the pinned Claude Code executable'"
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l env -d '`review` only: an operator variable passed to the executable (repeatable; ANTHROPIC_API_KEY, HTTPS_PROXY, NO_PROXY, NODE_EXTRA_CA_CERTS)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l file -d 'A pinned identity `{"basis": "pinned_file", "identity": {…}}` instead of probing now' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l oci-image -d 'The image an `oci` profile runs, pinned by digest (`NAME@sha256:<64 hex>`; a tag alone is refused). It must already be in the engine\'s local store: collections never pull' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l sandbox-tmpfs-bytes -d 'Size of each writable tmpfs inside the sandbox (/tmp, /scratch, /dev/shm)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l sandbox-address-space-bytes -d 'Address space of each sandboxed process (RLIMIT_AS)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l sandbox-processes -d 'Processes and threads of the sandbox\'s uid (RLIMIT_NPROC)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l sandbox-file-size-bytes -d 'Largest file a sandboxed process may write (RLIMIT_FSIZE)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l sandbox-cpu-seconds -d 'CPU time of each sandboxed process (RLIMIT_CPU)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l sandbox-uid -d 'The dedicated uid (and gid) candidate code runs as; only when the collector runs as root, where it is required (default 2000000000)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from install" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from help" -f -a "install" -d 'Install an immutable collector profile for one current registration epoch and step: for a command step, pins the step\'s command recipe and the SHA-256 of the runtime identity (probed now, or read from --file); for a review step (`--runtime review`), copies in the step\'s criteria, coverage and budgets and pins the reviewer executable (script and interpreter, by path and SHA-256), the model and the provider'
complete -c agent-task -n "__fish_agent_task_using_subcommand profile; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and not __fish_seen_subcommand_from wrapper help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and not __fish_seen_subcommand_from wrapper help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and not __fish_seen_subcommand_from wrapper help" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and not __fish_seen_subcommand_from wrapper help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and not __fish_seen_subcommand_from wrapper help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and not __fish_seen_subcommand_from wrapper help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and not __fish_seen_subcommand_from wrapper help" -f -a "wrapper" -d 'Operator (as root): write the sudo wrapper of a privilege-separated deployment — a root-owned script pinning the binary, --data-dir and --collector-dir that takes the agent\'s token and the descriptor on stdin — and the sudoers rule that lets the agent\'s user run exactly it as the operator (checked with visudo -c when --sudoers-out is given)'
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and not __fish_seen_subcommand_from wrapper help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l out -d 'Where to write the wrapper script (in a root-owned directory, e.g. /usr/local/sbin/agent-task-collect)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l collector-dir -d 'The operator\'s collector directory (signing key and retained state)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l binary -d 'The root-owned agent-task binary the wrapper runs' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l operator-user -d 'The operator\'s user (who owns the data and collector directories)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l agent-user -d 'The agent\'s user (the only user the rule lets run the wrapper)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l sudoers-out -d 'Also write the sudoers rule here (e.g. /etc/sudoers.d/agent-task-collect)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l endpoint -d 'The operator\'s `serve` the wrapper\'s collect uploads to (`http://HOST:PORT`): it never imports locally, so nothing the agent starts takes the data directory\'s lock' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l repository -d 'The workspace repository id of the upload route' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l profile -d 'The workspace profile id of the upload route' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l review-credential-file -d 'The operator\'s review credential file (NAME=VALUE lines, the operator\'s, mode 0600): a review collect hands the values to the pinned reviewer only (docs/review.md, "Credentials")' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from wrapper" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from help" -f -a "wrapper" -d 'Operator (as root): write the sudo wrapper of a privilege-separated deployment — a root-owned script pinning the binary, --data-dir and --collector-dir that takes the agent\'s token and the descriptor on stdin — and the sudoers rule that lets the agent\'s user run exactly it as the operator (checked with visudo -c when --sudoers-out is given)'
complete -c agent-task -n "__fish_agent_task_using_subcommand collector; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand collector-claim" -l request-id -d 'Idempotency key (default: a fresh one)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collector-claim" -l descriptor-out -d 'Also write the descriptor to this new 0600 file' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collector-claim" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collector-claim" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collector-claim" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collector-claim" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collector-claim" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collector-claim" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collector-claim" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand collector-claim" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand collector-claim" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand collect" -l descriptor -d 'The descriptor (from `collector-claim`); `-` reads it from stdin' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collect" -l collector-dir -d 'The owner-private collector directory (signing key and retained state)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collect" -l review-credential-file -d 'A review collect: the operator\'s credential file (NAME=VALUE lines, the caller\'s, mode 0600) whose values go to the pinned reviewer\'s environment only, instead of this process\'s environment' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collect" -l endpoint -d 'Workspace endpoint base URL (`http://host:port`)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collect" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collect" -l profile -d 'Profile id (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collect" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collect" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand collect" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand collect" -l token-on-stdin -d 'Read the agent\'s token from the first line of stdin, the descriptor from the rest (with `--descriptor -`): how the sudo wrapper, which resets the environment, passes them. Excludes --token-file. Marks a wrapper-started collect: it needs --endpoint and never imports locally (nothing the agent starts takes the data directory\'s lock)'
complete -c agent-task -n "__fish_agent_task_using_subcommand collect" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand collect" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand collect" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand retry-upload" -l collector-dir -d 'The collector directory' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand retry-upload" -l operation -d 'The execution operation id (from the descriptor)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand retry-upload" -l endpoint -d 'Workspace endpoint base URL (`http://host:port`)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand retry-upload" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand retry-upload" -l profile -d 'Profile id (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand retry-upload" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand retry-upload" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand retry-upload" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand retry-upload" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand retry-upload" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand retry-upload" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand finalize" -l change -d 'Change id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand finalize" -l workspace -d 'Workspace directory of the Change' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand finalize" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand finalize" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand finalize" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand finalize" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand finalize" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand finalize" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand finalize" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand finalize" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand finalize" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand qualify" -l change -d 'Change id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand qualify" -l workspace -d 'Workspace directory of the Change' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand qualify" -l endpoint -d 'Run through this workspace endpoint (base URL, `http://host:port`) instead of a local data directory: the token file is all the agent needs (docs/workspace-http.md)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand qualify" -l repository -d 'Repository id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand qualify" -l profile -d 'Profile id of the workspace profile (with --endpoint)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand qualify" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand qualify" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand qualify" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand qualify" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand qualify" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand qualify" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand land" -l repo -d 'Repository id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand land" -l change -d 'Change id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand land" -l author -d 'The commit\'s author and committer, "Name <email>" (default: the operator\'s git identity in the repository: user.name, user.email)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand land" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand land" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand land" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand land" -l allow-protected-change -d 'Land a revision that changes protected paths (the operator\'s explicit override: no receipt is required for it, since its tests are not the operator\'s; the landing row and the commit message record it)'
complete -c agent-task -n "__fish_agent_task_using_subcommand land" -l update-worktree -d 'When the target branch is checked out in the repository\'s (non-bare) work tree, move its index and files along as `git merge --ff-only` would (clean work trees only: a dirty one is refused, no ref moved; no filter drivers run). Without it such a landing is refused before any ref moves (`worktree_checked_out`)'
complete -c agent-task -n "__fish_agent_task_using_subcommand land" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand land" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand land" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand sandbox-exec" -l limits -d 'The pinned limits and process attributes, as the runtime identity\'s `limits` JSON' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sandbox-exec" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sandbox-exec" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand sandbox-exec" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand sandbox-exec" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand sandbox-exec" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand sandbox-exec" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and not __fish_seen_subcommand_from key help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and not __fish_seen_subcommand_from key help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and not __fish_seen_subcommand_from key help" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and not __fish_seen_subcommand_from key help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and not __fish_seen_subcommand_from key help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and not __fish_seen_subcommand_from key help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and not __fish_seen_subcommand_from key help" -f -a "key" -d 'Print the authority\'s attestation public key and key id (`rotate`: make a new one)'
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and not __fish_seen_subcommand_from key help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and __fish_seen_subcommand_from key" -l format -d 'Public key format: 64 lowercase hex characters, or a PEM `PUBLIC KEY`' -r -f -a "hex\t'64 lowercase hex characters'
pem\t'PEM SubjectPublicKeyInfo (RFC 8410)'"
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and __fish_seen_subcommand_from key" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and __fish_seen_subcommand_from key" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and __fish_seen_subcommand_from key" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and __fish_seen_subcommand_from key" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and __fish_seen_subcommand_from key" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and __fish_seen_subcommand_from key" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and __fish_seen_subcommand_from key" -f -a "rotate" -d 'Make a new current signing key; old public keys stay listed for verification'
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and __fish_seen_subcommand_from key" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and __fish_seen_subcommand_from help" -f -a "key" -d 'Print the authority\'s attestation public key and key id (`rotate`: make a new one)'
complete -c agent-task -n "__fish_agent_task_using_subcommand authority; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand attest" -l change -d 'The Change (its landing when its current version landed, else its qualified subject)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand attest" -l out -d 'Also write each envelope and the whole set (`attestations.jsonl`) into this directory' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand attest" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand attest" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand attest" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand attest" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand attest" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand attest" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand verify" -l repo -d 'The git repository holding the commit and its `refs/notes/agent-task` note' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand verify" -l commit -d 'The landed commit' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand verify" -l key -d 'The authority\'s public key (PEM or 64 hex characters), e.g. from `authority key`' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand verify" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand verify" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand verify" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand verify" -l allow-override -d 'Also accept a commit the operator landed with `--allow-protected-change` (no receipt, no tests): reported `qualified: false` instead of failing with `attestation_unqualified`'
complete -c agent-task -n "__fish_agent_task_using_subcommand verify" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand verify" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand verify" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and not __fish_seen_subcommand_from check config help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and not __fish_seen_subcommand_from check config help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and not __fish_seen_subcommand_from check config help" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and not __fish_seen_subcommand_from check config help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and not __fish_seen_subcommand_from check config help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and not __fish_seen_subcommand_from check config help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and not __fish_seen_subcommand_from check config help" -f -a "check" -d 'Operator (as root): check the privilege-separated set-up and print each check with its fix (owners and modes, the wrapper\'s pins, the sudoers rule, what the agent\'s user can open, the endpoint, the managed hook). Changes nothing; exits 1 when a check failed'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and not __fish_seen_subcommand_from check config help" -f -a "config" -d 'Operator: write serve\'s workspace config from the registered repositories and installed requirements (0600, atomic); an identical file is left alone, another one replaced only with --force'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and not __fish_seen_subcommand_from check config help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l collector-dir -d 'The operator\'s collector directory (signing key and retained state)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l operator-user -d 'The operator\'s user' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l agent-user -d 'The agent\'s user' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l wrapper -d 'The collect wrapper' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l sudoers -d 'The sudoers rule of the wrapper' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l workspace-config -d 'serve\'s workspace config, to check too' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l endpoint -d 'The workspace endpoint to try with the agent\'s token (needs --repository, --profile and --token-file)' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l repository -d 'The endpoint\'s repository id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l profile -d 'The profile id' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l token-file -d 'The agent\'s token file (opened as the agent\'s user when run as root)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l claude-managed -d 'Claude Code\'s managed settings file' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l codex-requirements -d 'Codex\'s requirements file' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l hook-map -d 'The managed hook\'s uid map' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l skip -d 'Do not run a check or a group of checks (users, paths, config, wrapper, sudoers, agent, endpoint, hooks); reported as skipped. Repeatable' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from check" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from config" -l out -d 'Where to write the config (serve --workspace-config FILE)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from config" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from config" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from config" -l token-file -d 'The agent\'s token file (issued by `token issue`); the actor of every agent command comes from it, never from request JSON' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from config" -l force -d 'Replace a file that holds another config'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from config" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from config" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from config" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from help" -f -a "check" -d 'Operator (as root): check the privilege-separated set-up and print each check with its fix (owners and modes, the wrapper\'s pins, the sudoers rule, what the agent\'s user can open, the endpoint, the managed hook). Changes nothing; exits 1 when a check failed'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from help" -f -a "config" -d 'Operator: write serve\'s workspace config from the registered repositories and installed requirements (0600, atomic); an identical file is left alone, another one replaced only with --force'
complete -c agent-task -n "__fish_agent_task_using_subcommand deploy; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "init" -d 'Create (or re-check and migrate) the owner-private data directory'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "info" -d 'Show the data directory, schema versions and counts (changes nothing)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "cas" -d 'Store, read and verify content-addressed objects'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "runtime" -d 'Sandbox runtimes for command collectors'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "completions" -d 'Print a shell completion script'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "man" -d 'Write a man page per subcommand into a directory'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "data" -d 'The agent-data/v1 local node'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "sync" -d 'agent-data-sync/v1: explicit encrypted pulls between data nodes'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "serve" -d 'Serve the data node over HTTP (hyper, loopback by default; limits in docs/http.md)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "repo" -d 'Operator: register and list repositories'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "requirement" -d 'Operator: install and show workflow requirements'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "token" -d 'Operator: issue and revoke agent tokens'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "keygen" -d 'Operator: create a collector signing key (the private part is never printed)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "enroll" -d 'Operator: enroll an executor public key for one repository, profile and step'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "enrollment" -d 'Operator: revoke an enrollment'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "change" -d 'Agent: open a Change on a workspace'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "checkpoint" -d 'Agent: snapshot the workspace into a new Change version (a new subject)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "capabilities" -d 'Agent: capability, schema versions and operation names'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "requirements" -d 'Agent: the installed requirement of a Change\'s profile'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "next" -d 'Agent: the typed next operation for a Change (data, never a command)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "instructions" -d 'Agent: a task\'s instruction entrypoint (or a schema mismatch)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "reference" -d 'Agent: read one named reference of a task'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "claim" -d 'Agent: claim a pending task (fresh attempt, bounded lease, new fence)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "heartbeat" -d 'Agent: renew an attempt\'s lease'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "status" -d 'Agent: exact-attempt status (side-effect free)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "cancel" -d 'Agent: cancel an attempt (execution may still run; reconcile next)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "reconcile" -d 'Agent: explicitly supersede an attempt\'s fence'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "result" -d 'Agent: submit an assertion or a signed registered observation'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "recovery" -d 'Agent: recovery envelope for a task, attempt or request (side-effect free)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "install-stop" -d 'Agent setup: register the read-only Stop hook for Claude Code or Codex'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "init-repo" -d 'Agent setup: write the managed "Workflow tasks" block into AGENTS.md and friends'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "task-stop" -d 'Stop hook for Claude Code (read-only): blocks until the Change is qualified'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "task-codex-stop" -d 'Stop hook for Codex CLI (read-only): blocks until the Change is qualified'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "profile" -d 'Operator: install an immutable collector profile'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "collector" -d 'Operator: set up collection for a privilege-separated agent (the sudo wrapper)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "collector-claim" -d 'Agent: claim a command task for the installed collector profile; prints the descriptor'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "collect" -d 'Agent/collector: run a claimed descriptor once, sign, retain and upload (exit 0 whatever the test said)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "retry-upload" -d 'Agent/collector: resend the identical retained transfer of an execution'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "finalize" -d 'Agent: create the v2 receipt of the current subject from retained transfers'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "qualify" -d 'Agent: read-only exact-subject qualification'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "land" -d 'Operator: admission rechecks, then move the target head (and commit, for git)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "sandbox-exec" -d 'Internal: the sandbox launcher a bwrap run goes through (limits, uid, then bwrap)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "authority" -d 'Operator: the authority\'s attestation signing key'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "attest" -d 'Operator: signed in-toto attestations (DSSE) of a landed or qualified Change'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "verify" -d 'Check a landed commit\'s attestations with only the repository and a public key'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "deploy" -d 'Operator: check the privilege-separated deployment; write serve\'s workspace config'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data sync serve repo requirement token keygen enroll enrollment change checkpoint capabilities requirements next instructions reference claim heartbeat status cancel reconcile result recovery install-stop init-repo task-stop task-codex-stop profile collector collector-claim collect retry-upload finalize qualify land sandbox-exec authority attest verify deploy help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from cas" -f -a "put" -d 'Store a file (or `-` for stdin) and print its SHA-256 and size'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from cas" -f -a "cat" -d 'Verify an object and write its bytes to a file'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from cas" -f -a "fsck" -d 'Verify every object against its digest (changes nothing)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from runtime" -f -a "probe" -d 'Print the observed identity (program digest, version, pinned arguments, isolation facts, for bwrap the pinned limits, for oci the engine and resolved image, and their digest) after a trial run (bwrap)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from data" -f -a "init" -d 'Create (or re-check) the data node: ids, database, config, `default` collection'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from data" -f -a "manifest" -d 'Print the capability manifest'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from data" -f -a "collection" -d 'Define or list collections'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from data" -f -a "collect" -d 'Collect one record (or many with --jsonl)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from data" -f -a "query" -d 'Query records (full text and/or a `where` subset match)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from data" -f -a "get" -d 'Exact read of one record and its verified bytes'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from data" -f -a "changes" -d 'Read one page of the change feed'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from data" -f -a "tombstone" -d 'Tombstone a record (idempotent; the first tombstone wins)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from data" -f -a "doctor" -d 'Run the agent-data/v1-slice1-http conformance profile against a node'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from sync" -f -a "keygen" -d 'Create this node\'s sync identity (Ed25519 publisher + X25519 recipient keys, owner-private)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from sync" -f -a "identity" -d 'Print the public identity another operator pins (ids, keys, key id)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from sync" -f -a "authority" -d 'Source side: page authorities (who may page which collections, for which recipient)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from sync" -f -a "peer" -d 'Destination side: peers this node pulls from'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from sync" -f -a "pull" -d 'Pull pages of one collection from a configured peer'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from sync" -f -a "status" -d 'The checkpoint status of one (peer, collection) (never the raw cursor)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from sync" -f -a "reset" -d 'Delete the checkpoint of one (peer, collection); imported data stays'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from repo" -f -a "add" -d 'Register a source directory as a repository; its tree becomes the target head'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from repo" -f -a "list" -d 'List repositories'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from requirement" -f -a "install" -d 'Install a workflow file (docs/workflow-file.md) for a repository profile; bumps the policy epoch (which makes every live subject stale: `stale_subjects`) unless the file is canonically identical to the installed requirement (`unchanged: true`)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from requirement" -f -a "show" -d 'Show the installed requirement of a repository profile'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from token" -f -a "issue" -d 'Issue an agent token into a new 0600 file (only its hash is kept)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from token" -f -a "revoke" -d 'Revoke an agent\'s token (bumps its grant generation)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from enrollment" -f -a "revoke" -d 'Revoke a registration (bumps the policy epoch; old evidence stays invalid)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from change" -f -a "open" -d 'Open a Change for the token\'s actor: on a workspace of this host (--repo, --profile, --workspace), or through a workspace endpoint (--endpoint, --repository, --profile), where the workspace stays the client\'s and is never named'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from profile" -f -a "install" -d 'Install an immutable collector profile for one current registration epoch and step: for a command step, pins the step\'s command recipe and the SHA-256 of the runtime identity (probed now, or read from --file); for a review step (`--runtime review`), copies in the step\'s criteria, coverage and budgets and pins the reviewer executable (script and interpreter, by path and SHA-256), the model and the provider'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from collector" -f -a "wrapper" -d 'Operator (as root): write the sudo wrapper of a privilege-separated deployment — a root-owned script pinning the binary, --data-dir and --collector-dir that takes the agent\'s token and the descriptor on stdin — and the sudoers rule that lets the agent\'s user run exactly it as the operator (checked with visudo -c when --sudoers-out is given)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from authority" -f -a "key" -d 'Print the authority\'s attestation public key and key id (`rotate`: make a new one)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from deploy" -f -a "check" -d 'Operator (as root): check the privilege-separated set-up and print each check with its fix (owners and modes, the wrapper\'s pins, the sudoers rule, what the agent\'s user can open, the endpoint, the managed hook). Changes nothing; exits 1 when a check failed'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from deploy" -f -a "config" -d 'Operator: write serve\'s workspace config from the registered repositories and installed requirements (0600, atomic); an identical file is left alone, another one replaced only with --force'
