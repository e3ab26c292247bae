//! Workspace scans as the faces see them, through the door: the tree
//! walk and the read-only check the stop hook runs, the client scan of
//! the workspace endpoint and its stat cache rows (packed as a local
//! checkpoint packs them), and the revision size
//! bound (all `workflow::authority::snapshot`'s, named here so that no
//! face names `workflow::authority`).

pub use crate::workflow::authority::snapshot::{
    CacheRow, CacheState, DEFAULT_MAX_REVISION_BYTES, Entry, MODE_LINK, StatCache, check_readonly,
    check_walked, encode_cache, scan_client, walk_tree,
};
