//! The local authority a collection runs for: the workflow service's side
//! of `collector::collect::{Authority, Uploader}`.

use crate::clock::Clock;
use crate::collector::collect::{Authority, Uploader};
use crate::collector::transfer::CollectorDescriptor;
use crate::error::Result;
use crate::workflow::authority::collector;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// Rechecks and uploads against the authority of a local data directory.
pub struct LocalUpload<'a> {
    /// Data directory.
    pub root: &'a Path,
    /// Lock wait.
    pub timeout: Duration,
    /// Clock.
    pub clock: &'a dyn Clock,
    /// Token text.
    pub token: &'a str,
}

impl Uploader for LocalUpload<'_> {
    fn upload(&self, bytes: &[u8]) -> Result<Value> {
        let cx = super::ops::AgentCtx {
            root: self.root,
            timeout: self.timeout,
            clock: self.clock,
            token: self.token,
            writer: None,
        };
        collector::import(&cx, bytes)
    }
}

impl Authority for LocalUpload<'_> {
    fn recheck_descriptor(&self, d: &CollectorDescriptor) -> Result<()> {
        collector::recheck_descriptor(self.root, self.clock, self.token, d)
    }
}
