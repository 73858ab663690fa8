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
//! hits), through [`Sizer`].

use rustc_hash::FxHashMap;
use smallvec::{smallvec, SmallVec};

use crate::sizer::{Edge, Sizer};
use crate::tokenizer::{DocTokens, Tokenizer, WordCache};

const NONE: u32 = u32::MAX;

/// Indices of hits (most units and passages have a few: no allocation for them).
pub type HitIds = SmallVec<[u32; 4]>;

/// A node of a document's tree: a section, an inner level, or a leaf.
#[derive(Clone, Copy, Debug)]
pub struct Node {
    pub start: u32,
    pub end: u32,
    /// Index of the parent node, [`NONE`] for a root.
    pub parent: u32,
    /// The section (heading path) the node belongs to.
    pub section: u32,
    /// Number of direct children.
    children: u32,
    /// The node's index among the leaves, [`NONE`] for an inner node.
    leaf: u32,
    /// Tokens of the node's text encoded alone.
    tokens: u32,
    /// The edges of its start and end.
    edges: (Edge, Edge),
}

/// A sentence of a document (what a window reads of it sits in one cache line).
#[derive(Clone, Copy, Debug)]
struct Sentence {
    start: u32,
    end: u32,
    /// The edges of its start and end.
    edges: (Edge, Edge),
}

/// The sentences `[a, b)` a leaf overlaps, and `[lo, hi)`, how far a window
/// may widen them without leaving their section.
#[derive(Clone, Copy, Debug, Default)]
struct LeafSentences {
    a: u32,
    b: u32,
    lo: u32,
    hi: u32,
}

/// A document's text, tokenization and structure (all offsets in code points).
pub struct Doc {
    text: String,
    tokens: DocTokens,
    /// Byte offset of each char, plus the text's length (None when ASCII).
    char_bytes: Option<Vec<u32>>,
    sentences: Vec<Sentence>,
    nodes: Vec<Node>,
    /// Node index of each leaf.
    leaves: Vec<u32>,
    /// The sentences of each leaf.
    leaf_sentences: Vec<LeafSentences>,
    /// The heading path of each section.
    headings: Vec<Vec<String>>,
    /// The section of each sentence.
    sentence_sections: Vec<u32>,
    /// The longest run of whitespace in the text (code points): a longer gap is not blank.
    longest_blank: u32,
}

/// What a document is made of, as given by the indexer (code point offsets).
pub struct DocInput<'a> {
    pub text: &'a str,
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
    pub fn new(tk: &Tokenizer, input: DocInput<'_>, tokens: Option<DocTokens>) -> Result<Doc, String> {
        let text = input.text.to_string();
        let char_bytes = (!text.is_ascii()).then(|| {
            let mut v: Vec<u32> = text.char_indices().map(|(i, _)| i as u32).collect();
            v.push(text.len() as u32);
            v
        });
        let chars = char_bytes.as_ref().map_or(text.len(), |v| v.len() - 1) as u32;
        let mut prev_end = 0;
        for (i, &(s, e, _)) in input.sentences.iter().enumerate() {
            if s > e || e > chars || s < prev_end {
                return Err(format!("sentence {i} ({s}, {e}) is out of order or outside the text (0..{chars})"));
            }
            prev_end = e;
        }
        let mut nodes = Vec::with_capacity(input.nodes.len());
        for (i, &(start, end, parent, section)) in input.nodes.iter().enumerate() {
            if start > end || end > chars {
                return Err(format!("node {i} ({start}, {end}) is not within the text (0..{chars})"));
            }
            if parent != NONE && parent as usize >= i {
                return Err(format!("node {i}: parent {parent} must come before it"));
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
                _ => return Err(format!("leaf {i}: node {leaf} is not a childless node, or is listed twice")),
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
            None => tk.with_cache(|c| tk.analyze(&text, false, c)).map_err(|e| e.to_string())?,
        };
        if let Some(&(_, _, sec)) = input.sentences.iter().find(|s| s.2 as usize >= input.headings.len()) {
            return Err(format!("section {sec} has no heading path ({} given)", input.headings.len()));
        }
        if let Some(n) = input.nodes.iter().find(|n| n.3 as usize >= input.headings.len()) {
            return Err(format!("section {} has no heading path ({} given)", n.3, input.headings.len()));
        }
        let longest_blank = longest_blank(&text);
        let mut doc = Doc {
            text,
            tokens,
            char_bytes,
            sentences: input.sentences.iter().map(|&(start, end, _)| Sentence { start, end, edges: (Edge::UNKNOWN, Edge::UNKNOWN) }).collect(),
            nodes,
            leaves: input.leaves,
            leaf_sentences,
            headings: input.headings,
            sentence_sections: input.sentences.iter().map(|x| x.2).collect(),
            longest_blank,
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
        Ok(doc)
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

    fn sizer<'a>(&'a self, tk: &'a Tokenizer, cache: &'a mut WordCache) -> Sizer<'a> {
        Sizer::new(tk, &self.text, &self.tokens, cache)
    }

    fn byte(&self, i: u32) -> usize {
        self.char_bytes.as_ref().map_or(i as usize, |b| b[i as usize] as usize)
    }

    /// True when `text[s..e]` (code points) is whitespace only (a gap longer than
    /// the text's longest whitespace run is not: the text is not read, whose
    /// bytes are likely not in the caches).
    fn blank(&self, s: u32, e: u32) -> bool {
        s >= e || (e - s <= self.longest_blank && self.text[self.byte(s)..self.byte(e)].chars().all(char::is_whitespace))
    }

    /// Where the whitespace before `s` begins and the whitespace after `e` ends
    /// (code points): a span ending in `[m.0, s]` touches `[s, e)`, as does one
    /// starting in `[e, m.1]`.
    fn margins(&self, s: u32, e: u32) -> (u32, u32) {
        let before = self.text[..self.byte(s)].chars().rev().take_while(|c| c.is_whitespace()).count() as u32;
        let after = self.text[self.byte(e)..].chars().take_while(|c| c.is_whitespace()).count() as u32;
        (s - before, e + after)
    }

    /// The edges of a span inside a span with edges `within`, their word indices
    /// searched among its words only (unknown when `within`'s are; not known clean).
    fn edges_within(&self, s: u32, e: u32, within: (Edge, Edge)) -> (Edge, Edge) {
        let (a, b) = (within.0.word, within.1.word);
        if a == NONE || b == NONE {
            return (Edge::UNKNOWN, Edge::UNKNOWN);
        }
        let starts = &self.tokens.word_start[a as usize..b as usize];
        let before = |x: u32| Edge::at_word(a + starts.partition_point(|&w| (w as usize) < self.byte(x)) as u32);
        (before(s), before(e))
    }

    /// `[s, e)` without its leading and trailing whitespace.
    fn trim(&self, s: u32, e: u32) -> (u32, u32) {
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
    fn slice(&self, s: u32, e: u32) -> &str {
        &self.text[self.byte(s)..self.byte(e)]
    }
}

/// True when a unit `(score, start, end)` gives a passage its score and section
/// rather than `b`: a higher score, then the earlier (and longer) span, as in
/// [`Store::merge`]'s sweep.
fn better(a: (f64, u32, u32), b: (f64, u32, u32)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && (a.1, std::cmp::Reverse(a.2)) < (b.1, std::cmp::Reverse(b.2)))
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

fn sz_count(doc: &Doc, sz: &mut Sizer<'_>, s: u32, e: u32) -> u32 {
    sz.exact(doc.byte(s), doc.byte(e)) as u32
}

/// [`sz_count`] of a span with its ends' edges.
fn span_count(doc: &Doc, sz: &mut Sizer<'_>, s: u32, e: u32, edges: (Edge, Edge)) -> u32 {
    sz.exact_between(doc.byte(s), doc.byte(e), edges) as u32
}

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
    /// Order passages by document and position (else by score).
    pub by_document: bool,
    /// Stop packing at the first passage that does not fit (else skip it).
    pub stop: bool,
    /// Trim the first passage that does not fit to whole sentences around its best hit.
    pub trim: bool,
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

/// A passage taken while packing: the `(score, start, end)` of the unit its
/// score and section come from, and its ends' edges.
struct Taken {
    p: Passage,
    key: (f64, u32, u32),
    edges: (Edge, Edge),
}

/// A label's leaf: its document slot and node, with a copy of what expanding
/// it reads first, so that a hit costs one memory access before its document
/// is touched (on a large index that access misses the caches).
#[derive(Clone, Copy, Debug)]
#[repr(align(64))] // one cache line a row
struct LeafRef {
    slot: u32,
    node: u32,
    parent: u32,
    section: u32,
    start: u32,
    end: u32,
    /// The word indices of its edges.
    words: (u32, u32),
    /// The prefix sum at its start when both its edges are clean (that at its end
    /// is `cum + tokens` then), else [`NONE`].
    cum: u32,
    sentences: LeafSentences,
    tokens: u32,
    /// See [`Doc::margins`]; [`NONE`]s for a leaf with whitespace at an end.
    margins: (u32, u32),
}

impl LeafRef {
    /// The edges of its start and end.
    fn edges(&self) -> (Edge, Edge) {
        let end_cum = if self.cum == NONE { NONE } else { self.cum + self.tokens };
        (Edge { word: self.words.0, cum: self.cum }, Edge { word: self.words.1, cum: end_cum })
    }
}

const FREE: LeafRef = LeafRef {
    slot: NONE,
    node: NONE,
    parent: NONE,
    section: NONE,
    start: 0,
    end: 0,
    words: (0, 0),
    cum: NONE,
    sentences: LeafSentences { a: 0, b: 0, lo: 0, hi: 0 },
    tokens: 0,
    margins: (0, 0),
};

/// All documents of an index, and the map from leaf labels to leaves.
#[derive(Default)]
pub struct Store {
    docs: Vec<Option<Doc>>,
    /// The leaf of each label; [`FREE`] for a free label.
    labels: Vec<LeafRef>,
}

impl Store {
    /// Adds a document whose leaves get `labels`; returns its slot.
    pub fn add(&mut self, doc: Doc, labels: &[u64]) -> Result<usize, String> {
        if labels.len() != doc.leaves.len() {
            return Err(format!("{} labels for {} leaves", labels.len(), doc.leaves.len()));
        }
        for &l in labels {
            if self.labels.get(l as usize).is_some_and(|x| x.slot != NONE) {
                return Err(format!("label {l} is already in use"));
            }
        }
        let slot = self.docs.len() as u32;
        for (i, &l) in labels.iter().enumerate() {
            let l = l as usize;
            if l >= self.labels.len() {
                self.labels.resize(l + 1, FREE);
            }
            let node = doc.leaves[i];
            let n = &doc.nodes[node as usize];
            let (start, end, parent, section, tokens) = (n.start, n.end, n.parent, n.section, n.tokens);
            let words = (n.edges.0.word, n.edges.1.word);
            let cum = if Edge::between(n.edges.0, n.edges.1).is_some() { n.edges.0.cum } else { NONE };
            // margins only for a leaf without whitespace at its ends (all of them, in trees built here)
            let margins = if doc.trim(start, end) == (start, end) { doc.margins(start, end) } else { (NONE, NONE) };
            let sentences = doc.leaf_sentences[i];
            self.labels[l] = LeafRef { slot, node, parent, section, start, end, words, cum, sentences, tokens, margins };
        }
        self.docs.push(Some(doc));
        Ok(slot as usize)
    }

    /// Removes the document in `slot` and frees its labels.
    pub fn remove(&mut self, slot: usize) -> Result<(), String> {
        match self.docs.get_mut(slot).and_then(Option::take) {
            None => Err(format!("no document in slot {slot}")),
            Some(_) => {
                for entry in self.labels.iter_mut().filter(|e| e.slot == slot as u32) {
                    *entry = FREE;
                }
                Ok(())
            }
        }
    }

    /// The document in `slot`.
    pub fn doc(&self, slot: usize) -> Option<&Doc> {
        self.docs.get(slot).and_then(Option::as_ref)
    }

    /// The document in `slot`, which a unit's or a passage's slot always holds.
    fn doc_of(&self, slot: u32) -> &Doc {
        self.docs[slot as usize].as_ref().unwrap()
    }

    /// `(slot, start, end, section)` of the leaf with `label`, None for a free label.
    pub fn leaf(&self, label: u64) -> Option<(u32, u32, u32, u32)> {
        self.labels.get(label as usize).filter(|r| r.slot != NONE).map(|r| (r.slot, r.start, r.end, r.section))
    }

    /// Expands hits `(label, score)` into a payload.
    pub fn expand(&self, tk: &Tokenizer, hits: &[(u64, f64)], p: &Params) -> Result<Payload, String> {
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
            // passages of a document are disjoint: (doc, start) tells any two apart, no stable sort needed
            out.passages.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then((a.doc, a.start).cmp(&(b.doc, b.start))));
            if p.by_document {
                let mut rank: FxHashMap<u32, usize> = FxHashMap::default();
                for (i, passage) in out.passages.iter().enumerate() {
                    rank.entry(passage.doc).or_insert(i);
                }
                out.passages.sort_unstable_by_key(|x| (rank[&x.doc], x.start));
            }
            Ok(out)
        })
    }

    /// One unit per distinct hit leaf (a leaf hit twice keeps its best score).
    fn leaf_units(&self, hits: &[(u64, f64)]) -> Result<Vec<Unit>, String> {
        // all the hits' (independent, mostly cache-missing) reads first, so that they overlap
        let refs: Vec<LeafRef> = hits.iter().map(|&(label, _)| self.labels.get(label as usize).copied().unwrap_or(FREE)).collect();
        let mut seen: FxHashMap<(u32, u32), usize> = FxHashMap::with_capacity_and_hasher(hits.len(), Default::default());
        let mut units: Vec<Unit> = Vec::with_capacity(hits.len());
        for (i, (&(label, score), r)) in hits.iter().zip(refs).enumerate() {
            if r.slot == NONE {
                return Err(format!("hits[{i}]: leaf {label} is not in the index (deleted, or from another index)"));
            }
            if score.is_nan() {
                return Err(format!("hits[{i}]: score is NaN"));
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
                if last.doc == u.doc && (u.start <= last.end || u.touched_before(self, last.end)) {
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

    /// Packs units into `budget` tokens in score order (each unit ranked by its
    /// best hit): a unit inside a passage already taken only adds its hits to it;
    /// otherwise it is merged with the taken passages it overlaps or touches when
    /// the merged passage (exact count) still fits, else its parts not yet
    /// covered are taken alone when they fit, else it is skipped (or packing
    /// stops, or with `trim` its part holding its best hit is trimmed to whole
    /// sentences, and packing stops). Hits no passage covers are dropped. With a
    /// budget no passage can exceed, the passages are those of [`Self::merge`].
    fn pack(&self, mut units: Vec<Unit>, hits: &[(u64, f64)], budget: usize, p: &Params, tk: &Tokenizer, cache: &mut WordCache) -> Payload {
        let best = |u: &Unit| u.hits.iter().map(|&h| hits[h as usize].1).fold(f64::NEG_INFINITY, f64::max);
        let mut order: Vec<(f64, u32)> = units.iter().enumerate().map(|(i, u)| (best(u), i as u32)).collect();
        order.sort_unstable_by(|&(x, i), &(y, j)| {
            let (a, b) = (&units[i as usize], &units[j as usize]);
            y.total_cmp(&x).then((a.doc, a.start, std::cmp::Reverse(a.end)).cmp(&(b.doc, b.start, std::cmp::Reverse(b.end))))
        });
        // taken passages, each with the (score, start, end) of the unit its section comes from
        let mut taken: Vec<Taken> = Vec::with_capacity(units.len());
        let mut dropped: Vec<u32> = vec![];
        let mut used = 0usize;
        let mut stopped = false;
        let mut touching: Vec<usize> = vec![];
        let mut pieces: Vec<(u32, u32, HitIds)> = vec![];
        for &(_, i) in &order {
            let u = &mut units[i as usize];
            touching.clear();
            let mut inside = None;
            for (j, Taken { p: t, .. }) in taken.iter().enumerate() {
                if t.doc != u.doc {
                    continue;
                }
                if t.start <= u.start && u.end <= t.end {
                    inside = Some(j);
                    break;
                }
                let touches = if u.start <= t.end && t.start <= u.end {
                    true
                } else if t.end < u.start {
                    u.touched_before(self, t.end)
                } else {
                    u.touched_after(self, t.start)
                };
                if touches {
                    touching.push(j);
                }
            }
            if let Some(j) = inside {
                let Taken { p: t, key, .. } = &mut taken[j];
                t.hits.append(&mut u.hits);
                if better((u.score, u.start, u.end), *key) {
                    (*key, t.score, t.section) = ((u.score, u.start, u.end), u.score, u.section);
                }
                continue;
            }
            let mut unit_hits = std::mem::take(&mut u.hits);
            let u = &*u;
            if !stopped {
                // merged with the passages it overlaps or touches
                let (mut s, mut e, mut edges) = (u.start, u.end, u.edges);
                for &j in &touching {
                    let t = &taken[j];
                    if t.p.start < s {
                        (s, edges.0) = (t.p.start, t.edges.0);
                    }
                    if t.p.end > e {
                        (e, edges.1) = (t.p.end, t.edges.1);
                    }
                }
                let freed: usize = touching.iter().map(|&j| taken[j].p.tokens as usize).sum();
                let tokens = u.count(self, tk, cache, s, e, edges);
                if used - freed + tokens as usize <= budget {
                    used = used - freed + tokens as usize;
                    let mut key = (u.score, u.start, u.end);
                    let mut merged = Passage { doc: u.doc, start: s, end: e, tokens, score: u.score, section: u.section, hits: unit_hits };
                    touching.sort_unstable_by(|a, b| b.cmp(a));
                    for &j in &touching {
                        let Taken { p: t, key: k, .. } = taken.swap_remove(j);
                        if better(k, key) {
                            key = k;
                            merged.section = t.section;
                        }
                        merged.hits.extend(t.hits);
                    }
                    merged.score = key.0;
                    taken.push(Taken { p: merged, key, edges });
                    continue;
                }
                // alone, clipped to what the passages it touches do not cover
                let mut placed = false;
                if !touching.is_empty() {
                    self.pieces(u, &unit_hits, &touching, &taken, hits, &mut pieces);
                    let edges: Vec<(Edge, Edge)> = pieces.iter().map(|&(s, e, _)| u.edges_of(self, s, e)).collect();
                    let counts: Vec<u32> = pieces.iter().zip(&edges).map(|(&(s, e, _), &x)| u.count(self, tk, cache, s, e, x)).collect();
                    let total: usize = counts.iter().map(|&c| c as usize).sum();
                    if !pieces.is_empty() && used + total <= budget {
                        used += total;
                        placed = true;
                        for (((s, e, on), tokens), edges) in pieces.drain(..).zip(counts).zip(edges) {
                            unit_hits.retain(|h| !on.contains(h));
                            let passage = Passage { doc: u.doc, start: s, end: e, tokens, score: u.score, section: u.section, hits: on };
                            taken.push(Taken { p: passage, key: (u.score, s, e), edges });
                        }
                    }
                } else if p.trim {
                    pieces.clear();
                    pieces.push((u.start, u.end, unit_hits.clone()));
                }
                // it does not fit: skip it, or stop there (trimming it first), unless
                // all its hits are covered already (then only its context is left out)
                let covered = |h: u32, taken: &[Taken]| {
                    let (ls, le) = self.leaf_span(hits, h);
                    touching.iter().any(|&j| taken[j].p.start <= ls && le <= taken[j].p.end)
                };
                if !placed && (p.trim || p.stop) && unit_hits.iter().any(|&h| !covered(h, &taken)) {
                    if p.trim {
                        // the part holding the unit's best hit, trimmed to whole sentences
                        let top = |x: &(u32, u32, HitIds)| x.2.iter().map(|&h| hits[h as usize].1).fold(f64::NEG_INFINITY, f64::max);
                        if let Some((s, e, on)) = pieces.iter().max_by(|a, b| top(a).total_cmp(&top(b))).cloned() {
                            let mut passage = Passage { doc: u.doc, start: s, end: e, tokens: 0, score: u.score, section: u.section, hits: on };
                            if self.trim(&mut passage, hits, budget - used, tk, cache) {
                                used += passage.tokens as usize;
                                unit_hits.retain(|h| !passage.hits.contains(h));
                                let key = (u.score, passage.start, passage.end);
                                taken.push(Taken { p: passage, key, edges: (Edge::UNKNOWN, Edge::UNKNOWN) });
                            }
                        }
                    }
                    stopped = true;
                }
            }
            // hits left: covered by a passage this unit touches, or dropped
            for h in unit_hits {
                let (ls, le) = self.leaf_span(hits, h);
                match touching.iter().find(|&&j| taken[j].p.start <= ls && le <= taken[j].p.end) {
                    Some(&j) => taken[j].p.hits.push(h),
                    None => dropped.push(h),
                }
            }
        }
        let mut passages: Vec<Passage> = taken.into_iter().map(|t| t.p).collect();
        for passage in passages.iter_mut() {
            passage.hits.sort_unstable();
            passage.hits.dedup();
        }
        dropped.sort_unstable();
        Payload { passages, dropped }
    }

    /// Span of the leaf of hit `h`.
    fn leaf_span(&self, hits: &[(u64, f64)], h: u32) -> (u32, u32) {
        let r = &self.labels[hits[h as usize].0 as usize];
        (r.start, r.end)
    }

    /// The parts of `u` outside the `touching` passages, trimmed of whitespace,
    /// that hold at least one of `unit_hits` (with those hits) and are not
    /// flush against a passage (no whitespace between would make them one).
    fn pieces(&self, u: &Unit, unit_hits: &[u32], touching: &[usize], taken: &[Taken], hits: &[(u64, f64)], out: &mut Vec<(u32, u32, HitIds)>) {
        out.clear();
        let mut cover: Vec<(u32, u32)> = touching.iter().map(|&j| (taken[j].p.start, taken[j].p.end)).collect();
        cover.sort_unstable();
        let mut at = u.start;
        let mut gaps: Vec<(u32, u32)> = Vec::with_capacity(cover.len() + 1);
        for &(s, e) in &cover {
            if s > at {
                gaps.push((at, s.min(u.end)));
            }
            at = at.max(e);
        }
        if at < u.end {
            gaps.push((at, u.end));
        }
        for (gs, ge) in gaps {
            if gs >= ge {
                continue;
            }
            // a whole unit without whitespace at its ends is its own trim (its text is not read)
            let (s, e) = if u.margins.is_some() && (gs, ge) == (u.start, u.end) { (gs, ge) } else { u.doc(self).trim(gs, ge) };
            if s >= e || cover.iter().any(|&(cs, ce)| ce == s || cs == e) {
                continue;
            }
            let on: HitIds = unit_hits
                .iter()
                .copied()
                .filter(|&h| {
                    let (ls, le) = self.leaf_span(hits, h);
                    s <= ls && le <= e
                })
                .collect();
            if !on.is_empty() {
                out.push((s, e, on));
            }
        }
    }

    /// Shrinks `passage` to whole sentences around its best hit within
    /// `room` tokens, keeping only the hits whose leaves stay inside; false
    /// when not even the best hit's sentences fit.
    fn trim(&self, passage: &mut Passage, hits: &[(u64, f64)], room: usize, tk: &Tokenizer, cache: &mut WordCache) -> bool {
        let doc = self.doc_of(passage.doc);
        let leaf_span = |h: u32| self.leaf_span(hits, h);
        let best = *passage.hits.iter().max_by(|&&a, &&b| hits[a as usize].1.total_cmp(&hits[b as usize].1)).unwrap();
        let (mut s, mut e) = leaf_span(best);
        // the sentences inside the passage, and the ones the best leaf overlaps
        let lo = doc.sentences.partition_point(|x| x.start < passage.start);
        let hi = doc.sentences.partition_point(|x| x.end <= passage.end).max(lo);
        let mut a = lo + doc.sentences[lo..hi].partition_point(|x| x.end <= s);
        let mut b = lo + doc.sentences[lo..hi].partition_point(|x| x.start < e);
        if a < b {
            s = s.min(doc.sentences[a].start);
            e = e.max(doc.sentences[b - 1].end);
        }
        let mut sz = doc.sizer(tk, cache);
        let mut tokens = sz_count(doc, &mut sz, s, e);
        if tokens as usize > room {
            return false;
        }
        let (mut grow_after, mut grow_before) = (true, true);
        while grow_after || grow_before {
            if grow_after {
                grow_after = b < hi && doc.sentences[b].start >= e;
                if grow_after {
                    let n = sz_count(doc, &mut sz, s, doc.sentences[b].end);
                    grow_after = n as usize <= room;
                    if grow_after {
                        (e, tokens, b) = (doc.sentences[b].end, n, b + 1);
                    }
                }
            }
            if grow_before {
                grow_before = a > lo && doc.sentences[a - 1].end <= s;
                if grow_before {
                    let n = sz_count(doc, &mut sz, doc.sentences[a - 1].start, e);
                    grow_before = n as usize <= room;
                    if grow_before {
                        (s, tokens, a) = (doc.sentences[a - 1].start, n, a - 1);
                    }
                }
            }
        }
        passage.start = s;
        passage.end = e;
        passage.tokens = tokens;
        passage.hits.retain(|h| {
            let (ls, le) = leaf_span(*h);
            s <= ls && le <= e
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer() -> Tokenizer {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/python/chunkforge/data/all-MiniLM-L6-v2.tokenizer.json");
        Tokenizer::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// "A0. A1. A2. A3." in one section; a root node with two parents of two leaves each.
    fn store(tk: &Tokenizer) -> Store {
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
        let doc = Doc::new(tk, DocInput { text, sentences, nodes, leaves: vec![3, 4, 5, 6], headings: vec![vec![], vec![]] }, None).unwrap();
        let mut store = Store::default();
        store.add(doc, &[10, 11, 12, 13]).unwrap();
        store
    }

    #[test]
    fn margins_say_what_blank_says() {
        let tk = tokenizer();
        let text = "  One.\n\n\tTwo.  Three.é  ";
        let doc = Doc::new(&tk, DocInput { text, sentences: vec![], nodes: vec![], leaves: vec![], headings: vec![] }, None).unwrap();
        let chars = text.chars().count() as u32;
        assert_eq!(doc.longest_blank, 3);
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
        let doc = Doc::new(tk, DocInput { text, sentences, nodes, leaves: vec![1, 2, 3, 4, 5], headings: vec![vec![], vec![]] }, None).unwrap();
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
    fn packing_takes_the_best_hit_before_merging() {
        let tk = tokenizer();
        let st = store(&tk);
        let doc = st.doc(0).unwrap();
        let count = |s: u32, e: u32| tk.with_cache(|c| tk.count(doc.slice(s, e), c)).unwrap();
        let hits = [(10, 0.9), (12, 0.5)];
        // window 1: [0, 1] and [1, 3]; merged they are the whole text, which does
        // not fit: the best hit's window is taken alone, the other hit dropped
        let budget = count(0, 22) + 1;
        let p = Params { window: Some(1), budget: Some(budget), ..Default::default() };
        let out = st.expand(&tk, &hits, &p).unwrap();
        assert_eq!(out.passages.iter().map(|p| (p.start, p.end, p.hits.to_vec())).collect::<Vec<_>>(), vec![(0, 22, vec![0])]);
        assert_eq!(out.dropped, vec![1]);
        // room for the rest of the second window too: merged into one passage
        let p = Params { budget: Some(count(0, 46)), ..p };
        let out = st.expand(&tk, &hits, &p).unwrap();
        assert_eq!(out.passages.iter().map(|p| (p.start, p.end, p.tokens)).collect::<Vec<_>>(), vec![(0, 46, count(0, 46) as u32)]);
        assert_eq!(out, st.expand(&tk, &hits, &Params { budget: None, ..p }).unwrap());
        // trim: the uncovered part of the second window, cut to the hit's sentence
        let p = Params { budget: Some(count(0, 22) + count(23, 33)), trim: true, ..p };
        let out = st.expand(&tk, &hits, &p).unwrap();
        assert_eq!(out.passages.iter().map(|p| (p.start, p.end)).collect::<Vec<_>>(), vec![(0, 22), (23, 33)]);
        assert!(out.dropped.is_empty());
        // a hit inside a taken passage is covered by it, whatever the budget left
        let p = Params { window: Some(2), budget: Some(count(0, 46)), ..Default::default() };
        let out = st.expand(&tk, &[(11, 0.9), (12, 0.5), (13, 0.4)], &p).unwrap();
        assert_eq!((out.passages.len(), out.passages[0].hits.to_vec(), out.dropped.len()), (1, vec![0, 1, 2], 0));
    }
}
