//! Process attributes the agent sets before it starts `collect` (`ulimit`,
//! `nice`, `chrt`, `ionice`, `taskset`, `umask`, ignored and blocked
//! signals, timer slack, the THP-disable flag, `setarch -R`, as it would
//! before the sudo wrapper) never reach the sandbox:
//! the recipe prints what it runs with, from inside the real bwrap
//! sandbox, and the test compares it with the values the runtime identity
//! pins; or `collect` refuses with `sandbox_limit_unavailable` before
//! anything is reserved when this collector cannot undo one (a lowered
//! hard limit without `CAP_SYS_RESOURCE`, a raised nice value without
//! `CAP_SYS_NICE`).

use crate::common::collect_flow::{Loop, workflow_with};
use crate::common::{Output, TestEnv, bin};
use std::collections::BTreeMap;
use std::path::Path;

/// The recipe: everything the sandbox's processes inherited, in a form
/// the test parses (well under the 4 KiB stdout tail).
const PROBE: &str = "#!/bin/sh\n\
    grep -E '^(SigBlk|SigIgn|Cpus_allowed_list|THP_enabled):' /proc/self/status\n\
    echo \"timerslack $(cat /proc/self/timerslack_ns)\"\n\
    echo \"personality $(cat /proc/self/personality)\"\n\
    tail -n +2 /proc/self/limits\n\
    echo \"stat $(cat /proc/self/stat)\"\n\
    echo \"umask $(umask)\"\n\
    echo \"ioprio $(ionice -p $$)\"\n";

/// A Loop whose `tests` step runs [`PROBE`], checkpointed and claimed:
/// (loop, descriptor path, descriptor).
fn probing_loop() -> (Loop, std::path::PathBuf, serde_json::Value) {
    let env0 = TestEnv::new();
    let wf = workflow_with(&env0, &["sh", "probe.sh"]);
    let l = Loop::new(&wf, "bwrap", None);
    std::fs::write(l.workspace.join("probe.sh"), PROBE).expect("probe");
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    (l, dp, d)
}

/// Runs `collect` as the agent would after `prelude` (shell commands that
/// change its own attributes) and `wrap` (programs that change them and
/// then execute the rest), from a shell with `INT` and `HUP` ignored.
fn collect_after(l: &Loop, descriptor: &Path, prelude: &str, wrap: &str) -> Output {
    let script = format!("trap '' INT HUP; umask 077; {prelude} exec {wrap} \"$@\"");
    let out = std::process::Command::new("sh")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", l.env.tmp.path())
        .arg("-c")
        .arg(script)
        .arg("sh")
        .arg(bin())
        .arg("--data-dir")
        .arg(&l.env.data_dir)
        .arg("--token-file")
        .arg(&l.token)
        .args(["collect", "--descriptor"])
        .arg(descriptor)
        .arg("--collector-dir")
        .arg(&l.collector)
        .output()
        .expect("run collect");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Sets a 10 s timer slack and the THP-disable flag (`prctl` 29 and 41,
/// both kept across `exec` and sudo), blocks `USR2` and `TERM`, then
/// executes the rest (the shell can do none of these for its children).
const PRCTL_AND_BLOCK: &str = "perl -MPOSIX -MConfig -e '\
    $n = $Config{archname} =~ /aarch64/ ? 167 : 157; \
    syscall($n, 29, 10000000000) == 0 or die \"timer slack: $!\"; \
    syscall($n, 41, 1, 0, 0, 0) == 0 or die \"thp: $!\"; \
    sigprocmask(SIG_BLOCK, POSIX::SigSet->new(SIGUSR2, SIGTERM)) or die; \
    exec @ARGV or die'";

/// What the probe printed: `/proc/self/status` lines, limits by name
/// (soft, hard), the nice value, policy and realtime priority, the umask
/// and the I/O priority.
struct Seen {
    status: BTreeMap<String, String>,
    limits: BTreeMap<String, (String, String)>,
    nice: String,
    rt_priority: String,
    policy: String,
    umask: String,
    ioprio: String,
    timer_slack: String,
    personality: String,
}

fn parse(tail: &str) -> Seen {
    let mut s = Seen {
        status: BTreeMap::new(),
        limits: BTreeMap::new(),
        nice: String::new(),
        rt_priority: String::new(),
        policy: String::new(),
        umask: String::new(),
        ioprio: String::new(),
        timer_slack: String::new(),
        personality: String::new(),
    };
    for line in tail.lines() {
        if let Some(rest) = line.strip_prefix("stat ") {
            // Fields after the command name, which ends with `) `: field 3
            // is index 0, so nice (19) is 16, rt_priority (40) is 37 and
            // policy (41) is 38.
            let after = rest.rsplit_once(") ").expect("stat").1;
            let f: Vec<&str> = after.split(' ').collect();
            s.nice = f[16].to_owned();
            s.rt_priority = f[37].to_owned();
            s.policy = f[38].to_owned();
        } else if let Some(rest) = line.strip_prefix("umask ") {
            s.umask = rest.to_owned();
        } else if let Some(rest) = line.strip_prefix("personality ") {
            s.personality = rest.to_owned();
        } else if let Some(rest) = line.strip_prefix("timerslack ") {
            s.timer_slack = rest.to_owned();
        } else if let Some(rest) = line.strip_prefix("ioprio ") {
            s.ioprio = rest.to_owned();
        } else if let Some(name) = line.strip_prefix("Max ") {
            // "Max open files            1024    1024    files": the name is
            // the words before the first number or "unlimited".
            let words: Vec<&str> = name.split_whitespace().collect();
            let at = words
                .iter()
                .position(|w| w.parse::<u64>().is_ok() || *w == "unlimited")
                .expect("limit value");
            s.limits.insert(
                words[..at].join(" "),
                (words[at].to_owned(), words[at + 1].to_owned()),
            );
        } else if let Some((k, v)) = line.split_once(":\t") {
            s.status.insert(k.to_owned(), v.trim().to_owned());
        }
    }
    s
}

/// The pinned limits, as `/proc/self/limits` names them, from the runtime
/// identity's `limits` (the profile's pin).
fn pinned_limits(identity_limits: &serde_json::Value) -> BTreeMap<String, String> {
    let l = identity_limits;
    let p = &l["process"]["rlimits"];
    let n = |v: &serde_json::Value| v.as_u64().expect("number").to_string();
    BTreeMap::from([
        ("cpu time".into(), n(&l["cpu_seconds"])),
        ("file size".into(), n(&l["file_size_bytes"])),
        ("data size".into(), n(&p["data_bytes"])),
        ("stack size".into(), n(&p["stack_bytes"])),
        ("core file size".into(), n(&p["core_bytes"])),
        ("resident set".into(), n(&p["resident_bytes"])),
        ("processes".into(), n(&l["processes"])),
        ("open files".into(), n(&p["open_files"])),
        ("locked memory".into(), n(&p["locked_memory_bytes"])),
        ("address space".into(), n(&l["address_space_bytes"])),
        ("file locks".into(), n(&p["file_locks"])),
        ("pending signals".into(), n(&p["pending_signals"])),
        ("msgqueue size".into(), n(&p["message_queue_bytes"])),
        ("nice priority".into(), n(&p["nice_ceiling"])),
        ("realtime priority".into(), n(&p["realtime_priority"])),
        ("realtime timeout".into(), n(&p["realtime_timeout_us"])),
    ])
}

/// The sandbox ran with exactly the pinned attributes.
fn assert_pinned(l: &Loop, out: &Output) {
    let c = out.json();
    assert_eq!(c["outcome"], "passed", "{c}");
    let tail = c["stdout_tail"].as_str().expect("tail");
    let seen = parse(tail);
    let identity = crate::common::probe_bwrap(&l.env);
    let want = pinned_limits(&identity["limits"]);
    assert_eq!(seen.limits.len(), 16, "every rlimit: {tail}");
    for (name, v) in &want {
        assert_eq!(
            seen.limits.get(name),
            Some(&(v.clone(), v.clone())),
            "{name} soft and hard: {tail}"
        );
    }
    let p = &identity["limits"]["process"];
    assert_eq!(p["nice"], 0);
    assert_eq!(seen.nice, "0", "nice: {tail}");
    assert_eq!(p["scheduler"], "other");
    assert_eq!(seen.policy, "0", "SCHED_OTHER: {tail}");
    assert_eq!(seen.rt_priority, "0", "{tail}");
    assert_eq!(p["umask"], 0o022);
    assert_eq!(seen.umask, "0022", "{tail}");
    assert_eq!(seen.ioprio, "best-effort: prio 4", "{tail}");
    assert_eq!(seen.status["SigBlk"], "0000000000000000", "{tail}");
    assert_eq!(seen.status["SigIgn"], "0000000000000000", "{tail}");
    assert_eq!(p["timer_slack_ns"], 50_000);
    assert_eq!(seen.timer_slack, "50000", "{tail}");
    assert_eq!(p["thp_disabled"], false);
    assert_eq!(seen.status["THP_enabled"], "1", "{tail}");
    assert_eq!(p["personality"], 0);
    assert_eq!(seen.personality, "00000000", "{tail}");
    // Every CPU this test may use (the agent narrowed itself to CPU 0).
    let own = std::fs::read_to_string("/proc/self/status").expect("status");
    let own_cpus = own
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("cpus")
        .trim();
    assert_eq!(seen.status["Cpus_allowed_list"], own_cpus, "{tail}");
}

/// Whether this process can raise a hard limit it lowered (root with
/// `CAP_SYS_RESOURCE`; a container's root may lack it).
fn can_raise_hard_limits() -> bool {
    std::process::Command::new("sh")
        .args(["-c", "ulimit -n 64 && ulimit -Hn 65 2>/dev/null"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Soft limits lowered, nice 10, `SCHED_IDLE`, the idle I/O class, CPU 0
/// only, umask 077, `INT`/`HUP` ignored and `USR2`/`TERM` blocked, a 10 s
/// timer slack, THP disabled, address-space randomisation off (`setarch
/// -R`): the sandbox runs with the pinned values of every one.
#[test]
fn attributes_the_agent_sets_before_collect_never_reach_the_sandbox() {
    let (l, dp, _) = probing_loop();
    let out = collect_after(
        &l,
        &dp,
        "ulimit -Sn 64; ulimit -Ss 1024; ulimit -Sc 0; ulimit -Sv 1000000000;",
        &format!("nice -n 10 chrt -i 0 ionice -c 3 taskset -c 0 setarch -R {PRCTL_AND_BLOCK}"),
    );
    assert_pinned(&l, &out);
}

/// `ulimit -n 64` and `ulimit -s 1024` lower the hard limits too: a
/// collector that can raise them again runs with the pinned values; one
/// that cannot refuses with `sandbox_limit_unavailable` before reserving
/// anything (no run, no record).
#[test]
fn lowered_hard_limits_are_restored_or_refused_before_reserving() {
    for (prelude, limit) in [
        ("ulimit -n 64;", "open_files"),
        ("ulimit -s 1024;", "stack"),
    ] {
        let (l, dp, d) = probing_loop();
        let out = collect_after(&l, &dp, prelude, "");
        if can_raise_hard_limits() {
            assert_pinned(&l, &out);
        } else {
            let e = out.error("sandbox_limit_unavailable", 69);
            assert_eq!(e["details"]["limit"], limit, "{e}");
            assert!(
                !l.retained_path(&d, "reservation").exists(),
                "nothing reserved"
            );
            // The same descriptor collects once the agent stops lowering.
            assert_pinned(&l, &collect_after(&l, &dp, "", ""));
        }
    }
}

/// A non-root collector cannot lower a raised nice value or raise a
/// lowered hard limit: `runtime probe` (the check `profile install` and
/// `collect` make before reserving) refuses with `sandbox_limit_unavailable`
/// and names the attribute; without them it passes its trial run.
#[test]
fn a_non_root_collector_refuses_what_it_cannot_undo() {
    if !rustix::process::geteuid().is_root() {
        println!("SKIP: running as a non-root user needs root (setpriv)");
        return;
    }
    let probe_as_nobody = |wrap: &str| {
        let script = format!("{wrap} \"$@\"");
        let out = std::process::Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--",
                "sh",
                "-c",
                &script,
                "sh",
            ])
            .arg(bin())
            .args(["runtime", "probe", "--runtime", "bwrap"])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", "/")
            .current_dir("/")
            .output()
            .expect("setpriv");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let ok = probe_as_nobody("exec");
    if ok.code != 0 {
        println!("SKIP: bwrap does not run as an unprivileged user here: {ok}");
        return;
    }
    assert_eq!(ok.json()["limits"]["process"]["nice"], 0);
    for (wrap, limit) in [
        ("exec nice -n 10", "nice"),
        ("ulimit -n 64; exec", "open_files"),
        ("ulimit -s 1024; exec", "stack"),
    ] {
        let e = probe_as_nobody(wrap).error("sandbox_limit_unavailable", 69);
        assert_eq!(e["details"]["limit"], limit, "{wrap}: {e}");
    }
}

/// A profile pinned before the process attributes existed (its identity
/// has no `limits.process`, so its digest is the one it was pinned with)
/// is refused before anything is reserved, never run with inherited
/// attributes; `profile install` of such a pinned identity is refused too.
#[test]
fn a_profile_pinned_before_the_attributes_is_refused() {
    let l = Loop::basic("bwrap");
    crate::common::evidence::rewrite_profile(&l, |p| {
        if let Some(s) = p.limits.sandbox.as_mut() {
            s.process = None;
        }
    });
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    let e = l.collect(&dp).error("profile_invalid", 77);
    assert!(
        e["message"]
            .as_str()
            .expect("message")
            .contains("process attributes"),
        "{e}"
    );
    assert!(
        !l.retained_path(&d, "reservation").exists(),
        "nothing reserved"
    );
    // An identity file without them, self-consistent, is not installed.
    let mut id: agent_task::collector::runtime::RuntimeIdentity =
        serde_json::from_value(crate::common::probe_bwrap(&l.env)).expect("identity");
    if let Some(s) = id.limits.as_mut() {
        s.process = None;
    }
    id.digest = id.computed_digest().expect("digest");
    let f = l.env.path("old-identity.json");
    std::fs::write(
        &f,
        serde_json::to_vec(&serde_json::json!({"basis": "pinned_file", "identity": id}))
            .expect("json"),
    )
    .expect("write");
    l.env
        .run(&[
            "profile",
            "install",
            "--registration",
            &l.registration,
            "--step",
            "tests",
            "--runtime",
            "bwrap",
            "--file",
            f.to_str().expect("utf8"),
        ])
        .error("runtime_not_isolating", 78);
}

/// A pinned value the kernel refuses in the run's own process, which no
/// check before the fork can know (here an open-files limit over
/// `fs.nr_open`, through the test hook that replaces the pinned one in
/// the child): the spawn fails with the step named, and the collection
/// records `limit_unavailable` with it and no run outcome.
#[test]
fn a_limit_the_runs_process_cannot_apply_fails_the_run_with_the_step() {
    let l = Loop::basic("bwrap");
    let t = l.checkpoint();
    let (dp, d) = l.claim(&t, "d.json");
    let mut c = l.env.cmd();
    c.env("AGENT_TASK_TEST_LAUNCH_NOFILE", (1u64 << 40).to_string())
        .arg("--token-file")
        .arg(&l.token)
        .args(["collect", "--collector-dir"])
        .arg(&l.collector)
        .arg("--descriptor")
        .arg(&dp);
    let col = crate::common::run_cmd(&mut c).json();
    assert_eq!(col["outcome"], "failed", "{col}");
    let record: serde_json::Value = serde_json::from_slice(
        &agent_task::collector::collect::read_retained(
            &l.collector,
            d["execution_operation_id"].as_str().expect("op"),
            "record",
        )
        .expect("read")
        .expect("a retained record"),
    )
    .expect("record json");
    assert_eq!(record["status"], "limit_unavailable", "{record}");
    assert!(record["run"].is_null(), "no run: {record}");
    let detail = record["detail"].as_str().expect("detail");
    assert!(
        detail.contains("set the open_files limit to 1099511627776"),
        "{detail}"
    );
}
