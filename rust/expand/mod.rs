//! Query-time expansion: retrieved leaves (hits) -> a payload of passages.
//!
//! An index embeds small leaves and hands the generator bigger, coherent
//! passages: sentence windows around each hit, the hit's parent, or parents
//! merged bottom-up when enough of their children were hit (LlamaIndex's
//! auto-merging). Spans of one document that overlap or touch become one
//! passage (no character twice). Under a token budget each hit's span is taken
//! in score order and merged with what it overlaps only while the merged
//! passage fits, so a best hit that fits alone is never crowded out.
//!
//! Everything structural is precomputed when a document is added (its words'
//! token prefix sums, node token counts, the sentences each leaf overlaps,
//! section ids, and each leaf's and sentence's [`Edge`]s), so expanding a
//! query's hits is integer work: a span between clean edges is counted by a
//! subtraction, without reading its document; elsewhere the only tokenizer calls
//! left are recounts of the at most two words a merged span cuts (word cache
//! hits), through [`Sizer`](crate::sizer::Sizer).
//!
//! [`document`] holds a document as expansion reads it, [`store`] the documents
//! of an index and its leaf labels, [`packing`] the fitting of passages into a
//! token budget, [`spread`] the relevance hits lend their neighbours; this module turns
//! hits into units and units into passages.

mod document;
mod packing;
mod spread;
mod store;

use rustc_hash::FxHashMap;
use smallvec::{smallvec, SmallVec};

pub use document::{Doc, DocInput};
pub use spread::SPREAD_REACH;
pub use store::Store;

use crate::error::{input, Error, Result};
use crate::sizer::Edge;
use crate::spans::NONE;
use crate::tokenizer::{Tokenizer, WordCache};
use document::{span_count, LeafSentences};

/// Indices of hits (most units and passages have a few: no allocation for them).
pub type HitIds = SmallVec<[u32; 4]>;

/// How hits become passages.
#[derive(Clone, Copy, Debug, Default)]
pub struct Params {
    /// Sentences either side of each hit (within its section).
    pub window: Option<u32>,
    /// Grow each hit by whole sentences, alternately before and after, within its
    /// section, while the span stays within this many tokens.
    pub window_tokens: Option<u32>,
    /// Replace each leaf by its parent node.
    pub parent: bool,
    /// Merge children into their parent when more than this share of them is hit.
    pub auto_merge: Option<f64>,
    /// Token budget of the whole payload.
    pub budget: Option<usize>,
    /// The order of the passages.
    pub order: Order,
    /// What packing does with a passage that does not fit.
    pub pack: Pack,
    /// Trim the first passage that does not fit to whole sentences around its best hit.
    pub trim: bool,
}

/// The order of a payload's passages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Best score first.
    #[default]
    Score,
    /// Grouped by document (documents in the order of their best passage), in text order.
    Document,
}

impl Order {
    /// The order called `name` (`"score"`, `"document"`).
    pub fn from_name(name: &str) -> Result<Order> {
        match name {
            "score" => Ok(Order::Score),
            "document" => Ok(Order::Document),
            other => Err(input!("order must be 'score' or 'document', not {other:?}")),
        }
    }
}

/// What packing does with a passage that does not fit the budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pack {
    /// Skip it and go on with the next.
    #[default]
    Skip,
    /// Stop there.
    Stop,
}

impl Pack {
    /// The policy called `name` (`"skip"`, `"stop"`).
    pub fn from_name(name: &str) -> Result<Pack> {
        match name {
            "skip" => Ok(Pack::Skip),
            "stop" => Ok(Pack::Stop),
            other => Err(input!("pack must be 'skip' or 'stop', not {other:?}")),
        }
    }
}

/// One passage of a payload (code point offsets).
#[derive(Clone, Debug, PartialEq)]
pub struct Passage {
    pub doc: u32,
    pub start: u32,
    pub end: u32,
    pub tokens: u32,
    pub score: f64,
    /// Section of the passage's best-scoring part.
    pub section: u32,
    /// Indices of the hits it covers, ascending.
    pub hits: HitIds,
}

/// Passages and the indices of the hits left out by the budget.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Payload {
    pub passages: Vec<Passage>,
    pub dropped: Vec<u32>,
}

/// A span on its way to becoming a passage.
#[derive(Clone, Debug)]
struct Unit {
    doc: u32,
    /// The tree node it is, [`NONE`] for a sentence window.
    node: u32,
    /// The node's parent ([`NONE`] for a root or a sentence window).
    parent: u32,
    /// For a leaf, its sentences.
    sentences: Option<LeafSentences>,
    start: u32,
    end: u32,
    /// The edges of `start` and `end`.
    edges: (Edge, Edge),
    /// The node's tokens (when `node` is not [`NONE`]).
    tokens: u32,
    /// Where the whitespace around `[start, end)` begins and ends, when known (then
    /// the span has no whitespace at its ends).
    margins: Option<(u32, u32)>,
    score: f64,
    section: u32,
    hits: HitIds,
}

impl Unit {
    /// Its document (read only where what the unit carries does not answer:
    /// on a large index the document is out of the caches).
    fn doc<'s>(&self, store: &'s Store) -> &'s Doc {
        store.doc_of(self.doc)
    }

    /// True when a span ending at `x` (before `start`) touches the unit: only
    /// whitespace between (read from its margins when known, else from the text).
    fn touched_before(&self, store: &Store, x: u32) -> bool {
        self.margins.map_or_else(|| self.doc(store).blank(x, self.start), |m| x >= m.0)
    }

    /// True when a span starting at `x` (after `end`) touches the unit.
    fn touched_after(&self, store: &Store, x: u32) -> bool {
        self.margins.map_or_else(|| self.doc(store).blank(self.end, x), |m| x <= m.1)
    }

    /// The edges of `[s, e)`, a span inside the unit (the unit's own when it is
    /// the whole unit: nothing is searched).
    fn edges_of(&self, store: &Store, s: u32, e: u32) -> (Edge, Edge) {
        if (s, e) == (self.start, self.end) { self.edges } else { self.doc(store).edges_within(s, e, self.edges) }
    }

    /// Tokens of `[s, e)`, a span of the unit's document with edges `edges`: the
    /// node's count when the span is the whole node, the edges' subtraction when
    /// both are clean (nothing of the document is read), else counted.
    fn count(&self, store: &Store, tk: &Tokenizer, cache: &mut WordCache, s: u32, e: u32, edges: (Edge, Edge)) -> u32 {
        if (s, e) == (self.start, self.end) && self.node != NONE { self.tokens } else { store.span_tokens(self.doc, s, e, edges, tk, cache) }
    }
}

impl Store {
    /// Expands hits `(label, score)` into a payload.
    pub fn expand(&self, tk: &Tokenizer, hits: &[(u64, f64)], p: &Params) -> Result<Payload> {
        let mut units = self.leaf_units(hits)?;
        self.warm(&units);
        if let Some(ratio) = p.auto_merge {
            units = self.auto_merge(units, ratio);
        }
        if p.parent {
            units = self.parents(units);
        }
        if let Some(w) = p.window {
            for u in units.iter_mut() {
                self.window(u, w);
            }
        }
        tk.with_cache(|cache| {
            if let Some(n) = p.window_tokens {
                for u in units.iter_mut() {
                    self.window_tokens(u, n, tk, cache);
                }
            }
            let mut out = match p.budget {
                None => Payload { passages: self.merge(units, tk, cache), dropped: vec![] },
                Some(budget) => self.pack(units, hits, budget, p, tk, cache),
            };
            // passages of a document are disjoint: (document, start) tells any two apart, no stable sort needed
            out.passages.sort_unstable_by(|a, b| {
                b.score.total_cmp(&a.score).then((self.document(a.doc), a.start).cmp(&(self.document(b.doc), b.start)))
            });
            if p.order == Order::Document {
                let mut rank: FxHashMap<(bool, u32), usize> = FxHashMap::default();
                for (i, passage) in out.passages.iter().enumerate() {
                    rank.entry(self.document(passage.doc)).or_insert(i);
                }
                out.passages.sort_unstable_by_key(|x| (rank[&self.document(x.doc)], x.start));
            }
            Ok(out)
        })
    }

    /// What orders the document in `slot` among the others: its slot, or the group of
    /// the document it is a part of (the parts of one document, its sections as a store's
    /// reader adds them, are one document, whichever order they were added in).
    fn document(&self, slot: u32) -> (bool, u32) {
        match self.doc_of(slot).group {
            NONE => (false, slot),
            group => (true, group),
        }
    }

    /// One unit per distinct hit leaf (a leaf hit twice keeps its best score).
    fn leaf_units(&self, hits: &[(u64, f64)]) -> Result<Vec<Unit>> {
        // all the hits' (independent, mostly cache-missing) reads first, so that they overlap
        let refs: Vec<store::LeafRef> = hits.iter().map(|&(label, _)| self.leaf_ref(label)).collect();
        let mut seen: FxHashMap<(u32, u32), usize> = FxHashMap::with_capacity_and_hasher(hits.len(), Default::default());
        let mut units: Vec<Unit> = Vec::with_capacity(hits.len());
        for (i, (&(label, score), r)) in hits.iter().zip(refs).enumerate() {
            if r.slot == NONE {
                return Err(Error::NotInIndex(format!("hits[{i}]: leaf {label} is not in the index (deleted, or from another index)")));
            }
            if score.is_nan() {
                return Err(input!("hits[{i}]: score is NaN"));
            }
            if let Some(&k) = seen.get(&(r.slot, r.node)) {
                units[k].score = units[k].score.max(score);
                units[k].hits.push(i as u32);
                continue;
            }
            seen.insert((r.slot, r.node), units.len());
            units.push(Unit {
                doc: r.slot,
                node: r.node,
                parent: r.parent,
                sentences: Some(r.sentences),
                start: r.start,
                end: r.end,
                edges: r.edges(),
                tokens: r.tokens,
                margins: (r.margins.0 != NONE).then_some(r.margins),
                score,
                section: r.section,
                hits: smallvec![i as u32],
            });
        }
        Ok(units)
    }

    /// Reads what merging and packing will read of the document of each unit whose
    /// edges are not both clean (its fields, the byte offsets, word ends and prefix
    /// sums at the unit's ends) in one loop of independent loads, so that their cache
    /// misses overlap instead of coming one by one.
    fn warm(&self, units: &[Unit]) {
        let mut touched = 0usize;
        for u in units.iter().filter(|u| Edge::between(u.edges.0, u.edges.1).is_none()) {
            let doc = u.doc(self);
            touched += doc.byte(u.start) + doc.byte(u.end);
            let t = &doc.tokens;
            for w in [u.edges.0.word, u.edges.1.word].map(|w| w as usize) {
                touched += t.cum.get(w).map_or(0, |&c| c as usize);
                touched += t.word_end.get(w.wrapping_sub(1)).map_or(0, |&c| c as usize);
            }
        }
        std::hint::black_box(touched);
    }

    fn node_unit(&self, doc: u32, node: u32, score: f64, hits: HitIds) -> Unit {
        let d = self.doc_of(doc);
        let n = &d.nodes[node as usize];
        Unit { doc, node, parent: n.parent, sentences: None, start: n.start, end: n.end, edges: n.edges, tokens: n.tokens, margins: None, score, section: n.section, hits }
    }

    /// LlamaIndex's AutoMergingRetriever: while some parent has more than
    /// `ratio` of its children among the units, those children are replaced by
    /// the parent, scored with their mean.
    fn auto_merge(&self, mut units: Vec<Unit>, ratio: f64) -> Vec<Unit> {
        loop {
            let mut groups: FxHashMap<(u32, u32), (u32, Vec<usize>)> = FxHashMap::default();
            for (i, u) in units.iter().enumerate() {
                if u.parent != NONE {
                    let children = || u.doc(self).nodes[u.parent as usize].children;
                    groups.entry((u.doc, u.parent)).or_insert_with(|| (children(), vec![])).1.push(i);
                }
            }
            // in the order of their first members, not of the map: the parents' order (and so
            // the order their scores are summed in next round) follows the hits, not the slots
            let mut groups: Vec<_> = groups.into_iter().collect();
            groups.sort_unstable_by_key(|(_, (_, members))| members[0]);
            let mut merged = vec![false; units.len()];
            let mut parents = vec![];
            for ((doc, parent), (children, members)) in groups {
                if members.len() as f64 / children.max(1) as f64 > ratio {
                    let score = members.iter().map(|&i| units[i].score).sum::<f64>() / members.len() as f64;
                    let hits = members.iter().flat_map(|&i| units[i].hits.iter().copied()).collect();
                    members.iter().for_each(|&i| merged[i] = true);
                    parents.push(self.node_unit(doc, parent, score, hits));
                }
            }
            if parents.is_empty() {
                return units;
            }
            let mut keep = merged.iter();
            units.retain(|_| !keep.next().unwrap());
            units.extend(parents);
        }
    }

    /// Each leaf unit replaced by its parent node (roots stay).
    fn parents(&self, units: Vec<Unit>) -> Vec<Unit> {
        units
            .into_iter()
            .map(|u| {
                if u.sentences.is_some() && u.parent != NONE {
                    self.node_unit(u.doc, u.parent, u.score, u.hits)
                } else {
                    u
                }
            })
            .collect()
    }

    /// Widens a leaf unit by `w` sentences either side, within its section.
    fn window(&self, u: &mut Unit, w: u32) {
        let Some(s) = u.sentences.filter(|s| s.a < s.b) else {
            return;
        };
        let (lo, hi) = (s.a.saturating_sub(w).max(s.lo), s.b.saturating_add(w).min(s.hi));
        let sentences = &self.doc_of(u.doc).sentences;
        let (first, last) = (&sentences[lo as usize], &sentences[hi as usize - 1]);
        if first.start < u.start {
            (u.start, u.edges.0) = (first.start, first.edges.0);
        }
        if last.end > u.end {
            (u.end, u.edges.1) = (last.end, last.edges.1);
        }
        (u.node, u.parent, u.sentences, u.margins) = (NONE, NONE, None, None);
    }

    /// Widens a leaf unit by whole sentences within its section, one at a time and
    /// alternately before and after, while the span has at most `n` tokens; a side
    /// whose next sentence does not fit stops growing.
    fn window_tokens(&self, u: &mut Unit, n: u32, tk: &Tokenizer, cache: &mut WordCache) {
        let Some(s) = u.sentences.filter(|s| s.a < s.b) else {
            return;
        };
        let doc = self.doc_of(u.doc);
        let sentences = &doc.sentences;
        let mut sz = doc.sizer(tk, cache);
        let (mut lo, mut hi) = (s.a, s.b);
        let (mut start, mut end, mut edges) = (u.start, u.end, u.edges);
        let (mut left, mut right) = (true, true);
        while left || right {
            if left {
                left = lo > s.lo && {
                    let x = &sentences[lo as usize - 1];
                    let fits = span_count(doc, &mut sz, x.start, end, (x.edges.0, edges.1)) <= n;
                    if fits {
                        (lo, start, edges.0) = (lo - 1, x.start, x.edges.0);
                    }
                    fits
                };
            }
            if right {
                right = hi < s.hi && {
                    let x = &sentences[hi as usize];
                    let fits = span_count(doc, &mut sz, start, x.end, (edges.0, x.edges.1)) <= n;
                    if fits {
                        (hi, end, edges.1) = (hi + 1, x.end, x.edges.1);
                    }
                    fits
                };
            }
        }
        if (start, end) != (u.start, u.end) {
            (u.start, u.end, u.edges) = (start.min(u.start), end.max(u.end), edges);
            u.margins = None;
            (u.node, u.parent, u.sentences) = (NONE, NONE, None);
        }
    }

    /// Units of one document that overlap or touch (whitespace between) become
    /// one passage with the best score; returns passages unsorted.
    fn merge(&self, mut units: Vec<Unit>, tk: &Tokenizer, cache: &mut WordCache) -> Vec<Passage> {
        units.sort_unstable_by_key(|a| (a.doc, a.start, std::cmp::Reverse(a.end)));
        let mut out: Vec<Passage> = Vec::with_capacity(units.len());
        // each passage's tokens while it is one node (NONE once merged), and its ends' edges
        let mut known: Vec<(u32, (Edge, Edge))> = Vec::with_capacity(units.len());
        for u in units {
            if let Some(last) = out.last_mut() {
                if last.doc == u.doc && (u.start < last.end || (last.section == u.section && (u.start == last.end || u.touched_before(self, last.end)))) {
                    let (tokens, edges) = known.last_mut().unwrap();
                    if u.end > last.end || u.start < last.start {
                        *tokens = NONE;
                    }
                    if u.end > last.end {
                        (last.end, edges.1) = (u.end, u.edges.1);
                    }
                    if u.score > last.score {
                        last.score = u.score;
                        last.section = u.section;
                    }
                    last.hits.extend(u.hits);
                    continue;
                }
            }
            known.push((if u.node == NONE { NONE } else { u.tokens }, u.edges));
            out.push(Passage { doc: u.doc, start: u.start, end: u.end, tokens: 0, score: u.score, section: u.section, hits: u.hits });
        }
        for (p, (tokens, edges)) in out.iter_mut().zip(known) {
            p.hits.sort_unstable();
            p.hits.dedup();
            p.tokens = if tokens != NONE { tokens } else { self.span_tokens(p.doc, p.start, p.end, edges, tk, cache) };
        }
        out
    }

    /// Tokens of `[s, e)` of document `doc` with edges `edges`: their subtraction
    /// when both are clean (the document is not read), else counted.
    fn span_tokens(&self, doc: u32, s: u32, e: u32, edges: (Edge, Edge), tk: &Tokenizer, cache: &mut WordCache) -> u32 {
        Edge::between(edges.0, edges.1).unwrap_or_else(|| {
            let doc = self.doc_of(doc);
            span_count(doc, &mut doc.sizer(tk, cache), s, e, edges)
        })
    }

    /// Span of the leaf of hit `h`.
    fn leaf_span(&self, hits: &[(u64, f64)], h: u32) -> (u32, u32) {
        let r = self.leaf_ref(hits[h as usize].0);
        (r.start, r.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn tokenizer() -> Tokenizer {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/python/chunkforge/data/all-MiniLM-L6-v2.tokenizer.json");
        Tokenizer::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// "A0. A1. A2. A3." in one section, its leaves labelled 10 to 13 (see [`doc`]).
    pub(super) fn store(tk: &Tokenizer) -> Store {
        let mut store = Store::default();
        store.add(doc(tk), &[10, 11, 12, 13]).unwrap();
        store
    }

    /// "A0. A1. A2. A3." in one section; a root node with two parents of two leaves each.
    pub(super) fn doc(tk: &Tokenizer) -> Doc {
        let text = "Alpha zero. Alpha one. Alpha two. Alpha three.";
        let mut sentences = vec![];
        let mut s = 0;
        for part in text.split_inclusive(". ") {
            let t = part.trim_end();
            sentences.push((s as u32, (s + t.len()) as u32, 0));
            s += part.len();
        }
        let sp = |i: usize| (sentences[i].0, sentences[i].1);
        let nodes = vec![
            (0, text.len() as u32, NONE, 0),
            (sp(0).0, sp(1).1, 0, 0),
            (sp(2).0, sp(3).1, 0, 0),
            (sp(0).0, sp(0).1, 1, 0),
            (sp(1).0, sp(1).1, 1, 0),
            (sp(2).0, sp(2).1, 2, 0),
            (sp(3).0, sp(3).1, 2, 0),
        ];
        Doc::new(tk, DocInput { text: text.into(), part: (0, NONE), sentences, nodes, leaves: vec![3, 4, 5, 6], headings: vec![vec![], vec![]] }, None).unwrap()
    }

    #[test]
    fn auto_merge_climbs_the_tree() {
        let tk = tokenizer();
        let st = store(&tk);
        let p = Params { auto_merge: Some(0.5), ..Default::default() };
        // one of two children: 0.5 is not > 0.5, no merge
        let out = st.expand(&tk, &[(10, 0.9)], &p).unwrap();
        assert_eq!((out.passages[0].start, out.passages[0].end), (0, 11));
        // both children of the first parent: merged into it (mean score), and
        // that parent is one of two children of the root: stays
        let out = st.expand(&tk, &[(10, 0.9), (11, 0.5)], &p).unwrap();
        assert_eq!((out.passages[0].start, out.passages[0].end, out.passages[0].score), (0, 22, 0.7));
        // all four: both parents, then the root
        let out = st.expand(&tk, &[(10, 0.9), (11, 0.5), (12, 0.1), (13, 0.1)], &p).unwrap();
        assert_eq!(out.passages.len(), 1);
        assert_eq!((out.passages[0].start, out.passages[0].end, out.passages[0].hits.len()), (0, 46, 4));
    }

    #[test]
    fn windows_merge_and_pack() {
        let tk = tokenizer();
        let st = store(&tk);
        let p = Params { window: Some(1), ..Default::default() };
        let out = st.expand(&tk, &[(10, 0.9), (13, 0.5)], &p).unwrap();
        // [0, 1] and [2, 3] touch: one passage, the whole text
        assert_eq!(out.passages.len(), 1);
        assert_eq!((out.passages[0].start, out.passages[0].end, out.passages[0].score), (0, 46, 0.9));
        assert_eq!(out.passages[0].tokens as usize, tk.with_cache(|c| tk.count(st.doc(0).unwrap().slice(0, 46), c)).unwrap());
        let p = Params { window: Some(0), budget: Some(3), ..Default::default() };
        let out = st.expand(&tk, &[(10, 0.9), (12, 0.5)], &p).unwrap();
        assert_eq!(out.passages.len(), 1);
        assert_eq!(out.dropped, vec![1]);
    }

    /// "S zero. S one. S two. S three. S four.": sentences 0-1 in section 0, 2-4 in
    /// section 1, one leaf (label = sentence) per sentence under a root; the sentences' spans.
    fn five_sentences(tk: &Tokenizer) -> (Store, Vec<(u32, u32)>) {
        let text = "S zero. S one. S two. S three. S four.";
        let (mut sentences, mut nodes, mut s) = (vec![], vec![(0, text.len() as u32, NONE, 0)], 0);
        for (i, part) in text.split_inclusive(". ").enumerate() {
            let (a, b) = (s as u32, (s + part.trim_end().len()) as u32);
            let section = u32::from(i >= 2);
            sentences.push((a, b, section));
            nodes.push((a, b, 0, section));
            s += part.len();
        }
        let spans: Vec<(u32, u32)> = sentences.iter().map(|x| (x.0, x.1)).collect();
        let doc = Doc::new(tk, DocInput { text: text.into(), part: (0, NONE), sentences, nodes, leaves: vec![1, 2, 3, 4, 5], headings: vec![vec![], vec![]] }, None).unwrap();
        let mut st = Store::default();
        st.add(doc, &[0, 1, 2, 3, 4]).unwrap();
        (st, spans)
    }

    #[test]
    fn windows_stay_in_their_section() {
        let tk = tokenizer();
        let (st, spans) = five_sentences(&tk);
        let span = |leaf: u64, w: u32| {
            let out = st.expand(&tk, &[(leaf, 1.0)], &Params { window: Some(w), ..Default::default() }).unwrap();
            (out.passages[0].start, out.passages[0].end)
        };
        assert_eq!(span(1, 5), (spans[0].0, spans[1].1));
        assert_eq!(span(2, 1), (spans[2].0, spans[3].1));
        assert_eq!(span(3, 1), (spans[2].0, spans[4].1));
        assert_eq!(span(4, 9), (spans[2].0, spans[4].1));
        assert_eq!(span(0, 0), spans[0]);
    }

    #[test]
    fn token_windows_grow_by_sentences_within_their_section() {
        let tk = tokenizer();
        let (st, spans) = five_sentences(&tk); // "S two." is 3 tokens
        let span = |leaf: u64, n: u32| {
            let out = st.expand(&tk, &[(leaf, 1.0)], &Params { window_tokens: Some(n), ..Default::default() }).unwrap();
            (out.passages[0].start, out.passages[0].end, out.passages[0].tokens)
        };
        assert_eq!(span(2, 3), (spans[2].0, spans[2].1, 3));
        assert_eq!(span(2, 8), (spans[2].0, spans[3].1, 6)); // section 0 is never entered
        assert_eq!(span(3, 7), (spans[2].0, spans[3].1, 6)); // before first, then after does not fit
        assert_eq!(span(3, 9), (spans[2].0, spans[4].1, 9));
        assert_eq!(span(0, 100), (spans[0].0, spans[1].1, 6));
        assert_eq!(span(1, 1), (spans[1].0, spans[1].1, 3)); // a leaf over the limit stays as it is
    }

    #[test]
    fn a_documents_sections_added_as_parts_expand_as_the_whole_document() {
        let tk = tokenizer();
        let text = "S zero. S one.\n\nS two. S three. S four.";
        let words = ["S zero.", "S one.", "S two.", "S three.", "S four."];
        let sentences: Vec<(u32, u32, u32)> = words
            .iter()
            .enumerate()
            .map(|(i, w)| (text.find(w).unwrap() as u32, (text.find(w).unwrap() + w.len()) as u32, u32::from(i >= 2)))
            .collect();
        let (one, two) = ((sentences[0].0, sentences[1].1), (sentences[2].0, sentences[4].1));
        let leaf = |x: &(u32, u32, u32), parent: u32| (x.0, x.1, parent, x.2);
        let mut nodes = vec![(one.0, one.1, NONE, 0), leaf(&sentences[0], 0), leaf(&sentences[1], 0)];
        nodes.extend([(two.0, two.1, NONE, 1), leaf(&sentences[2], 3), leaf(&sentences[3], 3), leaf(&sentences[4], 3)]);
        let headings = vec![vec!["One".to_string()], vec!["Two".to_string()]];
        let whole = DocInput { text: text.into(), part: (0, NONE), sentences: sentences.clone(), nodes: nodes.clone(), leaves: vec![1, 2, 4, 5, 6], headings: headings.clone() };
        let mut st = Store::default();
        st.add(Doc::new(&tk, whole, None).unwrap(), &[0, 1, 2, 3, 4]).unwrap();
        // the second section, then the first, as a reader adds them: offsets the document's, in one group
        let second = DocInput {
            text: text[two.0 as usize..].into(),
            part: (two.0, 7),
            sentences: sentences[2..].iter().map(|x| (x.0, x.1, 0)).collect(),
            nodes: nodes[3..].iter().map(|n| (n.0, n.1, if n.2 == NONE { NONE } else { 0 }, 0)).collect(),
            leaves: vec![1, 2, 3],
            headings: vec![headings[1].clone()],
        };
        let first = DocInput {
            text: text[..one.1 as usize].into(),
            part: (0, 7),
            sentences: sentences[..2].to_vec(),
            nodes: nodes[..3].to_vec(),
            leaves: vec![1, 2],
            headings: vec![headings[0].clone()],
        };
        let mut parts = Store::default();
        parts.add(Doc::new(&tk, second, None).unwrap(), &[12, 13, 14]).unwrap();
        parts.add(Doc::new(&tk, first, None).unwrap(), &[10, 11]).unwrap();
        let asked = [
            Params { window: Some(5), ..Default::default() },
            Params { window_tokens: Some(7), ..Default::default() },
            Params { parent: true, ..Default::default() },
            Params { window: Some(1), budget: Some(9), order: Order::Document, ..Default::default() },
        ];
        for p in &asked {
            let a = st.expand(&tk, &[(3, 0.9), (0, 0.5), (4, 0.5)], p).unwrap();
            let b = parts.expand(&tk, &[(13, 0.9), (10, 0.5), (14, 0.5)], p).unwrap();
            let spans = |out: &Payload| out.passages.iter().map(|x| (x.start, x.end, x.tokens, x.score, x.hits.to_vec())).collect::<Vec<_>>();
            assert_eq!(spans(&a), spans(&b), "{p:?}");
            assert_eq!(a.dropped, b.dropped);
            assert!(a.passages.iter().all(|x| x.start >= two.0 || x.end <= one.1)); // no passage crosses a section
        }
        let bad = DocInput { text: "S two.".into(), part: (two.0, 7), sentences: vec![(0, 6, 0)], nodes: vec![], leaves: vec![], headings: vec![vec![]] };
        assert!(Doc::new(&tk, bad, None).is_err()); // a sentence before the part's text
    }
}
