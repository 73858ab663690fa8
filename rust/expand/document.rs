//! A document as expansion reads it: its text, its one tokenization, its
//! sentences and its tree, with everything structural precomputed when it is
//! added (node token counts, the sentences each leaf overlaps, section runs, each
//! node's and sentence's [`Edge`]s, and the whitespace around each leaf).

use std::borrow::Cow;
use std::sync::OnceLock;

use crate::error::{input, Result};
use crate::sizer::{Edge, Sizer};
use crate::spans::{CharOffsets, NONE};
use crate::tokenizer::{DocTokens, Tokenizer, WordCache};

/// A node of a document's tree: a section, an inner level, or a leaf.
#[derive(Clone, Copy, Debug)]
pub(super) struct Node {
    pub start: u32,
    pub end: u32,
    /// Index of the parent node, [`NONE`] for a root.
    pub parent: u32,
    /// The section (heading path) the node belongs to.
    pub section: u32,
    /// Number of direct children.
    pub(super) children: u32,
    /// The node's index among the leaves, [`NONE`] for an inner node.
    pub(super) leaf: u32,
    /// Tokens of the node's text encoded alone.
    pub(super) tokens: u32,
    /// The edges of its start and end.
    pub(super) edges: (Edge, Edge),
}

/// A sentence of a document (what a window reads of it sits in one cache line).
#[derive(Clone, Copy, Debug)]
pub(super) struct Sentence {
    pub(super) start: u32,
    pub(super) end: u32,
    /// The edges of its start and end.
    pub(super) edges: (Edge, Edge),
}

/// The sentences `[a, b)` a leaf overlaps, and `[lo, hi)`, how far a window
/// may widen them without leaving their section.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LeafSentences {
    pub(super) a: u32,
    pub(super) b: u32,
    pub(super) lo: u32,
    pub(super) hi: u32,
}

/// A document's text, tokenization and structure (all offsets in code points, the
/// whole document's): the whole document, or a part of it (one section, as a
/// store's reader adds it: `text` is the document's from code point `base` on).
pub struct Doc {
    text: String,
    /// The code point of the document at which `text` starts (0 for a whole document).
    pub(super) base: u32,
    /// The document a part belongs to, shared by its other parts ([`NONE`]: a whole
    /// document, its own).
    pub(super) group: u32,
    pub(super) tokens: DocTokens,
    offsets: CharOffsets,
    pub(super) sentences: Vec<Sentence>,
    pub(super) nodes: Vec<Node>,
    /// Node index of each leaf.
    pub(super) leaves: Vec<u32>,
    /// The sentences of each leaf.
    pub(super) leaf_sentences: Vec<LeafSentences>,
    /// Each leaf's [`Doc::margins`], [`NONE`]s for a leaf with whitespace at an end
    /// (none, in trees built here); taken by [`super::Store::add`].
    pub(super) leaf_margins: Vec<(u32, u32)>,
    /// The heading path of each section.
    headings: Vec<Vec<String>>,
    /// The section of each sentence.
    sentence_sections: Vec<u32>,
    /// The longest run of whitespace in the text (code points): a longer gap is not
    /// blank. Counted when [`Doc::blank`] first needs it: most documents a store's
    /// reader adds are read for a hit's text and never expanded.
    longest_blank: OnceLock<u32>,
}

/// What a document is made of, as given by the indexer (code point offsets).
pub struct DocInput<'a> {
    /// Borrowed text is copied; owned text is kept.
    pub text: Cow<'a, str>,
    /// Where `text` starts in its document (code points; 0: the whole document) and
    /// the document a part belongs to ([`NONE`] for a whole one): see [`Doc`].
    pub part: (u32, u32),
    /// `(start, end, section)` per sentence, sorted, non-overlapping.
    pub sentences: Vec<(u32, u32, u32)>,
    /// `(start, end, parent, section)` per node; a parent comes before its children.
    pub nodes: Vec<(u32, u32, u32, u32)>,
    /// Node index of each leaf.
    pub leaves: Vec<u32>,
    /// The heading path of each section.
    pub headings: Vec<Vec<String>>,
}

impl Doc {
    /// Precomputes what expansion needs from the text's tokenization (`tokens`,
    /// byte offsets; the text is tokenized here when None).
    pub fn new(tk: &Tokenizer, input: DocInput<'_>, tokens: Option<DocTokens>) -> Result<Doc> {
        let text = input.text.into_owned();
        let offsets = CharOffsets::new(&text);
        let (base, group) = input.part;
        let chars = base.checked_add(offsets.chars() as u32).ok_or_else(|| input!("base {base} is past the largest offset"))?;
        let mut prev_end = base;
        for (i, &(s, e, _)) in input.sentences.iter().enumerate() {
            if s > e || e > chars || s < prev_end {
                return Err(input!("sentence {i} ({s}, {e}) is out of order or outside the text ({base}..{chars})"));
            }
            prev_end = e;
        }
        let mut nodes = Vec::with_capacity(input.nodes.len());
        for (i, &(start, end, parent, section)) in input.nodes.iter().enumerate() {
            if start < base || start > end || end > chars {
                return Err(input!("node {i} ({start}, {end}) is not within the text ({base}..{chars})"));
            }
            if parent != NONE && parent as usize >= i {
                return Err(input!("node {i}: parent {parent} must come before it"));
            }
            nodes.push(Node { start, end, parent, section, children: 0, leaf: NONE, tokens: 0, edges: (Edge::UNKNOWN, Edge::UNKNOWN) });
        }
        for i in 0..nodes.len() {
            let p = nodes[i].parent;
            if p != NONE {
                nodes[p as usize].children += 1;
            }
        }
        for (i, &leaf) in input.leaves.iter().enumerate() {
            match nodes.get_mut(leaf as usize) {
                Some(n) if n.leaf == NONE && n.children == 0 => n.leaf = i as u32,
                _ => return Err(input!("leaf {i}: node {leaf} is not a childless node, or is listed twice")),
            }
        }
        let starts: Vec<u32> = input.sentences.iter().map(|s| s.0).collect();
        let ends: Vec<u32> = input.sentences.iter().map(|s| s.1).collect();
        let section = |i: u32| input.sentences[i as usize].2;
        // first and end of the run of same-section sentences each sentence is in
        let mut run_first = vec![0u32; starts.len()];
        let mut run_end = vec![starts.len() as u32; starts.len()];
        for i in 1..starts.len() {
            run_first[i] = if section(i as u32) == section(i as u32 - 1) { run_first[i - 1] } else { i as u32 };
        }
        for i in (0..starts.len().saturating_sub(1)).rev() {
            run_end[i] = if section(i as u32) == section(i as u32 + 1) { run_end[i + 1] } else { i as u32 + 1 };
        }
        let leaf_sentences = input
            .leaves
            .iter()
            .map(|&l| {
                let n = &nodes[l as usize];
                let a = ends.partition_point(|&e| e <= n.start) as u32;
                let b = (starts.partition_point(|&s| s < n.end) as u32).max(a);
                if a == b {
                    return LeafSentences { a, b, lo: a, hi: b };
                }
                // a window stays in the section of the leaf's first sentence
                let same = |i: u32| (i as usize) < starts.len() && section(i) == section(a);
                let hi = if same(b) { run_end[b as usize] } else { b };
                LeafSentences { a, b, lo: run_first[a as usize], hi }
            })
            .collect();
        let tokens = match tokens {
            Some(t) => t,
            None => tk.with_cache(|c| tk.analyze(&text, false, c))?,
        };
        if let Some(&(_, _, sec)) = input.sentences.iter().find(|s| s.2 as usize >= input.headings.len()) {
            return Err(input!("section {sec} has no heading path ({} given)", input.headings.len()));
        }
        if let Some(n) = input.nodes.iter().find(|n| n.3 as usize >= input.headings.len()) {
            return Err(input!("section {} has no heading path ({} given)", n.3, input.headings.len()));
        }
        let mut doc = Doc {
            text,
            base,
            group,
            tokens,
            offsets,
            sentences: input.sentences.iter().map(|&(start, end, _)| Sentence { start, end, edges: (Edge::UNKNOWN, Edge::UNKNOWN) }).collect(),
            nodes,
            leaves: input.leaves,
            leaf_sentences,
            leaf_margins: vec![],
            headings: input.headings,
            sentence_sections: input.sentences.iter().map(|x| x.2).collect(),
            longest_blank: OnceLock::new(),
        };
        let (sentence_edges, node_edges, counts) = tk.with_cache(|cache| {
            let mut sz = doc.sizer(tk, cache);
            let edges = |sz: &Sizer<'_>, s: u32, e: u32| (sz.start_edge(doc.byte(s)), sz.end_edge(doc.byte(e)));
            let sentence_edges: Vec<(Edge, Edge)> = doc.sentences.iter().map(|x| edges(&sz, x.start, x.end)).collect();
            let node_edges: Vec<(Edge, Edge)> = doc.nodes.iter().map(|n| edges(&sz, n.start, n.end)).collect();
            let counts: Vec<u32> = doc.nodes.iter().zip(&node_edges).map(|(n, &ends)| span_count(&doc, &mut sz, n.start, n.end, ends)).collect();
            (sentence_edges, node_edges, counts)
        });
        for (x, ends) in doc.sentences.iter_mut().zip(sentence_edges) {
            x.edges = ends;
        }
        for ((n, ends), c) in doc.nodes.iter_mut().zip(node_edges).zip(counts) {
            (n.edges, n.tokens) = (ends, c);
        }
        doc.leaf_margins = doc
            .leaves
            .iter()
            .map(|&l| {
                let (s, e) = (doc.nodes[l as usize].start, doc.nodes[l as usize].end);
                if doc.trim(s, e) == (s, e) { doc.margins(s, e) } else { (NONE, NONE) }
            })
            .collect();
        Ok(doc)
    }

    /// The code point of its document at which its text starts (0 for a whole document).
    pub fn base(&self) -> u32 {
        self.base
    }

    /// The heading path of each section.
    pub fn headings(&self) -> &[Vec<String>] {
        &self.headings
    }

    /// `(start, end, parent, section, level)` of each node, parents first (code points).
    pub fn node_rows(&self) -> Vec<[u32; 5]> {
        let mut levels: Vec<u32> = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            levels.push(if n.parent == NONE { 0 } else { levels[n.parent as usize] + 1 });
        }
        self.nodes.iter().zip(levels).map(|(n, l)| [n.start, n.end, n.parent, n.section, l]).collect()
    }

    /// Indices of the leaves whose section's heading path starts with `prefix`.
    pub fn leaves_under(&self, prefix: &[String]) -> Vec<usize> {
        let under: Vec<bool> = self.headings.iter().map(|h| h.starts_with(prefix)).collect();
        self.leaves.iter().enumerate().filter(|&(_, &n)| under[self.nodes[n as usize].section as usize]).map(|(i, _)| i).collect()
    }

    /// Node index of each leaf.
    pub fn leaves(&self) -> &[u32] {
        &self.leaves
    }

    /// `(start, end, section)` of each sentence.
    pub fn sentence_rows(&self) -> Vec<[u32; 3]> {
        self.sentences.iter().zip(&self.sentence_sections).map(|(x, &sec)| [x.start, x.end, sec]).collect()
    }

    pub(super) fn sizer<'a>(&'a self, tk: &'a Tokenizer, cache: &'a mut WordCache) -> Sizer<'a> {
        Sizer::new(tk, &self.text, &self.tokens, cache)
    }

    /// The byte offset in `text` of the document's code point `i`.
    pub(super) fn byte(&self, i: u32) -> usize {
        self.offsets.byte(&self.text, (i - self.base) as usize)
    }

    /// True when `text[s..e]` (code points) is whitespace only (a gap longer than
    /// the text's longest whitespace run is not: the text is not read, whose
    /// bytes are likely not in the caches).
    pub(super) fn blank(&self, s: u32, e: u32) -> bool {
        s >= e || (e - s <= *self.longest_blank.get_or_init(|| longest_blank(&self.text)) && self.text[self.byte(s)..self.byte(e)].chars().all(char::is_whitespace))
    }

    /// Where the whitespace before `s` begins and the whitespace after `e` ends
    /// (code points): a span ending in `[m.0, s]` touches `[s, e)`, as does one
    /// starting in `[e, m.1]`.
    pub(super) fn margins(&self, s: u32, e: u32) -> (u32, u32) {
        // a part's margins stop at its text's ends, its section's: only units of one section
        // are asked whether they touch, and the section's own whitespace is all in the text
        let before = self.text[..self.byte(s)].chars().rev().take_while(|c| c.is_whitespace()).count() as u32;
        let after = self.text[self.byte(e)..].chars().take_while(|c| c.is_whitespace()).count() as u32;
        (s - before, e + after)
    }

    /// The edges of a span inside a span with edges `within`, their word indices
    /// searched among its words only (unknown when `within`'s are; not known clean).
    pub(super) fn edges_within(&self, s: u32, e: u32, within: (Edge, Edge)) -> (Edge, Edge) {
        let (a, b) = (within.0.word, within.1.word);
        if a == NONE || b == NONE {
            return (Edge::UNKNOWN, Edge::UNKNOWN);
        }
        let starts = &self.tokens.word_start[a as usize..b as usize];
        let before = |x: u32| {
            let at = self.byte(x);
            Edge::at_word(a + starts.partition_point(|&w| (w as usize) < at) as u32)
        };
        (before(s), before(e))
    }

    /// `[s, e)` without its leading and trailing whitespace.
    pub(super) fn trim(&self, s: u32, e: u32) -> (u32, u32) {
        let text = &self.text[self.byte(s)..self.byte(e)];
        let lead = text.chars().take_while(|c| c.is_whitespace()).count() as u32;
        if s + lead >= e {
            return (e, e);
        }
        let trail = text.chars().rev().take_while(|c| c.is_whitespace()).count() as u32;
        (s + lead, e - trail)
    }

    /// The text between code points `s` and `e`.
    #[cfg(test)]
    pub(super) fn slice(&self, s: u32, e: u32) -> &str {
        &self.text[self.byte(s)..self.byte(e)]
    }
}

/// The longest run of whitespace in `text`, in code points.
fn longest_blank(text: &str) -> u32 {
    let (mut run, mut longest) = (0u32, 0u32);
    for c in text.chars() {
        run = if c.is_whitespace() { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

pub(super) fn sz_count(doc: &Doc, sz: &mut Sizer<'_>, s: u32, e: u32) -> u32 {
    sz.exact(doc.byte(s), doc.byte(e)) as u32
}

/// [`sz_count`] of a span with its ends' edges.
pub(super) fn span_count(doc: &Doc, sz: &mut Sizer<'_>, s: u32, e: u32, edges: (Edge, Edge)) -> u32 {
    sz.exact_between(doc.byte(s), doc.byte(e), edges) as u32
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::expand::tests::tokenizer;

    #[test]
    fn margins_say_what_blank_says() {
        let tk = tokenizer();
        let text = "  One.\n\n\tTwo.  Three.é  ";
        let doc = Doc::new(&tk, DocInput { text: text.into(), part: (0, NONE), sentences: vec![], nodes: vec![], leaves: vec![], headings: vec![] }, None).unwrap();
        let chars = text.chars().count() as u32;
        assert!(doc.blank(6, 9) && !doc.blank(6, 10));
        assert_eq!(doc.longest_blank.get(), Some(&3));
        for s in 0..=chars {
            for e in s..=chars {
                let (a, b) = doc.margins(s, e);
                for x in 0..=chars {
                    if x <= s {
                        assert_eq!(x >= a, doc.text.chars().skip(x as usize).take((s - x) as usize).all(char::is_whitespace));
                        assert_eq!(x >= a, doc.blank(x, s));
                    }
                    if x >= e {
                        assert_eq!(x <= b, doc.blank(e, x), "{s} {e} {x}");
                    }
                }
            }
        }
    }

}
