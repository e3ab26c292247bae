//! Time. The library never reads the wall clock directly: it asks a [`Clock`].
//!
//! On the wire every instant is RFC 3339 UTC with an uppercase `T` and `Z`.
//! A clock override (the `AGENT_TASK_TEST_NOW` hook, [`crate::testhooks::now`])
//! exists only in builds made with the `test-hooks` feature: an agent that
//! could set the clock of a release binary could expire another agent's
//! lease.

use crate::error::{Code, Error, Result};
use jiff::Timestamp;

/// A source of the current instant.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The operating system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock pinned to one instant (library tests, and test builds).
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub Timestamp);

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        self.0
    }
}

/// Slack of the racy-clean rule for filesystems with sub-second
/// timestamps: file times come from the kernel's coarse clock, which lags
/// the wall clock by at most one tick (10 ms at the slowest `HZ`).
pub const RACY_MARGIN_NS: i64 = 100_000_000;
/// Slack when a change time has no sub-second part (a filesystem with
/// 1 s or 2 s timestamps).
pub const COARSE_RACY_MARGIN_NS: i64 = 2_100_000_000;

/// git's racy-clean rule, on the change time (which no user call can
/// set): a file whose change time is `ctime_ns` cannot have been written
/// after `since_ns` (a scan or a hash began then, wall-clock ns) without
/// its change time moving past it, when this holds. The margin covers
/// the coarse clock file times come from ([`RACY_MARGIN_NS`]), or a
/// filesystem without sub-second times ([`COARSE_RACY_MARGIN_NS`]).
pub fn racy_clean(ctime_ns: i64, since_ns: i64) -> bool {
    let margin = if ctime_ns % 1_000_000_000 == 0 {
        COARSE_RACY_MARGIN_NS
    } else {
        RACY_MARGIN_NS
    };
    ctime_ns < since_ns.saturating_sub(margin)
}

/// The clock a command runs with: the system clock, or in a test build the
/// instant named by the `AGENT_TASK_TEST_NOW` hook when it is set.
pub fn process_clock() -> Result<Box<dyn Clock>> {
    if let Some(s) = crate::testhooks::now()? {
        return Ok(Box::new(FixedClock(parse_rfc3339(&s)?)));
    }
    Ok(Box::new(SystemClock))
}

/// Formats an instant as RFC 3339 UTC with millisecond precision
/// (`2026-12-01T01:14:53.123Z`), the shape of JavaScript's `toISOString()`.
pub fn rfc3339_millis(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Formats an instant as RFC 3339 UTC with whole seconds (`2026-12-01T01:14:53Z`).
pub fn rfc3339_seconds(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Parses an RFC 3339 instant. Only UTC with an uppercase `T` and `Z` is
/// accepted, as the wire requires.
pub fn parse_rfc3339(s: &str) -> Result<Timestamp> {
    let bad = || {
        Error::new(
            Code::InvalidInput,
            "timestamp must be RFC 3339 UTC like 2026-01-02T03:04:05Z",
        )
        .with("value", s.chars().take(64).collect::<String>())
    };
    if s.len() > 40 || !s.ends_with('Z') || s.as_bytes().get(10) != Some(&b'T') {
        return Err(bad());
    }
    s.parse::<Timestamp>().map_err(|_| bad())
}

/// Milliseconds since the Unix epoch.
pub fn unix_millis(t: Timestamp) -> i64 {
    t.as_millisecond()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses() {
        let t: Timestamp = "2026-12-01T01:14:53.5Z".parse().expect("valid");
        assert_eq!(rfc3339_millis(t), "2026-12-01T01:14:53.500Z");
        assert_eq!(rfc3339_seconds(t), "2026-12-01T01:14:53Z");
        assert_eq!(parse_rfc3339("2026-12-01T01:14:53.500Z").expect("ok"), t);
    }

    #[test]
    fn refuses_non_utc_and_lowercase() {
        for s in [
            "2026-12-01t01:14:53Z",
            "2026-12-01T01:14:53+01:00",
            "2026-12-01T01:14:53z",
            "",
            "x",
        ] {
            assert_eq!(
                parse_rfc3339(s).map_err(|e| e.code()).err(),
                Some(Code::InvalidInput),
                "{s}"
            );
        }
    }
}
