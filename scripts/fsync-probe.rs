//! The durability floor of one `collect`: the file and directory fsyncs
//! its durability rules require, and nothing else. Built and run by
//! `scripts/bench-collect.sh` and `scripts/bench-oci.sh` (docs/transfer.md,
//! "What collecting costs", lists the fsyncs this stands for).
//!
//! Usage: `fsync-probe DIR FILES DIRS` (DIRS >= FILES). In a fresh
//! directory under DIR (which must be on the data directory's file system)
//! it writes FILES small files the way a retained file is written (a
//! temp file written and fsynced, renamed to its name, the directory
//! fsynced), then makes DIRS - FILES directories, fsyncing the parent of
//! each (a new directory made durable). FILES file fsyncs and DIRS
//! directory fsyncs in all; the tree is removed before exiting.
#![allow(clippy::print_stderr)]

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::process::ExitCode;

/// Bytes of each file: about a sealed record or a WAL frame.
const FILE_BYTES: usize = 2048;

fn sync_dir(p: &Path) -> std::io::Result<()> {
    File::open(p)?.sync_all()
}

fn run(dir: &Path, files: usize, dirs: usize) -> Result<(), Box<dyn std::error::Error>> {
    if dirs < files {
        return Err(
            "DIRS must be at least FILES (each file write ends with a directory fsync)".into(),
        );
    }
    let name = format!(
        "fsync-probe-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos()
    );
    let root = dir.join(name);
    DirBuilder::new().mode(0o700).create(&root)?;
    let body = vec![b'x'; FILE_BYTES];
    let result = (|| -> std::io::Result<()> {
        for i in 0..files {
            let tmp = root.join(format!(".tmp-{i}"));
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(&body)?;
            f.sync_all()?;
            drop(f);
            std::fs::rename(&tmp, root.join(format!("f{i}")))?;
            sync_dir(&root)?;
        }
        for i in 0..dirs - files {
            DirBuilder::new()
                .mode(0o700)
                .create(root.join(format!("d{i}")))?;
            sync_dir(&root)?;
        }
        Ok(())
    })();
    std::fs::remove_dir_all(&root)?;
    Ok(result?)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [d, f, n] => f.parse().ok().zip(n.parse().ok()).map(|(f, n)| (d, f, n)),
        _ => None,
    };
    let Some((dir, files, dirs)) = parsed else {
        eprintln!("usage: fsync-probe DIR FILES DIRS");
        return ExitCode::from(64);
    };
    match run(Path::new(dir), files, dirs) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fsync-probe: {e}");
            ExitCode::from(70)
        }
    }
}
