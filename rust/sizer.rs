//! Exact token counts of any span of an analysed document, in O(log n).
//!
//! The document is tokenized once ([`DocTokens`]). The count of `text[s..e]`
//! re-encoded alone is the prefix sum of the whole words inside the span plus
//! a recount of the (at most two) words the span cuts: on the fast path words
//! are context free, so this is exact. On HF's general path the same sum is an
//! estimate, and [`Sizer::exact`] re-encodes the span.

use crate::tokenizer::{DocTokens, Tokenizer, WordCache};

pub struct Sizer<'a> {
    pub text: &'a str,
    pub doc: &'a DocTokens,
    pub tk: &'a Tokenizer,
    pub cache: &'a mut WordCache,
}

impl<'a> Sizer<'a> {
    pub fn new(tk: &'a Tokenizer, text: &'a str, doc: &'a DocTokens, cache: &'a mut WordCache) -> Self {
        Sizer { text, doc, tk, cache }
    }

    /// Tokens of `text[s..e]` encoded alone (an estimate on HF's general path).
    pub fn count(&mut self, s: usize, e: usize) -> usize {
        if s >= e {
            return 0;
        }
        let ws = &self.doc.word_start;
        let i = ws.partition_point(|&x| (x as usize) < s);
        let j = ws.partition_point(|&x| (x as usize) < e);
        let end_of = |k: usize, doc: &DocTokens| doc.word_end[k] as usize;
        let mut n = 0;
        if i > 0 && end_of(i - 1, &self.doc) > s {
            let head_end = end_of(i - 1, self.doc).min(e);
            n += self.recount(s, head_end);
            if head_end == e {
                return n;
            }
        }
        let mut inner_end = j;
        if inner_end > i && end_of(inner_end - 1, self.doc) > e {
            let tail_start = self.doc.word_start[inner_end - 1] as usize;
            n += self.recount(tail_start, e);
            inner_end -= 1;
        }
        if inner_end > i {
            n += (self.doc.cum[inner_end] - self.doc.cum[i]) as usize;
        }
        n
    }

    /// Tokens of `text[s..e]` encoded alone, always exact.
    pub fn exact(&mut self, s: usize, e: usize) -> usize {
        if self.doc.exact_words {
            self.count(s, e)
        } else {
            self.recount(s, e)
        }
    }

    fn recount(&mut self, s: usize, e: usize) -> usize {
        self.tk.count(&self.text[s..e], self.cache).unwrap_or(e - s)
    }
}
