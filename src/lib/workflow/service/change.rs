//! Changes as the faces see them, through the door: the selector every
//! Change operation takes, the checkpoint options, and the authority's
//! reads of a Change, its current subject, its landing and its
//! workspace's stat cache (all the authority's own, named here so that
//! no face names `workflow::authority`).

pub use crate::workflow::authority::change::{
    Change, ChangeSel, ENDPOINT_WORKSPACE_PREFIX, IdKind, Landed, MAX_LISTED_CHANGES, StatCache,
    StoredSubject, change, current_subject, landed, load_stat_cache,
};
pub use crate::workflow::authority::checkpoint::{CheckpointOptions, CheckpointOutput};
