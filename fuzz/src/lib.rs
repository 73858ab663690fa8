//! What the fuzz targets share: the two shipped tokenizers, input decoding and
//! the invariants every chunk must hold.

use std::sync::LazyLock;

use _native::spans::ChunkSpan;
use _native::tokenizer::Tokenizer;

static WORDPIECE: LazyLock<Tokenizer> =
    LazyLock::new(|| Tokenizer::from_json(include_str!("../../python/chunkforge/data/all-MiniLM-L6-v2.tokenizer.json")).unwrap());
static BPE: LazyLock<Tokenizer> =
    LazyLock::new(|| Tokenizer::from_json(include_str!("../../tests/data/bytelevel-bpe-8k.tokenizer.json")).unwrap());

/// Inputs longer than this are cut: short inputs run many times faster, and
/// what breaks a chunker shows on short texts with small limits.
pub const MAX_TEXT: usize = 512;

/// The input: a few configuration bytes, then the text (invalid UTF-8 replaced).
pub struct Input {
    pub config: [u8; 4],
    pub text: String,
}

impl Input {
    pub fn new(data: &[u8]) -> Option<Input> {
        if data.len() < 4 {
            return None;
        }
        let mut text = String::from_utf8_lossy(&data[4..]).into_owned();
        if text.len() > MAX_TEXT {
            let cut = _native::spans::floor_char(&text, MAX_TEXT);
            text.truncate(cut);
        }
        Some(Input { config: [data[0], data[1], data[2], data[3]], text })
    }

    /// The tokenizer picked by the low bit of `config[0]`.
    pub fn tokenizer(&self) -> &'static Tokenizer {
        if self.config[0] & 1 == 0 {
            &WORDPIECE
        } else {
            &BPE
        }
    }
}

/// Tokens of `text` encoded alone by HF's own pipeline: the reference.
pub fn hf_count(tk: &Tokenizer, text: &str) -> usize {
    tk.hf.encode(text, false).unwrap().len()
}

/// Tokens of `text` encoded alone by chunkforge's tokenizer (its equality with
/// HF on any text is the `sizer` target's job): the chunkers' reference.
pub fn count(tk: &Tokenizer, text: &str) -> usize {
    tk.with_cache(|c| tk.count(text, c)).unwrap()
}

/// Exact offsets (char boundaries, trimmed, not empty), `tokens` equal to a
/// re-encode of the text and at most `max` (unless the chunk is one character),
/// chunks in order, and every non-whitespace character of `[from, len)` in
/// some chunk.
pub fn check_chunks(tk: &Tokenizer, text: &str, chunks: &[ChunkSpan], max: usize, from: usize) {
    let mut covered = vec![false; text.len()];
    let mut last = (0, 0);
    for c in chunks {
        assert!(c.start < c.end && c.end <= text.len(), "bad span {c:?}");
        assert!(text.is_char_boundary(c.start) && text.is_char_boundary(c.end), "span off char boundaries {c:?}");
        let piece = &text[c.start..c.end];
        assert_eq!(piece.trim(), piece, "chunk not trimmed {c:?}");
        assert_eq!(c.tokens, count(tk, piece), "token_count of {piece:?}");
        assert!(c.tokens <= max || piece.chars().count() == 1, "{} tokens > {max}: {piece:?}", c.tokens);
        assert!((c.start, c.end) >= last, "chunks out of order: {last:?} then {c:?}");
        last = (c.start, c.end);
        covered[c.start..c.end].iter_mut().for_each(|x| *x = true);
    }
    for (i, ch) in text.char_indices().filter(|&(i, _)| i >= from) {
        assert!(covered[i] || ch.is_whitespace(), "{ch:?} at byte {i} is in no chunk");
    }
}
