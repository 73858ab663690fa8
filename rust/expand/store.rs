//! The documents of an index and the map from leaf labels to leaves: what a hit
//! is looked up in.

use super::document::{Doc, LeafSentences};
use crate::error::{input, Error, Result};
use crate::sizer::Edge;
use crate::spans::NONE;

/// A label's leaf: its document slot and node, with a copy of what expanding
/// it reads first, so that a hit costs one memory access before its document
/// is touched (on a large index that access misses the caches).
#[derive(Clone, Copy, Debug)]
#[repr(align(64))] // one cache line a row
pub(super) struct LeafRef {
    /// The document's slot, [`NONE`] for a free label.
    pub(super) slot: u32,
    pub(super) node: u32,
    pub(super) parent: u32,
    pub(super) section: u32,
    pub(super) start: u32,
    pub(super) end: u32,
    /// The word indices of its edges.
    words: (u32, u32),
    /// The prefix sum at its start when both its edges are clean (that at its end
    /// is `cum + tokens` then), else [`NONE`].
    cum: u32,
    pub(super) sentences: LeafSentences,
    pub(super) tokens: u32,
    /// See [`Doc::margins`]; [`NONE`]s for a leaf with whitespace at an end.
    pub(super) margins: (u32, u32),
}

impl LeafRef {
    /// The edges of its start and end.
    pub(super) fn edges(&self) -> (Edge, Edge) {
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
    /// Per slot: a document and its leaves' labels; None for a free slot.
    docs: Vec<Option<(Doc, Box<[u64]>)>>,
    /// Free slots, the next one to fill last.
    free: Vec<u32>,
    /// The leaf of each label; [`FREE`] for a free label.
    labels: Vec<LeafRef>,
}

impl Store {
    /// Adds a document whose leaves get `labels`; returns its slot (a free one
    /// when a removed document left one, so that the slots stay as many as the
    /// documents held at once).
    pub fn add(&mut self, mut doc: Doc, labels: &[u64]) -> Result<usize> {
        if labels.len() != doc.leaves.len() {
            return Err(input!("{} labels for {} leaves", labels.len(), doc.leaves.len()));
        }
        for &l in labels {
            if self.labels.get(l as usize).is_some_and(|x| x.slot != NONE) {
                return Err(input!("label {l} is already in use"));
            }
        }
        let slot = self.free.last().copied().unwrap_or(self.docs.len() as u32);
        let leaf_margins = std::mem::take(&mut doc.leaf_margins); // kept in the labels' rows
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
            let (margins, sentences) = (leaf_margins[i], doc.leaf_sentences[i]);
            self.labels[l] = LeafRef { slot, node, parent, section, start, end, words, cum, sentences, tokens, margins };
        }
        let entry = Some((doc, labels.into()));
        if self.free.pop().is_some() {
            self.docs[slot as usize] = entry;
        } else {
            self.docs.push(entry);
        }
        Ok(slot as usize)
    }

    /// Removes the document in `slot` and frees its labels and the slot.
    pub fn remove(&mut self, slot: usize) -> Result<()> {
        match self.docs.get_mut(slot).and_then(Option::take) {
            None => Err(Error::NotInIndex(format!("no document in slot {slot}"))),
            Some((_, labels)) => {
                for &l in labels.iter() {
                    self.labels[l as usize] = FREE;
                }
                self.free.push(slot as u32);
                Ok(())
            }
        }
    }

    /// The document in `slot`.
    pub fn doc(&self, slot: usize) -> Option<&Doc> {
        self.docs.get(slot).and_then(Option::as_ref).map(|(doc, _)| doc)
    }

    /// The document in `slot`, which a unit's or a passage's slot always holds.
    pub(super) fn doc_of(&self, slot: u32) -> &Doc {
        &self.docs[slot as usize].as_ref().unwrap().0
    }

    /// The document in `slot`, which a leaf's slot always holds, and its leaves' labels.
    pub(super) fn doc_and_labels(&self, slot: u32) -> (&Doc, &[u64]) {
        let (doc, labels) = self.docs[slot as usize].as_ref().unwrap();
        (doc, labels)
    }

    /// The leaf of `label`, [`FREE`] (its slot [`NONE`]) for a free label.
    pub(super) fn leaf_ref(&self, label: u64) -> LeafRef {
        self.labels.get(label as usize).copied().unwrap_or(FREE)
    }

    /// `(slot, start, end, section)` of the leaf with `label`, None for a free label.
    pub fn leaf(&self, label: u64) -> Option<(u32, u32, u32, u32)> {
        self.labels.get(label as usize).filter(|r| r.slot != NONE).map(|r| (r.slot, r.start, r.end, r.section))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{doc, tokenizer};
    use super::*;

    #[test]
    fn a_removed_documents_labels_and_slot_are_free_for_the_next() {
        let tk = tokenizer();
        let mut store = Store::default();
        assert_eq!(store.add(doc(&tk), &[0, 1, 2, 3]).unwrap(), 0);
        assert_eq!(store.add(doc(&tk), &[4, 5, 6, 7]).unwrap(), 1);
        store.remove(0).unwrap();
        assert!((0..4).all(|l| store.leaf(l).is_none()) && store.leaf(4).is_some_and(|leaf| leaf.0 == 1));
        assert!(matches!(store.remove(0), Err(Error::NotInIndex(_))));
        // the free slot goes to the next document, with labels old or new
        assert_eq!(store.add(doc(&tk), &[2, 3, 8, 9]).unwrap(), 0);
        assert_eq!(store.add(doc(&tk), &[0, 1, 10, 11]).unwrap(), 2);
        assert_eq!([2, 8, 0, 4].map(|l| store.leaf(l).unwrap().0), [0, 0, 2, 1]);
        assert!(store.add(doc(&tk), &[12, 13, 14, 5]).is_err()); // label 5 is slot 1's
    }
}
