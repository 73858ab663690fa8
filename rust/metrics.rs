//! Span arithmetic for retrieval evaluation: unions and intersections of
//! evidence spans and retrieved spans, measured in characters or in tokens.
//!
//! A span is `(doc, start, end)` in `str` indices. Its size in tokens is the
//! number of the document's tokens whose **last** character lies inside it
//! (`start < token_end <= end`), so sizes add up over disjoint spans and a
//! byte-level BPE token that carries its leading space still belongs to the
//! word it spells.

use crate::error::{input, Result};

/// How a span is sized: characters, or the tokens of its document.
pub enum Measure<'a> {
    Chars,
    /// Per document, the sorted end offsets of its tokens.
    Tokens(Vec<&'a [i64]>),
}

impl Measure<'_> {
    /// Size of `[start, end)` of document `doc`.
    pub fn size(&self, doc: i64, start: i64, end: i64) -> i64 {
        if end <= start {
            return 0;
        }
        match self {
            Measure::Chars => end - start,
            Measure::Tokens(ends) => {
                let ends = ends[doc as usize];
                ends.partition_point(|&t| t <= end) as i64 - ends.partition_point(|&t| t <= start) as i64
            }
        }
    }
}

/// Columns of spans, each tagged with the query it belongs to.
pub struct SpanColumns<'a> {
    pub query: &'a [i64],
    pub doc: &'a [i64],
    pub start: &'a [i64],
    pub end: &'a [i64],
}

impl SpanColumns<'_> {
    fn len(&self) -> usize {
        self.query.len()
    }

    /// Checks lengths, query indices, document indices and `start <= end`.
    fn check(&self, what: &str, queries: usize, docs: Option<usize>) -> Result<()> {
        let n = self.len();
        if self.doc.len() != n || self.start.len() != n || self.end.len() != n {
            return Err(input!("{what}: query, doc, start and end must have the same length"));
        }
        for i in 0..n {
            let (q, d, s, e) = (self.query[i], self.doc[i], self.start[i], self.end[i]);
            if q < 0 || q as usize >= queries {
                return Err(input!("{what}[{i}]: query index {q} is not in 0..{queries}"));
            }
            if d < 0 || docs.is_some_and(|n| d as usize >= n) {
                return Err(input!("{what}[{i}]: document index {d} is out of range"));
            }
            if s < 0 || s > e {
                return Err(input!("{what}[{i}]: span ({s}, {e}) is not a valid span"));
            }
        }
        Ok(())
    }

    /// Row indices grouped by query.
    fn by_query(&self, queries: usize) -> Vec<Vec<usize>> {
        let mut groups = vec![vec![]; queries];
        for (i, &q) in self.query.iter().enumerate() {
            groups[q as usize].push(i);
        }
        groups
    }

    fn span(&self, i: usize) -> Span {
        (self.doc[i], self.start[i], self.end[i])
    }
}

type Span = (i64, i64, i64);

/// Sorted, disjoint union of spans (touching spans merge).
pub fn union(mut spans: Vec<Span>) -> Vec<Span> {
    spans.retain(|s| s.1 < s.2);
    spans.sort_unstable();
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for s in spans {
        match out.last_mut() {
            Some(last) if last.0 == s.0 && s.1 <= last.2 => last.2 = last.2.max(s.2),
            _ => out.push(s),
        }
    }
    out
}

/// Size of the part of `span` inside the sorted disjoint `union`.
fn covered(measure: &Measure, union: &[Span], span: Span) -> i64 {
    let (doc, s, e) = span;
    let first = union.partition_point(|u| (u.0, u.2) <= (doc, s));
    union[first..]
        .iter()
        .take_while(|u| u.0 == doc && u.1 < e)
        .map(|u| measure.size(doc, u.1.max(s), u.2.min(e)))
        .sum()
}

/// Per-query and per-span sizes of evidence against retrieved spans.
#[derive(Debug, PartialEq, Eq)]
pub struct Overlaps {
    /// Per query: size of (union of evidence) ∩ (union of retrieved).
    pub intersection: Vec<i64>,
    /// Per query: size of the union of its evidence.
    pub evidence: Vec<i64>,
    /// Per query: summed size of its retrieved spans, each counted every time it is retrieved.
    pub retrieved: Vec<i64>,
    /// Per evidence span: its size.
    pub evidence_size: Vec<i64>,
    /// Per evidence span: size of its part covered by the query's retrieved spans.
    pub evidence_covered: Vec<i64>,
    /// Per retrieved span: its size.
    pub retrieved_size: Vec<i64>,
    /// Per retrieved span: size of its part inside the query's evidence.
    pub retrieved_relevant: Vec<i64>,
}

/// Sizes everything the token-level metrics need, for `queries` queries at once.
pub fn overlaps(queries: usize, evidence: &SpanColumns, retrieved: &SpanColumns, measure: &Measure) -> Result<Overlaps> {
    let docs = match measure {
        Measure::Chars => None,
        Measure::Tokens(ends) => Some(ends.len()),
    };
    evidence.check("evidence", queries, docs)?;
    retrieved.check("retrieved", queries, docs)?;
    let ev_groups = evidence.by_query(queries);
    let ret_groups = retrieved.by_query(queries);
    let mut out = Overlaps {
        intersection: vec![0; queries],
        evidence: vec![0; queries],
        retrieved: vec![0; queries],
        evidence_size: vec![0; evidence.len()],
        evidence_covered: vec![0; evidence.len()],
        retrieved_size: vec![0; retrieved.len()],
        retrieved_relevant: vec![0; retrieved.len()],
    };
    for q in 0..queries {
        let ev_union = union(ev_groups[q].iter().map(|&i| evidence.span(i)).collect());
        let ret_union = union(ret_groups[q].iter().map(|&i| retrieved.span(i)).collect());
        out.evidence[q] = ev_union.iter().map(|&(d, s, e)| measure.size(d, s, e)).sum();
        out.intersection[q] = ev_union.iter().map(|&span| covered(measure, &ret_union, span)).sum();
        for &i in &ev_groups[q] {
            let (d, s, e) = evidence.span(i);
            out.evidence_size[i] = measure.size(d, s, e);
            out.evidence_covered[i] = covered(measure, &ret_union, (d, s, e));
        }
        for &i in &ret_groups[q] {
            let (d, s, e) = retrieved.span(i);
            out.retrieved_size[i] = measure.size(d, s, e);
            out.retrieved_relevant[i] = covered(measure, &ev_union, (d, s, e));
            out.retrieved[q] += out.retrieved_size[i];
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols<'a>(q: &'a [i64], d: &'a [i64], s: &'a [i64], e: &'a [i64]) -> SpanColumns<'a> {
        SpanColumns { query: q, doc: d, start: s, end: e }
    }

    #[test]
    fn union_merges_overlapping_and_touching_spans_per_document() {
        let u = union(vec![(0, 5, 9), (0, 0, 3), (0, 3, 4), (1, 0, 2), (0, 8, 12), (0, 6, 6)]);
        assert_eq!(u, vec![(0, 0, 4), (0, 5, 12), (1, 0, 2)]);
    }

    #[test]
    fn chars_duplicates_count_in_retrieved_only() {
        // evidence [10, 20) and [15, 30) of doc 0 (union 20 chars); retrieved [0, 16) twice and [25, 40) of doc 0, [10, 20) of doc 1
        let (eq, ed, es, ee) = ([0, 0], [0, 0], [10, 15], [20, 30]);
        let (rq, rd, rs, re) = ([0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 25, 10], [16, 16, 40, 20]);
        let o = overlaps(1, &cols(&eq, &ed, &es, &ee), &cols(&rq, &rd, &rs, &re), &Measure::Chars).unwrap();
        assert_eq!(o.evidence, vec![20]);
        assert_eq!(o.intersection, vec![6 + 5]);
        assert_eq!(o.retrieved, vec![16 + 16 + 15 + 10]);
        assert_eq!(o.evidence_size, vec![10, 15]);
        assert_eq!(o.evidence_covered, vec![6, 1 + 5]);
        assert_eq!(o.retrieved_relevant, vec![6, 6, 5, 0]);
    }

    #[test]
    fn tokens_are_counted_by_their_last_character() {
        // tokens ending at 3, 7, 8, 12: spans count the tokens whose end e satisfies start < e <= end
        let ends: Vec<i64> = vec![3, 7, 8, 12];
        let m = Measure::Tokens(vec![&ends]);
        assert_eq!(m.size(0, 0, 12), 4);
        assert_eq!(m.size(0, 3, 8), 2);
        assert_eq!(m.size(0, 2, 3), 1);
        assert_eq!(m.size(0, 8, 11), 0);
        assert_eq!(m.size(0, 5, 5), 0);
    }

    #[test]
    fn empty_retrieval_and_bad_input() {
        let (eq, ed, es, ee) = ([1], [0], [0], [5]);
        let empty: [i64; 0] = [];
        let o = overlaps(2, &cols(&eq, &ed, &es, &ee), &cols(&empty, &empty, &empty, &empty), &Measure::Chars).unwrap();
        assert_eq!((o.evidence, o.intersection, o.retrieved), (vec![0, 5], vec![0, 0], vec![0, 0]));
        let (bq, bd, bs, be) = ([0], [0], [5], [4]);
        let err = overlaps(1, &cols(&bq, &bd, &bs, &be), &cols(&empty, &empty, &empty, &empty), &Measure::Chars);
        assert!(err.unwrap_err().to_string().contains("evidence[0]"));
    }
}
