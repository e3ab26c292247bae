# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_agent_task_global_optspecs
    string join \n data-dir= pretty lock-timeout-ms= h/help V/version
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
complete -c agent-task -n "__fish_agent_task_needs_command" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agent-task -n "__fish_agent_task_needs_command" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "init" -d 'Create (or re-check and migrate) the owner-private data directory'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "info" -d 'Show the data directory, schema versions and counts (changes nothing)'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "cas" -d 'Store, read and verify content-addressed objects'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "runtime" -d 'Sandbox runtimes for command collectors'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "man" -d 'Write a man page per subcommand into a directory'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "data" -d 'agent-data/v1 node commands'
complete -c agent-task -n "__fish_agent_task_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand init" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand init" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand init" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand init" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand init" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand info" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand info" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand info" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand info" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand info" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -f -a "put" -d 'Store a file (or `-` for stdin) and print its SHA-256 and size'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -f -a "cat" -d 'Verify an object and write its bytes to a file'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -f -a "fsck" -d 'Verify every object against its digest (changes nothing)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and not __fish_seen_subcommand_from put cat fsck help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from put" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from put" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from put" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from put" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from put" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from cat" -l out -d 'Where to write the bytes (created 0600; must not exist)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from cat" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from cat" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from cat" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from cat" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from cat" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from fsck" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from fsck" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from fsck" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from fsck" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from fsck" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from help" -f -a "put" -d 'Store a file (or `-` for stdin) and print its SHA-256 and size'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from help" -f -a "cat" -d 'Verify an object and write its bytes to a file'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from help" -f -a "fsck" -d 'Verify every object against its digest (changes nothing)'
complete -c agent-task -n "__fish_agent_task_using_subcommand cas; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -f -a "probe" -d 'Print the observed identity (program digest, version, pinned arguments, isolation facts and their digest) after a trial run'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and not __fish_seen_subcommand_from probe help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l runtime -d 'Which runtime' -r -f -a "bwrap\t'bubblewrap: read-only snapshot, no network, pid namespace, private /tmp'
unshare\t'unshare: network cut only; the file system is shared'
oci\t'podman or docker with --network none'"
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from probe" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from help" -f -a "probe" -d 'Print the observed identity (program digest, version, pinned arguments, isolation facts and their digest) after a trial run'
complete -c agent-task -n "__fish_agent_task_using_subcommand runtime; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand completions" -l out -d 'Write the script to this file instead of embedding it in the JSON output' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand completions" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand completions" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand completions" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agent-task -n "__fish_agent_task_using_subcommand completions" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand man" -l out -d 'Directory to write `agent-task.1` and `agent-task-<cmd>.1` into' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand man" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand man" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand man" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand man" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand man" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from doctor help" -l data-dir -d 'Data directory (created 0700 by `init`)' -r -F
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from doctor help" -l lock-timeout-ms -d 'How long a mutating command waits for the data-directory lock before failing with `busy`' -r
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from doctor help" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from doctor help" -s h -l help -d 'Print help'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from doctor help" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from doctor help" -f -a "doctor" -d 'Run the agent-data/v1-slice1-http conformance profile against a node'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and not __fish_seen_subcommand_from doctor help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
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
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l token-stdin -d 'Read the node bearer from stdin (not a terminal; one line, at most 16,384 bytes)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l allow-mutations -d 'slice1: acknowledge that fixtures leave persistent records and tombstones'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -l pretty -d 'Pretty-print JSON output (the default when stdout is a terminal)'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from doctor" -s V -l version -d 'Print version'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from help" -f -a "doctor" -d 'Run the agent-data/v1-slice1-http conformance profile against a node'
complete -c agent-task -n "__fish_agent_task_using_subcommand data; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data help" -f -a "init" -d 'Create (or re-check and migrate) the owner-private data directory'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data help" -f -a "info" -d 'Show the data directory, schema versions and counts (changes nothing)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data help" -f -a "cas" -d 'Store, read and verify content-addressed objects'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data help" -f -a "runtime" -d 'Sandbox runtimes for command collectors'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data help" -f -a "completions" -d 'Print a shell completion script'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data help" -f -a "man" -d 'Write a man page per subcommand into a directory'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data help" -f -a "data" -d 'agent-data/v1 node commands'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and not __fish_seen_subcommand_from init info cas runtime completions man data help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from cas" -f -a "put" -d 'Store a file (or `-` for stdin) and print its SHA-256 and size'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from cas" -f -a "cat" -d 'Verify an object and write its bytes to a file'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from cas" -f -a "fsck" -d 'Verify every object against its digest (changes nothing)'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from runtime" -f -a "probe" -d 'Print the observed identity (program digest, version, pinned arguments, isolation facts and their digest) after a trial run'
complete -c agent-task -n "__fish_agent_task_using_subcommand help; and __fish_seen_subcommand_from data" -f -a "doctor" -d 'Run the agent-data/v1-slice1-http conformance profile against a node'
