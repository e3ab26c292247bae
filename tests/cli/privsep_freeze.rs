//! The agent cannot freeze the authority (issue 28, item 3): in the
//! privilege-separated deployment (root only; `SKIP:` otherwise) the
//! wrapper's `collect` is paused, again and again at random points of its
//! run, in the four ways an agent can pause a process it starts — SIGTSTP
//! to its own sudo (which relays it), SIGSTOP (here sent by root), a
//! frozen cgroup v2 (skipped when this host has none with a writable
//! subtree) and a stdout pipe nobody reads — and while it is paused every
//! other agent's heartbeat through the operator's `serve` succeeds: the
//! paused process holds no `DATA_DIR/lock` and no authority transaction.
//! Each collect then finishes and its transfer is imported. Nothing is
//! timed: each pause is confirmed from `/proc` (or the cgroup's events)
//! before the heartbeats, and they must succeed, not be fast.

use crate::common::privsep::{Deployment, Opts, PATH, copy_tree, deploy, s, sh_root, task_of};
use crate::common::{Output, repo_root};
use serde_json::Value;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Another agent of the same serve, holding a claimed task it heartbeats.
struct Other {
    token: PathBuf,
    attempt: String,
    fence: u64,
}

fn other_cmd(d: &Deployment, token: &Path, args: &[&str]) -> Output {
    let url = format!("http://{}", d.addr);
    let mut a = vec!["--token-file", s(token)];
    a.extend_from_slice(args);
    let bin = d.bin();
    d.as_user(
        &d.agent,
        s(&bin),
        &a,
        &[
            ("AGENT_TASK_ENDPOINT", url.as_str()),
            ("AGENT_TASK_REPOSITORY", "demo-basic"),
            ("AGENT_TASK_PROFILE", "default"),
        ],
        b"",
    )
}

/// Agents claude-2 and claude-3: each opens a change, checkpoints and
/// claims its `notes` task.
fn others(d: &Deployment) -> Vec<Other> {
    (2..=3)
        .map(|i| {
            let op_tok = d.home(&d.op).join(format!("other-{i}.token"));
            d.operator(&[
                "token",
                "issue",
                "--owner",
                "bob",
                "--agent",
                &format!("claude-{i}"),
                "--out",
                s(&op_tok),
            ])
            .json();
            let token = d.home(&d.agent).join(format!("other-{i}.token"));
            std::fs::copy(&op_tok, &token).expect("token");
            let ws = d.home(&d.agent).join(format!("other-ws-{i}"));
            copy_tree(&repo_root().join("fixtures/repos/basic"), &ws);
            sh_root(&[
                "chown",
                "-R",
                &format!("{0}:{0}", d.agent),
                s(&token),
                s(&ws),
            ]);
            let ch = other_cmd(
                d,
                &token,
                &[
                    "change",
                    "open",
                    "--profile",
                    "default",
                    "--request-id",
                    "o",
                ],
            )
            .json();
            let id = ch["change_id"].as_str().expect("change").to_owned();
            let cp = other_cmd(
                d,
                &token,
                &["checkpoint", "--change", &id, "--workspace", s(&ws)],
            )
            .json();
            let notes = task_of(&cp, "notes");
            let c = other_cmd(d, &token, &["claim", &notes, "--request-id", "c"]).json();
            Other {
                token,
                attempt: c["attempt"]["attempt_id"]
                    .as_str()
                    .expect("attempt")
                    .to_owned(),
                fence: c["attempt"]["fence"].as_u64().expect("fence"),
            }
        })
        .collect()
}

/// Every other agent heartbeats through serve; each must succeed (a
/// `busy` answer is the frozen authority this test exists to catch).
fn heartbeats(d: &Deployment, others: &[Other], round: &mut u32) {
    *round += 1;
    for (i, o) in others.iter().enumerate() {
        let out = other_cmd(
            d,
            &o.token,
            &[
                "heartbeat",
                "--attempt",
                &o.attempt,
                "--fence",
                &o.fence.to_string(),
                "--request-id",
                &format!("hb-{i}-{round}"),
            ],
        );
        assert_eq!(
            out.code, 0,
            "another agent's heartbeat failed while the wrapper's collect was paused: {out}"
        );
    }
}

/// (parent pid, state) of a process, `None` once it is gone.
fn stat(pid: i32) -> Option<(i32, char)> {
    let t = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &t[t.rfind(')')? + 2..];
    let mut f = rest.split(' ');
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    Some((ppid, state))
}

/// The wrapper's `agent-task collect` process below `top`, if running.
fn collect_pid(top: i32) -> Option<i32> {
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        if !args.contains(&&b"collect"[..]) || !args.contains(&&b"--token-on-stdin"[..]) {
            continue;
        }
        let mut cur = pid;
        while let Some((pp, _)) = stat(cur) {
            if pp == top {
                return Some(pid);
            }
            if pp <= 1 {
                break;
            }
            cur = pp;
        }
    }
    None
}

/// Waits (bounded only against a hung host) until `done` holds; false
/// when `gone` holds first.
fn until(what: &str, mut done: impl FnMut() -> bool, mut gone: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if gone() {
            return false;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "never happened: {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Neither gone nor a zombie.
fn alive(pid: i32) -> bool {
    matches!(stat(pid), Some((_, st)) if st != 'Z' && st != 'X')
}

fn stopped(pid: i32) -> bool {
    matches!(stat(pid), Some((_, 'T' | 't')))
}

fn signal(pid: i32, sig: rustix::process::Signal) {
    if let Some(p) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(p, sig);
    }
}

/// A short random pause between two stops (where the next stop lands).
fn jitter() {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        .subsec_nanos();
    std::thread::sleep(Duration::from_millis(u64::from(n % 150)));
}

/// The wrapper's collect as the agent (`setpriv` execs `sudo`, so the
/// child's pid is the agent's sudo), stdin given and closed.
fn spawn(d: &Deployment, stdin: &[u8], stdout: Stdio, cgroup: Option<&Path>) -> Child {
    let mut c = Command::new("setpriv");
    // A process group of its own, as a job-control shell gives a job: its
    // parent (this test) is in another group of the same session, so the
    // group is never orphaned, and the kernel does not discard the stop
    // sudo sends itself after its command stopped (it would when the
    // test's own group is orphaned, as under a detached CI runner).
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    c.env_clear()
        .env("PATH", PATH)
        .env("HOME", d.home(&d.agent))
        .current_dir(d.home(&d.agent))
        .args([
            "--reuid",
            &d.agent,
            "--regid",
            &d.agent,
            "--init-groups",
            "--",
            "sudo",
            "-n",
            "-u",
            &d.op,
        ])
        .arg(&d.wrapper)
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::piped());
    if let Some(cg) = cgroup {
        let procs = std::ffi::CString::new(cg.join("cgroup.procs").as_os_str().as_encoded_bytes())
            .expect("path");
        #[allow(unsafe_code)]
        // SAFETY: runs in the forked child before exec and only calls
        // open(2), write(2) and close(2) on memory prepared before the fork.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut c, move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                libc::close(fd);
                if ok {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
    let mut child = c.spawn().expect("spawn the wrapper");
    let mut w = child.stdin.take().expect("stdin");
    w.write_all(stdin).expect("stdin");
    drop(w);
    child
}

fn exited(child: &mut Child) -> bool {
    child.try_wait().ok().flatten().is_some()
}

#[derive(Clone, Copy, Debug)]
enum Way {
    TstpThroughSudo,
    StopAsRoot,
    CgroupFreeze,
}

/// Pauses the wrapper's collect (`child`) again and again until it ends,
/// with every other agent's heartbeats at each pause; returns how many
/// pauses were confirmed.
fn pause_repeatedly(
    d: &Deployment,
    others: &[Other],
    child: &mut Child,
    way: Way,
    cgroup: Option<&Path>,
    round: &mut u32,
) -> u32 {
    use rustix::process::Signal;
    let top = i32::try_from(child.id()).expect("pid");
    let mut pauses = 0;
    loop {
        if exited(child) {
            break;
        }
        let Some(pid) = collect_pid(top) else {
            if exited(child) {
                break;
            }
            // Not started yet, or ended under a sudo that had just stopped
            // itself: the harness (not the attack) lets sudo go on.
            signal(top, Signal::CONT);
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        let paused = match way {
            Way::TstpThroughSudo => {
                // The agent signals its own sudo from a session of its own;
                // sudo relays SIGTSTP. (sudo ignores a signal whose sender is
                // still alive in the process group sudo was started from --
                // here, the test's -- so a plain `kill` spawned beside it
                // would be relayed or not by a race; an agent's shell is in
                // a process group of its own anyway.)
                let top_s = top.to_string();
                let o = d.as_user(
                    &d.agent,
                    "setsid",
                    &["-w", "kill", "-TSTP", &top_s],
                    &[],
                    b"",
                );
                assert_eq!(o.code, 0, "{o}");
                // sudo relays SIGTSTP to its command and, once the command
                // stopped, stops itself (as it would for a job-control stop).
                until(
                    "sudo relays SIGTSTP",
                    || stopped(pid) && stopped(top),
                    || !alive(pid),
                )
            }
            Way::StopAsRoot => {
                signal(pid, Signal::STOP);
                until("SIGSTOP stops it", || stopped(pid), || !alive(pid))
            }
            Way::CgroupFreeze => {
                let cg = cgroup.expect("cgroup");
                std::fs::write(cg.join("cgroup.freeze"), "1").expect("freeze");
                until(
                    "the cgroup freezes",
                    || {
                        std::fs::read_to_string(cg.join("cgroup.events"))
                            .is_ok_and(|e| e.lines().any(|l| l == "frozen 1"))
                    },
                    || !alive(pid),
                )
            }
        };
        if paused {
            pauses += 1;
            heartbeats(d, others, round);
        }
        match way {
            Way::TstpThroughSudo => {
                let top_s = top.to_string();
                let o = d.as_user(
                    &d.agent,
                    "setsid",
                    &["-w", "kill", "-CONT", &top_s],
                    &[],
                    b"",
                );
                assert_eq!(o.code, 0, "{o}");
                // sudo continues its command; root makes sure (not the attack).
                signal(pid, Signal::CONT);
            }
            Way::StopAsRoot => signal(pid, Signal::CONT),
            Way::CgroupFreeze => {
                std::fs::write(cgroup.expect("cgroup").join("cgroup.freeze"), "0").expect("thaw");
            }
        }
        jitter();
    }
    pauses
}

/// The collect's JSON answer (it must have succeeded and its transfer
/// been imported through serve).
fn finished(out: &[u8], err: &[u8], code: Option<i32>) -> Value {
    let text = String::from_utf8_lossy(out);
    assert_eq!(
        code,
        Some(0),
        "the wrapper's collect failed: {text} {}",
        String::from_utf8_lossy(err)
    );
    let v: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(v["outcome"], "passed", "{v}");
    assert!(v["upload"].is_object(), "{v}");
    v
}

/// A cgroup v2 directory this test may create, move processes into and
/// freeze; `None` (with the reason) when the host has none.
fn cgroup_for(unique: &str) -> Result<PathBuf, String> {
    // The unified hierarchy, or its hybrid mount beside the v1 controllers.
    let Some(root) = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .map(Path::new)
        .find(|r| r.join("cgroup.controllers").is_file())
    else {
        return Err("no cgroup v2 hierarchy at /sys/fs/cgroup(/unified)".into());
    };
    let cg = root.join(format!("agent-task-freeze-{unique}"));
    std::fs::create_dir(&cg).map_err(|e| format!("cannot create {}: {e}", cg.display()))?;
    if !cg.join("cgroup.freeze").is_file() {
        let _ = std::fs::remove_dir(&cg);
        return Err("this kernel's cgroup v2 has no cgroup.freeze".into());
    }
    // Moving a process in must work too (the no-internal-process rule
    // refuses it under a parent with controllers enabled).
    let probe = Command::new("/bin/true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .and_then(|mut c| {
            let moved = std::fs::write(cg.join("cgroup.procs"), c.id().to_string());
            let _ = c.wait();
            moved
        });
    if let Err(e) = probe {
        let _ = std::fs::remove_dir(&cg);
        return Err(format!("cannot move a process into {}: {e}", cg.display()));
    }
    Ok(cg)
}

/// An `add.sh` that is correct but slow: each case sleeps a little.
const SLOW_ADD: &str = "#!/bin/sh\n# Adds two integers, slowly.\nsleep 2\necho $(($1 + $2))\n";

#[test]
fn the_wrappers_collect_paused_four_ways_never_freezes_other_agents() {
    let Some(d) = deploy("the freeze test", &Opts::default()) else {
        return;
    };
    let others = others(&d);
    let mut round = 0;
    heartbeats(&d, &others, &mut round);
    let unique = d.op.trim_start_matches("atop").to_owned();

    for way in [Way::TstpThroughSudo, Way::StopAsRoot, Way::CgroupFreeze] {
        let cgroup = match way {
            Way::CgroupFreeze => match cgroup_for(&unique) {
                Ok(cg) => Some(cg),
                Err(why) => {
                    println!("SKIP: the cgroup.freeze case: {why}");
                    continue;
                }
            },
            _ => None,
        };
        // The candidate's add.sh takes a moment per case, so that a loaded
        // machine still has a run to pause (the agent controls its own
        // code's speed; the pause is what is under test, not the timing).
        let (id, _, desc) = d.agent_change_with(&format!("{way:?}"), SLOW_ADD);
        let mut child = spawn(&d, &d.stdin_of(&desc), Stdio::piped(), cgroup.as_deref());
        let pauses = pause_repeatedly(&d, &others, &mut child, way, cgroup.as_deref(), &mut round);
        let out = child.wait_with_output().expect("wait");
        if let Some(cg) = &cgroup {
            let _ = std::fs::remove_dir(cg);
        }
        println!("{way:?}: {pauses} pauses");
        assert!(pauses >= 1, "{way:?}: the collect was never caught paused");
        finished(&out.stdout, &out.stderr, out.status.code());
        let q = d
            .agent_cmd(&d.addr, &["qualify", "--change", &id], b"")
            .json();
        assert_eq!(q["next"]["operation"], "collector_finalize", "{way:?}: {q}");
    }

    // A stdout pipe nobody reads: filled before the collect starts, so its
    // first write blocks, after the upload.
    let (id, _, desc) = d.agent_change("pipe");
    let (rd, wr) = {
        let mut fds = [0i32; 2];
        #[allow(unsafe_code)]
        // SAFETY: pipe2 writes two new descriptors into `fds`, which this
        // function then owns exclusively.
        unsafe {
            assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0, "pipe2");
            use std::os::fd::FromRawFd;
            (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
        }
    };
    rustix::fs::fcntl_setfl(&wr, rustix::fs::OFlags::NONBLOCK).expect("nonblock");
    let mut filled = 0usize;
    loop {
        match rustix::io::write(&wr, &[b'#'; 4096]) {
            Ok(n) => filled += n,
            Err(e) if e == rustix::io::Errno::AGAIN => break,
            Err(e) => panic!("fill the pipe: {e}"),
        }
    }
    rustix::fs::fcntl_setfl(&wr, rustix::fs::OFlags::empty()).expect("blocking");
    let child_out: OwnedFd = wr.as_fd().try_clone_to_owned().expect("dup");
    drop(wr);
    let mut child = spawn(&d, &d.stdin_of(&desc), Stdio::from(child_out), None);
    let mut err = child.stderr.take().expect("stderr");
    let err_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    // The upload went through serve (the transfer is imported) while the
    // collect cannot write its answer.
    let imported = until(
        "the transfer is imported",
        || {
            let q = d.agent_cmd(&d.addr, &["qualify", "--change", &id], b"");
            q.code == 0 && q.json()["next"]["operation"] == "collector_finalize"
        },
        || false,
    );
    assert!(imported);
    assert!(
        !exited(&mut child),
        "the collect ended with its stdout full"
    );
    heartbeats(&d, &others, &mut round);
    let mut all = Vec::new();
    std::fs::File::from(rd)
        .read_to_end(&mut all)
        .expect("read stdout");
    let status = child.wait().expect("wait");
    let err = err_reader.join().expect("stderr");
    assert!(all.len() > filled && all[..filled].iter().all(|&b| b == b'#'));
    finished(&all[filled..], &err, status.code());
}

/// Two wrapper collects of one descriptor released together through sudo
/// (as the agent feeds one descriptor to two invocations): the command
/// runs once. Exactly one answer ran it (`resumed: false`, uploaded
/// through serve); the other is `execution_in_progress` (exit 75) or the
/// retained outcome (`in_progress` or `resumed`), never a second run.
#[test]
fn two_wrapper_collects_of_one_descriptor_run_the_command_once() {
    let Some(d) = deploy("the concurrent wrapper collect test", &Opts::default()) else {
        return;
    };
    let (id, _, desc) = d.agent_change_with("twice", SLOW_ADD);
    let stdin = d.stdin_of(&desc);
    let children: Vec<Child> = (0..2)
        .map(|_| spawn(&d, &stdin, Stdio::piped(), None))
        .collect();
    let mut ran = 0;
    for child in children {
        let out = child.wait_with_output().expect("wait");
        let text = String::from_utf8_lossy(&out.stdout);
        match out.status.code() {
            Some(0) => {
                let v: Value =
                    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"));
                assert_eq!(v["outcome"], "passed", "{v}");
                if v["resumed"] == false && v["in_progress"].is_null() {
                    assert!(v["upload"].is_object(), "{v}");
                    ran += 1;
                }
            }
            Some(75) => {
                let e: Value = serde_json::from_slice(&out.stderr)
                    .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
                assert_eq!(e["error"], "execution_in_progress", "{e}");
            }
            other => panic!(
                "unexpected exit {other:?}: {text} {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }
    assert_eq!(ran, 1, "the command must run exactly once");
    let q = d
        .agent_cmd(&d.addr, &["qualify", "--change", &id], b"")
        .json();
    assert_eq!(q["next"]["operation"], "collector_finalize", "{q}");
}
