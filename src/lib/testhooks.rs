//! The test hooks: every `AGENT_TASK_TEST_*` environment variable the
//! library consults is read here and nowhere else, one function per hook.
//!
//! Only a build made with the `test-hooks` feature reads them. Without the
//! feature every hook below is compiled to "off": its body is a constant
//! (`None`, `false`, `0`, nothing), no environment variable is read and no
//! hook's name is in the binary. An agent can set any variable of its own
//! process, so a hook that worked in a release binary would let it move the
//! clock (and expire another agent's lease), skip a check or crash the
//! collector at a chosen step; `tests/release_build.rs` runs the binary
//! built without the feature with every variable named in this file set and
//! shows that none has an effect.
//!
//! The hooks (the variable, what a `test-hooks` build does with it):
//!
//! - `AGENT_TASK_TEST_NOW` ([`now`]): the process clock reports this
//!   RFC 3339 UTC instant instead of the system time.
//! - `AGENT_TASK_TEST_CRASH_AT` ([`crash_point`]): the process SIGKILLs
//!   itself at the named step (`after_reserve`, `land_after_ref`, ...).
//! - `AGENT_TASK_TEST_RUN_LOG` ([`run_log`]): the collector appends a line
//!   to this file per recipe run or review call.
//! - `AGENT_TASK_TEST_WRITER_GATHER` ([`writer_gather`]): `serve`'s store
//!   writer holds its first batch until this many mutations arrived.
//! - `AGENT_TASK_TEST_SYNC_PAUSE_PAGE` and `AGENT_TASK_TEST_SYNC_PAUSE_FILE`
//!   ([`sync_pause_after_import`]): a pull announces page N's import in the
//!   file and waits to be killed before writing its checkpoint.
//! - `AGENT_TASK_TEST_SKIP_CHECKOUT_CHECK` ([`skip_checkout_check`]):
//!   checkpoint and land skip the checkout check.
//! - `AGENT_TASK_TEST_LAND_TAMPER_TREE` ([`land_tamper_tree`]): land leaves
//!   the first manifest entry out of the index.
//! - `AGENT_TASK_TEST_IMPORT_PAUSE_FIFO` ([`import_pause_after_prevalidate`]):
//!   an import pauses on this FIFO between prevalidation and its unit of
//!   work.
//! - `AGENT_TASK_TEST_UPLOAD_PAUSE_FIFO` ([`upload_pause`]): a checkpoint
//!   pauses on this FIFO before it stores its snapshot (before the lock).
//! - `AGENT_TASK_TEST_DATA_WRITE_PANIC` ([`data_write_panics`]): a data
//!   collect of a record with exactly these bytes panics inside the writer.
//! - `AGENT_TASK_TEST_FORGE_TIMEOUT_MS` ([`forge_timeout_ms`]): the
//!   deadline of one forge API request, instead of 30 s (a slow forge in a
//!   test).
//! - `AGENT_TASK_TEST_LAUNCH_NOFILE` ([`launch_nofile`]): the open-files
//!   limit a bwrap run's process sets itself (instead of the pinned one),
//!   so that the kernel refuses it after the fork.
//!
//! A new hook is one more function here, in the same shape (the name in a
//! string literal inside its `#[cfg(feature = "test-hooks")]` body, a doc
//! line, an entry in the list above). The release-build test takes the
//! list of variables from this file's text, and a unit test below refuses
//! an `"AGENT_TASK_TEST_` literal anywhere else in `src/`.

#[cfg(feature = "test-hooks")]
use crate::env::{var, var_os};
use crate::error::Result;

/// `AGENT_TASK_TEST_NOW`: the instant (RFC 3339 UTC text, which the clock
/// parses) the process clock reports instead of the system time. An error
/// when it is set but not UTF-8.
pub fn now() -> Result<Option<String>> {
    #[cfg(feature = "test-hooks")]
    if let Some(v) = var_os("AGENT_TASK_TEST_NOW") {
        use crate::error::{Code, Error};
        let s = v
            .into_string()
            .map_err(|_| Error::new(Code::Config, "AGENT_TASK_TEST_NOW is not valid UTF-8"))?;
        return Ok(Some(s));
    }
    Ok(None)
}

/// `AGENT_TASK_TEST_CRASH_AT`: when it names `step`, the process SIGKILLs
/// itself here (the crash suites' injection points).
pub fn crash_point(step: &str) {
    #[cfg(feature = "test-hooks")]
    if var("AGENT_TASK_TEST_CRASH_AT").is_some_and(|v| v == step) {
        #[allow(unsafe_code)]
        // SAFETY: kill(2) on our own pid; no memory is touched.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
    #[cfg(not(feature = "test-hooks"))]
    let _ = step;
}

/// `AGENT_TASK_TEST_RUN_LOG`: when it names a file, appends `line` to it.
/// The collector calls it outside any sandbox as it starts a recipe
/// (`run <execution operation>`) or dispatches a review call
/// (`review-call <ticket>`): nothing inside the sandbox can write outside
/// it, so this is how the crash and race suites count executions.
pub fn run_log(line: &str) {
    #[cfg(feature = "test-hooks")]
    if let Some(p) = var_os("AGENT_TASK_TEST_RUN_LOG") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
        {
            let _ = writeln!(f, "{line}");
        }
    }
    #[cfg(not(feature = "test-hooks"))]
    let _ = line;
}

/// `AGENT_TASK_TEST_WRITER_GATHER`: how many mutations `serve`'s store
/// writer waits for (at most 60 s) before its first batch, so that a test
/// knows they share one batch (`store::WriterConfig::gather_first`). 0:
/// never wait.
pub fn writer_gather() -> usize {
    #[cfg(feature = "test-hooks")]
    if let Some(n) = var("AGENT_TASK_TEST_WRITER_GATHER").and_then(|v| v.parse().ok()) {
        return n;
    }
    0
}

/// `AGENT_TASK_TEST_SYNC_PAUSE_PAGE` and `AGENT_TASK_TEST_SYNC_PAUSE_FILE`:
/// after a pull imported page `pages` (when it is the page named) and
/// before its checkpoint is written, writes `paused` into the file and
/// waits (60 s) to be killed, so a test can SIGKILL exactly between the
/// two.
pub fn sync_pause_after_import(pages: u64) {
    #[cfg(feature = "test-hooks")]
    {
        let (Some(n), Some(path)) = (
            var_os("AGENT_TASK_TEST_SYNC_PAUSE_PAGE"),
            var_os("AGENT_TASK_TEST_SYNC_PAUSE_FILE"),
        ) else {
            return;
        };
        if n.to_str().and_then(|s| s.parse::<u64>().ok()) == Some(pages) {
            let _ = std::fs::write(&path, b"paused");
            std::thread::sleep(std::time::Duration::from_secs(60));
        }
    }
    #[cfg(not(feature = "test-hooks"))]
    let _ = pages;
}

/// `AGENT_TASK_TEST_SKIP_CHECKOUT_CHECK` (set to anything): checkpoint and
/// land skip the checkout check, so that a landed commit whose checkout
/// differs can be made and `verify` (which never skips it) tested on it.
pub fn skip_checkout_check() -> bool {
    #[cfg(feature = "test-hooks")]
    if var_os("AGENT_TASK_TEST_SKIP_CHECKOUT_CHECK").is_some() {
        return true;
    }
    false
}

/// `AGENT_TASK_TEST_LAND_TAMPER_TREE` (set to anything): land leaves the
/// first manifest entry out of the index, as git does with a path it
/// refuses, so that the tree check's refusal can be tested.
pub fn land_tamper_tree() -> bool {
    #[cfg(feature = "test-hooks")]
    if var_os("AGENT_TASK_TEST_LAND_TAMPER_TREE").is_some() {
        return true;
    }
    false
}

/// `AGENT_TASK_TEST_IMPORT_PAUSE_FIFO`: when it names a FIFO, an import
/// that passed prevalidation writes `prevalidated` into it and then waits
/// until the test writes into it (and closes it), so a test can change the
/// authority exactly between prevalidation and the unit of work. Blocking
/// opens, no polling.
pub fn import_pause_after_prevalidate() {
    #[cfg(feature = "test-hooks")]
    {
        use std::io::{Read, Write};
        let Some(path) = var_os("AGENT_TASK_TEST_IMPORT_PAUSE_FIFO") else {
            return;
        };
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) {
            let _ = f.write_all(b"prevalidated\n");
        }
        if let Ok(mut f) = std::fs::File::open(&path) {
            let _ = f.read_to_end(&mut Vec::new());
        }
    }
}

/// `AGENT_TASK_TEST_UPLOAD_PAUSE_FIFO`: when it names a FIFO, a
/// checkpoint about to store its snapshot's blobs (before it takes the
/// data-directory lock) writes `uploading` into it and then waits until
/// the test writes into it (and closes it), so a test can show that
/// another command takes the lock meanwhile.
pub fn upload_pause() {
    #[cfg(feature = "test-hooks")]
    {
        use std::io::{Read, Write};
        let Some(path) = var_os("AGENT_TASK_TEST_UPLOAD_PAUSE_FIFO") else {
            return;
        };
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) {
            let _ = f.write_all(b"uploading\n");
        }
        if let Ok(mut f) = std::fs::File::open(&path) {
            let _ = f.read_to_end(&mut Vec::new());
        }
    }
}

/// `AGENT_TASK_TEST_DATA_WRITE_PANIC`: a data collect of a record whose
/// bytes equal this value panics inside the writer (what a bug in a write
/// would do), to show that it fails its batch alone.
pub fn data_write_panics(record: &[u8]) -> bool {
    #[cfg(feature = "test-hooks")]
    if let Some(v) = var_os("AGENT_TASK_TEST_DATA_WRITE_PANIC") {
        return v.as_encoded_bytes() == record;
    }
    let _ = record;
    false
}

/// `AGENT_TASK_TEST_FORGE_TIMEOUT_MS`: the deadline of one forge API
/// request in milliseconds (`crate::forge::api_agent`), so that a test's
/// slow forge times out quickly. `None`: the default.
pub fn forge_timeout_ms() -> Option<u64> {
    #[cfg(feature = "test-hooks")]
    if let Some(n) = var("AGENT_TASK_TEST_FORGE_TIMEOUT_MS").and_then(|v| v.parse().ok()) {
        return Some(n);
    }
    None
}

/// `AGENT_TASK_TEST_LAUNCH_NOFILE`: the open-files limit the process of
/// a bwrap run sets itself between fork and exec (`collector::sandbox`),
/// instead of the pinned one, so that a test can have the kernel refuse
/// a step no check before the fork knows about (a value over
/// `fs.nr_open`). `None`: the pinned value.
pub fn launch_nofile() -> Option<u64> {
    #[cfg(feature = "test-hooks")]
    if let Some(n) = var("AGENT_TASK_TEST_LAUNCH_NOFILE").and_then(|v| v.parse().ok()) {
        return Some(n);
    }
    None
}

#[cfg(test)]
mod tests {
    /// Every `.rs` file under `dir`.
    fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// The hook names this module's text mentions.
    fn names(text: &str) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        let mut rest = text;
        while let Some(i) = rest.find("AGENT_TASK_TEST_") {
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(tail.len());
            if end > "AGENT_TASK_TEST_".len() {
                out.insert(tail[..end].to_owned());
            }
            rest = &tail[end..];
        }
        out
    }

    #[test]
    fn every_hook_is_read_here_alone() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        let mine = root.join("lib/testhooks.rs");
        let mut stray = Vec::new();
        for f in files.iter().filter(|f| **f != mine) {
            let text = std::fs::read_to_string(f).expect("read");
            for (n, line) in text.lines().enumerate() {
                if line.contains("\"AGENT_TASK_TEST_") {
                    stray.push(format!("{}:{}", f.display(), n + 1));
                }
            }
        }
        assert!(
            stray.is_empty(),
            "AGENT_TASK_TEST_* is read only in src/lib/testhooks.rs: {stray:?}"
        );
    }

    #[test]
    fn every_hook_read_is_listed_in_the_module_doc() {
        let text = include_str!("testhooks.rs");
        let (doc, code): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| l.starts_with("//!"));
        let code = code.join("\n");
        // The literals the code reads (this test's own text excluded).
        let code = code.split("#[cfg(test)]").next().expect("code");
        let read: std::collections::BTreeSet<String> = code
            .lines()
            .filter(|l| l.contains("(\"AGENT_TASK_TEST_"))
            .flat_map(names)
            .collect();
        assert!(read.len() >= 9, "{read:?}");
        assert_eq!(read, names(&doc.join("\n")));
    }
}
