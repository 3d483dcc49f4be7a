//! Fuzz target: any bytes go through `decode` then `parse`, which must not panic, and every
//! diagnostic span must lie inside the input. Run with `cargo +nightly fuzz run parse`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use venusc::diag::FileId;
use venusc::syntax::{decode, parse};

fuzz_target!(|data: &[u8]| {
    let (text, diagnostics) = decode(data, FileId(0));
    assert_eq!(text.len(), data.len());
    let parsed = parse(&text, FileId(0));
    for d in diagnostics.iter().chain(&parsed.diagnostics) {
        assert!(d.primary.loc.span.end as usize <= text.len());
    }
});
