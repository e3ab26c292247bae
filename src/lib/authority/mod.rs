//! The native authority: repositories, revisions, changes, requirements,
//! enrollment, receipts, qualification and landing (`authority.sqlite`).

pub mod schema;
