//! Packing units into a token budget in score order.
//!
//! Each unit is ranked by its best hit. A unit inside a passage already taken only
//! adds its hits to it; otherwise it is merged with the taken passages it overlaps
//! or touches when the merged passage (exact count) still fits, else its parts not
//! yet covered are taken alone when they fit, else it is skipped (or packing
//! stops, or with `trim` its part holding its best hit is trimmed to whole
//! sentences, and packing stops). Hits no passage covers are dropped. With a
//! budget no passage can exceed, the passages are those of [`Store::merge`].

use super::document::sz_count;
use super::{HitIds, Pack, Params, Passage, Payload, Store, Unit};
use crate::sizer::Edge;
use crate::tokenizer::{Tokenizer, WordCache};

/// True when a unit `(score, start, end)` gives a passage its score and section
/// rather than `b`: a higher score, then the earlier (and longer) span, as in
/// [`Store::merge`]'s sweep.
fn better(a: (f64, u32, u32), b: (f64, u32, u32)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && (a.1, std::cmp::Reverse(a.2)) < (b.1, std::cmp::Reverse(b.2)))
}

/// A passage taken while packing: the `(score, start, end)` of the unit its
/// score and section come from, and its ends' edges.
struct Taken {
    p: Passage,
    key: (f64, u32, u32),
    edges: (Edge, Edge),
}

/// A part of a unit that may be taken alone: its span and the hits inside it.
type Piece = (u32, u32, HitIds);

/// Where packing stands: the passages taken so far, the tokens they use, the hits
/// dropped, whether packing has stopped, and per unit the passages it touches.
struct Packer<'a> {
    store: &'a Store,
    hits: &'a [(u64, f64)],
    budget: usize,
    params: &'a Params,
    taken: Vec<Taken>,
    used: usize,
    dropped: Vec<u32>,
    stopped: bool,
    /// The taken passages the current unit overlaps or touches.
    touching: Vec<usize>,
    /// The current unit's parts outside them (see [`Packer::pieces`]).
    pieces: Vec<Piece>,
}

impl Store {
    /// Packs units into `budget` tokens (see the module's documentation).
    pub(super) fn pack(&self, mut units: Vec<Unit>, hits: &[(u64, f64)], budget: usize, params: &Params, tk: &Tokenizer, cache: &mut WordCache) -> Payload {
        let best = |u: &Unit| u.hits.iter().map(|&h| hits[h as usize].1).fold(f64::NEG_INFINITY, f64::max);
        let mut order: Vec<(f64, u32)> = units.iter().enumerate().map(|(i, u)| (best(u), i as u32)).collect();
        order.sort_unstable_by(|&(x, i), &(y, j)| {
            let (a, b) = (&units[i as usize], &units[j as usize]);
            let (da, db) = (self.document(a.doc), self.document(b.doc));
            y.total_cmp(&x).then((da, a.start, std::cmp::Reverse(a.end)).cmp(&(db, b.start, std::cmp::Reverse(b.end))))
        });
        let mut packer = Packer {
            store: self,
            hits,
            budget,
            params,
            taken: Vec::with_capacity(units.len()),
            used: 0,
            dropped: vec![],
            stopped: false,
            touching: vec![],
            pieces: vec![],
        };
        for &(_, i) in &order {
            packer.place(&mut units[i as usize], tk, cache);
        }
        packer.payload()
    }
}

impl Packer<'_> {
    /// Packs the next unit in score order.
    fn place(&mut self, u: &mut Unit, tk: &Tokenizer, cache: &mut WordCache) {
        if let Some(j) = self.find_contacts(u) {
            self.add_inside(j, u);
            return;
        }
        let mut unit_hits = std::mem::take(&mut u.hits);
        let u = &*u;
        if !self.stopped {
            if self.take_merged(u, &mut unit_hits, tk, cache) {
                return;
            }
            let placed = !self.touching.is_empty() && self.take_pieces(u, &mut unit_hits, tk, cache);
            // it does not fit: skip it, or stop there (trimming it first), unless
            // all its hits are covered already (then only its context is left out)
            let (trim, stop) = (self.params.trim, self.params.pack == Pack::Stop);
            if !placed && (trim || stop) && unit_hits.iter().any(|&h| self.covering(h).is_none()) {
                if trim {
                    self.take_trimmed(u, &mut unit_hits, tk, cache);
                }
                self.stopped = true;
            }
        }
        // hits left: covered by a passage this unit touches, or dropped
        for h in unit_hits {
            match self.covering(h) {
                Some(j) => self.taken[j].p.hits.push(h),
                None => self.dropped.push(h),
            }
        }
    }

    /// The taken passage `u` lies inside, if any; else fills [`Self::touching`]
    /// with those it overlaps or touches.
    fn find_contacts(&mut self, u: &Unit) -> Option<usize> {
        self.touching.clear();
        for (j, Taken { p: t, .. }) in self.taken.iter().enumerate() {
            if t.doc != u.doc {
                continue;
            }
            if t.start <= u.start && u.end <= t.end {
                return Some(j);
            }
            // spans that share characters merge; spans that only touch merge within one
            // section (a passage never crosses a section boundary)
            let touches = if u.start < t.end && t.start < u.end {
                true
            } else if t.section != u.section {
                false
            } else if t.end <= u.start {
                u.touched_before(self.store, t.end)
            } else {
                u.touched_after(self.store, t.start)
            };
            if touches {
                self.touching.push(j);
            }
        }
        None
    }

    /// Adds the hits of `u` to taken passage `j`, which holds it (and its score and
    /// section when `u` is [`better`]).
    fn add_inside(&mut self, j: usize, u: &mut Unit) {
        let Taken { p: t, key, .. } = &mut self.taken[j];
        t.hits.append(&mut u.hits);
        if better((u.score, u.start, u.end), *key) {
            (*key, t.score, t.section) = ((u.score, u.start, u.end), u.score, u.section);
        }
    }

    /// Takes `u` merged with the passages it touches when the merged passage fits
    /// (then it holds `unit_hits`, and true is returned).
    fn take_merged(&mut self, u: &Unit, unit_hits: &mut HitIds, tk: &Tokenizer, cache: &mut WordCache) -> bool {
        let (mut s, mut e, mut edges) = (u.start, u.end, u.edges);
        for &j in &self.touching {
            let t = &self.taken[j];
            if t.p.start < s {
                (s, edges.0) = (t.p.start, t.edges.0);
            }
            if t.p.end > e {
                (e, edges.1) = (t.p.end, t.edges.1);
            }
        }
        let freed: usize = self.touching.iter().map(|&j| self.taken[j].p.tokens as usize).sum();
        let tokens = u.count(self.store, tk, cache, s, e, edges);
        if self.used - freed + tokens as usize > self.budget {
            return false;
        }
        self.used = self.used - freed + tokens as usize;
        let mut key = (u.score, u.start, u.end);
        let hits = std::mem::take(unit_hits);
        let mut merged = Passage { doc: u.doc, start: s, end: e, tokens, score: u.score, section: u.section, hits };
        self.touching.sort_unstable_by(|a, b| b.cmp(a));
        for &j in &self.touching {
            let Taken { p: t, key: k, .. } = self.taken.swap_remove(j);
            if better(k, key) {
                key = k;
                merged.section = t.section;
            }
            merged.hits.extend(t.hits);
        }
        merged.score = key.0;
        self.taken.push(Taken { p: merged, key, edges });
        true
    }

    /// Takes the parts of `u` that the passages it touches do not cover, alone, when
    /// they all fit (their hits leave `unit_hits`; true is returned).
    fn take_pieces(&mut self, u: &Unit, unit_hits: &mut HitIds, tk: &Tokenizer, cache: &mut WordCache) -> bool {
        self.pieces(u, unit_hits);
        let edges: Vec<(Edge, Edge)> = self.pieces.iter().map(|&(s, e, _)| u.edges_of(self.store, s, e)).collect();
        let counts: Vec<u32> = self.pieces.iter().zip(&edges).map(|(&(s, e, _), &x)| u.count(self.store, tk, cache, s, e, x)).collect();
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        if self.pieces.is_empty() || self.used + total > self.budget {
            return false;
        }
        self.used += total;
        for (((s, e, on), tokens), edges) in self.pieces.drain(..).zip(counts).zip(edges) {
            unit_hits.retain(|h| !on.contains(h));
            let passage = Passage { doc: u.doc, start: s, end: e, tokens, score: u.score, section: u.section, hits: on };
            self.taken.push(Taken { p: passage, key: (u.score, s, e), edges });
        }
        true
    }

    /// Takes the part of `u` holding its best hit (of its pieces when it touches
    /// passages, else the whole unit) trimmed to whole sentences, when that fits.
    fn take_trimmed(&mut self, u: &Unit, unit_hits: &mut HitIds, tk: &Tokenizer, cache: &mut WordCache) {
        if self.touching.is_empty() {
            self.pieces.clear();
            self.pieces.push((u.start, u.end, unit_hits.clone()));
        }
        let hits = self.hits;
        let top = |x: &Piece| x.2.iter().map(|&h| hits[h as usize].1).fold(f64::NEG_INFINITY, f64::max);
        let Some((s, e, on)) = self.pieces.iter().max_by(|a, b| top(a).total_cmp(&top(b))).cloned() else {
            return;
        };
        let mut passage = Passage { doc: u.doc, start: s, end: e, tokens: 0, score: u.score, section: u.section, hits: on };
        if self.trim(&mut passage, self.budget - self.used, tk, cache) {
            self.used += passage.tokens as usize;
            unit_hits.retain(|h| !passage.hits.contains(h));
            let key = (u.score, passage.start, passage.end);
            self.taken.push(Taken { p: passage, key, edges: (Edge::UNKNOWN, Edge::UNKNOWN) });
        }
    }

    /// The passage the current unit touches that holds the leaf of hit `h`, if any.
    fn covering(&self, h: u32) -> Option<usize> {
        let (ls, le) = self.store.leaf_span(self.hits, h);
        self.touching.iter().copied().find(|&j| self.taken[j].p.start <= ls && le <= self.taken[j].p.end)
    }

    /// The passages taken and the hits dropped.
    fn payload(self) -> Payload {
        let mut passages: Vec<Passage> = self.taken.into_iter().map(|t| t.p).collect();
        for passage in passages.iter_mut() {
            passage.hits.sort_unstable();
            passage.hits.dedup();
        }
        let mut dropped = self.dropped;
        dropped.sort_unstable();
        Payload { passages, dropped }
    }

    /// Sets [`Self::pieces`] to the parts of `u` outside the touching passages,
    /// trimmed of whitespace, that hold at least one of `unit_hits` (with those
    /// hits) and are not flush against a passage (no whitespace between would make
    /// them one).
    fn pieces(&mut self, u: &Unit, unit_hits: &[u32]) {
        self.pieces.clear();
        let mut cover: Vec<(u32, u32)> = self.touching.iter().map(|&j| (self.taken[j].p.start, self.taken[j].p.end)).collect();
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
            let (s, e) = if u.margins.is_some() && (gs, ge) == (u.start, u.end) { (gs, ge) } else { u.doc(self.store).trim(gs, ge) };
            if s >= e || cover.iter().any(|&(cs, ce)| ce == s || cs == e) {
                continue;
            }
            let on: HitIds = unit_hits
                .iter()
                .copied()
                .filter(|&h| {
                    let (ls, le) = self.store.leaf_span(self.hits, h);
                    s <= ls && le <= e
                })
                .collect();
            if !on.is_empty() {
                self.pieces.push((s, e, on));
            }
        }
    }


    /// Shrinks `passage` to whole sentences around its best hit within
    /// `room` tokens, keeping only the hits whose leaves stay inside; false
    /// when not even the best hit's sentences fit.
    fn trim(&self, passage: &mut Passage, room: usize, tk: &Tokenizer, cache: &mut WordCache) -> bool {
        let (store, hits) = (self.store, self.hits);
        let doc = store.doc_of(passage.doc);
        let leaf_span = |h: u32| store.leaf_span(hits, h);
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
    use crate::expand::tests::{store, tokenizer};
    use crate::expand::Params;

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
