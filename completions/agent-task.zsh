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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(info)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(cas)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--runtime=[Which runtime]:RUNTIME:((bwrap\:"bubblewrap\: read-only snapshot, no network, pid namespace, sized private tmpfs, pinned limits"
unshare\:"unshare\: refused (it shares the host file system with candidate code)"
oci\:"podman or docker with --network none"))' \
'--oci-image=[For \`oci\`\: the image, pinned by digest (\`NAME@sha256\:<64 hex>\`); it must be in the engine'\''s local store (never pulled)]:REF:_default' \
'--sandbox-tmpfs-bytes=[Size of each writable tmpfs inside the sandbox (/tmp, /scratch, /dev/shm)]:BYTES:_default' \
'--sandbox-address-space-bytes=[Address space of each sandboxed process (RLIMIT_AS)]:BYTES:_default' \
'--sandbox-processes=[Processes and threads of the sandbox'\''s uid (RLIMIT_NPROC)]:N:_default' \
'--sandbox-file-size-bytes=[Largest file a sandboxed process may write (RLIMIT_FSIZE)]:BYTES:_default' \
'--sandbox-cpu-seconds=[CPU time of each sandboxed process (RLIMIT_CPU)]:SECONDS:_default' \
'--sandbox-uid=[The dedicated uid (and gid) candidate code runs as; only when the collector runs as root, where it is required (default 2000000000)]:UID:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--out=[Directory to write \`agent-task.1\` and \`agent-task-<cmd>.1\` into (created, with its parents, when missing)]:DIR:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(data)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(collection)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--jsonl=[Bulk ingest\: a file (or \`-\` for stdin) with one collector input object per line. Many records share each durable transaction; after each commit one JSON line on stderr acknowledges every line up to \`committed_through_line\`]:FILE|-:_files' \
'--batch=[Lines per durable transaction in bulk mode, at most (the first batch has at most 1,024, each next one four times the last; a batch is also cut at 16 MiB of prepared records)]:N:_default' \
'--flush-ms=[Bulk mode\: a batch also commits once its first line has waited this many milliseconds, however few lines it has, so a slow producer'\''s lines are acknowledged within about this long]:MS:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
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
(sync)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__sync_commands" \
"*::: :->sync" \
&& ret=0

    case $state in
    (sync)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-sync-command-$line[1]:"
        case $line[1] in
            (keygen)
_arguments "${_arguments_options[@]}" : \
'--id=[The identity id (opaque, 1-2048 characters, e.g. did\:example\:node-a)]:ID:_default' \
'--import=[Restore keys from a backup instead of generating them\: an owner-only JSON file {"ed25519_seed"\: b64u(32), "x25519_secret"\: b64u(32)}]:FILE:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(identity)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(authority)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__sync__subcmd__authority_commands" \
"*::: :->authority" \
&& ret=0

    case $state in
    (authority)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-sync-authority-command-$line[1]:"
        case $line[1] in
            (add)
_arguments "${_arguments_options[@]}" : \
'--peer=[Local label of the destination (never on the wire)]:PEER:_default' \
'--bearer-file=[File holding the page-only bearer (owner-only, not a symlink; only its SHA-256 is kept)]:F:_files' \
'*--collection=[A collection this bearer may page (repeat for more)]:COLLECTIONS:_default' \
'--recipient-id=[The destination'\''s identity id (the grant audience)]:RECIPIENT_ID:_default' \
'--recipient-key=[The destination'\''s X25519 public key (43 characters of base64url)]:RECIPIENT_KEY:_default' \
'--recipient-key-id=[The destination'\''s key id; checked against the key when given]:RECIPIENT_KEY_ID:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(remove)
_arguments "${_arguments_options[@]}" : \
'--peer=[The alias]:PEER:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__sync__subcmd__authority__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-sync-authority-help-command-$line[1]:"
        case $line[1] in
            (add)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(remove)
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
(peer)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__sync__subcmd__peer_commands" \
"*::: :->peer" \
&& ret=0

    case $state in
    (peer)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-sync-peer-command-$line[1]:"
        case $line[1] in
            (add)
_arguments "${_arguments_options[@]}" : \
'--peer=[Alias (the only selector a pull takes)]:PEER:_default' \
'--origin=[Exact origin\: https\://host\[\:port\] (http only on loopback); no path, query or userinfo]:ORIGIN:_default' \
'--node-id=[The node id every page must carry]:NODE_ID:_default' \
'--publisher-id=[Pinned publisher id]:PUBLISHER_ID:_default' \
'--publisher-key=[Pinned publisher Ed25519 public key (base64url)]:PUBLISHER_KEY:_default' \
'--page-token-file=[File holding the page bearer the peer'\''s operator issued (owner-only, not a symlink)]:F:_files' \
'--ca-file=[PEM CA certificates to trust for this peer'\''s HTTPS (instead of the web roots)]:F:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(remove)
_arguments "${_arguments_options[@]}" : \
'--peer=[The alias]:PEER:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__sync__subcmd__peer__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-sync-peer-help-command-$line[1]:"
        case $line[1] in
            (add)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(remove)
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
(pull)
_arguments "${_arguments_options[@]}" : \
'--peer=[Peer alias]:PEER:_default' \
'--collection=[Collection]:COLLECTION:_default' \
'--limit=[Changes per page (1-100, default 10)]:LIMIT:_default' \
'--max-pages=[Pages at most (1-100, default 10)]:MAX_PAGES:_default' \
'--max-plaintext-bytes=[Record-content bytes per page (default 1 MiB, at most 10 MiB)]:MAX_PLAINTEXT_BYTES:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
'--peer=[Peer alias]:PEER:_default' \
'--collection=[Collection]:COLLECTION:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(reset)
_arguments "${_arguments_options[@]}" : \
'--peer=[Peer alias]:PEER:_default' \
'--collection=[Collection]:COLLECTION:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__sync__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-sync-help-command-$line[1]:"
        case $line[1] in
            (keygen)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(identity)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(authority)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__sync__subcmd__help__subcmd__authority_commands" \
"*::: :->authority" \
&& ret=0

    case $state in
    (authority)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-sync-help-authority-command-$line[1]:"
        case $line[1] in
            (add)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(remove)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(peer)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__sync__subcmd__help__subcmd__peer_commands" \
"*::: :->peer" \
&& ret=0

    case $state in
    (peer)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-sync-help-peer-command-$line[1]:"
        case $line[1] in
            (add)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(remove)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(pull)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(reset)
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
'--bind=[Address to listen on. A non-loopback host needs a node bearer, and TLS (--tls-cert/--tls-key) unless --insecure-http]:HOST:PORT:_default' \
'--tls-cert=[PEM certificate chain (leaf first)\: serve HTTPS with rustls]:F:_files' \
'--tls-key=[PEM private key of --tls-cert (owner-private 0600, not a symlink)]:F:_files' \
'*--public-name=[A host name (NAME or NAME\:PORT; the bound port by default) clients use for this server, added to the allow-list checked against every request'\''s Host (else 421 misdirected_request) and MCP'\''s Origin. The bound address is always on it, and a loopback bind adds localhost, 127.0.0.1 and \[\:\:1\]. Repeatable; required for a wildcard bind]:NAME[:PORT]:_default' \
'--data-token-file=[File holding the dedicated node bearer (one line; owner-private 0600, not a symlink). Without it (and without AGENT_TASK_NODE_TOKEN) every /v1/data/* route answers 503]:F:_files' \
'--workers=[Handler threads\: the bounded pool that runs request handlers. Socket work (heads, bodies, writes) for every connection runs on two other threads, never one per connection]:WORKERS:_default' \
'--compute-threads=[Compute threads\: the small pool that runs, in arrival order, the handlers that never wait (workspace reads, and mutations that only queue to the writer; \`docs/http.md\`, "Two pools"). 0\: one per core]:N:_default' \
'--max-connections=[Requests in progress at once\: a connection holds a slot from its complete request head until the answer is written. Past it, --accept-backlog more wait for a slot; every other gets 503 server_busy]:N:_default' \
'--accept-backlog=[Requests over --max-connections that may wait for a slot (each at most --accept-backlog-ms, then 503 server_busy)]:N:_default' \
'--accept-backlog-ms=[How long a request over --max-connections waits for a slot]:MS:_default' \
'--max-header-bytes=[Largest request head (request line and headers) in bytes; a larger one gets 431 header_too_large]:BYTES:_default' \
'--max-headers=[Most header lines in one request; more get 431 header_too_large]:N:_default' \
'--head-budget=[Connections still reading a request head (a new connection, a TLS handshake, a kept-alive connection between requests) at once, apart from --max-connections. When full, the one that has waited longest is closed for a newcomer; new connections are never refused]:N:_default' \
'--first-byte-timeout-ms=[Deadline for the first byte of a connection'\''s first request head, from the accept (a TLS handshake included); then closed without an answer. Also the grace before --min-head-rate applies]:MS:_default' \
'--min-head-rate=[Bytes per second a request head must arrive at on average, after its first byte and --first-byte-timeout-ms of grace; a slower head gets 408 request_timeout. 0\: no minimum rate]:BYTES:_default' \
'--head-timeout-ms=[Deadline for a whole request head, from its first byte (for a connection'\''s first request, from the accept); then 408 request_timeout]:MS:_default' \
'--body-timeout-ms=[Deadline for a request body, from the moment the request is admitted (authenticated and within its route'\''s cap); then 408 request_timeout]:MS:_default' \
'--idle-timeout-ms=[How long a kept-alive connection may wait for the first byte of its next request before it is closed (without an answer). Meanwhile it holds a place in --head-budget, not a --max-connections slot]:MS:_default' \
'--send-timeout-ms=[How long writing a response may make no progress (a client that does not read) before the connection is dropped]:MS:_default' \
'--workspace-config=[Operator file of workspace task profiles (\`agent_task_profiles\`, version 1)\: mounts the workspace task endpoint, the collector upload route and MCP under /v1/hub/workspace/ (bearer\: an agent token). The data routes are then mounted only when the data node is initialised]:FILE:_files' \
'--max-revision-bytes=[Remote checkpoints\: refuse (\`revision_too_large\`) a manifest whose files add up to more than this many bytes]:BYTES:_default' \
'--max-manifest-bytes=[Remote checkpoints\: the largest manifest body (64 MiB holds about 500,000 entries)]:BYTES:_default' \
'--max-pack-bytes=[Remote checkpoints\: the largest blob pack body, and so the largest single file a remote checkpoint can carry]:BYTES:_default' \
'--staging-quota-bytes=[Remote checkpoints\: the most bytes of uploaded blobs not yet referenced by a revision that one agent may have staged]:BYTES:_default' \
'--staging-ttl-ms=[Remote checkpoints\: how long a checkpoint session, and a staged blob no revision references, live before they are removed]:MS:_default' \
'--write-queue=[Workspace mutations queued for the group-commit writer of a data directory at most; past it a mutation is answered 503 busy at once]:N:_default' \
'--write-batch=[Workspace mutations one batch of the writer applies and commits together at most (one commit per database a batch)]:N:_default' \
'--writer-stats-ms=[Every MS milliseconds, one JSON line per group-commit writer on stderr when its counters moved\: \`{"writer_stats"\: {"data_dir", "batches", "mutations", "mean_batch", "largest_batch", "queued"}}\`. 0\: never]:MS:_default' \
'--evidence-sync-ms=[Every MS milliseconds, write the pending collector evidence of each workflow data directory served (\`--data-dir\` and the workspace profiles'\'') into its evidence target, when one is configured (\`agent-task evidence configure\`). 0\: never]:MS:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'(--tls-cert)--insecure-http[Serve plain HTTP on a non-loopback address\: bearers and agent tokens then cross the network in clear. Without it such a bind is refused]' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(repo)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__repo_commands" \
"*::: :->repo" \
&& ret=0

    case $state in
    (repo)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-repo-command-$line[1]:"
        case $line[1] in
            (add)
_arguments "${_arguments_options[@]}" : \
'--source=[Source directory]:PATH:_files' \
'--target=[Protected target name]:TARGET:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
':id -- Repository id (e.g. `acme/api`):_default' \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__repo__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-repo-help-command-$line[1]:"
        case $line[1] in
            (add)
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
(requirement)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__requirement_commands" \
"*::: :->requirement" \
&& ret=0

    case $state in
    (requirement)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-requirement-command-$line[1]:"
        case $line[1] in
            (install)
_arguments "${_arguments_options[@]}" : \
'--repo=[Repository id]:REPO:_default' \
'--profile=[Profile id]:PROFILE:_default' \
'--file=[Workflow JSON file]:WORKFLOW.json:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--bump-epoch[Bump the policy epoch even when the requirement is unchanged (invalidates the evidence of every live subject)]' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
'--repo=[Repository id]:REPO:_default' \
'--profile=[Profile id]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__requirement__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-requirement-help-command-$line[1]:"
        case $line[1] in
            (install)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(show)
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
(token)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__token_commands" \
"*::: :->token" \
&& ret=0

    case $state in
    (token)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-token-command-$line[1]:"
        case $line[1] in
            (issue)
_arguments "${_arguments_options[@]}" : \
'--owner=[Owner id]:OWNER:_default' \
'--agent=[Agent id]:AGENT:_default' \
'--out=[Token file to create (must not exist)]:FILE:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(revoke)
_arguments "${_arguments_options[@]}" : \
'--owner=[Owner id]:OWNER:_default' \
'--agent=[Agent id]:AGENT:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__token__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-token-help-command-$line[1]:"
        case $line[1] in
            (issue)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(revoke)
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
(keygen)
_arguments "${_arguments_options[@]}" : \
'--collector-dir=[Owner-private collector directory (created 0700); the key file is 0600 and never printed]:DIR:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(enroll)
_arguments "${_arguments_options[@]}" : \
'--repo=[Repository id]:REPO:_default' \
'--profile=[Profile id]:PROFILE:_default' \
'--step=[Step id of the installed requirement]:STEP:_default' \
'--executor=[Executor name]:EXECUTOR:_default' \
'--public-key=[Ed25519 public key, 64 lowercase hex characters]:HEX:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(enrollment)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__enrollment_commands" \
"*::: :->enrollment" \
&& ret=0

    case $state in
    (enrollment)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-enrollment-command-$line[1]:"
        case $line[1] in
            (revoke)
_arguments "${_arguments_options[@]}" : \
'--registration=[Registration id]:REGISTRATION:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__enrollment__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-enrollment-help-command-$line[1]:"
        case $line[1] in
            (revoke)
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
(change)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__change_commands" \
"*::: :->change" \
&& ret=0

    case $state in
    (change)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-change-command-$line[1]:"
        case $line[1] in
            (open)
_arguments "${_arguments_options[@]}" : \
'--repo=[Repository id (local)]:REPO:_default' \
'--profile=[Profile id (local\: the native profile; with the endpoint\: the workspace profile) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--workspace=[Workspace directory (local)]:PATH:_files' \
'--endpoint=[Open through this workspace endpoint (base URL) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--request-id=[Idempotency key (with the endpoint)\: a retry returns the Change this request opened]:REQUEST_ID:_default' \
'--title=[The Change'\''s title\: the landed commit'\''s subject line (control characters stripped, at most 200 characters)]:TITLE:_default' \
'--body=[The Change'\''s body\: the landed commit'\''s message body (control characters stripped, at most 16 KiB; lines shaped like git trailers are indented)]:BODY:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__change__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-change-help-command-$line[1]:"
        case $line[1] in
            (open)
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
(checkpoint)
_arguments "${_arguments_options[@]}" : \
'--change=[Change id]:CHANGE:_default' \
'--workspace=[Workspace directory of the Change]:PATH:_files' \
'--max-revision-bytes=[Refuse (\`revision_too_large\`, before reading any file) a workspace whose files add up to more than this many bytes]:BYTES:_default' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'-m+[Set the Change'\''s title (first line) and body (the rest)\: the landed commit'\''s message]:MESSAGE:_default' \
'--message=[Set the Change'\''s title (first line) and body (the rest)\: the landed commit'\''s message]:MESSAGE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--new-subject[Mint a new subject (fresh task ids) even when the tree is the current subject'\''s revision and that subject still has live or pending tasks]' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(capabilities)
_arguments "${_arguments_options[@]}" : \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(requirements)
_arguments "${_arguments_options[@]}" : \
'--change=[Change id]:CHANGE:_default' \
'--workspace=[Workspace directory of the Change]:PATH:_files' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(next)
_arguments "${_arguments_options[@]}" : \
'--change=[Change id]:CHANGE:_default' \
'--workspace=[Workspace directory of the Change]:PATH:_files' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(instructions)
_arguments "${_arguments_options[@]}" : \
'--schema-version=[Schema version the caller speaks]:SCHEMA_VERSION:_default' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
':task -- Task id:_default' \
&& ret=0
;;
(reference)
_arguments "${_arguments_options[@]}" : \
'--schema-version=[Expected schema version]:SCHEMA_VERSION:_default' \
'--expected-sha256=[Expected body SHA-256 (from instructions)]:HEX:_default' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
':task -- Task id:_default' \
':name -- Reference name:_default' \
&& ret=0
;;
(claim)
_arguments "${_arguments_options[@]}" : \
'--request-id=[Idempotency key (an identical retry returns the retained outcome)]:REQUEST_ID:_default' \
'--lease-ms=[Requested lease]:LEASE_MS:_default' \
'--executor=[Executor registration that will run the task]:EXECUTOR:_default' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
':task -- Task id:_default' \
&& ret=0
;;
(heartbeat)
_arguments "${_arguments_options[@]}" : \
'--attempt=[Attempt id]:ATTEMPT:_default' \
'--fence=[The fence the caller holds]:FENCE:_default' \
'--request-id=[Idempotency key]:REQUEST_ID:_default' \
'--lease-ms=[Requested lease (heartbeat)]:LEASE_MS:_default' \
'--reason=[Reason (cancel, reconcile)]:REASON:_default' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
'--task=[Task id]:TASK:_default' \
'--attempt=[Attempt id]:ATTEMPT:_default' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(cancel)
_arguments "${_arguments_options[@]}" : \
'--attempt=[Attempt id]:ATTEMPT:_default' \
'--fence=[The fence the caller holds]:FENCE:_default' \
'--request-id=[Idempotency key]:REQUEST_ID:_default' \
'--lease-ms=[Requested lease (heartbeat)]:LEASE_MS:_default' \
'--reason=[Reason (cancel, reconcile)]:REASON:_default' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(reconcile)
_arguments "${_arguments_options[@]}" : \
'--attempt=[Attempt id]:ATTEMPT:_default' \
'--fence=[The fence the caller holds]:FENCE:_default' \
'--request-id=[Idempotency key]:REQUEST_ID:_default' \
'--lease-ms=[Requested lease (heartbeat)]:LEASE_MS:_default' \
'--reason=[Reason (cancel, reconcile)]:REASON:_default' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(result)
_arguments "${_arguments_options[@]}" : \
'--file=[TaskResultAssertion JSON file (\`-\` for stdin)]:FILE:_files' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(recovery)
_arguments "${_arguments_options[@]}" : \
'--task=[Task id]:TASK:_default' \
'--attempt=[Attempt id (default\: the task'\''s current attempt)]:ATTEMPT:_default' \
'--request-id=[Request id to resolve]:REQUEST_ID:_default' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(install-stop)
_arguments "${_arguments_options[@]}" : \
'--agent=[Which agent'\''s settings to edit (with --managed\: only that agent'\''s managed file; both without it)]:AGENT:((claude\:"Claude Code\: \`.claude/settings.local.json\`, \`task-stop\`"
codex\:"Codex CLI\: \`~/.codex/hooks.json\` (or the repository'\''s with \`--repo-hooks\`), \`task-codex-stop\`"))' \
'--workspace=[The workspace holding \`.claude/\` or \`.codex/\` (not with --managed)]:PATH:_files' \
'--change=[The Change the hook guards (not with --managed)]:CHANGE:_default' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--settings-file=[With --managed\: Claude Code'\''s managed settings file to edit instead of the drop-in]:FILE:_files' \
'--requirements-file=[With --managed\: Codex'\''s requirements file to edit instead of /etc/codex/requirements.toml]:FILE:_files' \
'--hooks-map=[With --managed\: the uid map the hook reads, when not /etc/agent-task/hooks.json]:FILE:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--repo-hooks[Codex only\: write the repository'\''s .codex/hooks.json (kept out of revisions through git'\''s info/exclude) instead of the user-level \$CODEX_HOME/hooks.json]' \
'(--workspace --change --repo-hooks)--managed[Root only\: write one machine-wide Stop hook into Claude Code'\''s managed settings (a drop-in /etc/claude-code/managed-settings.d/agent-task.json) and Codex'\''s /etc/codex/requirements.toml, running \`task-stop --managed\`, which finds the invoking user'\''s Change through the root-owned map /etc/agent-task/hooks.json (docs/hooks.md)]' \
'--exclusive[With --managed\: also set allowManagedHooksOnly / allow_managed_hooks_only, which disables every non-managed hook of every user of the machine (with --uninstall\: remove them again)]' \
'--uninstall[With --managed\: remove the hook (the file too when nothing else is left in it)]' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(init-repo)
_arguments "${_arguments_options[@]}" : \
'--workspace=[The workspace whose instruction files get the managed block]:PATH:_files' \
'--endpoint=[Write the instructions of an agent that reaches its authority only through this endpoint (its commands name the Change with --change; collection goes through the operator'\''s sudo wrapper) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--collect-wrapper=[With the endpoint form\: the sudo wrapper the agent runs \`collect\` through]:FILE:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(task-stop)
_arguments "${_arguments_options[@]}" : \
'(--managed)--workspace=[The workspace the agent edits (the Change'\''s workspace)]:PATH:_files' \
'(--managed)--endpoint=[Ask qualification from a workspace endpoint (base URL) instead of computing it from --data-dir (30 s limit)]:URL:_default' \
'--repository=[Repository id of the workspace profile (with --endpoint)]:REPOSITORY:_default' \
'--profile=[Profile id (with --endpoint)]:PROFILE:_default' \
'--hooks-map=[With --managed\: the uid map (default /etc/agent-task/hooks.json)]:FILE:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--managed[The machine-wide hook (\`install-stop --managed\`)\: the invoking user (real uid) is looked up in the root-owned map; a user it does not list passes silently]' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
'::change -- The Change the hook guards:_default' \
&& ret=0
;;
(task-codex-stop)
_arguments "${_arguments_options[@]}" : \
'(--managed)--workspace=[The workspace the agent edits (the Change'\''s workspace)]:PATH:_files' \
'(--managed)--endpoint=[Ask qualification from a workspace endpoint (base URL) instead of computing it from --data-dir (30 s limit)]:URL:_default' \
'--repository=[Repository id of the workspace profile (with --endpoint)]:REPOSITORY:_default' \
'--profile=[Profile id (with --endpoint)]:PROFILE:_default' \
'--hooks-map=[With --managed\: the uid map (default /etc/agent-task/hooks.json)]:FILE:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--managed[The machine-wide hook (\`install-stop --managed\`)\: the invoking user (real uid) is looked up in the root-owned map; a user it does not list passes silently]' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
'::change -- The Change the hook guards:_default' \
&& ret=0
;;
(profile)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__profile_commands" \
"*::: :->profile" \
&& ret=0

    case $state in
    (profile)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-profile-command-$line[1]:"
        case $line[1] in
            (install)
_arguments "${_arguments_options[@]}" : \
'--registration=[Registration id (from \`enroll\`)]:REGISTRATION:_default' \
'--step=[Step id (a command or review step of the installed requirement)]:STEP:_default' \
'--runtime=[Runtime (\`review\` for a review step)]:RUNTIME:((bwrap\:"bubblewrap (command steps)"
unshare\:"unshare\: refused (it shares the host file system with candidate code)"
oci\:"podman or docker with --network none (command steps)"
review\:"The finite review controller (review steps)\: a pinned Claude Code executable"))' \
'--executable=[\`review\` only\: the reviewer executable to pin (an npm-installed \`claude\`, or another program speaking Claude Code'\''s print-mode JSON)]:PATH:_files' \
'--model=[\`review\` only\: the full model id passed to \`--model\`]:ID:_default' \
'--provider=[\`review\` only\: the provider scope]:NAME:((anthropic\:"Anthropic'\''s API through the pinned Claude Code executable"))' \
'*--env=[\`review\` only\: an operator variable passed to the executable (repeatable; ANTHROPIC_API_KEY, HTTPS_PROXY, NO_PROXY, NODE_EXTRA_CA_CERTS)]:NAME:_default' \
'--file=[A pinned identity \`{"basis"\: "pinned_file", "identity"\: {…}}\` instead of probing now]:FILE:_files' \
'--oci-image=[The image an \`oci\` profile runs, pinned by digest (\`NAME@sha256\:<64 hex>\`; a tag alone is refused). It must already be in the engine'\''s local store\: collections never pull]:REF:_default' \
'--sandbox-tmpfs-bytes=[Size of each writable tmpfs inside the sandbox (/tmp, /scratch, /dev/shm)]:BYTES:_default' \
'--sandbox-address-space-bytes=[Address space of each sandboxed process (RLIMIT_AS)]:BYTES:_default' \
'--sandbox-processes=[Processes and threads of the sandbox'\''s uid (RLIMIT_NPROC)]:N:_default' \
'--sandbox-file-size-bytes=[Largest file a sandboxed process may write (RLIMIT_FSIZE)]:BYTES:_default' \
'--sandbox-cpu-seconds=[CPU time of each sandboxed process (RLIMIT_CPU)]:SECONDS:_default' \
'--sandbox-uid=[The dedicated uid (and gid) candidate code runs as; only when the collector runs as root, where it is required (default 2000000000)]:UID:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__profile__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-profile-help-command-$line[1]:"
        case $line[1] in
            (install)
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
(collector)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__collector_commands" \
"*::: :->collector" \
&& ret=0

    case $state in
    (collector)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-collector-command-$line[1]:"
        case $line[1] in
            (wrapper)
_arguments "${_arguments_options[@]}" : \
'--out=[Where to write the wrapper script (in a root-owned directory, e.g. /usr/local/sbin/agent-task-collect)]:FILE:_files' \
'--collector-dir=[The operator'\''s collector directory (signing key and retained state)]:DIR:_files' \
'--binary=[The root-owned agent-task binary the wrapper runs]:FILE:_files' \
'--operator-user=[The operator'\''s user (who owns the data and collector directories)]:USER:_default' \
'--agent-user=[The agent'\''s user (the only user the rule lets run the wrapper)]:USER:_default' \
'--sudoers-out=[Also write the sudoers rule here (e.g. /etc/sudoers.d/agent-task-collect)]:FILE:_files' \
'--endpoint=[The operator'\''s \`serve\` the wrapper'\''s collect uploads to (\`http\://HOST\:PORT\`)\: it never imports locally, so nothing the agent starts takes the data directory'\''s lock]:URL:_default' \
'--repository=[The workspace repository id of the upload route]:ID:_default' \
'--profile=[The workspace profile id of the upload route]:ID:_default' \
'--review-credential-file=[The operator'\''s review credential file (NAME=VALUE lines, the operator'\''s, mode 0600)\: a review collect hands the values to the pinned reviewer only (docs/review.md, "Credentials")]:FILE:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__collector__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-collector-help-command-$line[1]:"
        case $line[1] in
            (wrapper)
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
(collector-claim)
_arguments "${_arguments_options[@]}" : \
'--request-id=[Idempotency key (default\: a fresh one)]:REQUEST_ID:_default' \
'--descriptor-out=[Also write the descriptor to this new 0600 file]:FILE:_files' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
':task -- Task id:_default' \
&& ret=0
;;
(collect)
_arguments "${_arguments_options[@]}" : \
'--descriptor=[The descriptor (from \`collector-claim\`); \`-\` reads it from stdin]:FILE:_files' \
'--collector-dir=[The owner-private collector directory (signing key and retained state)]:DIR:_files' \
'--review-credential-file=[A review collect\: the operator'\''s credential file (NAME=VALUE lines, the caller'\''s, mode 0600) whose values go to the pinned reviewer'\''s environment only, instead of this process'\''s environment]:FILE:_files' \
'--endpoint=[Workspace endpoint base URL (\`http\://host\:port\`)]:URL:_default' \
'--repository=[Repository id of the workspace profile (with --endpoint)]:REPOSITORY:_default' \
'--profile=[Profile id (with --endpoint)]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--token-on-stdin[Read the agent'\''s token from the first line of stdin, the descriptor from the rest (with \`--descriptor -\`)\: how the sudo wrapper, which resets the environment, passes them. Excludes --token-file. Marks a wrapper-started collect\: it needs --endpoint and never imports locally (nothing the agent starts takes the data directory'\''s lock)]' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(retry-upload)
_arguments "${_arguments_options[@]}" : \
'--collector-dir=[The collector directory]:DIR:_files' \
'--operation=[The execution operation id (from the descriptor)]:OPERATION:_default' \
'--endpoint=[Workspace endpoint base URL (\`http\://host\:port\`)]:URL:_default' \
'--repository=[Repository id of the workspace profile (with --endpoint)]:REPOSITORY:_default' \
'--profile=[Profile id (with --endpoint)]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(finalize)
_arguments "${_arguments_options[@]}" : \
'--change=[Change id]:CHANGE:_default' \
'--workspace=[Workspace directory of the Change]:PATH:_files' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(qualify)
_arguments "${_arguments_options[@]}" : \
'--change=[Change id]:CHANGE:_default' \
'--workspace=[Workspace directory of the Change]:PATH:_files' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(explain)
_arguments "${_arguments_options[@]}" : \
'--change=[Change id]:CHANGE:_default' \
'--workspace=[Workspace directory of the Change]:PATH:_files' \
'--endpoint=[Run through this workspace endpoint (base URL, \`http\://host\:port\`) instead of a local data directory\: the token file is all the agent needs (docs/workspace-http.md) \[env\: AGENT_TASK_ENDPOINT\]]:URL:_default' \
'--repository=[Repository id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_REPOSITORY\]]:REPOSITORY:_default' \
'--profile=[Profile id of the workspace profile (with the endpoint) \[env\: AGENT_TASK_PROFILE\]]:PROFILE:_default' \
'--task=[Only this task of the current subject]:TASK:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'(--text)--json[One JSON value, even on a terminal]' \
'--text[The text block, even when stdout is not a terminal]' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(land)
_arguments "${_arguments_options[@]}" : \
'--repo=[Repository id]:REPO:_default' \
'--change=[Change id]:CHANGE:_default' \
'--author=[The commit'\''s author and committer, "Name <email>" (default\: the operator'\''s git identity in the repository\: user.name, user.email)]:NAME <EMAIL>:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--allow-protected-change[Land a revision that changes protected paths (the operator'\''s explicit override\: no receipt is required for it, since its tests are not the operator'\''s; the landing row and the commit message record it)]' \
'--update-worktree[When the target branch is checked out in the repository'\''s (non-bare) work tree, move its index and files along as \`git merge --ff-only\` would (clean work trees only\: a dirty one is refused, no ref moved; no filter drivers run). Without it such a landing is refused before any ref moves (\`worktree_checked_out\`)]' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(sandbox-exec)
_arguments "${_arguments_options[@]}" : \
'--limits=[The pinned limits and process attributes, as the runtime identity'\''s \`limits\` JSON]:JSON:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
'*::command -- The program (bwrap) and its arguments:_default' \
&& ret=0
;;
(authority)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__authority_commands" \
"*::: :->authority" \
&& ret=0

    case $state in
    (authority)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-authority-command-$line[1]:"
        case $line[1] in
            (key)
_arguments "${_arguments_options[@]}" : \
'--format=[Public key format\: 64 lowercase hex characters, or a PEM \`PUBLIC KEY\`]:FORMAT:((hex\:"64 lowercase hex characters"
pem\:"PEM SubjectPublicKeyInfo (RFC 8410)"))' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__authority__subcmd__key_commands" \
"*::: :->key" \
&& ret=0

    case $state in
    (key)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-authority-key-command-$line[1]:"
        case $line[1] in
            (rotate)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__authority__subcmd__key__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-authority-key-help-command-$line[1]:"
        case $line[1] in
            (rotate)
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
":: :_agent-task__subcmd__authority__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-authority-help-command-$line[1]:"
        case $line[1] in
            (key)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__authority__subcmd__help__subcmd__key_commands" \
"*::: :->key" \
&& ret=0

    case $state in
    (key)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-authority-help-key-command-$line[1]:"
        case $line[1] in
            (rotate)
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
;;
(attest)
_arguments "${_arguments_options[@]}" : \
'--change=[The Change (its landing when its current version landed, else its qualified subject)]:CHANGE:_default' \
'--out=[Also write each envelope and the whole set (\`attestations.jsonl\`) into this directory]:DIR:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(verify)
_arguments "${_arguments_options[@]}" : \
'--repo=[The git repository holding the commit and its \`refs/notes/agent-task\` note]:PATH:_files' \
'--commit=[The landed commit]:SHA:_default' \
'--key=[The authority'\''s public key (PEM or 64 hex characters), e.g. from \`authority key\`]:FILE:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--allow-override[Also accept a commit the operator landed with \`--allow-protected-change\` (no receipt, no tests)\: reported \`qualified\: false\` instead of failing with \`attestation_unqualified\`]' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(deploy)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__deploy_commands" \
"*::: :->deploy" \
&& ret=0

    case $state in
    (deploy)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-deploy-command-$line[1]:"
        case $line[1] in
            (check)
_arguments "${_arguments_options[@]}" : \
'--collector-dir=[The operator'\''s collector directory (signing key and retained state)]:DIR:_files' \
'--operator-user=[The operator'\''s user]:USER:_default' \
'--agent-user=[The agent'\''s user]:USER:_default' \
'--wrapper=[The collect wrapper]:FILE:_files' \
'--sudoers=[The sudoers rule of the wrapper]:FILE:_files' \
'--workspace-config=[serve'\''s workspace config, to check too]:FILE:_files' \
'--endpoint=[The workspace endpoint to try with the agent'\''s token (needs --repository, --profile and --token-file)]:URL:_default' \
'--repository=[The endpoint'\''s repository id]:ID:_default' \
'--profile=[The profile id]:ID:_default' \
'--token-file=[The agent'\''s token file (opened as the agent'\''s user when run as root)]:FILE:_files' \
'--claude-managed=[Claude Code'\''s base managed settings file; the \`managed-settings.d/*.json\` drop-ins beside it are read too]:FILE:_files' \
'--codex-requirements=[Codex'\''s requirements file]:FILE:_files' \
'--hook-map=[The managed hook'\''s uid map]:FILE:_files' \
'*--skip=[Do not run a check or a group of checks (users, paths, config, wrapper, sudoers, agent, endpoint, hooks); reported as skipped. Repeatable]:NAME:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(config)
_arguments "${_arguments_options[@]}" : \
'--out=[Where to write the config (serve --workspace-config FILE)]:FILE:_files' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--force[Replace a file that holds another config]' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__deploy__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-deploy-help-command-$line[1]:"
        case $line[1] in
            (check)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(config)
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
(evidence)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agent-task__subcmd__evidence_commands" \
"*::: :->evidence" \
&& ret=0

    case $state in
    (evidence)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-evidence-command-$line[1]:"
        case $line[1] in
            (configure)
_arguments "${_arguments_options[@]}" : \
'--repo=[Repository id]:REPO:_default' \
'--evidence-dir=[The evidence data node'\''s directory\: not the workflow'\''s data directory, not a symbolic link, never served with a bearer agents hold]:PATH:_files' \
'--collection=[The collection the records go into]:ID:_default' \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(sync)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
'--data-dir=[Data directory (created 0700 by \`init\`) \[env\: AGENT_TASK_DATA_DIR; never read by the Stop hooks, which take it only from their command line\]]:DIR:_files' \
'--lock-timeout-ms=[How long a mutating command waits for the data-directory lock before failing with \`busy\`]:MS:_default' \
'--token-file=[The agent'\''s token file (issued by \`token issue\`); the actor of every agent command comes from it, never from request JSON \[env\: AGENT_TASK_TOKEN_FILE; never read by the Stop hooks\]]:FILE:_files' \
'--pretty[Pretty-print JSON output (the default when stdout is a terminal)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__evidence__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-evidence-help-command-$line[1]:"
        case $line[1] in
            (configure)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(sync)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
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
(sync)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__sync_commands" \
"*::: :->sync" \
&& ret=0

    case $state in
    (sync)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-sync-command-$line[1]:"
        case $line[1] in
            (keygen)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(identity)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(authority)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__sync__subcmd__authority_commands" \
"*::: :->authority" \
&& ret=0

    case $state in
    (authority)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-sync-authority-command-$line[1]:"
        case $line[1] in
            (add)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(remove)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(peer)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__sync__subcmd__peer_commands" \
"*::: :->peer" \
&& ret=0

    case $state in
    (peer)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-sync-peer-command-$line[1]:"
        case $line[1] in
            (add)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(remove)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(pull)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(reset)
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
(repo)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__repo_commands" \
"*::: :->repo" \
&& ret=0

    case $state in
    (repo)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-repo-command-$line[1]:"
        case $line[1] in
            (add)
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
(requirement)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__requirement_commands" \
"*::: :->requirement" \
&& ret=0

    case $state in
    (requirement)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-requirement-command-$line[1]:"
        case $line[1] in
            (install)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(token)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__token_commands" \
"*::: :->token" \
&& ret=0

    case $state in
    (token)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-token-command-$line[1]:"
        case $line[1] in
            (issue)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(revoke)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(keygen)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(enroll)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(enrollment)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__enrollment_commands" \
"*::: :->enrollment" \
&& ret=0

    case $state in
    (enrollment)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-enrollment-command-$line[1]:"
        case $line[1] in
            (revoke)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(change)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__change_commands" \
"*::: :->change" \
&& ret=0

    case $state in
    (change)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-change-command-$line[1]:"
        case $line[1] in
            (open)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(checkpoint)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(capabilities)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(requirements)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(next)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(instructions)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(reference)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(claim)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(heartbeat)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(cancel)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(reconcile)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(result)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(recovery)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(install-stop)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(init-repo)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(task-stop)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(task-codex-stop)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(profile)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__profile_commands" \
"*::: :->profile" \
&& ret=0

    case $state in
    (profile)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-profile-command-$line[1]:"
        case $line[1] in
            (install)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(collector)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__collector_commands" \
"*::: :->collector" \
&& ret=0

    case $state in
    (collector)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-collector-command-$line[1]:"
        case $line[1] in
            (wrapper)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(collector-claim)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(collect)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(retry-upload)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(finalize)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(qualify)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(explain)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(land)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(sandbox-exec)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(authority)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__authority_commands" \
"*::: :->authority" \
&& ret=0

    case $state in
    (authority)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-authority-command-$line[1]:"
        case $line[1] in
            (key)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__authority__subcmd__key_commands" \
"*::: :->key" \
&& ret=0

    case $state in
    (key)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-authority-key-command-$line[1]:"
        case $line[1] in
            (rotate)
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
(attest)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(verify)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(deploy)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__deploy_commands" \
"*::: :->deploy" \
&& ret=0

    case $state in
    (deploy)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-deploy-command-$line[1]:"
        case $line[1] in
            (check)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(config)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(evidence)
_arguments "${_arguments_options[@]}" : \
":: :_agent-task__subcmd__help__subcmd__evidence_commands" \
"*::: :->evidence" \
&& ret=0

    case $state in
    (evidence)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agent-task-help-evidence-command-$line[1]:"
        case $line[1] in
            (configure)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(sync)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
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
'data:The agent-data/v1 local node' \
'sync:agent-data-sync/v1\: explicit encrypted pulls between data nodes' \
'serve:Serve the data node over HTTP (hyper, loopback by default; limits in docs/http.md)' \
'repo:Operator\: register and list repositories' \
'requirement:Operator\: install and show workflow requirements' \
'token:Operator\: issue and revoke agent tokens' \
'keygen:Operator\: create a collector signing key (the private part is never printed)' \
'enroll:Operator\: enroll an executor public key for one repository, profile and step' \
'enrollment:Operator\: revoke an enrollment' \
'change:Agent\: open a Change on a workspace' \
'checkpoint:Agent\: snapshot the workspace into a new Change version (a new subject)' \
'capabilities:Agent\: capability, schema versions and operation names' \
'requirements:Agent\: the installed requirement of a Change'\''s profile' \
'next:Agent\: the typed next operation for a Change (data, never a command)' \
'instructions:Agent\: a task'\''s instruction entrypoint (or a schema mismatch)' \
'reference:Agent\: read one named reference of a task' \
'claim:Agent\: claim a pending task (fresh attempt, bounded lease, new fence)' \
'heartbeat:Agent\: renew an attempt'\''s lease' \
'status:Agent\: exact-attempt status (side-effect free)' \
'cancel:Agent\: cancel an attempt (execution may still run; reconcile next)' \
'reconcile:Agent\: explicitly supersede an attempt'\''s fence' \
'result:Agent\: submit an assertion or a signed registered observation' \
'recovery:Agent\: recovery envelope for a task, attempt or request (side-effect free)' \
'install-stop:Agent setup\: register the read-only Stop hook for Claude Code or Codex' \
'init-repo:Agent setup\: write the managed "Workflow tasks" block into AGENTS.md and friends' \
'task-stop:Stop hook for Claude Code (read-only)\: blocks until the Change is qualified' \
'task-codex-stop:Stop hook for Codex CLI (read-only)\: blocks until the Change is qualified' \
'profile:Operator\: install an immutable collector profile' \
'collector:Operator\: set up collection for a privilege-separated agent (the sudo wrapper)' \
'collector-claim:Agent\: claim a command task for the installed collector profile; prints the descriptor' \
'collect:Agent/collector\: run a claimed descriptor once, sign, retain and upload (exit 0 whatever the test said)' \
'retry-upload:Agent/collector\: resend the identical retained transfer of an execution' \
'finalize:Agent\: create the v2 receipt of the current subject from retained transfers' \
'qualify:Agent\: read-only exact-subject qualification' \
'explain:Agent/operator\: why the Change'\''s current subject does not qualify, from the signed evidence (exit status, output tails, runtime; review findings)' \
'land:Operator\: admission rechecks, then move the target head (and commit, for git)' \
'sandbox-exec:Internal\: the sandbox launcher a bwrap run goes through (limits, uid, then bwrap)' \
'authority:Operator\: the authority'\''s attestation signing key' \
'attest:Operator\: signed in-toto attestations (DSSE) of a landed or qualified Change' \
'verify:Check a landed commit'\''s attestations with only the repository and a public key' \
'deploy:Operator\: check the privilege-separated deployment; write serve'\''s workspace config' \
'evidence:Operator\: copy collector evidence into a separate data node as records (\`data query\` finds them)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__attest_commands] )) ||
_agent-task__subcmd__attest_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task attest commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__authority_commands] )) ||
_agent-task__subcmd__authority_commands() {
    local commands; commands=(
'key:Print the authority'\''s attestation public key and key id (\`rotate\`\: make a new one)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task authority commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__authority__subcmd__help_commands] )) ||
_agent-task__subcmd__authority__subcmd__help_commands() {
    local commands; commands=(
'key:Print the authority'\''s attestation public key and key id (\`rotate\`\: make a new one)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task authority help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__authority__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__authority__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task authority help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__authority__subcmd__help__subcmd__key_commands] )) ||
_agent-task__subcmd__authority__subcmd__help__subcmd__key_commands() {
    local commands; commands=(
'rotate:Make a new current signing key; old public keys stay listed for verification' \
    )
    _describe -t commands 'agent-task authority help key commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__authority__subcmd__help__subcmd__key__subcmd__rotate_commands] )) ||
_agent-task__subcmd__authority__subcmd__help__subcmd__key__subcmd__rotate_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task authority help key rotate commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__authority__subcmd__key_commands] )) ||
_agent-task__subcmd__authority__subcmd__key_commands() {
    local commands; commands=(
'rotate:Make a new current signing key; old public keys stay listed for verification' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task authority key commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__authority__subcmd__key__subcmd__help_commands] )) ||
_agent-task__subcmd__authority__subcmd__key__subcmd__help_commands() {
    local commands; commands=(
'rotate:Make a new current signing key; old public keys stay listed for verification' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task authority key help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__authority__subcmd__key__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__authority__subcmd__key__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task authority key help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__authority__subcmd__key__subcmd__help__subcmd__rotate_commands] )) ||
_agent-task__subcmd__authority__subcmd__key__subcmd__help__subcmd__rotate_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task authority key help rotate commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__authority__subcmd__key__subcmd__rotate_commands] )) ||
_agent-task__subcmd__authority__subcmd__key__subcmd__rotate_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task authority key rotate commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__cancel_commands] )) ||
_agent-task__subcmd__cancel_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task cancel commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__capabilities_commands] )) ||
_agent-task__subcmd__capabilities_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task capabilities commands' commands "$@"
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
(( $+functions[_agent-task__subcmd__change_commands] )) ||
_agent-task__subcmd__change_commands() {
    local commands; commands=(
'open:Open a Change for the token'\''s actor\: on a workspace of this host (--repo, --profile, --workspace), or through a workspace endpoint (--endpoint, --repository, --profile), where the workspace stays the client'\''s and is never named' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task change commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__change__subcmd__help_commands] )) ||
_agent-task__subcmd__change__subcmd__help_commands() {
    local commands; commands=(
'open:Open a Change for the token'\''s actor\: on a workspace of this host (--repo, --profile, --workspace), or through a workspace endpoint (--endpoint, --repository, --profile), where the workspace stays the client'\''s and is never named' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task change help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__change__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__change__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task change help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__change__subcmd__help__subcmd__open_commands] )) ||
_agent-task__subcmd__change__subcmd__help__subcmd__open_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task change help open commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__change__subcmd__open_commands] )) ||
_agent-task__subcmd__change__subcmd__open_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task change open commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__checkpoint_commands] )) ||
_agent-task__subcmd__checkpoint_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task checkpoint commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__claim_commands] )) ||
_agent-task__subcmd__claim_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task claim commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__collect_commands] )) ||
_agent-task__subcmd__collect_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task collect commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__collector_commands] )) ||
_agent-task__subcmd__collector_commands() {
    local commands; commands=(
'wrapper:Operator (as root)\: write the sudo wrapper of a privilege-separated deployment — a root-owned script pinning the binary, --data-dir and --collector-dir that takes the agent'\''s token and the descriptor on stdin — and the sudoers rule that lets the agent'\''s user run exactly it as the operator (checked with visudo -c when --sudoers-out is given)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task collector commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__collector__subcmd__help_commands] )) ||
_agent-task__subcmd__collector__subcmd__help_commands() {
    local commands; commands=(
'wrapper:Operator (as root)\: write the sudo wrapper of a privilege-separated deployment — a root-owned script pinning the binary, --data-dir and --collector-dir that takes the agent'\''s token and the descriptor on stdin — and the sudoers rule that lets the agent'\''s user run exactly it as the operator (checked with visudo -c when --sudoers-out is given)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task collector help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__collector__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__collector__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task collector help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__collector__subcmd__help__subcmd__wrapper_commands] )) ||
_agent-task__subcmd__collector__subcmd__help__subcmd__wrapper_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task collector help wrapper commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__collector__subcmd__wrapper_commands] )) ||
_agent-task__subcmd__collector__subcmd__wrapper_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task collector wrapper commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__collector-claim_commands] )) ||
_agent-task__subcmd__collector-claim_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task collector-claim commands' commands "$@"
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
(( $+functions[_agent-task__subcmd__deploy_commands] )) ||
_agent-task__subcmd__deploy_commands() {
    local commands; commands=(
'check:Operator (as root)\: check the privilege-separated set-up and print each check with its fix (owners and modes, the wrapper'\''s pins, the sudoers rule, what the agent'\''s user can open, the endpoint, the managed hook). Changes nothing; exits 1 when a check failed' \
'config:Operator\: write serve'\''s workspace config from the registered repositories and installed requirements (0600, atomic); an identical file is left alone, another one replaced only with --force' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task deploy commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__deploy__subcmd__check_commands] )) ||
_agent-task__subcmd__deploy__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task deploy check commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__deploy__subcmd__config_commands] )) ||
_agent-task__subcmd__deploy__subcmd__config_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task deploy config commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__deploy__subcmd__help_commands] )) ||
_agent-task__subcmd__deploy__subcmd__help_commands() {
    local commands; commands=(
'check:Operator (as root)\: check the privilege-separated set-up and print each check with its fix (owners and modes, the wrapper'\''s pins, the sudoers rule, what the agent'\''s user can open, the endpoint, the managed hook). Changes nothing; exits 1 when a check failed' \
'config:Operator\: write serve'\''s workspace config from the registered repositories and installed requirements (0600, atomic); an identical file is left alone, another one replaced only with --force' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task deploy help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__deploy__subcmd__help__subcmd__check_commands] )) ||
_agent-task__subcmd__deploy__subcmd__help__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task deploy help check commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__deploy__subcmd__help__subcmd__config_commands] )) ||
_agent-task__subcmd__deploy__subcmd__help__subcmd__config_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task deploy help config commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__deploy__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__deploy__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task deploy help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__enroll_commands] )) ||
_agent-task__subcmd__enroll_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task enroll commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__enrollment_commands] )) ||
_agent-task__subcmd__enrollment_commands() {
    local commands; commands=(
'revoke:Revoke a registration (bumps the policy epoch; old evidence stays invalid)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task enrollment commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__enrollment__subcmd__help_commands] )) ||
_agent-task__subcmd__enrollment__subcmd__help_commands() {
    local commands; commands=(
'revoke:Revoke a registration (bumps the policy epoch; old evidence stays invalid)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task enrollment help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__enrollment__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__enrollment__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task enrollment help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__enrollment__subcmd__help__subcmd__revoke_commands] )) ||
_agent-task__subcmd__enrollment__subcmd__help__subcmd__revoke_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task enrollment help revoke commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__enrollment__subcmd__revoke_commands] )) ||
_agent-task__subcmd__enrollment__subcmd__revoke_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task enrollment revoke commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__evidence_commands] )) ||
_agent-task__subcmd__evidence_commands() {
    local commands; commands=(
'configure:Send a repository'\''s collector evidence to a collection of a separate data node (created 0700 if needed)' \
'sync:Write every pending evidence row now; prints the counts (exit 75 when a row failed and stays pending)' \
'status:The evidence targets and the outbox'\''s pending and done counts' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task evidence commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__evidence__subcmd__configure_commands] )) ||
_agent-task__subcmd__evidence__subcmd__configure_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task evidence configure commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__evidence__subcmd__help_commands] )) ||
_agent-task__subcmd__evidence__subcmd__help_commands() {
    local commands; commands=(
'configure:Send a repository'\''s collector evidence to a collection of a separate data node (created 0700 if needed)' \
'sync:Write every pending evidence row now; prints the counts (exit 75 when a row failed and stays pending)' \
'status:The evidence targets and the outbox'\''s pending and done counts' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task evidence help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__evidence__subcmd__help__subcmd__configure_commands] )) ||
_agent-task__subcmd__evidence__subcmd__help__subcmd__configure_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task evidence help configure commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__evidence__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__evidence__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task evidence help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__evidence__subcmd__help__subcmd__status_commands] )) ||
_agent-task__subcmd__evidence__subcmd__help__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task evidence help status commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__evidence__subcmd__help__subcmd__sync_commands] )) ||
_agent-task__subcmd__evidence__subcmd__help__subcmd__sync_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task evidence help sync commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__evidence__subcmd__status_commands] )) ||
_agent-task__subcmd__evidence__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task evidence status commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__evidence__subcmd__sync_commands] )) ||
_agent-task__subcmd__evidence__subcmd__sync_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task evidence sync commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__explain_commands] )) ||
_agent-task__subcmd__explain_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task explain commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__finalize_commands] )) ||
_agent-task__subcmd__finalize_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task finalize commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__heartbeat_commands] )) ||
_agent-task__subcmd__heartbeat_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task heartbeat commands' commands "$@"
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
'sync:agent-data-sync/v1\: explicit encrypted pulls between data nodes' \
'serve:Serve the data node over HTTP (hyper, loopback by default; limits in docs/http.md)' \
'repo:Operator\: register and list repositories' \
'requirement:Operator\: install and show workflow requirements' \
'token:Operator\: issue and revoke agent tokens' \
'keygen:Operator\: create a collector signing key (the private part is never printed)' \
'enroll:Operator\: enroll an executor public key for one repository, profile and step' \
'enrollment:Operator\: revoke an enrollment' \
'change:Agent\: open a Change on a workspace' \
'checkpoint:Agent\: snapshot the workspace into a new Change version (a new subject)' \
'capabilities:Agent\: capability, schema versions and operation names' \
'requirements:Agent\: the installed requirement of a Change'\''s profile' \
'next:Agent\: the typed next operation for a Change (data, never a command)' \
'instructions:Agent\: a task'\''s instruction entrypoint (or a schema mismatch)' \
'reference:Agent\: read one named reference of a task' \
'claim:Agent\: claim a pending task (fresh attempt, bounded lease, new fence)' \
'heartbeat:Agent\: renew an attempt'\''s lease' \
'status:Agent\: exact-attempt status (side-effect free)' \
'cancel:Agent\: cancel an attempt (execution may still run; reconcile next)' \
'reconcile:Agent\: explicitly supersede an attempt'\''s fence' \
'result:Agent\: submit an assertion or a signed registered observation' \
'recovery:Agent\: recovery envelope for a task, attempt or request (side-effect free)' \
'install-stop:Agent setup\: register the read-only Stop hook for Claude Code or Codex' \
'init-repo:Agent setup\: write the managed "Workflow tasks" block into AGENTS.md and friends' \
'task-stop:Stop hook for Claude Code (read-only)\: blocks until the Change is qualified' \
'task-codex-stop:Stop hook for Codex CLI (read-only)\: blocks until the Change is qualified' \
'profile:Operator\: install an immutable collector profile' \
'collector:Operator\: set up collection for a privilege-separated agent (the sudo wrapper)' \
'collector-claim:Agent\: claim a command task for the installed collector profile; prints the descriptor' \
'collect:Agent/collector\: run a claimed descriptor once, sign, retain and upload (exit 0 whatever the test said)' \
'retry-upload:Agent/collector\: resend the identical retained transfer of an execution' \
'finalize:Agent\: create the v2 receipt of the current subject from retained transfers' \
'qualify:Agent\: read-only exact-subject qualification' \
'explain:Agent/operator\: why the Change'\''s current subject does not qualify, from the signed evidence (exit status, output tails, runtime; review findings)' \
'land:Operator\: admission rechecks, then move the target head (and commit, for git)' \
'sandbox-exec:Internal\: the sandbox launcher a bwrap run goes through (limits, uid, then bwrap)' \
'authority:Operator\: the authority'\''s attestation signing key' \
'attest:Operator\: signed in-toto attestations (DSSE) of a landed or qualified Change' \
'verify:Check a landed commit'\''s attestations with only the repository and a public key' \
'deploy:Operator\: check the privilege-separated deployment; write serve'\''s workspace config' \
'evidence:Operator\: copy collector evidence into a separate data node as records (\`data query\` finds them)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__attest_commands] )) ||
_agent-task__subcmd__help__subcmd__attest_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help attest commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__authority_commands] )) ||
_agent-task__subcmd__help__subcmd__authority_commands() {
    local commands; commands=(
'key:Print the authority'\''s attestation public key and key id (\`rotate\`\: make a new one)' \
    )
    _describe -t commands 'agent-task help authority commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__authority__subcmd__key_commands] )) ||
_agent-task__subcmd__help__subcmd__authority__subcmd__key_commands() {
    local commands; commands=(
'rotate:Make a new current signing key; old public keys stay listed for verification' \
    )
    _describe -t commands 'agent-task help authority key commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__authority__subcmd__key__subcmd__rotate_commands] )) ||
_agent-task__subcmd__help__subcmd__authority__subcmd__key__subcmd__rotate_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help authority key rotate commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__cancel_commands] )) ||
_agent-task__subcmd__help__subcmd__cancel_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help cancel commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__capabilities_commands] )) ||
_agent-task__subcmd__help__subcmd__capabilities_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help capabilities commands' commands "$@"
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
(( $+functions[_agent-task__subcmd__help__subcmd__change_commands] )) ||
_agent-task__subcmd__help__subcmd__change_commands() {
    local commands; commands=(
'open:Open a Change for the token'\''s actor\: on a workspace of this host (--repo, --profile, --workspace), or through a workspace endpoint (--endpoint, --repository, --profile), where the workspace stays the client'\''s and is never named' \
    )
    _describe -t commands 'agent-task help change commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__change__subcmd__open_commands] )) ||
_agent-task__subcmd__help__subcmd__change__subcmd__open_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help change open commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__checkpoint_commands] )) ||
_agent-task__subcmd__help__subcmd__checkpoint_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help checkpoint commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__claim_commands] )) ||
_agent-task__subcmd__help__subcmd__claim_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help claim commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__collect_commands] )) ||
_agent-task__subcmd__help__subcmd__collect_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help collect commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__collector_commands] )) ||
_agent-task__subcmd__help__subcmd__collector_commands() {
    local commands; commands=(
'wrapper:Operator (as root)\: write the sudo wrapper of a privilege-separated deployment — a root-owned script pinning the binary, --data-dir and --collector-dir that takes the agent'\''s token and the descriptor on stdin — and the sudoers rule that lets the agent'\''s user run exactly it as the operator (checked with visudo -c when --sudoers-out is given)' \
    )
    _describe -t commands 'agent-task help collector commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__collector__subcmd__wrapper_commands] )) ||
_agent-task__subcmd__help__subcmd__collector__subcmd__wrapper_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help collector wrapper commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__collector-claim_commands] )) ||
_agent-task__subcmd__help__subcmd__collector-claim_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help collector-claim commands' commands "$@"
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
(( $+functions[_agent-task__subcmd__help__subcmd__deploy_commands] )) ||
_agent-task__subcmd__help__subcmd__deploy_commands() {
    local commands; commands=(
'check:Operator (as root)\: check the privilege-separated set-up and print each check with its fix (owners and modes, the wrapper'\''s pins, the sudoers rule, what the agent'\''s user can open, the endpoint, the managed hook). Changes nothing; exits 1 when a check failed' \
'config:Operator\: write serve'\''s workspace config from the registered repositories and installed requirements (0600, atomic); an identical file is left alone, another one replaced only with --force' \
    )
    _describe -t commands 'agent-task help deploy commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__deploy__subcmd__check_commands] )) ||
_agent-task__subcmd__help__subcmd__deploy__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help deploy check commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__deploy__subcmd__config_commands] )) ||
_agent-task__subcmd__help__subcmd__deploy__subcmd__config_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help deploy config commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__enroll_commands] )) ||
_agent-task__subcmd__help__subcmd__enroll_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help enroll commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__enrollment_commands] )) ||
_agent-task__subcmd__help__subcmd__enrollment_commands() {
    local commands; commands=(
'revoke:Revoke a registration (bumps the policy epoch; old evidence stays invalid)' \
    )
    _describe -t commands 'agent-task help enrollment commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__enrollment__subcmd__revoke_commands] )) ||
_agent-task__subcmd__help__subcmd__enrollment__subcmd__revoke_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help enrollment revoke commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__evidence_commands] )) ||
_agent-task__subcmd__help__subcmd__evidence_commands() {
    local commands; commands=(
'configure:Send a repository'\''s collector evidence to a collection of a separate data node (created 0700 if needed)' \
'sync:Write every pending evidence row now; prints the counts (exit 75 when a row failed and stays pending)' \
'status:The evidence targets and the outbox'\''s pending and done counts' \
    )
    _describe -t commands 'agent-task help evidence commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__evidence__subcmd__configure_commands] )) ||
_agent-task__subcmd__help__subcmd__evidence__subcmd__configure_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help evidence configure commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__evidence__subcmd__status_commands] )) ||
_agent-task__subcmd__help__subcmd__evidence__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help evidence status commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__evidence__subcmd__sync_commands] )) ||
_agent-task__subcmd__help__subcmd__evidence__subcmd__sync_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help evidence sync commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__explain_commands] )) ||
_agent-task__subcmd__help__subcmd__explain_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help explain commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__finalize_commands] )) ||
_agent-task__subcmd__help__subcmd__finalize_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help finalize commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__heartbeat_commands] )) ||
_agent-task__subcmd__help__subcmd__heartbeat_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help heartbeat commands' commands "$@"
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
(( $+functions[_agent-task__subcmd__help__subcmd__init-repo_commands] )) ||
_agent-task__subcmd__help__subcmd__init-repo_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help init-repo commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__install-stop_commands] )) ||
_agent-task__subcmd__help__subcmd__install-stop_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help install-stop commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__instructions_commands] )) ||
_agent-task__subcmd__help__subcmd__instructions_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help instructions commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__keygen_commands] )) ||
_agent-task__subcmd__help__subcmd__keygen_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help keygen commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__land_commands] )) ||
_agent-task__subcmd__help__subcmd__land_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help land commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__man_commands] )) ||
_agent-task__subcmd__help__subcmd__man_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help man commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__next_commands] )) ||
_agent-task__subcmd__help__subcmd__next_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help next commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__profile_commands] )) ||
_agent-task__subcmd__help__subcmd__profile_commands() {
    local commands; commands=(
'install:Install an immutable collector profile for one current registration epoch and step\: for a command step, pins the step'\''s command recipe and the SHA-256 of the runtime identity (probed now, or read from --file); for a review step (\`--runtime review\`), copies in the step'\''s criteria, coverage and budgets and pins the reviewer executable (script and interpreter, by path and SHA-256), the model and the provider' \
    )
    _describe -t commands 'agent-task help profile commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__profile__subcmd__install_commands] )) ||
_agent-task__subcmd__help__subcmd__profile__subcmd__install_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help profile install commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__qualify_commands] )) ||
_agent-task__subcmd__help__subcmd__qualify_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help qualify commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__reconcile_commands] )) ||
_agent-task__subcmd__help__subcmd__reconcile_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help reconcile commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__recovery_commands] )) ||
_agent-task__subcmd__help__subcmd__recovery_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help recovery commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__reference_commands] )) ||
_agent-task__subcmd__help__subcmd__reference_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help reference commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__repo_commands] )) ||
_agent-task__subcmd__help__subcmd__repo_commands() {
    local commands; commands=(
'add:Register a source directory as a repository; its tree becomes the target head' \
'list:List repositories' \
    )
    _describe -t commands 'agent-task help repo commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__repo__subcmd__add_commands] )) ||
_agent-task__subcmd__help__subcmd__repo__subcmd__add_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help repo add commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__repo__subcmd__list_commands] )) ||
_agent-task__subcmd__help__subcmd__repo__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help repo list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__requirement_commands] )) ||
_agent-task__subcmd__help__subcmd__requirement_commands() {
    local commands; commands=(
'install:Install a workflow file (docs/workflow-file.md) for a repository profile; bumps the policy epoch (which makes every live subject stale\: \`stale_subjects\`) unless the file is canonically identical to the installed requirement (\`unchanged\: true\`)' \
'show:Show the installed requirement of a repository profile' \
    )
    _describe -t commands 'agent-task help requirement commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__requirement__subcmd__install_commands] )) ||
_agent-task__subcmd__help__subcmd__requirement__subcmd__install_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help requirement install commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__requirement__subcmd__show_commands] )) ||
_agent-task__subcmd__help__subcmd__requirement__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help requirement show commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__requirements_commands] )) ||
_agent-task__subcmd__help__subcmd__requirements_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help requirements commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__result_commands] )) ||
_agent-task__subcmd__help__subcmd__result_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help result commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__retry-upload_commands] )) ||
_agent-task__subcmd__help__subcmd__retry-upload_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help retry-upload commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__runtime_commands] )) ||
_agent-task__subcmd__help__subcmd__runtime_commands() {
    local commands; commands=(
'probe:Print the observed identity (program digest, version, pinned arguments, isolation facts, for bwrap the pinned limits, for oci the engine and resolved image, and their digest) after a trial run (bwrap)' \
    )
    _describe -t commands 'agent-task help runtime commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__runtime__subcmd__probe_commands] )) ||
_agent-task__subcmd__help__subcmd__runtime__subcmd__probe_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help runtime probe commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sandbox-exec_commands] )) ||
_agent-task__subcmd__help__subcmd__sandbox-exec_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help sandbox-exec commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__serve_commands] )) ||
_agent-task__subcmd__help__subcmd__serve_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help serve commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__status_commands] )) ||
_agent-task__subcmd__help__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help status commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync_commands] )) ||
_agent-task__subcmd__help__subcmd__sync_commands() {
    local commands; commands=(
'keygen:Create this node'\''s sync identity (Ed25519 publisher + X25519 recipient keys, owner-private)' \
'identity:Print the public identity another operator pins (ids, keys, key id)' \
'authority:Source side\: page authorities (who may page which collections, for which recipient)' \
'peer:Destination side\: peers this node pulls from' \
'pull:Pull pages of one collection from a configured peer' \
'status:The checkpoint status of one (peer, collection) (never the raw cursor)' \
'reset:Delete the checkpoint of one (peer, collection); imported data stays' \
    )
    _describe -t commands 'agent-task help sync commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync__subcmd__authority_commands] )) ||
_agent-task__subcmd__help__subcmd__sync__subcmd__authority_commands() {
    local commands; commands=(
'add:Add a page authority' \
'list:List page authorities (never their bearers)' \
'remove:Remove a page authority (its bearer stops working at once)' \
    )
    _describe -t commands 'agent-task help sync authority commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync__subcmd__authority__subcmd__add_commands] )) ||
_agent-task__subcmd__help__subcmd__sync__subcmd__authority__subcmd__add_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help sync authority add commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync__subcmd__authority__subcmd__list_commands] )) ||
_agent-task__subcmd__help__subcmd__sync__subcmd__authority__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help sync authority list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync__subcmd__authority__subcmd__remove_commands] )) ||
_agent-task__subcmd__help__subcmd__sync__subcmd__authority__subcmd__remove_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help sync authority remove commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync__subcmd__identity_commands] )) ||
_agent-task__subcmd__help__subcmd__sync__subcmd__identity_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help sync identity commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync__subcmd__keygen_commands] )) ||
_agent-task__subcmd__help__subcmd__sync__subcmd__keygen_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help sync keygen commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync__subcmd__peer_commands] )) ||
_agent-task__subcmd__help__subcmd__sync__subcmd__peer_commands() {
    local commands; commands=(
'add:Configure a peer to pull from' \
'list:List peers (never their bearers)' \
'remove:Remove a peer; its checkpoints stay and refuse a re-added peer with another origin, node id or publisher until \`sync reset\`' \
    )
    _describe -t commands 'agent-task help sync peer commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync__subcmd__peer__subcmd__add_commands] )) ||
_agent-task__subcmd__help__subcmd__sync__subcmd__peer__subcmd__add_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help sync peer add commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync__subcmd__peer__subcmd__list_commands] )) ||
_agent-task__subcmd__help__subcmd__sync__subcmd__peer__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help sync peer list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync__subcmd__peer__subcmd__remove_commands] )) ||
_agent-task__subcmd__help__subcmd__sync__subcmd__peer__subcmd__remove_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help sync peer remove commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync__subcmd__pull_commands] )) ||
_agent-task__subcmd__help__subcmd__sync__subcmd__pull_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help sync pull commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync__subcmd__reset_commands] )) ||
_agent-task__subcmd__help__subcmd__sync__subcmd__reset_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help sync reset commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__sync__subcmd__status_commands] )) ||
_agent-task__subcmd__help__subcmd__sync__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help sync status commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__task-codex-stop_commands] )) ||
_agent-task__subcmd__help__subcmd__task-codex-stop_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help task-codex-stop commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__task-stop_commands] )) ||
_agent-task__subcmd__help__subcmd__task-stop_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help task-stop commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__token_commands] )) ||
_agent-task__subcmd__help__subcmd__token_commands() {
    local commands; commands=(
'issue:Issue an agent token into a new 0600 file (only its hash is kept)' \
'revoke:Revoke an agent'\''s token (bumps its grant generation)' \
    )
    _describe -t commands 'agent-task help token commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__token__subcmd__issue_commands] )) ||
_agent-task__subcmd__help__subcmd__token__subcmd__issue_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help token issue commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__token__subcmd__revoke_commands] )) ||
_agent-task__subcmd__help__subcmd__token__subcmd__revoke_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help token revoke commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__help__subcmd__verify_commands] )) ||
_agent-task__subcmd__help__subcmd__verify_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task help verify commands' commands "$@"
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
(( $+functions[_agent-task__subcmd__init-repo_commands] )) ||
_agent-task__subcmd__init-repo_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task init-repo commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__install-stop_commands] )) ||
_agent-task__subcmd__install-stop_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task install-stop commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__instructions_commands] )) ||
_agent-task__subcmd__instructions_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task instructions commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__keygen_commands] )) ||
_agent-task__subcmd__keygen_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task keygen commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__land_commands] )) ||
_agent-task__subcmd__land_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task land commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__man_commands] )) ||
_agent-task__subcmd__man_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task man commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__next_commands] )) ||
_agent-task__subcmd__next_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task next commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__profile_commands] )) ||
_agent-task__subcmd__profile_commands() {
    local commands; commands=(
'install:Install an immutable collector profile for one current registration epoch and step\: for a command step, pins the step'\''s command recipe and the SHA-256 of the runtime identity (probed now, or read from --file); for a review step (\`--runtime review\`), copies in the step'\''s criteria, coverage and budgets and pins the reviewer executable (script and interpreter, by path and SHA-256), the model and the provider' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task profile commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__profile__subcmd__help_commands] )) ||
_agent-task__subcmd__profile__subcmd__help_commands() {
    local commands; commands=(
'install:Install an immutable collector profile for one current registration epoch and step\: for a command step, pins the step'\''s command recipe and the SHA-256 of the runtime identity (probed now, or read from --file); for a review step (\`--runtime review\`), copies in the step'\''s criteria, coverage and budgets and pins the reviewer executable (script and interpreter, by path and SHA-256), the model and the provider' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task profile help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__profile__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__profile__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task profile help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__profile__subcmd__help__subcmd__install_commands] )) ||
_agent-task__subcmd__profile__subcmd__help__subcmd__install_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task profile help install commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__profile__subcmd__install_commands] )) ||
_agent-task__subcmd__profile__subcmd__install_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task profile install commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__qualify_commands] )) ||
_agent-task__subcmd__qualify_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task qualify commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__reconcile_commands] )) ||
_agent-task__subcmd__reconcile_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task reconcile commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__recovery_commands] )) ||
_agent-task__subcmd__recovery_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task recovery commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__reference_commands] )) ||
_agent-task__subcmd__reference_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task reference commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__repo_commands] )) ||
_agent-task__subcmd__repo_commands() {
    local commands; commands=(
'add:Register a source directory as a repository; its tree becomes the target head' \
'list:List repositories' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task repo commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__repo__subcmd__add_commands] )) ||
_agent-task__subcmd__repo__subcmd__add_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task repo add commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__repo__subcmd__help_commands] )) ||
_agent-task__subcmd__repo__subcmd__help_commands() {
    local commands; commands=(
'add:Register a source directory as a repository; its tree becomes the target head' \
'list:List repositories' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task repo help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__repo__subcmd__help__subcmd__add_commands] )) ||
_agent-task__subcmd__repo__subcmd__help__subcmd__add_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task repo help add commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__repo__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__repo__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task repo help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__repo__subcmd__help__subcmd__list_commands] )) ||
_agent-task__subcmd__repo__subcmd__help__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task repo help list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__repo__subcmd__list_commands] )) ||
_agent-task__subcmd__repo__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task repo list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__requirement_commands] )) ||
_agent-task__subcmd__requirement_commands() {
    local commands; commands=(
'install:Install a workflow file (docs/workflow-file.md) for a repository profile; bumps the policy epoch (which makes every live subject stale\: \`stale_subjects\`) unless the file is canonically identical to the installed requirement (\`unchanged\: true\`)' \
'show:Show the installed requirement of a repository profile' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task requirement commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__requirement__subcmd__help_commands] )) ||
_agent-task__subcmd__requirement__subcmd__help_commands() {
    local commands; commands=(
'install:Install a workflow file (docs/workflow-file.md) for a repository profile; bumps the policy epoch (which makes every live subject stale\: \`stale_subjects\`) unless the file is canonically identical to the installed requirement (\`unchanged\: true\`)' \
'show:Show the installed requirement of a repository profile' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task requirement help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__requirement__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__requirement__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task requirement help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__requirement__subcmd__help__subcmd__install_commands] )) ||
_agent-task__subcmd__requirement__subcmd__help__subcmd__install_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task requirement help install commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__requirement__subcmd__help__subcmd__show_commands] )) ||
_agent-task__subcmd__requirement__subcmd__help__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task requirement help show commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__requirement__subcmd__install_commands] )) ||
_agent-task__subcmd__requirement__subcmd__install_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task requirement install commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__requirement__subcmd__show_commands] )) ||
_agent-task__subcmd__requirement__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task requirement show commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__requirements_commands] )) ||
_agent-task__subcmd__requirements_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task requirements commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__result_commands] )) ||
_agent-task__subcmd__result_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task result commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__retry-upload_commands] )) ||
_agent-task__subcmd__retry-upload_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task retry-upload commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__runtime_commands] )) ||
_agent-task__subcmd__runtime_commands() {
    local commands; commands=(
'probe:Print the observed identity (program digest, version, pinned arguments, isolation facts, for bwrap the pinned limits, for oci the engine and resolved image, and their digest) after a trial run (bwrap)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task runtime commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__runtime__subcmd__help_commands] )) ||
_agent-task__subcmd__runtime__subcmd__help_commands() {
    local commands; commands=(
'probe:Print the observed identity (program digest, version, pinned arguments, isolation facts, for bwrap the pinned limits, for oci the engine and resolved image, and their digest) after a trial run (bwrap)' \
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
(( $+functions[_agent-task__subcmd__sandbox-exec_commands] )) ||
_agent-task__subcmd__sandbox-exec_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sandbox-exec commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__serve_commands] )) ||
_agent-task__subcmd__serve_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task serve commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__status_commands] )) ||
_agent-task__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task status commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync_commands] )) ||
_agent-task__subcmd__sync_commands() {
    local commands; commands=(
'keygen:Create this node'\''s sync identity (Ed25519 publisher + X25519 recipient keys, owner-private)' \
'identity:Print the public identity another operator pins (ids, keys, key id)' \
'authority:Source side\: page authorities (who may page which collections, for which recipient)' \
'peer:Destination side\: peers this node pulls from' \
'pull:Pull pages of one collection from a configured peer' \
'status:The checkpoint status of one (peer, collection) (never the raw cursor)' \
'reset:Delete the checkpoint of one (peer, collection); imported data stays' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task sync commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__authority_commands] )) ||
_agent-task__subcmd__sync__subcmd__authority_commands() {
    local commands; commands=(
'add:Add a page authority' \
'list:List page authorities (never their bearers)' \
'remove:Remove a page authority (its bearer stops working at once)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task sync authority commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__authority__subcmd__add_commands] )) ||
_agent-task__subcmd__sync__subcmd__authority__subcmd__add_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync authority add commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__authority__subcmd__help_commands] )) ||
_agent-task__subcmd__sync__subcmd__authority__subcmd__help_commands() {
    local commands; commands=(
'add:Add a page authority' \
'list:List page authorities (never their bearers)' \
'remove:Remove a page authority (its bearer stops working at once)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task sync authority help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__authority__subcmd__help__subcmd__add_commands] )) ||
_agent-task__subcmd__sync__subcmd__authority__subcmd__help__subcmd__add_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync authority help add commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__authority__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__sync__subcmd__authority__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync authority help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__authority__subcmd__help__subcmd__list_commands] )) ||
_agent-task__subcmd__sync__subcmd__authority__subcmd__help__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync authority help list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__authority__subcmd__help__subcmd__remove_commands] )) ||
_agent-task__subcmd__sync__subcmd__authority__subcmd__help__subcmd__remove_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync authority help remove commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__authority__subcmd__list_commands] )) ||
_agent-task__subcmd__sync__subcmd__authority__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync authority list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__authority__subcmd__remove_commands] )) ||
_agent-task__subcmd__sync__subcmd__authority__subcmd__remove_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync authority remove commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help_commands] )) ||
_agent-task__subcmd__sync__subcmd__help_commands() {
    local commands; commands=(
'keygen:Create this node'\''s sync identity (Ed25519 publisher + X25519 recipient keys, owner-private)' \
'identity:Print the public identity another operator pins (ids, keys, key id)' \
'authority:Source side\: page authorities (who may page which collections, for which recipient)' \
'peer:Destination side\: peers this node pulls from' \
'pull:Pull pages of one collection from a configured peer' \
'status:The checkpoint status of one (peer, collection) (never the raw cursor)' \
'reset:Delete the checkpoint of one (peer, collection); imported data stays' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task sync help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__authority_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__authority_commands() {
    local commands; commands=(
'add:Add a page authority' \
'list:List page authorities (never their bearers)' \
'remove:Remove a page authority (its bearer stops working at once)' \
    )
    _describe -t commands 'agent-task sync help authority commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__authority__subcmd__add_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__authority__subcmd__add_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync help authority add commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__authority__subcmd__list_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__authority__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync help authority list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__authority__subcmd__remove_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__authority__subcmd__remove_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync help authority remove commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__identity_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__identity_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync help identity commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__keygen_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__keygen_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync help keygen commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__peer_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__peer_commands() {
    local commands; commands=(
'add:Configure a peer to pull from' \
'list:List peers (never their bearers)' \
'remove:Remove a peer; its checkpoints stay and refuse a re-added peer with another origin, node id or publisher until \`sync reset\`' \
    )
    _describe -t commands 'agent-task sync help peer commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__peer__subcmd__add_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__peer__subcmd__add_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync help peer add commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__peer__subcmd__list_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__peer__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync help peer list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__peer__subcmd__remove_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__peer__subcmd__remove_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync help peer remove commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__pull_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__pull_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync help pull commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__reset_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__reset_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync help reset commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__help__subcmd__status_commands] )) ||
_agent-task__subcmd__sync__subcmd__help__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync help status commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__identity_commands] )) ||
_agent-task__subcmd__sync__subcmd__identity_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync identity commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__keygen_commands] )) ||
_agent-task__subcmd__sync__subcmd__keygen_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync keygen commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__peer_commands] )) ||
_agent-task__subcmd__sync__subcmd__peer_commands() {
    local commands; commands=(
'add:Configure a peer to pull from' \
'list:List peers (never their bearers)' \
'remove:Remove a peer; its checkpoints stay and refuse a re-added peer with another origin, node id or publisher until \`sync reset\`' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task sync peer commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__peer__subcmd__add_commands] )) ||
_agent-task__subcmd__sync__subcmd__peer__subcmd__add_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync peer add commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__peer__subcmd__help_commands] )) ||
_agent-task__subcmd__sync__subcmd__peer__subcmd__help_commands() {
    local commands; commands=(
'add:Configure a peer to pull from' \
'list:List peers (never their bearers)' \
'remove:Remove a peer; its checkpoints stay and refuse a re-added peer with another origin, node id or publisher until \`sync reset\`' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task sync peer help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__peer__subcmd__help__subcmd__add_commands] )) ||
_agent-task__subcmd__sync__subcmd__peer__subcmd__help__subcmd__add_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync peer help add commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__peer__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__sync__subcmd__peer__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync peer help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__peer__subcmd__help__subcmd__list_commands] )) ||
_agent-task__subcmd__sync__subcmd__peer__subcmd__help__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync peer help list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__peer__subcmd__help__subcmd__remove_commands] )) ||
_agent-task__subcmd__sync__subcmd__peer__subcmd__help__subcmd__remove_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync peer help remove commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__peer__subcmd__list_commands] )) ||
_agent-task__subcmd__sync__subcmd__peer__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync peer list commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__peer__subcmd__remove_commands] )) ||
_agent-task__subcmd__sync__subcmd__peer__subcmd__remove_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync peer remove commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__pull_commands] )) ||
_agent-task__subcmd__sync__subcmd__pull_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync pull commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__reset_commands] )) ||
_agent-task__subcmd__sync__subcmd__reset_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync reset commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__sync__subcmd__status_commands] )) ||
_agent-task__subcmd__sync__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task sync status commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__task-codex-stop_commands] )) ||
_agent-task__subcmd__task-codex-stop_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task task-codex-stop commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__task-stop_commands] )) ||
_agent-task__subcmd__task-stop_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task task-stop commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__token_commands] )) ||
_agent-task__subcmd__token_commands() {
    local commands; commands=(
'issue:Issue an agent token into a new 0600 file (only its hash is kept)' \
'revoke:Revoke an agent'\''s token (bumps its grant generation)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task token commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__token__subcmd__help_commands] )) ||
_agent-task__subcmd__token__subcmd__help_commands() {
    local commands; commands=(
'issue:Issue an agent token into a new 0600 file (only its hash is kept)' \
'revoke:Revoke an agent'\''s token (bumps its grant generation)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agent-task token help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__token__subcmd__help__subcmd__help_commands] )) ||
_agent-task__subcmd__token__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task token help help commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__token__subcmd__help__subcmd__issue_commands] )) ||
_agent-task__subcmd__token__subcmd__help__subcmd__issue_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task token help issue commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__token__subcmd__help__subcmd__revoke_commands] )) ||
_agent-task__subcmd__token__subcmd__help__subcmd__revoke_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task token help revoke commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__token__subcmd__issue_commands] )) ||
_agent-task__subcmd__token__subcmd__issue_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task token issue commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__token__subcmd__revoke_commands] )) ||
_agent-task__subcmd__token__subcmd__revoke_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task token revoke commands' commands "$@"
}
(( $+functions[_agent-task__subcmd__verify_commands] )) ||
_agent-task__subcmd__verify_commands() {
    local commands; commands=()
    _describe -t commands 'agent-task verify commands' commands "$@"
}

if [ "$funcstack[1]" = "_agent-task" ]; then
    _agent-task "$@"
else
    compdef _agent-task agent-task
fi
