//! `span_overlaps`: the span arithmetic of the retrieval evaluation.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::error::{input, Result};
use crate::metrics;

/// `(query, doc, start, end)` int64 columns.
type SpanArgs<'py> = (PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, i64>);

fn span_columns<'a>(cols: &'a SpanArgs<'_>, what: &str) -> Result<metrics::SpanColumns<'a>> {
    let slice = |a: &'a PyReadonlyArray1<'_, i64>| a.as_slice().map_err(|_| input!("{what} arrays must be contiguous"));
    Ok(metrics::SpanColumns { query: slice(&cols.0)?, doc: slice(&cols.1)?, start: slice(&cols.2)?, end: slice(&cols.3)? })
}

/// Evidence against retrieved spans, for `queries` queries: each argument is
/// `(query, doc, start, end)` int64 columns; `token_ends` (per document, the
/// sorted end offsets of its tokens) sizes spans in tokens, None in characters.
/// Returns `(intersection, evidence, retrieved)` per query, then
/// `(evidence_size, evidence_covered)` per evidence span and
/// `(retrieved_size, retrieved_relevant)` per retrieved span.
#[pyfunction]
#[pyo3(signature = (queries, evidence, retrieved, token_ends=None))]
pub fn span_overlaps<'py>(
    py: Python<'py>,
    queries: usize,
    evidence: SpanArgs<'py>,
    retrieved: SpanArgs<'py>,
    token_ends: Option<Vec<PyReadonlyArray1<'py, i64>>>,
) -> PyResult<Vec<Bound<'py, PyArray1<i64>>>> {
    let ev = span_columns(&evidence, "evidence")?;
    let ret = span_columns(&retrieved, "retrieved")?;
    let measure = match &token_ends {
        None => metrics::Measure::Chars,
        Some(arrays) => metrics::Measure::Tokens(
            arrays.iter().map(|a| a.as_slice().map_err(|_| input!("token_ends arrays must be contiguous"))).collect::<Result<_>>()?,
        ),
    };
    let o = py.detach(|| metrics::overlaps(queries, &ev, &ret, &measure))?;
    let cols = [o.intersection, o.evidence, o.retrieved, o.evidence_size, o.evidence_covered, o.retrieved_size, o.retrieved_relevant];
    Ok(cols.into_iter().map(|c| c.into_pyarray(py)).collect())
}
