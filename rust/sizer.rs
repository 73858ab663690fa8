//! Exact token counts of any span of an analysed document, in O(log n).
//!
//! The document is tokenized once ([`DocTokens`]). The count of `text[s..e]`
//! re-encoded alone is the prefix sum of the whole words inside the span plus
//! a recount of the (at most two) words the span cuts: on the fast path words
//! are context free, so this is exact. On HF's general path the same sum is an
//! estimate, and [`Sizer::exact`] re-encodes the span.

use std::cell::Cell;

use crate::error::Result;
use crate::spans::NONE;
use crate::tokenizer::{DocTokens, Tokenizer, WordCache};

/// One end of a span, as [`Sizer`] counts it: the number of words starting before
/// it, and the document's prefix sum there when the end is clean (no word or
/// added token straddles it, and at a span's end no whitespace run precedes it
/// that a byte-level BPE splits apart), else [`Edge::UNKNOWN`]'s. Between a clean
/// start and a clean end, the span's count is a subtraction: nothing of the
/// document is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    pub word: u32,
    pub cum: u32,
}

impl Edge {
    /// An end nothing is known of.
    pub const UNKNOWN: Edge = Edge { word: NONE, cum: NONE };

    /// An end at word index `word`, not known to be clean.
    pub fn at_word(word: u32) -> Edge {
        Edge { word, cum: NONE }
    }

    /// Tokens of the span from a clean start `a` to a clean end `b`, None unless both are clean.
    pub fn between(a: Edge, b: Edge) -> Option<u32> {
        (a.cum != NONE && b.cum != NONE).then(|| b.cum - a.cum)
    }

    /// The ends' word indices, when both are known.
    fn words(a: Edge, b: Edge) -> Option<(u32, u32)> {
        (a.word != NONE && b.word != NONE).then_some((a.word, b.word))
    }
}

/// How a span is counted: recounted whole, its trailing whitespace run apart,
/// or as a recounted head, whole words `[i, j)` from the prefix sums, and a
/// recounted tail.
enum Plan {
    Empty,
    Whole,
    Trailing(usize),
    Parts { head: usize, words: (usize, usize), tail: usize },
}

pub struct Sizer<'a> {
    pub text: &'a str,
    pub doc: &'a DocTokens,
    pub tk: &'a Tokenizer,
    pub cache: &'a mut WordCache,
    /// The last [`Self::words_before`], where the next search starts ([`NONE`]: none yet).
    last_word: Cell<u32>,
}

impl<'a> Sizer<'a> {
    pub fn new(tk: &'a Tokenizer, text: &'a str, doc: &'a DocTokens, cache: &'a mut WordCache) -> Self {
        Sizer { text, doc, tk, cache, last_word: Cell::new(NONE) }
    }

    /// Tokens of `text[s..e]` encoded alone (an estimate on HF's general path).
    ///
    /// Trailing whitespace of a byte-level BPE span is counted on its own. A
    /// word cut by the span's start is recounted together with the next
    /// whole word (alone, GPT-2's `'` + `s` join into `'s`), and a word cut by
    /// its end together with the previous one (a trailing whitespace run joins
    /// the whitespace before it); everything between comes from the prefix sums.
    pub fn count(&mut self, s: usize, e: usize) -> usize {
        self.count_at(s, e, None)
    }

    /// The number of words starting before byte `x`: searched outwards from the last
    /// one's answer (doubling the step, then halving the range), so that ascending or
    /// nearby offsets, such as a document's sentence and leaf ends, cost a few probes.
    fn words_before(&self, x: usize) -> u32 {
        let starts = &self.doc.word_start[..];
        let below = |i: usize| (starts[i] as usize) < x;
        let (lo, hi) = match self.last_word.get() {
            NONE => (0, starts.len()),
            h if (h as usize) < starts.len() && below(h as usize) => {
                let (h, mut lo, mut step) = (h as usize, h as usize + 1, 1);
                loop {
                    match h + step {
                        p if p >= starts.len() => break (lo, starts.len()),
                        p if !below(p) => break (lo, p),
                        p => (lo, step) = (p + 1, 2 * step),
                    }
                }
            }
            h => {
                let h = (h as usize).min(starts.len());
                let (mut hi, mut step) = (h, 1);
                loop {
                    match h.checked_sub(step) {
                        None => break (0, hi),
                        Some(p) if below(p) => break (p + 1, hi),
                        Some(p) => (hi, step) = (p, 2 * step),
                    }
                }
            }
        };
        let n = (lo + starts[lo..hi].partition_point(|&w| (w as usize) < x)) as u32;
        self.last_word.set(n);
        n
    }

    /// [`Self::exact`] of the span between edges `a` (at byte `s`) and `b` (at `e`):
    /// their subtraction when both are clean, else counted with their word indices.
    pub fn exact_between(&mut self, s: usize, e: usize, (a, b): (Edge, Edge)) -> usize {
        if let Some(n) = Edge::between(a, b) {
            debug_assert_eq!(n as usize, self.count_at(s, e, None), "edges {a:?} {b:?} of {s}..{e}");
            return n as usize;
        }
        if self.doc.exact_words {
            self.count_at(s, e, Edge::words(a, b))
        } else {
            self.recount(s, e)
        }
    }

    /// The edge of a span starting at byte `s` (see [`Edge`]).
    pub fn start_edge(&self, s: usize) -> Edge {
        self.edge(s, true)
    }

    /// The edge of a span ending at byte `e` (see [`Edge`]).
    pub fn end_edge(&self, e: usize) -> Edge {
        self.edge(e, !self.trailing_whitespace(e))
    }

    /// The edge at byte `x`, clean when `clean` and nothing straddles it.
    fn edge(&self, x: usize, clean: bool) -> Edge {
        let word = self.words_before(x);
        let clean = clean && self.doc.exact_words && !self.cuts_added(x) && !self.straddles(word as usize, x);
        Edge { word, cum: if clean { self.doc.cum[word as usize] } else { NONE } }
    }

    /// True when the last of the first `k` words ends after byte `x` (it starts before).
    fn straddles(&self, k: usize, x: usize) -> bool {
        k > 0 && self.doc.word_end[k - 1] as usize > x
    }

    /// True when a span ending at byte `e` ends in a whitespace run that the
    /// tokenizer splits by what follows it (GPT-2: at the end of a text it is one word).
    fn trailing_whitespace(&self, e: usize) -> bool {
        self.tk.tokenizes_whitespace() && self.text[..e].ends_with(char::is_whitespace)
    }

    fn count_at(&mut self, s: usize, e: usize, words: Option<(u32, u32)>) -> usize {
        match self.plan(s, e, words) {
            Plan::Empty => 0,
            Plan::Whole => self.recount(s, e),
            Plan::Trailing(t) => self.count(s, t) + self.recount(t, e),
            Plan::Parts { head, words: (i, j), tail } => {
                let inner = if j > i { (self.doc.cum[j] - self.doc.cum[i]) as usize } else { 0 };
                let head_count = if head > s { self.recount(s, head) } else { 0 };
                let tail_count = if tail < e { self.recount(tail, e) } else { 0 };
                head_count + inner + tail_count
            }
        }
    }

    /// Token ids of `text[s..e]` encoded alone (no special tokens), exactly those
    /// of re-encoding it: on the fast path, with the document's token map, the
    /// ids of the whole words inside the span are a slice of the document's and
    /// only the words cut at its edges are encoded again (as [`Self::count`]
    /// recounts them); otherwise the span is encoded.
    pub fn token_ids(&mut self, s: usize, e: usize) -> Result<Vec<u32>> {
        let Some(tm) = self.doc.tokens.as_ref().filter(|_| self.doc.exact_words) else {
            return self.encode(s, e);
        };
        match self.plan(s, e, None) {
            Plan::Empty => Ok(vec![]),
            Plan::Whole => self.encode(s, e),
            Plan::Trailing(t) => {
                let mut ids = self.token_ids(s, t)?;
                ids.extend(self.encode(t, e)?);
                Ok(ids)
            }
            Plan::Parts { head, words: (i, j), tail } => {
                let doc = self.doc;
                let mut ids = if head > s { self.encode(s, head)? } else { vec![] };
                if j > i {
                    ids.extend_from_slice(&tm.ids[doc.cum[i] as usize..doc.cum[j] as usize]);
                }
                if tail < e {
                    ids.extend(self.encode(tail, e)?);
                }
                Ok(ids)
            }
        }
    }

    fn encode(&mut self, s: usize, e: usize) -> Result<Vec<u32>> {
        let doc = self.tk.analyze(&self.text[s..e], true, self.cache)?;
        Ok(doc.tokens.map(|t| t.ids).unwrap_or_default())
    }

    /// How `[s, e)` is counted: see [`Self::count`].
    fn plan(&self, s: usize, e: usize, words: Option<(u32, u32)>) -> Plan {
        if s >= e {
            return Plan::Empty;
        }
        if self.cuts_added(s) || self.cuts_added(e) {
            // a span cutting an added token: what follows the cut is no longer split
            // from it (HF starts a fresh piece after `[CLS]`), so nothing is context free
            return Plan::Whole;
        }
        if self.trailing_whitespace(e) {
            // the span's trailing run is counted alone
            let t = s + self.text[s..e].trim_end().len();
            return if t == s { Plan::Whole } else { Plan::Trailing(t) };
        }
        let doc = self.doc;
        let start_of = |k: usize| doc.word_start[k] as usize;
        let end_of = |k: usize| doc.word_end[k] as usize;
        // words [i, j) start inside the span
        let (mut i, mut j) = match words {
            Some((i, j)) => (i as usize, j as usize),
            None => (self.words_before(s) as usize, self.words_before(e) as usize),
        };
        let mut head = s; // [s, head) is recounted
        if self.straddles(i, s) {
            head = end_of(i - 1).min(e);
            if i < j && end_of(i) <= e {
                head = end_of(i);
                i += 1;
            }
            // byte-level BPE splits a whitespace run by what follows it ("\t\t-" is
            // "\t", "\t", "-" but "\t\t" alone one word): the recount goes on to
            // the first word that does not end in whitespace
            while self.tk.tokenizes_whitespace() && i < j && end_of(i) <= e && self.text[..head].ends_with(char::is_whitespace) {
                head = end_of(i);
                i += 1;
            }
        }
        let mut tail = e; // [tail, e) is recounted
        if j > i && self.straddles(j, e) {
            j -= 1;
            tail = start_of(j);
            if j > i {
                j -= 1;
                tail = start_of(j);
            }
        }
        if head >= tail {
            return Plan::Whole;
        }
        Plan::Parts { head, words: (i, j), tail }
    }

    /// True when byte `x` lies strictly inside an added token of the document.
    fn cuts_added(&self, x: usize) -> bool {
        let added = &self.doc.added;
        let i = added.partition_point(|&(a, _)| (a as usize) < x);
        i > 0 && (added[i - 1].1 as usize) > x
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer(file: &str) -> Tokenizer {
        Tokenizer::from_json(&std::fs::read_to_string(format!("{}/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap()).unwrap()
    }

    /// The search from the last answer finds what a binary search finds, for offsets
    /// ascending, descending, and in no order.
    #[test]
    fn words_before_searched_from_the_last_answer() {
        let text = "one two  three, four.\nfive six [CLS] seven eight nine ten eleven twelve thirteen";
        let tk = tokenizer("python/chunkforge/data/all-MiniLM-L6-v2.tokenizer.json");
        let doc = tk.with_cache(|c| tk.analyze(text, false, c)).unwrap();
        tk.with_cache(|cache| {
            let sz = Sizer::new(&tk, text, &doc, cache);
            let mut x = 7usize;
            let scattered = (0..2000).map(|_| {
                x = (x * 31 + 17) % (text.len() + 1);
                x
            });
            for x in (0..=text.len()).chain((0..=text.len()).rev()).chain(scattered) {
                assert_eq!(sz.words_before(x) as usize, doc.word_start.partition_point(|&w| (w as usize) < x), "{x}");
            }
        });
    }

    /// Between a clean start and a clean end, the subtraction is the span's count
    /// re-encoded alone, for every span of a text of words, punctuation, whitespace
    /// runs, an added token and non-ASCII text; and many spans are between clean edges.
    #[test]
    fn clean_edges_count_by_subtraction() {
        let text = "Alpha's  beta, gamma.\n\n\tDelta [CLS] epsilon-zeta: naïve café 中文 don't   stop.";
        let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
        for file in ["python/chunkforge/data/all-MiniLM-L6-v2.tokenizer.json", "tests/data/bytelevel-bpe-8k.tokenizer.json"] {
            let tk = tokenizer(file);
            let doc = tk.with_cache(|c| tk.analyze(text, false, c)).unwrap();
            let (mut clean, mut spans) = (0, 0);
            tk.with_cache(|cache| {
                let mut sz = Sizer::new(&tk, text, &doc, cache);
                for &s in &bounds {
                    for &e in bounds.iter().filter(|&&e| e >= s) {
                        let edges = (sz.start_edge(s), sz.end_edge(e));
                        let alone = sz.tk.count(&text[s..e], sz.cache).unwrap();
                        if let Some(n) = Edge::between(edges.0, edges.1) {
                            assert_eq!(n as usize, alone, "{file}: {:?}", &text[s..e]);
                            clean += 1;
                        }
                        assert_eq!(sz.exact_between(s, e, edges), alone, "{file}: {:?}", &text[s..e]);
                        spans += 1;
                    }
                }
            });
            assert!(clean * 20 > spans, "{file}: {clean} of {spans} spans between clean edges");
        }
    }
}
