//! `split_sentences`: the sentence segmenter the chunkers and the index use.

use pyo3::prelude::*;

use super::convert::as_str;
use crate::segment;
use crate::spans::bytes_to_chars;

/// Sentence spans `[(start, end), ...]` of `text` in code point offsets.
#[pyfunction]
pub fn split_sentences(py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<Vec<(usize, usize)>> {
    let text = as_str(text, &|| "text".into())?;
    let spans = py.detach(|| {
        let mut out = vec![];
        segment::sentences(text, 0, text.len(), &mut out);
        out
    });
    let mut offs: Vec<usize> = spans.iter().flat_map(|&(a, b)| [a, b]).collect();
    bytes_to_chars(text, &mut offs);
    Ok(offs.chunks(2).map(|p| (p[0], p[1])).collect())
}
