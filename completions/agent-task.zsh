#compdef agent-task

autoload -U is-at-least

_agent-task() {
    typeset -A opt_args
    typeset -a _arguments_options
    local ret=1

    if is-at-least 5.2; then
        _arguments_options=(-s -S -C)
    else
        _arguments_options=(-s -C)
    fi

    local context curcontext="$curcontext" state line
    _arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task_commands" \
"*::: :->agent-task" \
&& ret=0
    case $state in
    (agent-task)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-command-$line[1]:"
        case $line[1] in
            (init)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(info)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(cas)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__cas_commands" \
"*::: :->cas" \
&& ret=0

    case $state in
    (cas)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-cas-command-$line[1]:"
        case $line[1] in
            (put)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
':path -- File to store, or `-` for standard input:_files' \
&& ret=0
;;
(cat)
_arguments "${_arguments_options[@]}" : \
'--out=[Where to write the bytes (created 0600; must not exist)]:FILE:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
':digest -- The object'\''s SHA-256 (64 lowercase hex):_default' \
&& ret=0
;;
(fsck)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__cas__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-cas-help-command-$line[1]:"
        case $line[1] in
            (put)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(cat)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(fsck)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(runtime)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__runtime_commands" \
"*::: :->runtime" \
&& ret=0

    case $state in
    (runtime)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-runtime-command-$line[1]:"
        case $line[1] in
            (probe)
_arguments "${_arguments_options[@]}" : \
'--runtime=[Which runtime]:RUNTIME:((bwrap\:"bubblewrap\: read-only snapshot, no network, pid namespace, private /tmp"
unshare\:"unshare\: network cut only; the file system is shared"
oci\:"podman or docker with --network none"))' \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__runtime__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-runtime-help-command-$line[1]:"
        case $line[1] in
            (probe)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(completions)
_arguments "${_arguments_options[@]}" : \
'--out=[Write the script to this file instead of embedding it in the JSON output]:FILE:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'-V[Print version]' \
'--version[Print version]' \
':shell -- The shell to generate for:((bash\:"GNU Bash"
zsh\:"Z shell"
fish\:"fish"))' \
&& ret=0
;;
(man)
_arguments "${_arguments_options[@]}" : \
'--out=[Directory to write \`agent-task.1\` and \`agent-task-<cmd>.1\` into]:DIR:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(data)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__data_commands" \
"*::: :->data" \
&& ret=0

    case $state in
    (data)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-data-command-$line[1]:"
        case $line[1] in
            (doctor)
_arguments "${_arguments_options[@]}" : \
'--profile=[Conformance profile]:PROFILE:((public\:"Discovery and the unauthenticated auth boundary"
read\:"\`public\` plus authenticated read-only probes (needs a bearer)"
slice1\:"\`read\` plus the mutating fixture lifecycle (needs all slice1 gates)"))' \
'--format=[Report format (JSON only\: every agent-task command prints JSON)]:FORMAT:((json\:"One \`agent-data-conformance-report/v1\` JSON document on stdout"))' \
'--token-env=[Read the node bearer from this environment variable]:NAME:_default' \
'--scratch-collection=[slice1\: collection provisioned for conformance fixtures]:ID:_default' \
'--expected-node-id=[slice1\: the node id the operator expects (from public discovery)]:ID:_default' \
'--timeout-ms=[Per-request timeout in milliseconds (1..=120000)]:N:_default' \
'--max-response-bytes=[Per-response byte cap (1..=33554432)]:N:_default' \
'--max-change-pages=[Page cap of the slice1 baseline drain (1..=1000)]:N:_default' \
'--token=[Refused\: a bearer never goes in argv (use --token-stdin or --token-env)]::REFUSED:_default' \
'--bearer=[Refused\: a bearer never goes in argv (use --token-stdin or --token-env)]::REFUSED:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-stdin[Read the node bearer from stdin (not a terminal; one line, at most 16,384 bytes)]' \
'--allow-mutations[slice1\: acknowledge that fixtures leave persistent records and tombstones]' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'-V[Print version]' \
'--version[Print version]' \
':origin -- Target origin, e.g. http\://127.0.0.1\:7742 (plain http only for loopback):_default' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__data__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-data-help-command-$line[1]:"
        case $line[1] in
            (doctor)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-command-$line[1]:"
        case $line[1] in
            (init)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(info)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(cas)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__cas_commands" \
"*::: :->cas" \
&& ret=0

    case $state in
    (cas)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-cas-command-$line[1]:"
        case $line[1] in
            (put)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(cat)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(fsck)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(runtime)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__runtime_commands" \
"*::: :->runtime" \
&& ret=0

    case $state in
    (runtime)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-runtime-command-$line[1]:"
        case $line[1] in
            (probe)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(completions)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(man)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(data)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__data_commands" \
"*::: :->data" \
&& ret=0

    case $state in
    (data)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-data-command-$line[1]:"
        case $line[1] in
            (doctor)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
}

(( $+functions[_agent-task_commands] )) ||
_agent-task_commands() {
    local commands; commands=(
'init:Create (or re-check and migrate) the owner-private data directory' \
'info:Show the data directory, schema versions and counts (changes nothing)' \
'cas:Store, read and verify content-addressed objects' \
'runtime:Sandbox runtimes for command collectors' \
'completions:Print a shell completion script' \
'man:Write a man page per subcommand into a directory' \
'data:agent-data/v1 node commands' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__cas_commands] )) ||
_agent-task__subcmd__cas_commands() {
    local commands; commands=(
'put:Store a file (or \`-\` for stdin) and print its SHA-256 and size' \
'cat:Verify an object and write its bytes to a file' \
'fsck:Verify every object against its digest (changes nothing)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task cas commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__cas__subcmd__cat_commands] )) ||
_agent-task__subcmd__cas__subcmd__cat_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task cas cat commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__cas__subcmd__fsck_commands] )) ||
_agent-task__subcmd__cas__subcmd__fsck_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task cas fsck commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__cas__subcmd__help_commands] )) ||
_agent-task__subcmd__cas__subcmd__help_commands() {
    local commands; commands=(
'put:Store a file (or \`-\` for stdin) and print its SHA-256 and size' \
'cat:Verify an object and write its bytes to a file' \
'fsck:Verify every object against its digest (changes nothing)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task cas help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__cas__subcmd__help__subcmd__cat_commands] )) ||
_agent-task__subcmd__cas__subcmd__help__subcmd__cat_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task cas help cat commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__cas__subcmd__help__subcmd__fsck_commands] )) ||
_agent-task__subcmd__cas__subcmd__help__subcmd__fsck_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task cas help fsck commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__cas__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__cas__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task cas help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__cas__subcmd__help__subcmd__put_commands] )) ||
_agent-task__subcmd__cas__subcmd__help__subcmd__put_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task cas help put commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__cas__subcmd__put_commands] )) ||
_agent-task__subcmd__cas__subcmd__put_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task cas put commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__completions_commands] )) ||
_agent-task__subcmd__completions_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task completions commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data_commands] )) ||
_agent-task__subcmd__data_commands() {
    local commands; commands=(
'doctor:Run the agent-data/v1-slice1-http conformance profile against a node' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task data commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__doctor_commands] )) ||
_agent-task__subcmd__data__subcmd__doctor_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data doctor commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help_commands] )) ||
_agent-task__subcmd__data__subcmd__help_commands() {
    local commands; commands=(
'doctor:Run the agent-data/v1-slice1-http conformance profile against a node' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task data help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__doctor_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__doctor_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data help doctor commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help_commands] )) ||
_agent-task__subcmd__help_commands() {
    local commands; commands=(
'init:Create (or re-check and migrate) the owner-private data directory' \
'info:Show the data directory, schema versions and counts (changes nothing)' \
'cas:Store, read and verify content-addressed objects' \
'runtime:Sandbox runtimes for command collectors' \
'completions:Print a shell completion script' \
'man:Write a man page per subcommand into a directory' \
'data:agent-data/v1 node commands' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__cas_commands] )) ||
_agent-task__subcmd__help__subcmd__cas_commands() {
    local commands; commands=(
'put:Store a file (or \`-\` for stdin) and print its SHA-256 and size' \
'cat:Verify an object and write its bytes to a file' \
'fsck:Verify every object against its digest (changes nothing)' \
    )
    _describe -t commands 'agent-task help cas commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__cas__subcmd__cat_commands] )) ||
_agent-task__subcmd__help__subcmd__cas__subcmd__cat_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help cas cat commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__cas__subcmd__fsck_commands] )) ||
_agent-task__subcmd__help__subcmd__cas__subcmd__fsck_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help cas fsck commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__cas__subcmd__put_commands] )) ||
_agent-task__subcmd__help__subcmd__cas__subcmd__put_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help cas put commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__completions_commands] )) ||
_agent-task__subcmd__help__subcmd__completions_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help completions commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__data_commands] )) ||
_agent-task__subcmd__help__subcmd__data_commands() {
    local commands; commands=(
'doctor:Run the agent-data/v1-slice1-http conformance profile against a node' \
    )
    _describe -t commands 'agent-task help data commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__data__subcmd__doctor_commands] )) ||
_agent-task__subcmd__help__subcmd__data__subcmd__doctor_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help data doctor commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__info_commands] )) ||
_agent-task__subcmd__help__subcmd__info_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help info commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__init_commands] )) ||
_agent-task__subcmd__help__subcmd__init_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help init commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__man_commands] )) ||
_agent-task__subcmd__help__subcmd__man_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help man commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__runtime_commands] )) ||
_agent-task__subcmd__help__subcmd__runtime_commands() {
    local commands; commands=(
'probe:Print the observed identity (program digest, version, pinned arguments, isolation facts and their digest) after a trial run' \
    )
    _describe -t commands 'agent-task help runtime commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__runtime__subcmd__probe_commands] )) ||
_agent-task__subcmd__help__subcmd__runtime__subcmd__probe_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help runtime probe commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__info_commands] )) ||
_agent-task__subcmd__info_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task info commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__init_commands] )) ||
_agent-task__subcmd__init_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task init commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__man_commands] )) ||
_agent-task__subcmd__man_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task man commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__runtime_commands] )) ||
_agent-task__subcmd__runtime_commands() {
    local commands; commands=(
'probe:Print the observed identity (program digest, version, pinned arguments, isolation facts and their digest) after a trial run' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task runtime commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__runtime__subcmd__help_commands] )) ||
_agent-task__subcmd__runtime__subcmd__help_commands() {
    local commands; commands=(
'probe:Print the observed identity (program digest, version, pinned arguments, isolation facts and their digest) after a trial run' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task runtime help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__runtime__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__runtime__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task runtime help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__runtime__subcmd__help__subcmd__probe_commands] )) ||
_agent-task__subcmd__runtime__subcmd__help__subcmd__probe_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task runtime help probe commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__runtime__subcmd__probe_commands] )) ||
_agent-task__subcmd__runtime__subcmd__probe_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task runtime probe commands' commands "$@"
}

if [ "$funcstack[1]" = "_agent-task" ]; then
    _agent-task "$@"
else
    compdef _agent-task agent-task
fi
