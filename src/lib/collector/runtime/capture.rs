//! Output capture: each stream hashed in full up to its cap with a bounded
//! tail kept, and the process group stopped when a cap is passed.

use super::*;

pub(super) struct Drain {
    hasher: Sha256,
    bytes: u64,
    tail: Vec<u8>,
    capped: bool,
}

pub(super) fn drain(mut r: impl Read, cap: u64, tail_bytes: usize, stop: Arc<AtomicBool>) -> Drain {
    let mut d = Drain {
        hasher: Sha256::new(),
        bytes: 0,
        tail: Vec::new(),
        capped: false,
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if d.capped {
            continue; // keep draining so the child is never blocked on a full pipe
        }
        let take = (cap - d.bytes).min(n as u64) as usize;
        d.hasher.update(&buf[..take]);
        d.bytes += take as u64;
        d.tail.extend_from_slice(&buf[..take]);
        if d.tail.len() > tail_bytes {
            let cut = d.tail.len() - tail_bytes;
            d.tail.drain(..cut);
        }
        if take < n {
            d.capped = true;
            stop.store(true, Ordering::SeqCst);
        }
    }
    d
}

impl Drain {
    pub(super) fn summary(self) -> StreamSummary {
        StreamSummary {
            bytes: self.bytes,
            sha256: Sha256Hex::from_bytes(self.hasher.finalize().into()),
            tail: String::from_utf8_lossy(&self.tail).into_owned(),
            capped: self.capped,
        }
    }
}

pub(super) fn kill_group(pgid: u32, signal: i32) -> bool {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on a negative pid signals a process group; no memory is touched.
    let rc = unsafe { libc::kill(-pgid, signal) };
    rc == 0
}
