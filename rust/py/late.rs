//! Late chunking: the model windows over a long document's tokens and the pooling
//! of token vectors into span vectors.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::error::{input, Result};
use crate::late;

/// Macro windows for late chunking over `n` tokens: `(starts, owner)`, the first
/// token of each window of `window` tokens (neighbours share at least `overlap`)
/// and, per token, the window its vector is taken from.
#[pyfunction]
pub fn late_windows(
    py: Python<'_>,
    n: usize,
    window: usize,
    overlap: usize,
) -> PyResult<(Bound<'_, PyArray1<i64>>, Bound<'_, PyArray1<i64>>)> {
    if window <= overlap {
        return Err(input!("overlap ({overlap}) must be smaller than the window ({window} tokens)").into());
    }
    let starts = late::window_starts(n, window, overlap);
    let owner: Vec<i64> = late::owners(n, window, &starts).into_iter().map(i64::from).collect();
    let starts: Vec<i64> = starts.into_iter().map(|s| s as i64).collect();
    Ok((starts.into_pyarray(py), owner.into_pyarray(py)))
}

/// Late-chunked span vectors, float32 `(k, dim)`: per span `(start, end)` the mean of
/// the `(t, dim)` token `vectors` whose `(t, 2)` char `offsets` lie inside it (tokens
/// overlapping it when none does), L2-normalized when `normalize`.
#[pyfunction]
pub fn late_pool<'py>(
    py: Python<'py>,
    vectors: numpy::PyReadonlyArray2<'py, f32>,
    offsets: numpy::PyReadonlyArray2<'py, i64>,
    spans: numpy::PyReadonlyArray2<'py, i64>,
    normalize: bool,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let (t, dim) = (vectors.shape()[0], vectors.shape()[1]);
    if offsets.shape() != [t, 2] || spans.shape()[1] != 2 {
        return Err(input!("offsets must be (t, 2) for (t, dim) vectors and spans (k, 2)").into());
    }
    let (vec, offs, sp) = (vectors.as_slice()?, offsets.as_slice()?, spans.as_slice()?);
    let starts: Vec<i64> = offs.iter().step_by(2).copied().collect();
    let ends: Vec<i64> = offs.iter().skip(1).step_by(2).copied().collect();
    let ranges = sp
        .chunks_exact(2)
        .enumerate()
        .map(|(i, p)| {
            late::span_tokens(&starts, &ends, p[0], p[1]).ok_or_else(|| input!("spans[{i}] = ({}, {}) holds no token", p[0], p[1]))
        })
        .collect::<Result<Vec<_>>>()?;
    let out = py.detach(|| late::mean_pool(vec, dim, &ranges, normalize));
    Ok(numpy::ndarray::Array2::from_shape_vec((ranges.len(), dim), out).unwrap().into_pyarray(py))
}
