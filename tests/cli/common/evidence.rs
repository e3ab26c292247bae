//! Rewriting an installed collector profile with its stored digest kept
//! consistent. Moved from `evidence.rs`, whose tests and others share it.

use crate::common::collect_flow::Loop;

/// Rewrites the installed profile with `f`, keeping its stored digest
/// consistent (only what `f` changes is wrong).
pub fn rewrite_profile(
    l: &Loop,
    f: impl Fn(&mut agent_task::collector::transfer::CollectorProfile),
) {
    let conn = rusqlite::Connection::open(l.env.data_dir.join("authority.sqlite")).expect("open");
    let (id, bytes): (String, Vec<u8>) = conn
        .query_row(
            "SELECT profile_id, profile_json FROM collector_profiles",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("profile");
    let mut p: agent_task::collector::transfer::CollectorProfile =
        serde_json::from_slice(&bytes).expect("profile");
    f(&mut p);
    conn.execute(
        "UPDATE collector_profiles SET profile_json = ?2, profile_digest = ?3 WHERE profile_id = ?1",
        rusqlite::params![id, serde_json::to_vec(&p).expect("json"), p.digest().expect("d").as_str()],
    )
    .expect("update");
}
