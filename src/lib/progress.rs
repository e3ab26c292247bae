//! Progress on stderr for a person at a terminal: files hashed and blobs
//! sent by a checkpoint, the phases of a collect, records of a bulk ingest.
//!
//! Off unless a command turns it on ([`enable_at_terminal`]) and stderr is
//! a terminal: a pipe, a log file, `serve` and the hooks never see a byte
//! of it, and every call below is one relaxed atomic load when it is off.
//! The library reports through the one bar a command started ([`Bar`]);
//! nothing is drawn except inside those calls (no ticking thread), so a
//! caller that reports only between its locks writes nothing while it
//! holds one: a stalled reader of stderr (an agent's pipe, under the
//! privilege-separated collect) can then stall only the command itself.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);
static ACTIVE: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);

/// Turns progress on for this process when stderr is a terminal that can
/// redraw a line (not `TERM=dumb`). A command a person runs calls it;
/// `serve` and the hooks never do.
pub fn enable_at_terminal() {
    use std::io::IsTerminal;
    let dumb = crate::env::var_os("TERM").is_some_and(|t| t == "dumb");
    if std::io::stderr().is_terminal() && !dumb {
        ENABLED.store(true, Ordering::Relaxed);
    }
}

fn active() -> Option<indicatif::ProgressBar> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    ACTIVE.lock().ok().and_then(|g| g.clone())
}

/// The bar of one command's work: shown while it lives, cleared when it
/// is dropped (declare it before any lock guard, so that it is cleared
/// after the lock is released). A no-op when progress is off.
#[must_use = "the bar is cleared when dropped"]
pub struct Bar {
    shown: bool,
}

impl Bar {
    /// Starts the bar: `what` names the work (`checkpoint`, `collect`).
    pub fn start(what: &'static str) -> Bar {
        if !ENABLED.load(Ordering::Relaxed) {
            return Bar { shown: false };
        }
        // Styled before it can draw: the default style would show first.
        let bar = indicatif::ProgressBar::hidden();
        bar.set_style(style(false));
        bar.set_prefix(what);
        bar.set_message("starting");
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(10));
        if let Ok(mut g) = ACTIVE.lock() {
            *g = Some(bar);
        }
        Bar { shown: true }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if !self.shown {
            return;
        }
        if let Ok(mut g) = ACTIVE.lock()
            && let Some(b) = g.take()
        {
            b.finish_and_clear();
        }
    }
}

const COUNTED: &str = "{prefix}: {msg} {pos}/{len} ({elapsed})";
const PLAIN: &str = "{prefix}: {msg} ({elapsed})";

fn style(counted: bool) -> indicatif::ProgressStyle {
    let template = if counted { COUNTED } else { PLAIN };
    // The templates are constants; a rejected one falls back to the default.
    indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
}

/// A new phase of the running bar's work (`hashing files`, `running the
/// test`), counted when `total` is given, else a message with the time.
pub fn phase(msg: &'static str, total: Option<u64>) {
    if let Some(b) = active() {
        match total {
            Some(n) => {
                b.set_style(style(true));
                b.set_length(n);
                b.set_position(0);
            }
            None => {
                b.set_style(style(false));
                b.unset_length();
            }
        }
        b.set_message(msg);
    }
}

/// Whether progress is drawn (on, and a command's bar is showing).
pub fn is_shown() -> bool {
    active().is_some()
}

/// The running bar's message, changed in place (a count the caller
/// formats, such as lines committed so far).
pub fn message(msg: String) {
    if let Some(b) = active() {
        b.set_message(msg);
    }
}

/// `n` more items of the current counted phase.
pub fn inc(n: u64) {
    if let Some(b) = active() {
        b.inc(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_it_draws_nothing_and_keeps_no_bar() {
        // The test harness never enables it: every call is a no-op.
        let bar = Bar::start("checkpoint");
        phase("hashing files", Some(3));
        inc(1);
        assert!(active().is_none());
        drop(bar);
        assert!(ACTIVE.lock().map(|g| g.is_none()).unwrap_or(false));
    }

    #[test]
    fn the_templates_parse() {
        for t in [COUNTED, PLAIN] {
            assert!(indicatif::ProgressStyle::with_template(t).is_ok(), "{t}");
        }
    }
}
