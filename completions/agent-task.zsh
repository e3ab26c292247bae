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
            (init)
_arguments "${_arguments_options[@]}" : \
'--node-id=[Node id to assert (default on first init\: \`node_\` + a random UUID)]:ID:_default' \
'*--file-root=[A directory the \`file\` collector may read under (repeatable; added to the node config)]:DIR:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(manifest)
_arguments "${_arguments_options[@]}" : \
'--origin=[Origin to build absolute endpoint URLs on (for example \`http\://127.0.0.1\:7742\`); without it the endpoints are paths]:ORIGIN:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(collection)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__data__subcmd__collection_commands" \
"*::: :->collection" \
&& ret=0

    case $state in
    (collection)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-data-collection-command-$line[1]:"
        case $line[1] in
            (create)
_arguments "${_arguments_options[@]}" : \
'(--id --name --description --schema-version --visibility --max-record-bytes --allowed-media-type)--file=[A JSON file holding the definition (\`-\` for stdin)]:F:_files' \
'--id=[Collection id]:ID:_default' \
'--name=[Display name]:NAME:_default' \
'--description=[Description]:DESCRIPTION:_default' \
'--schema-version=[\`schema.version\` (default "1")]:V:_default' \
'--visibility=[\`policy.visibility\`\: private (default) or public]:VISIBILITY:_default' \
'--max-record-bytes=[\`policy.max_record_bytes\`]:N:_default' \
'*--allowed-media-type=[An allowed media type (repeatable); \`--allowed-media-type '\'''\''\` alone gives an empty allow-list, which denies everything]:TYPE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(list)
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
":: :_agent-task__subcmd__data__subcmd__collection__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-data-collection-help-command-$line[1]:"
        case $line[1] in
            (create)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(list)
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
(collect)
_arguments "${_arguments_options[@]}" : \
'--collection=[Collection id]:COLLECTION:_default' \
'--collector=[Collector id (\`text\`, \`file\`, …)]:COLLECTOR:_default' \
'(--jsonl)--input=[The collector input as a JSON object]:JSON:_default' \
'--jsonl=[Bulk ingest\: a file (or \`-\` for stdin) with one collector input object per line. Many records share each durable transaction]:FILE|-:_files' \
'--batch=[Lines per durable transaction in bulk mode]:N:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(query)
_arguments "${_arguments_options[@]}" : \
'--text=[Full-text search words (ANDed, no prefix matching)]:TEXT:_default' \
'--where=[A JSON object matched as a subset of each record envelope]:JSON:_default' \
'--limit=[Most hits (default 20, at most 100)]:LIMIT:_default' \
'*--collection=[Restrict to a collection (repeatable)]:ID:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
'::request -- A whole QueryRequest as JSON (`{collections?, text?, where?, limit?, consistency?}`):_default' \
&& ret=0
;;
(get)
_arguments "${_arguments_options[@]}" : \
'--content-out=[Write the verified bytes to this file (0600) instead of embedding them in the output]:F:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
':id -- Record id (`rec_` + 64 hex):_default' \
&& ret=0
;;
(changes)
_arguments "${_arguments_options[@]}" : \
'--collection=[Only changes of this collection]:COLLECTION:_default' \
'--cursor=[Continue after this cursor]:CURSOR:_default' \
'--limit=[Page size (default 100, at most 1000)]:LIMIT:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(tombstone)
_arguments "${_arguments_options[@]}" : \
'--reason=[Why (at most 1000 UTF-16 units; empty means none)]:REASON:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`)]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
':id -- Record id:_default' \
&& ret=0
;;
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
            (init)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(manifest)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(collection)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__data__subcmd__help__subcmd__collection_commands" \
"*::: :->collection" \
&& ret=0

    case $state in
    (collection)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-data-help-collection-command-$line[1]:"
        case $line[1] in
            (create)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(collect)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(query)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(get)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(changes)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(tombstone)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
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
(serve)
_arguments "${_arguments_options[@]}" : \
'--bind=[Address to listen on. A non-loopback host needs a node bearer]:HOST:PORT:_default' \
'--data-token-file=[File holding the dedicated node bearer (one line). Without it (and without AGENT_TASK_NODE_TOKEN) every /v1/data/* route answers 503]:F:_files' \
'--workers=[Worker threads serving requests]:WORKERS:_default' \
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
            (init)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(manifest)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(collection)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__data__subcmd__collection_commands" \
"*::: :->collection" \
&& ret=0

    case $state in
    (collection)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-data-collection-command-$line[1]:"
        case $line[1] in
            (create)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(collect)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(query)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(get)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(changes)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(tombstone)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(doctor)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(serve)
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
'data:The agent-data/v1 local node' \
'serve:Serve the data node over HTTP (tiny_http, loopback by default)' \
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
'init:Create (or re-check) the data node\: ids, database, config, \`default\` collection' \
'manifest:Print the capability manifest' \
'collection:Define or list collections' \
'collect:Collect one record (or many with --jsonl)' \
'query:Query records (full text and/or a \`where\` subset match)' \
'get:Exact read of one record and its verified bytes' \
'changes:Read one page of the change feed' \
'tombstone:Tombstone a record (idempotent; the first tombstone wins)' \
'doctor:Run the agent-data/v1-slice1-http conformance profile against a node' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task data commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__changes_commands] )) ||
_agent-task__subcmd__data__subcmd__changes_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data changes commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__collect_commands] )) ||
_agent-task__subcmd__data__subcmd__collect_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data collect commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__collection_commands] )) ||
_agent-task__subcmd__data__subcmd__collection_commands() {
    local commands; commands=(
'create:Define a collection (idempotent; a different definition is \`collection_conflict\`)' \
'list:List every collection, ordered by id' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task data collection commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__collection__subcmd__create_commands] )) ||
_agent-task__subcmd__data__subcmd__collection__subcmd__create_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data collection create commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__collection__subcmd__help_commands] )) ||
_agent-task__subcmd__data__subcmd__collection__subcmd__help_commands() {
    local commands; commands=(
'create:Define a collection (idempotent; a different definition is \`collection_conflict\`)' \
'list:List every collection, ordered by id' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task data collection help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__collection__subcmd__help__subcmd__create_commands] )) ||
_agent-task__subcmd__data__subcmd__collection__subcmd__help__subcmd__create_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data collection help create commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__collection__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__data__subcmd__collection__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data collection help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__collection__subcmd__help__subcmd__list_commands] )) ||
_agent-task__subcmd__data__subcmd__collection__subcmd__help__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data collection help list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__collection__subcmd__list_commands] )) ||
_agent-task__subcmd__data__subcmd__collection__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data collection list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__doctor_commands] )) ||
_agent-task__subcmd__data__subcmd__doctor_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data doctor commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__get_commands] )) ||
_agent-task__subcmd__data__subcmd__get_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data get commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help_commands] )) ||
_agent-task__subcmd__data__subcmd__help_commands() {
    local commands; commands=(
'init:Create (or re-check) the data node\: ids, database, config, \`default\` collection' \
'manifest:Print the capability manifest' \
'collection:Define or list collections' \
'collect:Collect one record (or many with --jsonl)' \
'query:Query records (full text and/or a \`where\` subset match)' \
'get:Exact read of one record and its verified bytes' \
'changes:Read one page of the change feed' \
'tombstone:Tombstone a record (idempotent; the first tombstone wins)' \
'doctor:Run the agent-data/v1-slice1-http conformance profile against a node' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task data help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__changes_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__changes_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data help changes commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__collect_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__collect_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data help collect commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__collection_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__collection_commands() {
    local commands; commands=(
'create:Define a collection (idempotent; a different definition is \`collection_conflict\`)' \
'list:List every collection, ordered by id' \
    )
    _describe -t commands 'agent-task data help collection commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__collection__subcmd__create_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__collection__subcmd__create_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data help collection create commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__collection__subcmd__list_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__collection__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data help collection list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__doctor_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__doctor_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data help doctor commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__get_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__get_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data help get commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__init_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__init_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data help init commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__manifest_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__manifest_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data help manifest commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__query_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__query_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data help query commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__help__subcmd__tombstone_commands] )) ||
_agent-task__subcmd__data__subcmd__help__subcmd__tombstone_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data help tombstone commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__init_commands] )) ||
_agent-task__subcmd__data__subcmd__init_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data init commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__manifest_commands] )) ||
_agent-task__subcmd__data__subcmd__manifest_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data manifest commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__query_commands] )) ||
_agent-task__subcmd__data__subcmd__query_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data query commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__data__subcmd__tombstone_commands] )) ||
_agent-task__subcmd__data__subcmd__tombstone_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task data tombstone commands' commands "$@"
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
'data:The agent-data/v1 local node' \
'serve:Serve the data node over HTTP (tiny_http, loopback by default)' \
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
'init:Create (or re-check) the data node\: ids, database, config, \`default\` collection' \
'manifest:Print the capability manifest' \
'collection:Define or list collections' \
'collect:Collect one record (or many with --jsonl)' \
'query:Query records (full text and/or a \`where\` subset match)' \
'get:Exact read of one record and its verified bytes' \
'changes:Read one page of the change feed' \
'tombstone:Tombstone a record (idempotent; the first tombstone wins)' \
'doctor:Run the agent-data/v1-slice1-http conformance profile against a node' \
    )
    _describe -t commands 'agent-task help data commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__data__subcmd__changes_commands] )) ||
_agent-task__subcmd__help__subcmd__data__subcmd__changes_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help data changes commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__data__subcmd__collect_commands] )) ||
_agent-task__subcmd__help__subcmd__data__subcmd__collect_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help data collect commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__data__subcmd__collection_commands] )) ||
_agent-task__subcmd__help__subcmd__data__subcmd__collection_commands() {
    local commands; commands=(
'create:Define a collection (idempotent; a different definition is \`collection_conflict\`)' \
'list:List every collection, ordered by id' \
    )
    _describe -t commands 'agent-task help data collection commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__data__subcmd__collection__subcmd__create_commands] )) ||
_agent-task__subcmd__help__subcmd__data__subcmd__collection__subcmd__create_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help data collection create commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__data__subcmd__collection__subcmd__list_commands] )) ||
_agent-task__subcmd__help__subcmd__data__subcmd__collection__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help data collection list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__data__subcmd__doctor_commands] )) ||
_agent-task__subcmd__help__subcmd__data__subcmd__doctor_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help data doctor commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__data__subcmd__get_commands] )) ||
_agent-task__subcmd__help__subcmd__data__subcmd__get_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help data get commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__data__subcmd__init_commands] )) ||
_agent-task__subcmd__help__subcmd__data__subcmd__init_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help data init commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__data__subcmd__manifest_commands] )) ||
_agent-task__subcmd__help__subcmd__data__subcmd__manifest_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help data manifest commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__data__subcmd__query_commands] )) ||
_agent-task__subcmd__help__subcmd__data__subcmd__query_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help data query commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__data__subcmd__tombstone_commands] )) ||
_agent-task__subcmd__help__subcmd__data__subcmd__tombstone_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help data tombstone commands' commands "$@"
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
(( $+functions[_agent-task__subcmd__help__subcmd__serve_commands] )) ||
_agent-task__subcmd__help__subcmd__serve_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help serve commands' commands "$@"
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
(( $+functions[_agent-task__subcmd__serve_commands] )) ||
_agent-task__subcmd__serve_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task serve commands' commands "$@"
}

if [ "$funcstack[1]" = "_agent-task" ]; then
    _agent-task "$@"
else
    compdef _agent-task agent-task
fi
