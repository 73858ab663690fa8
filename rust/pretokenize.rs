//! Fast pre-tokenizers: split the *original* text into the words that the HF
//! pipeline would hand to its model, without building a `NormalizedString`.
//!
//! Two families are supported, both checked against HF `tokenizers` by the
//! differential tests:
//! * BERT (`BertPreTokenizer`, optionally after `BertNormalizer`): words are runs
//!   of word characters; punctuation and CJK ideographs stand alone; whitespace
//!   separates. The class of each character is learned from the tokenizer's own
//!   normalizer, so characters it deletes (controls, accents) join their word.
//! * GPT-2 byte level (`ByteLevel { use_regex: true }`): a hand-written scanner
//!   equal to the regex
//!   `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//!   (written by hand because a backtracking regex engine is the slowest part of
//!   HF's pipeline; the Unicode classes come from the `regex` engine's tables).

use std::sync::atomic::{AtomicU8, Ordering};

use regex::Regex;
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::{
    NormalizedString, Normalizer, NormalizerWrapper, OffsetReferential, OffsetType,
    PreTokenizedString, PreTokenizer,
};

/// What a character does to word boundaries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum CharClass {
    /// Part of a word (also characters the normalizer deletes: they join neighbours).
    Word = 0,
    /// Separates words and is not itself tokenized.
    Space = 1,
    /// A word of its own (punctuation, CJK ideographs).
    Isolated = 2,
    /// Normalizes to something the fast path does not model: use the HF pipeline.
    Complex = 3,
    // GPT-2 classes.
    Letter = 4,
    Number = 5,
    Other = 6,
}

const UNKNOWN: u8 = 0xFF;

impl CharClass {
    fn from_u8(v: u8) -> CharClass {
        match v {
            0 => CharClass::Word,
            1 => CharClass::Space,
            2 => CharClass::Isolated,
            3 => CharClass::Complex,
            4 => CharClass::Letter,
            5 => CharClass::Number,
            _ => CharClass::Other,
        }
    }
}

/// Which fast scanner a tokenizer uses.
pub enum Scheme {
    Bert { normalizer: Option<NormalizerWrapper> },
    Gpt2 { letter: Regex, number: Regex, space: Regex },
}

/// A per-character class table (BMP cached lazily, astral computed on demand).
pub struct PreTokenizer2 {
    pub scheme: Scheme,
    bmp: Vec<AtomicU8>,
}

impl PreTokenizer2 {
    pub fn bert(normalizer: Option<NormalizerWrapper>) -> Self {
        Self::with_scheme(Scheme::Bert { normalizer })
    }

    pub fn gpt2() -> Self {
        Self::with_scheme(Scheme::Gpt2 {
            letter: Regex::new(r"^\p{L}$").unwrap(),
            number: Regex::new(r"^\p{N}$").unwrap(),
            space: Regex::new(r"^\s$").unwrap(),
        })
    }

    fn with_scheme(scheme: Scheme) -> Self {
        let bmp = (0..0x10000).map(|_| AtomicU8::new(UNKNOWN)).collect();
        PreTokenizer2 { scheme, bmp }
    }

    #[inline]
    pub fn class(&self, c: char) -> CharClass {
        let cp = c as usize;
        if cp < 0x10000 {
            let v = self.bmp[cp].load(Ordering::Relaxed);
            if v != UNKNOWN {
                return CharClass::from_u8(v);
            }
            let k = self.compute(c);
            self.bmp[cp].store(k as u8, Ordering::Relaxed);
            k
        } else {
            self.compute(c)
        }
    }

    fn compute(&self, c: char) -> CharClass {
        match &self.scheme {
            Scheme::Gpt2 { letter, number, space } => {
                let mut buf = [0u8; 4];
                let s = c.encode_utf8(&mut buf);
                if letter.is_match(s) {
                    CharClass::Letter
                } else if number.is_match(s) {
                    CharClass::Number
                } else if space.is_match(s) {
                    CharClass::Space
                } else {
                    CharClass::Other
                }
            }
            Scheme::Bert { normalizer } => bert_class(normalizer.as_ref(), c),
        }
    }

    /// Calls `f(start, end)` for every word of `text` (byte offsets), in order.
    /// Returns false (having stopped early) if a character needs the HF pipeline.
    #[inline]
    pub fn words(&self, text: &str, f: impl FnMut(usize, usize)) -> bool {
        match self.scheme {
            Scheme::Bert { .. } => self.bert_words(text, f),
            Scheme::Gpt2 { .. } => self.gpt2_words(text, f),
        }
    }

    fn bert_words(&self, text: &str, mut f: impl FnMut(usize, usize)) -> bool {
        let bytes = text.as_bytes();
        let mut word_start: Option<usize> = None;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            let (class, len) = if b < 0x80 {
                (self.class(b as char), 1)
            } else {
                let c = text[i..].chars().next().unwrap();
                (self.class(c), c.len_utf8())
            };
            match class {
                CharClass::Word => {
                    if word_start.is_none() {
                        word_start = Some(i);
                    }
                }
                CharClass::Space => {
                    if let Some(s) = word_start.take() {
                        f(s, i);
                    }
                }
                CharClass::Isolated => {
                    if let Some(s) = word_start.take() {
                        f(s, i);
                    }
                    f(i, i + len);
                }
                _ => return false,
            }
            i += len;
        }
        if let Some(s) = word_start {
            f(s, bytes.len());
        }
        true
    }

    /// Class of the char starting at byte `i`, and its length in bytes.
    #[inline]
    fn gpt2_at(&self, text: &str, i: usize) -> (CharClass, usize) {
        let b = text.as_bytes()[i];
        if b < 0x80 {
            (self.class(b as char), 1)
        } else {
            let c = text[i..].chars().next().unwrap();
            (self.class(c), c.len_utf8())
        }
    }

    fn gpt2_run(&self, text: &str, mut i: usize, class: CharClass) -> usize {
        while i < text.len() {
            let (k, len) = self.gpt2_at(text, i);
            if k != class {
                break;
            }
            i += len;
        }
        i
    }

    fn gpt2_words(&self, text: &str, mut f: impl FnMut(usize, usize)) -> bool {
        let bytes = text.as_bytes();
        let n = bytes.len();
        let mut i = 0;
        while i < n {
            // 's 't 're 've 'm 'll 'd
            if bytes[i] == b'\'' && i + 1 < n {
                let rest = &bytes[i + 1..];
                let l = match rest {
                    [b's' | b't' | b'm' | b'd', ..] => 2,
                    [b'r', b'e', ..] | [b'v', b'e', ..] | [b'l', b'l', ..] => 3,
                    _ => 0,
                };
                if l > 0 {
                    f(i, i + l);
                    i += l;
                    continue;
                }
            }
            // ` ?X+` for X in letter, number, other
            if bytes[i] == b' ' && i + 1 < n {
                let (next, _) = self.gpt2_at(text, i + 1);
                if next != CharClass::Space {
                    let end = self.gpt2_run(text, i + 1, next);
                    f(i, end);
                    i = end;
                    continue;
                }
            }
            let (k, _) = self.gpt2_at(text, i);
            if k != CharClass::Space {
                let end = self.gpt2_run(text, i, k);
                f(i, end);
                i = end;
                continue;
            }
            // whitespace: `\s+(?!\S)` then `\s+`
            let end = self.gpt2_run(text, i, CharClass::Space);
            if end == n {
                f(i, end);
                i = end;
                continue;
            }
            // end < n: the run is followed by a non-space; give back its last char
            let last = text[..end].chars().next_back().unwrap().len_utf8();
            if end - last > i {
                f(i, end - last);
                i = end - last;
            } else {
                f(i, end);
                i = end;
            }
        }
        true
    }
}

/// The class of `c` under a BERT normalizer + `BertPreTokenizer`, learned by
/// running HF's own normalizer and pre-tokenizer on the character alone.
fn bert_class(normalizer: Option<&NormalizerWrapper>, c: char) -> CharClass {
    let mut buf = [0u8; 4];
    let mut ns = NormalizedString::from(&*c.encode_utf8(&mut buf));
    if let Some(n) = normalizer {
        if n.normalize(&mut ns).is_err() {
            return CharClass::Complex;
        }
    }
    let normalized = ns.get().to_string();
    if normalized.is_empty() {
        return CharClass::Word; // deleted by the normalizer: joins its neighbours
    }
    let pieces = bert_pieces(&normalized);
    if pieces.is_empty() {
        return CharClass::Space;
    }
    if pieces.len() != 1 || pieces[0] != normalized.trim_matches(char::is_whitespace) {
        return CharClass::Complex;
    }
    let padded_left = normalized.starts_with(char::is_whitespace);
    let padded_right = normalized.ends_with(char::is_whitespace);
    match (padded_left, padded_right) {
        (true, true) => CharClass::Isolated, // CJK ideographs
        (false, false) => match bert_pieces(&format!("a{normalized}a")).len() {
            1 => CharClass::Word,
            3 => CharClass::Isolated, // punctuation
            _ => CharClass::Complex,
        },
        _ => CharClass::Complex,
    }
}

fn bert_pieces(s: &str) -> Vec<String> {
    let mut pts = PreTokenizedString::from(s);
    if BertPreTokenizer.pre_tokenize(&mut pts).is_err() {
        return vec![];
    }
    pts.get_splits(OffsetReferential::Original, OffsetType::Byte)
        .into_iter()
        .map(|(piece, _, _)| piece.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(p: &PreTokenizer2, text: &str) -> Vec<String> {
        let mut out = vec![];
        assert!(p.words(text, |s, e| out.push(text[s..e].to_string())));
        out
    }

    #[test]
    fn bert_splits_punct_and_cjk() {
        let p = PreTokenizer2::bert(None);
        assert_eq!(words(&p, "Hey friend!  How?"), ["Hey", "friend", "!", "How", "?"]);
        assert_eq!(words(&p, "中文ab"), ["中文ab"]); // no normalizer: CJK not isolated
    }

    #[test]
    fn gpt2_matches_regex_semantics() {
        let p = PreTokenizer2::gpt2();
        assert_eq!(
            words(&p, "Hello world, the kernel  scheduler's 42x\n\n  end  "),
            ["Hello", " world", ",", " the", " kernel", " ", " scheduler", "'s", " 42", "x", "\n\n ", " end", "  "]
        );
    }
}
