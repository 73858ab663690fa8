//! Relevance spread: what a payload should hold, decided from the hits alone.
//!
//! Each hit's relevance `r` is its score rescaled to [0, 1] between the weakest and
//! the best hit; it lends each leaf `d` leaves away in its section (`d <= reach`)
//! `r * decay^d`, and a leaf's utility is the noisy-or of what it has (its own
//! relevance, what its neighbours lend): `1 - prod(1 - r_i)`. So a lone hit among weak
//! ones goes bare, the leaves around and between a cluster of hits rise above the
//! weaker hits, and a run of hits fills its parent; the budget then takes leaves in
//! utility order. `decay` 0 keeps the hits' order.

use rustc_hash::FxHashMap;

use super::store::Store;
use crate::error::{Error, Result};
use crate::spans::NONE;

/// Leaves either side of a hit that [`Store::spread`] lends relevance to.
pub const SPREAD_REACH: usize = 4;

/// A leaf reached by the spread: its label, the product of `1 - what it has`, and the
/// rank it was first reached at (a hit's own leaf at the hit's rank, a neighbour at
/// the number of hits plus the lending hit's rank).
struct Reached {
    label: u64,
    missing: f64,
    order: usize,
}

impl Store {
    /// `(label, utility)` of the leaves the hits `(label, score)` reach, best first
    /// (ties: the rank each was first reached at, then the order reached).
    pub fn spread(&self, hits: &[(u64, f64)], decay: f64, reach: usize) -> Result<Vec<(u64, f64)>> {
        let Some(top) = hits.iter().map(|h| h.1).reduce(f64::max) else { return Ok(vec![]) };
        let floor = hits.iter().map(|h| h.1).fold(f64::INFINITY, f64::min);
        let scale = top - floor;
        let mut reached: Vec<Reached> = Vec::with_capacity(hits.len() * (1 + 2 * reach));
        let mut at: FxHashMap<u64, usize> = FxHashMap::default();
        let mut take = |label: u64, keep: f64, order: usize| match at.get(&label) {
            Some(&k) => reached[k].missing *= keep,
            None => {
                at.insert(label, reached.len());
                reached.push(Reached { label, missing: keep, order });
            }
        };
        for (rank, &(label, score)) in hits.iter().enumerate() {
            if score.is_nan() {
                return Err(crate::error::input!("hits[{rank}]: score is NaN"));
            }
            let r = if scale > 0.0 { (score - floor) / scale } else { 1.0 };
            take(label, 1.0 - r, rank);
            if r <= 0.0 || decay <= 0.0 {
                continue;
            }
            let leaf = self.leaf_ref(label);
            if leaf.slot == NONE {
                return Err(Error::NotInIndex(format!("hits[{rank}]: leaf {label} is not in the index")));
            }
            let (doc, labels) = self.doc_and_labels(leaf.slot);
            let i = doc.nodes[leaf.node as usize].leaf as usize;
            for d in 1..=reach {
                // as `r * decay**d` in Python: the C library's pow, not repeated products
                let lent = r * decay.powf(d as f64);
                for j in [i.checked_sub(d), Some(i + d)].into_iter().flatten() {
                    if j < labels.len() && doc.nodes[doc.leaves[j] as usize].section == leaf.section {
                        take(labels[j], 1.0 - lent, hits.len() + rank);
                    }
                }
            }
        }
        reached.sort_by(|a, b| a.missing.total_cmp(&b.missing).then(a.order.cmp(&b.order)));
        Ok(reached.into_iter().map(|x| (x.label, 1.0 - x.missing)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{store, tokenizer};
    use super::*;

    #[test]
    fn a_cluster_lends_its_neighbours_more_than_a_weak_hit_has() {
        let tk = tokenizer();
        let st = store(&tk);
        // leaves 10..13 in one section: 11 is the best hit, 12 the weakest (relevance 0)
        assert_eq!(st.spread(&[(11, 2.0), (12, 1.0)], 0.5, SPREAD_REACH).unwrap(), [(11, 1.0), (10, 0.5), (12, 0.5), (13, 0.25)]);
        // decay 0: the hits' order, nothing lent
        assert_eq!(st.spread(&[(11, 2.0), (12, 1.0)], 0.0, SPREAD_REACH).unwrap(), [(11, 1.0), (12, 0.0)]);
        // one hit: relevance 1, its neighbours in order of distance, then of position
        let one = st.spread(&[(10, 0.3)], 0.5, 2).unwrap();
        assert_eq!(one, [(10, 1.0), (11, 0.5), (12, 0.25)]);
        assert!(st.spread(&[], 0.5, 4).unwrap().is_empty());
        assert!(matches!(st.spread(&[(99, 1.0), (10, 0.5)], 0.5, 4), Err(Error::NotInIndex(_))));
    }
}
