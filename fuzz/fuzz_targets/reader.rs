//! The NDJSON part reader, as the continuation reads a hostile partner's result: one part whose
//! stored bytes are the input (plain, or gzipped here so that the rows behind the gzip get
//! fuzzed too), with a declared size, sha256 and row count that are right, wrong or absent.
//!
//! Whatever the bytes, the reader ends with rows or an error, never reads past the row limit
//! or the stream budget, refuses a part whose size, hash or row count is not the promised one,
//! and hands out exactly the trimmed non-blank lines of a part that verifies.
#![no_main]

use std::io::{Read, Write};

use libfuzzer_sys::fuzz_target;
use native_core::batch::manifest::Part;
use native_core::batch::reader::{Opened, PartSource, Rows};
use sha2::{Digest, Sha256};

/// The stream budget of the harness: small, so that gzip bombs meet it.
const BUDGET: u64 = 4 << 20;

struct OnePart {
    key: String,
    stored: Vec<u8>,
    max_row: usize,
    consumed: u64,
    opened: u32,
}

impl PartSource for OnePart {
    fn open(&mut self, key: &str) -> native_core::Result<Option<Opened>> {
        self.opened += 1;
        if key != self.key {
            return Ok(None);
        }
        // A store that vouches for no digest: the reader hashes every part itself.
        Ok(Some(Opened {
            size: self.stored.len() as u64,
            reader: Box::new(std::io::Cursor::new(self.stored.clone())),
            verified_sha256: None,
        }))
    }

    fn consumed(&mut self, bytes: u64) -> native_core::Result<()> {
        self.consumed += bytes;
        if self.consumed > BUDGET {
            return Err(native_core::Error::LimitExceeded {
                limit: "max_stream_mb",
                detail: "fuzz budget".into(),
            });
        }
        Ok(())
    }

    fn max_row(&self) -> usize {
        self.max_row
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&[flags, rows_byte, row_limit], body)) = data.split_first_chunk::<3>() else {
        return;
    };
    let gzip = flags & 1 != 0;
    let stored = if gzip {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(body).expect("gzip into memory");
        enc.finish().expect("gzip into memory")
    } else {
        body.to_vec()
    };
    let true_sha = hex::encode(Sha256::digest(&stored));
    // Size: right, wrong by one, or not promised.
    let bytes = match (flags >> 1) & 3 {
        0 => None,
        1 => Some(stored.len() as u64 + 1),
        _ => Some(stored.len() as u64),
    };
    // Hash: right (any case), wrong, or not promised.
    let sha256 = match (flags >> 3) & 3 {
        0 => None,
        1 => Some("00".repeat(32)),
        2 => Some(true_sha.to_uppercase()),
        _ => Some(true_sha.clone()),
    };
    // Row count: promised (possibly wrong) or not.
    let expected_rows = (flags & 0x20 != 0).then_some(u64::from(rows_byte));
    let max_row = usize::from(row_limit) + 1;
    let key = "results/part.0000.ndjson".to_string();
    let part = Part {
        key: key.clone(),
        bytes,
        sha256: sha256.clone(),
        data: None,
    };
    // A second, missing part now and then: the reader must say so rather than end quietly.
    let mut parts = vec![part];
    if flags & 0x40 != 0 {
        parts.push(Part {
            key: "results/missing.ndjson".into(),
            bytes: None,
            sha256: None,
            data: None,
        });
    }
    let mut src = OnePart {
        key,
        stored: stored.clone(),
        max_row,
        consumed: 0,
        opened: 0,
    };
    let mut rows = Rows::new("result \"fuzz\"", parts.clone(), expected_rows);
    let mut out = Vec::new();
    let mut got: Vec<Vec<u8>> = Vec::new();
    // One line at a time, or in batches of 1 to 8 rows as `job:rows` reads them.
    let batch = if flags & 0x80 != 0 {
        usize::from(row_limit % 8) + 1
    } else {
        0
    };
    let mut spans = Vec::new();
    let result = loop {
        let before = out.len();
        spans.clear();
        let step = if batch == 0 {
            rows.next_line_into(&mut src, &mut out).map(|span| {
                spans.extend(span);
                span.is_none()
            })
        } else {
            rows.next_lines_into(&mut src, &mut out, &mut spans, batch, 1 << 16)
        };
        assert!(batch == 0 || spans.len() <= batch, "more rows than asked for");
        for &(start, end, _line, part_no) in &spans {
            assert!(before <= start && start <= end && end <= out.len());
            assert_eq!(part_no, 0, "only the first part has rows");
            assert!(
                end - start <= max_row,
                "a row longer than max_row was handed out"
            );
            got.push(out[start..end].to_vec());
        }
        match step {
            Ok(true) => break Ok(()),
            Ok(false) => {}
            Err(e) => break Err(e),
        }
        assert!(got.len() <= body.len() + 1, "more rows than lines");
    };
    assert!(
        src.consumed <= BUDGET + (256 << 10) + 64,
        "read far past the stream budget"
    );
    // The part as the reader should have seen it, decompressed when it starts like gzip.
    let plain: Option<Vec<u8>> = if stored.starts_with(&[0x1f, 0x8b]) {
        let mut d = Vec::new();
        flate2::read::MultiGzDecoder::new(&stored[..])
            .take(BUDGET + 1)
            .read_to_end(&mut d)
            .ok()
            .filter(|&n| n as u64 <= BUDGET / 2)
            .map(|_| d)
    } else {
        Some(stored.clone())
    };
    let Some(plain) = plain else {
        return; // not decodable, or near the budget: an error or rows are both fine
    };
    let lines: Vec<&[u8]> = if plain.is_empty() {
        Vec::new()
    } else {
        plain
            .strip_suffix(b"\n")
            .unwrap_or(&plain)
            .split(|&b| b == b'\n')
            .collect()
    };
    let too_long = lines.iter().any(|l| l.len() > max_row);
    let want: Vec<Vec<u8>> = lines
        .iter()
        .map(|l| l.trim_ascii())
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    let verifies = bytes.is_none_or(|b| b == stored.len() as u64)
        && sha256
            .as_deref()
            .is_none_or(|s| s.eq_ignore_ascii_case(&true_sha))
        && expected_rows.is_none_or(|r| r == want.len() as u64)
        && parts.len() == 1
        && !too_long;
    match &result {
        Ok(()) => {
            assert!(
                verifies,
                "a part that does not verify was read to its end: {parts:?}"
            );
            assert_eq!(got, want, "rows differ from the part's lines");
        }
        Err(e) => assert!(!verifies, "a part that verifies failed: {e}"),
    }
    if !too_long {
        // Whatever happened, the rows handed out are a prefix of the part's rows.
        assert!(got.len() <= want.len() && got[..] == want[..got.len()]);
    }
});
