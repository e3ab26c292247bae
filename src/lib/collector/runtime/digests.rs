//! The runtime program's digest, remembered by a collector between
//! collections while the file is provably the one that was hashed.
//!
//! `collect` observes its runtime's identity on every collection, and the
//! identity includes the SHA-256 of the runtime's program. For podman
//! that is a 33 MB file: about 20 ms of CPU, on the critical path while
//! the engine's own queries run on the same cores. A collector directory
//! keeps `runtime-digests.json` (owner-private, written only by the
//! collector's owner): the digest of each program it hashed, with the
//! file's device, inode, mode, size, mtime and ctime. An entry answers
//! only when all six still match the file at the program's path. A file
//! cannot be written, truncated, replaced, renamed over, chmodded or
//! re-timestamped without its ctime moving to the current time, and
//! nobody but root can set a ctime. An entry is kept only for a file
//! whose stat was the same before and after the hash and whose ctime is
//! racy-clean against the moment the hash began (the rule of the
//! workspace stat cache, [`racy_clean`]: a change within the timestamp
//! granularity of the hash could otherwise leave the same ctime).
//! Anything else (no collector directory, no entry, an unreadable or
//! undecodable cache) hashes the file again, as before.

use super::*;
use crate::clock::racy_clean;
use crate::store::private_fs;
use std::os::unix::fs::MetadataExt;
use std::time::SystemTime;

/// The cache file in a collector directory.
pub const DIGESTS_FILE: &str = "runtime-digests.json";

/// At most this many programs are remembered (the newest win).
const MAX_ENTRIES: usize = 16;

/// Longest cache file read.
const MAX_BYTES: u64 = 64 * 1024;

/// What identifies the file a digest was taken of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileStat {
    dev: u64,
    ino: u64,
    mode: u32,
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
}

impl FileStat {
    fn of(md: &std::fs::Metadata) -> FileStat {
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        FileStat {
            dev: md.dev(),
            ino: md.ino(),
            mode: md.mode(),
            size: md.size(),
            mtime_ns: ns(md.mtime(), md.mtime_nsec()),
            ctime_ns: ns(md.ctime(), md.ctime_nsec()),
        }
    }

    /// Whether the file cannot have changed after `began` without its
    /// ctime moving ([`racy_clean`]).
    fn settled_before(&self, began: SystemTime) -> bool {
        let Ok(since) = began.duration_since(SystemTime::UNIX_EPOCH) else {
            return false;
        };
        racy_clean(
            self.ctime_ns,
            i64::try_from(since.as_nanos()).unwrap_or(i64::MAX),
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    program: String,
    stat: FileStat,
    sha256: Sha256Hex,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Digests {
    version: u32,
    entries: Vec<Entry>,
}

fn load(path: &Path) -> Option<Digests> {
    let f = private_fs::open_private_read(path).ok()??;
    let mut bytes = Vec::new();
    f.take(MAX_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_BYTES {
        return None;
    }
    let d: Digests = serde_json::from_slice(&bytes).ok()?;
    (d.version == 1 && d.entries.len() <= MAX_ENTRIES).then_some(d)
}

/// The program's SHA-256: remembered in `collector_dir` (see the module),
/// or taken now ([`program_digest`]).
pub fn program_digest_in(program: &Path, collector_dir: Option<&Path>) -> Result<Sha256Hex> {
    digest_remembered(program, collector_dir, SystemTime::now)
}

/// [`program_digest_in`] with the clock that says when a hash began.
fn digest_remembered(
    program: &Path,
    collector_dir: Option<&Path>,
    clock: impl Fn() -> SystemTime,
) -> Result<Sha256Hex> {
    let (Some(dir), Some(name)) = (collector_dir, program.to_str()) else {
        return program_digest(program);
    };
    let cache = dir.join(DIGESTS_FILE);
    let mut known = load(&cache).unwrap_or_default();
    if let Ok(md) = std::fs::metadata(program) {
        let now = FileStat::of(&md);
        if let Some(e) = known
            .entries
            .iter()
            .find(|e| e.program == name && e.stat == now)
        {
            return Ok(e.sha256.clone());
        }
    }
    let began = clock();
    let (sha, hashed) = program_digest_stat(program)?;
    if let Some(stat) = hashed.filter(|s| s.settled_before(began)) {
        known.entries.retain(|e| e.program != name);
        known.entries.push(Entry {
            program: name.to_owned(),
            stat,
            sha256: sha.clone(),
        });
        let excess = known.entries.len().saturating_sub(MAX_ENTRIES);
        known.entries.drain(..excess);
        known.version = 1;
        // A cache: failing to keep it only means hashing again next time.
        if let Ok(bytes) = serde_json::to_vec(&known) {
            let _ = private_fs::replace_unsynced(&cache, &bytes);
        }
    }
    Ok(sha)
}

/// [`program_digest`] with the stat of the file hashed, when the file's
/// stat was the same before and after the hash and its path still names it.
fn program_digest_stat(program: &Path) -> Result<(Sha256Hex, Option<FileStat>)> {
    let mut f = std::fs::File::open(program).map_err(|e| Error::io("open", program, e))?;
    let stat = |f: &std::fs::File| f.metadata().ok().map(|md| FileStat::of(&md));
    let before = stat(&f);
    let sha = digest_reader(&mut f, program)?;
    let after = stat(&f);
    let at_path = std::fs::metadata(program).ok().map(|md| FileStat::of(&md));
    let same = before.is_some() && before == after && after == at_path;
    Ok((sha, if same { after } else { None }))
}

/// The SHA-256 of everything `r` yields, through one 256 KiB buffer.
pub(super) fn digest_reader(r: &mut dyn Read, what: &Path) -> Result<Sha256Hex> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(buf.get(..n).unwrap_or_default()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("read", what, e)),
        }
    }
    Ok(Sha256Hex::from_bytes(h.finalize().into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A program file whose timestamps lie `age` in the past.
    fn program(dir: &Path, name: &str, bytes: &[u8], age: Duration) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).expect("write");
        let t = SystemTime::now() - age;
        let f = std::fs::File::options().write(true).open(&p).expect("open");
        f.set_times(std::fs::FileTimes::new().set_accessed(t).set_modified(t))
            .expect("times");
        p
    }

    fn cdir(t: &Path) -> PathBuf {
        let d = t.join("c");
        std::fs::create_dir(&d).expect("mkdir");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        d
    }

    /// A temp dir with a collector directory `c` and a program `prog`
    /// ("one", its mtime an hour old, its ctime now).
    fn fixture() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().expect("tempdir");
        let c = cdir(t.path());
        let p = program(t.path(), "prog", b"one", Duration::from_secs(3600));
        (t, c, p)
    }

    fn write_cache(c: &Path, bytes: &[u8], mode: u32) {
        std::fs::write(c.join(DIGESTS_FILE), bytes).expect("write");
        std::fs::set_permissions(c.join(DIGESTS_FILE), std::fs::Permissions::from_mode(mode))
            .expect("chmod");
    }

    /// Writes `entries` as the collector's cache (0600).
    fn remember(c: &Path, entries: Vec<Entry>) {
        let d = Digests {
            version: 1,
            entries,
        };
        write_cache(c, &serde_json::to_vec(&d).expect("json"), 0o600);
    }

    fn entries(c: &Path) -> Vec<Entry> {
        load(&c.join(DIGESTS_FILE))
            .map(|d| d.entries)
            .unwrap_or_default()
    }

    #[test]
    fn a_just_written_program_is_hashed_every_time_and_never_remembered() {
        // Its ctime is now, whatever its mtime says.
        let (_t, c, p) = fixture();
        let d = program_digest_in(&p, Some(&c)).expect("digest");
        assert_eq!(d, Sha256Hex::digest(b"one"));
        assert!(entries(&c).is_empty());
    }

    #[test]
    fn a_remembered_digest_answers_only_while_the_file_stat_matches() {
        let (_t, c, p) = fixture();
        let md = std::fs::metadata(&p).expect("md");
        // Remember it as settled (its real ctime is too recent to be).
        let e = Entry {
            program: p.to_str().expect("utf-8").to_owned(),
            stat: FileStat::of(&md),
            sha256: Sha256Hex::digest(b"remembered"),
        };
        remember(&c, vec![e.clone()]);
        // The stat matches: the remembered digest answers.
        assert_eq!(
            program_digest_in(&p, Some(&c)).expect("hit"),
            Sha256Hex::digest(b"remembered")
        );
        // Without the collector directory the file is hashed.
        assert_eq!(
            program_digest_in(&p, None).expect("no cache"),
            Sha256Hex::digest(b"one")
        );
        // Rewritten with the same size and its old mtime put back: the
        // ctime moved, so the file is hashed again.
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(&p, b"two").expect("rewrite");
        let f = std::fs::File::options().write(true).open(&p).expect("open");
        f.set_times(std::fs::FileTimes::new().set_modified(md.modified().expect("mtime")))
            .expect("times");
        assert_eq!(
            program_digest_in(&p, Some(&c)).expect("miss"),
            Sha256Hex::digest(b"two")
        );
        // A chmod moves the ctime too.
        let mut e2 = e.clone();
        e2.stat = FileStat::of(&std::fs::metadata(&p).expect("md"));
        remember(&c, vec![e2]);
        std::thread::sleep(Duration::from_millis(20));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert_eq!(
            program_digest_in(&p, Some(&c)).expect("miss"),
            Sha256Hex::digest(b"two")
        );
    }

    #[test]
    fn a_settled_program_is_remembered_and_a_bad_cache_is_ignored() {
        let (t, c, p) = fixture();
        let md = std::fs::metadata(&p).expect("md");
        let stat = FileStat::of(&md);
        let began = SystemTime::now();
        // Its ctime is now: not settled; an hour later it is.
        assert!(!stat.settled_before(began));
        assert!(stat.settled_before(began + Duration::from_secs(3600)));
        assert!(!stat.settled_before(SystemTime::UNIX_EPOCH));
        // A cache that is not JSON, has unknown fields or another
        // version is ignored: the file is hashed.
        for text in [
            &b"not json"[..],
            &br#"{"version":1,"entries":[],"x":1}"#[..],
            &br#"{"version":2,"entries":[]}"#[..],
        ] {
            write_cache(&c, text, 0o600);
            assert_eq!(
                program_digest_in(&p, Some(&c)).expect("digest"),
                Sha256Hex::digest(b"one")
            );
        }
        // Hashed an hour from now, the file is settled: remembered, and
        // the next digest is the remembered one (the file untouched).
        std::fs::remove_file(c.join(DIGESTS_FILE)).expect("rm");
        let later = || SystemTime::now() + Duration::from_secs(3600);
        assert_eq!(
            digest_remembered(&p, Some(&c), later).expect("digest"),
            Sha256Hex::digest(b"one")
        );
        let kept = entries(&c);
        assert_eq!(kept.len(), 1);
        assert_eq!(
            kept[0].stat,
            FileStat::of(&std::fs::metadata(&p).expect("md"))
        );
        assert_eq!(kept[0].sha256, Sha256Hex::digest(b"one"));
        let mode = std::fs::metadata(c.join(DIGESTS_FILE))
            .expect("md")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // At most MAX_ENTRIES programs, the newest kept.
        for i in 0..MAX_ENTRIES + 3 {
            let q = program(t.path(), &format!("p{i}"), &[i as u8], Duration::ZERO);
            digest_remembered(&q, Some(&c), later).expect("digest");
        }
        let kept = entries(&c);
        assert_eq!(kept.len(), MAX_ENTRIES);
        assert!(kept.iter().all(|e| e.program != p.to_str().expect("utf-8")));
        assert!(
            kept.last()
                .is_some_and(|e| e.program.ends_with(&format!("p{}", MAX_ENTRIES + 2)))
        );
        // A cache others can read is ignored too.
        let good = Digests {
            version: 1,
            entries: vec![Entry {
                program: p.to_str().expect("utf-8").to_owned(),
                stat,
                sha256: Sha256Hex::digest(b"remembered"),
            }],
        };
        write_cache(&c, &serde_json::to_vec(&good).expect("json"), 0o644);
        assert_eq!(
            program_digest_in(&p, Some(&c)).expect("digest"),
            Sha256Hex::digest(b"one"),
            "a cache others can read is not trusted"
        );
    }
}
