//! Exact reads: the envelope and its bytes, verified wherever they live.

use super::super::key::{self, Key, record_key};
use super::super::syntax::{check_record_id, is_textual};
use super::{Node, parse_json};
use crate::error::{Code, Error, Result};
use crate::store::{OptionalExtension, params};
use crate::wire::digest::Sha256Hex;
use serde_json::{Map, Value};

/// An exact read: the envelope and its verified bytes.
#[derive(Debug)]
pub struct RecordRead {
    /// The stored envelope.
    pub record: Value,
    /// The verified bytes.
    pub bytes: Vec<u8>,
    /// Normalised media type.
    pub media_type: String,
}

impl RecordRead {
    /// The wire form `{record, content:{encoding, data}}`. Textual content
    /// that is valid UTF-8 is returned as `utf8` byte for byte (a leading BOM
    /// is kept), anything else as padded standard base64.
    pub fn to_wire(&self) -> Value {
        let content = match std::str::from_utf8(&self.bytes) {
            Ok(s) if is_textual(&self.media_type) => Content {
                data: s.to_owned(),
                encoding: "utf8",
            },
            _ => Content {
                data: data_encoding::BASE64.encode(&self.bytes),
                encoding: "base64",
            },
        };
        let mut m = Map::new();
        m.insert("content".into(), content.into());
        m.insert("record".into(), self.record.clone());
        Value::Object(m)
    }
}

/// A read's `content` member: the bytes as UTF-8 text or base64.
struct Content {
    data: String,
    encoding: &'static str,
}

impl From<Content> for Value {
    fn from(c: Content) -> Value {
        let mut m = Map::new();
        m.insert("data".into(), c.data.into());
        m.insert("encoding".into(), c.encoding.into());
        Value::Object(m)
    }
}

impl Node {
    /// Exact read: the envelope and its bytes, verified against the
    /// envelope's size and SHA-256 before anything is returned.
    pub fn read_record(&self, record_id: &str) -> Result<RecordRead> {
        check_record_id(record_id)?;
        type Row = (String, Vec<u8>, i64, bool, Option<Vec<u8>>);
        let row: Option<Row> = match record_key(record_id) {
            None => None,
            Some(key) => self.read(|c| {
                let found: Option<(String, Vec<u8>, i64, bool)> = c
                    .prepare_cached(
                        "SELECT r.envelope_json, r.content_sha256, r.content_size, \
                         EXISTS(SELECT 1 FROM tombstones t WHERE t.rid = r.rid) \
                         FROM records r WHERE r.kp = ?1 AND r.key = ?2",
                    )?
                    .query_row(params![key::prefix(&key), &key[..]], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                    })
                    .optional()?;
                let Some((env, sha, size, tombstoned)) = found else {
                    return Ok(None);
                };
                // The inline content by the digest's prefix and bytes (data
                // schema 6), in a second statement: the record's row holds
                // no prefix of its content. It committed with its inline
                // content, which is never deleted, so this later read
                // finds it.
                let inline = match Key::try_from(&sha[..]) {
                    Ok(d) => super::super::writer::inline_content(c, &d)?,
                    Err(_) => None,
                };
                Ok(Some((env, sha, size, tombstoned, inline)))
            })?,
        };
        let Some((env, sha, size, tombstoned, inline)) = row else {
            return Err(Error::new(
                Code::RecordNotFound,
                format!("Record {record_id} was not found"),
            ));
        };
        if tombstoned {
            return Err(Error::new(
                Code::RecordTombstoned,
                format!("Record {record_id} has been tombstoned"),
            ));
        }
        let record = parse_json(&env)?;
        let digest = key::digest(&sha).ok_or_else(|| {
            Error::new(
                Code::RecordIntegrityError,
                "stored content digest is malformed",
            )
        })?;
        let size = u64::try_from(size).map_err(|_| {
            Error::new(
                Code::RecordIntegrityError,
                "stored content size is negative",
            )
        })?;
        let bytes = match inline {
            Some(b) if Sha256Hex::digest(&b) == digest => b,
            Some(_) => {
                return Err(Error::new(
                    Code::BlobIntegrityError,
                    format!("The blob of record {record_id} does not match its reference"),
                ));
            }
            // Only content stored outside the row consults the blob store
            // (and its configuration file).
            None => self.blob_of(record_id, &digest, size)?,
        };
        let env_sha = record.pointer("/content/sha256").and_then(Value::as_str);
        let env_size = record.pointer("/content/size").and_then(Value::as_u64);
        if bytes.len() as u64 != size
            || env_size != Some(size)
            || env_sha != Some(digest.as_str())
            || Sha256Hex::digest(&bytes) != digest
        {
            return Err(Error::new(
                Code::RecordIntegrityError,
                format!("The bytes of record {record_id} do not match its envelope"),
            ));
        }
        let media_type = record
            .pointer("/content/media_type")
            .and_then(Value::as_str)
            .unwrap_or("application/octet-stream")
            .to_owned();
        Ok(RecordRead {
            record,
            bytes,
            media_type,
        })
    }

    /// The bytes of a record whose content is not inline, from the blob
    /// store: a missing object is `blob_not_found`, other bytes
    /// `blob_integrity_error`.
    fn blob_of(&self, record_id: &str, digest: &Sha256Hex, size: u64) -> Result<Vec<u8>> {
        let cas = self.dir.blobs()?;
        let not_found = || {
            Error::new(
                Code::BlobNotFound,
                format!("The blob of record {record_id} was not found"),
            )
        };
        if size <= super::super::schema::INLINE_MAX_BYTES as u64 && !cas.exists(digest, None)? {
            return Err(not_found());
        }
        match cas.get(digest, None, self.limits.max_record_bytes.max(size)) {
            Ok(b) => Ok(b),
            Err(e) if e.code() == Code::IntegrityError && !cas.exists(digest, None)? => {
                Err(not_found())
            }
            Err(e) if e.code() == Code::IntegrityError => Err(Error::new(
                Code::BlobIntegrityError,
                format!("The blob of record {record_id} does not match its reference"),
            )),
            Err(e) => Err(e),
        }
    }
}
