//! Spans of a text: trimming, char boundaries, and the conversion of byte
//! offsets (Rust) to code point offsets (Python `str` indices).

/// No index: the parent of a root, the leaf of an inner node, an edge's unknown word
/// or prefix sum (-1 on the Python side).
pub const NONE: u32 = u32::MAX;

/// Where the code points of a text start in its bytes, so that a Python `str` index
/// becomes a byte offset: the byte offset of every [`CharOffsets::STEP`]-th code point,
/// and from there a walk of at most `STEP - 1` code points (no table for an ASCII text:
/// there they are the same). A table of every code point took 4 bytes a character, most
/// of the memory of a document an expander holds, and most of the time to add one.
#[derive(Clone, Debug)]
pub struct CharOffsets {
    /// Byte offset of code points `0, STEP, 2 * STEP, ...` (None when ASCII).
    samples: Option<Vec<u32>>,
    chars: usize,
}

impl CharOffsets {
    /// Code points between two samples.
    pub const STEP: usize = 32;

    pub fn new(text: &str) -> Self {
        if text.is_ascii() {
            return CharOffsets { samples: None, chars: text.len() };
        }
        let mut samples = Vec::with_capacity(text.len() / Self::STEP + 1);
        let mut chars = 0usize;
        for (i, &b) in text.as_bytes().iter().enumerate() {
            if b & 0xC0 != 0x80 {
                // not a continuation byte: a code point starts here
                if chars.is_multiple_of(Self::STEP) {
                    samples.push(i as u32);
                }
                chars += 1;
            }
        }
        CharOffsets { samples: Some(samples), chars }
    }

    /// The byte offset in `text` (the text these offsets were made from) of code point
    /// `i` (at most [`Self::chars`]).
    pub fn byte(&self, text: &str, i: usize) -> usize {
        debug_assert!(i <= self.chars, "code point {i} of {}", self.chars);
        let Some(samples) = &self.samples else { return i };
        if i >= self.chars {
            return text.len();
        }
        let bytes = text.as_bytes();
        let mut at = samples[i / Self::STEP] as usize;
        for _ in 0..i % Self::STEP {
            at += utf8_width(bytes[at]);
        }
        at
    }

    /// The number of code points of the text (its Python `len`).
    pub fn chars(&self) -> usize {
        self.chars
    }
}

/// The length in bytes of the UTF-8 sequence that starts with byte `first`.
fn utf8_width(first: u8) -> usize {
    match first {
        0x00..0x80 => 1,
        0x80..0xE0 => 2,
        0xE0..0xF0 => 3,
        _ => 4,
    }
}

/// A chunk's source span in bytes, and its token count when encoded alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkSpan {
    pub start: usize,
    pub end: usize,
    pub tokens: usize,
}

/// `[s, e)` without leading and trailing whitespace (possibly empty).
pub fn trim(text: &str, s: usize, e: usize) -> (usize, usize) {
    if s >= e {
        return (s, s);
    }
    let piece = &text[s..e];
    let left = piece.len() - piece.trim_start().len();
    let right = piece.trim_end().len();
    if left >= right {
        (s, s)
    } else {
        (s + left, s + right)
    }
}

/// The largest char boundary `<= i`.
pub fn floor_char(text: &str, mut i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary `>= i`.
pub fn ceil_char(text: &str, mut i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Converts byte offsets of `text` (any order, on char boundaries or not:
/// inside a char counts as its start) into code point offsets, in place.
pub fn bytes_to_chars(text: &str, offsets: &mut [usize]) {
    if text.is_ascii() {
        return;
    }
    let mut order: Vec<u32> = (0..offsets.len() as u32).collect();
    order.sort_unstable_by_key(|&i| offsets[i as usize]);
    let bytes = text.as_bytes();
    let (mut pos, mut chars) = (0usize, 0usize);
    for i in order {
        let target = floor_char(text, offsets[i as usize]);
        if target > pos {
            chars += bytes[pos..target].iter().filter(|&&b| (b & 0xC0) != 0x80).count();
            pos = target;
        }
        offsets[i as usize] = chars;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_and_trims() {
        let text = "é 😀 x";
        let mut offs = vec![text.len(), 0, 3, 2];
        bytes_to_chars(text, &mut offs);
        assert_eq!(offs, vec![5, 0, 2, 1]);
        assert_eq!(trim("  ab  ", 0, 6), (2, 4));
        assert_eq!(trim("   ", 0, 3), (0, 0));
        assert_eq!(floor_char("😀", 2), 0);
        assert_eq!(ceil_char("😀", 2), 4);
    }

    #[test]
    fn char_offsets_map_code_points_to_bytes() {
        let (long, exact, two) = ("aé😀€ ".repeat(40), "é".repeat(32), "é".repeat(64));
        for text in ["plain", "é 😀 x", "", &long, &exact, &two] {
            let offsets = CharOffsets::new(text);
            let expected: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
            assert_eq!(offsets.chars(), text.chars().count());
            assert_eq!((0..=offsets.chars()).map(|i| offsets.byte(text, i)).collect::<Vec<_>>(), expected);
        }
    }
}
