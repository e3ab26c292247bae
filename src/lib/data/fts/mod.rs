//! The one home of a record's FTS row: everything that writes or reads
//! `record_fts` and its token counts (outside the schema's DDL and
//! migrations, `data::schema`).
//!
//! - `row`: the document a record's row holds ([`index_document`]), and
//!   the row's statements: insert, token counts into `record_doclen`,
//!   delete on a tombstone, whether a row is indexed, a row's token count,
//!   whether a row matches;
//! - `rank`: ranking: whether a ranked page can be known from row lengths
//!   ([`plan`]), the statistics it reads, and FTS5's own `bm25()` page
//!   ([`fts5_page`]);
//! - `bm25`: FTS5's on-disk integers and its bm25 arithmetic, checked
//!   against FTS5 itself.
//!
//! `data::writer` calls the row's writes inside its unit of work;
//! `data::node::query` calls the reads inside its read snapshot.

mod bm25;
mod rank;
mod row;

pub use bm25::{
    ascii_single_token, averages, avgdl, bm25_score, docsize, docsize_tokens, idf, varint, varints,
};
pub(crate) use rank::{forget_vocab, fts5_page, plan};
pub use row::index_document;
pub(crate) use row::{
    delete, document_of, insert, insert_doclen, insert_doclen_range, is_indexed, matches,
    rebuild_doclen, tokens,
};
