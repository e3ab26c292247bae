//! Answers of an S3 server, which the blob store decodes from a server it
//! does not trust: an error body's `<Code>` and a `ListObjectsV2` page.
//! A code is only ever short ASCII; a page decodes to names under the
//! prefix (the prefix taken off) or is refused with `blob_store_unavailable`.
#![no_main]
use agent_task::error::Code;
use agent_task::store::{S3_MAX_ERROR_BODY, S3_MAX_LIST_PAGE, s3_error_code, s3_list_page};
use libfuzzer_sys::fuzz_target;

const PREFIX: &str = "team/sha256/";

fuzz_target!(|data: &[u8]| {
    if let Some(code) = s3_error_code(data) {
        assert!(!code.is_empty() && code.len() <= 64, "{code:?}");
        assert!(code.bytes().all(|b| b.is_ascii_alphanumeric()), "{code:?}");
        // Only the bounded head of the body names it.
        let head = &data[..data.len().min(S3_MAX_ERROR_BODY as usize)];
        assert!(String::from_utf8_lossy(head).contains(&format!("<Code>{code}</Code>")));
    }
    match s3_list_page(data, PREFIX) {
        Ok(page) => {
            assert!(data.len() as u64 <= S3_MAX_LIST_PAGE);
            let text = std::str::from_utf8(data).expect("a decoded page is UTF-8");
            // Every name came from a key under the prefix: on a page with
            // no character reference or CDATA section, the page holds the
            // whole key as it is.
            if !text.contains('&') && !text.contains("<![CDATA[") {
                for b in &page.blobs {
                    assert!(
                        text.contains(&format!("{PREFIX}{}", b.name)),
                        "{:?}",
                        b.name
                    );
                }
            }
            if let Some(t) = &page.next {
                assert!(t.len() <= data.len());
            }
        }
        Err(e) => assert_eq!(e.code(), Code::BlobStoreUnavailable, "{e:?}"),
    }
});
