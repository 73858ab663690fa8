//! `Chunker`: a configured chunking strategy over one tokenizer; spans come back as
//! columnar numpy arrays in code point offsets.

use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::prelude::*;

use super::convert::{as_str, borrow_texts, id_arrays, matrix, IdArrays};
use super::tokenizer::Tokenizer;
use crate::error::{input, Result};
use crate::spans::{bytes_to_chars, ChunkSpan};
use crate::split::{self, Config, Strategy};
use crate::threads::parallel_map;
use crate::tokenizer;

/// A configured chunker: `spans` / `spans_batch` return columnar numpy arrays.
#[pyclass(frozen, module = "chunkforge._native")]
pub struct Chunker {
    tk: Arc<tokenizer::Tokenizer>,
    cfg: Config,
}

type Col<'py> = Bound<'py, PyArray1<i64>>;
type SpanArrays<'py> = (Col<'py>, Col<'py>, Col<'py>, Col<'py>);
type SpanRows<'py> = (Col<'py>, Col<'py>, Col<'py>, Col<'py>, Option<IdArrays<'py>>);
type SpanIdArrays<'py> = (Col<'py>, Col<'py>, Col<'py>, Col<'py>, Bound<'py, PyArray1<u32>>, Col<'py>);
type StructuredRow<'py> = (Bound<'py, PyArray2<i64>>, Vec<Vec<String>>, Option<IdArrays<'py>>);
type StructuredIdRow<'py> = (Bound<'py, PyArray2<i64>>, Vec<Vec<String>>, Bound<'py, PyArray1<u32>>, Col<'py>);

/// Chunk spans of one document in code point offsets: `(start, end, tokens)`.
fn char_spans(text: &str, spans: Vec<ChunkSpan>) -> Vec<(i64, i64, i64)> {
    let mut offs: Vec<usize> = spans.iter().flat_map(|c| [c.start, c.end]).collect();
    bytes_to_chars(text, &mut offs);
    spans.iter().zip(offs.chunks_exact(2)).map(|(c, o)| (o[0] as i64, o[1] as i64, c.tokens as i64)).collect()
}

fn unzip3(it: impl Iterator<Item = (i64, i64, i64)>) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let (mut a, mut b, mut c) = (vec![], vec![], vec![]);
    for (x, y, z) in it {
        a.push(x);
        b.push(y);
        c.push(z);
    }
    (a, b, c)
}

#[pymethods]
impl Chunker {
    /// `strategy` is one of `Strategy::from_name`'s names; the Python classes
    /// validate the parameters before they get here.
    #[new]
    #[pyo3(signature = (tokenizer, strategy, max_tokens, overlap=0, min_tokens=0, overlap_sentences=0, separators=None))]
    fn new(
        tokenizer: &Tokenizer,
        strategy: &str,
        max_tokens: usize,
        overlap: usize,
        min_tokens: usize,
        overlap_sentences: usize,
        separators: Option<Vec<String>>,
    ) -> PyResult<Self> {
        if max_tokens < 1 {
            return Err(input!("max_tokens must be at least 1").into());
        }
        if overlap >= max_tokens {
            return Err(input!("overlap must be smaller than max_tokens").into());
        }
        let strategy = Strategy::from_name(strategy, min_tokens, overlap_sentences, separators)?;
        Ok(Chunker { tk: tokenizer.inner.clone(), cfg: Config { strategy, max_tokens, overlap } })
    }

    /// `(starts, ends, token_counts)` of the chunks of `text`.
    fn spans<'py>(&self, py: Python<'py>, text: &Bound<'py, PyAny>) -> PyResult<(Col<'py>, Col<'py>, Col<'py>)> {
        let text = as_str(text, &|| "text".into())?;
        let spans = py.detach(|| split::chunk(&self.tk, text, &self.cfg).map(|s| char_spans(text, s)))?;
        let (s, e, n) = unzip3(spans.into_iter());
        Ok((s.into_pyarray(py), e.into_pyarray(py), n.into_pyarray(py)))
    }

    /// Chunks of structured documents (markdown, rst, asciidoc strategies): per
    /// text, a `(n, 7)` array of rows `(start, end, token_count, section, kind,
    /// context_start, context_end)` (context -1 when none) and the heading path
    /// of each section.
    #[pyo3(signature = (texts, threads=None))]
    fn structured_batch<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        threads: Option<usize>,
    ) -> PyResult<Vec<(Bound<'py, PyArray2<i64>>, Vec<Vec<String>>)>> {
        let rows = self.structured(py, texts, threads, false)?;
        Ok(rows.into_iter().map(|(rows, sections, _)| (rows, sections)).collect())
    }

    /// [`structured_batch`] with each text's chunks' token ids: `(rows, sections,
    /// token_ids, bounds)` per text (see `spans_batch_ids`).
    #[pyo3(signature = (texts, threads=None))]
    fn structured_batch_ids<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        threads: Option<usize>,
    ) -> PyResult<Vec<StructuredIdRow<'py>>> {
        let rows = self.structured(py, texts, threads, true)?;
        Ok(rows
            .into_iter()
            .map(|(rows, sections, ids)| {
                let (ids, bounds) = ids.unwrap();
                (rows, sections, ids, bounds)
            })
            .collect())
    }

    /// `(doc_index, starts, ends, token_counts)` of the chunks of every text, in input order.
    #[pyo3(signature = (texts, threads=None))]
    fn spans_batch<'py>(&self, py: Python<'py>, texts: &Bound<'py, PyAny>, threads: Option<usize>) -> PyResult<SpanArrays<'py>> {
        let (doc, s, e, n, _) = self.span_rows(py, texts, threads, false)?;
        Ok((doc, s, e, n))
    }

    /// `spans_batch` and the chunks' token ids from the tokenization the chunker sized on:
    /// `(doc_index, starts, ends, token_counts, token_ids, bounds)`; chunk `i`'s ids
    /// (without special tokens, as if its text were encoded alone) are
    /// `token_ids[bounds[i]:bounds[i + 1]]`.
    #[pyo3(signature = (texts, threads=None))]
    fn spans_batch_ids<'py>(&self, py: Python<'py>, texts: &Bound<'py, PyAny>, threads: Option<usize>) -> PyResult<SpanIdArrays<'py>> {
        let (doc, s, e, n, ids) = self.span_rows(py, texts, threads, true)?;
        let (ids, bounds) = ids.unwrap();
        Ok((doc, s, e, n, ids, bounds))
    }
}

impl Chunker {
    fn span_rows<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        threads: Option<usize>,
        with_ids: bool,
    ) -> PyResult<SpanRows<'py>> {
        let mut holder = vec![];
        let strs = borrow_texts(texts, &mut holder)?;
        let per_doc = py.detach(|| {
            parallel_map(&strs, threads, |t| -> Result<_> {
                let (spans, ids) = split::chunk_with(&self.tk, t, &self.cfg, with_ids)?;
                Ok((char_spans(t, spans), ids))
            })
        })?;
        let mut doc = vec![];
        let mut rows = vec![];
        let (mut all_ids, mut all_bounds) = (vec![], vec![0usize]);
        for (i, r) in per_doc.into_iter().enumerate() {
            let (spans, ids) = r.map_err(|e| e.at(format_args!("texts[{i}]")))?;
            doc.extend(std::iter::repeat_n(i as i64, spans.len()));
            rows.extend(spans);
            if let Some((ids, bounds)) = ids {
                let base = all_ids.len();
                all_ids.extend(ids);
                all_bounds.extend(bounds[1..].iter().map(|b| base + b));
            }
        }
        let (s, e, n) = unzip3(rows.into_iter());
        let ids = with_ids.then(|| id_arrays(py, all_ids, all_bounds));
        Ok((doc.into_pyarray(py), s.into_pyarray(py), e.into_pyarray(py), n.into_pyarray(py), ids))
    }

    fn structured<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        threads: Option<usize>,
        with_ids: bool,
    ) -> PyResult<Vec<StructuredRow<'py>>> {
        let mut holder = vec![];
        let strs = borrow_texts(texts, &mut holder)?;
        let per_doc = py.detach(|| parallel_map(&strs, threads, |t| split::structured_rows(&self.tk, &self.cfg, t, with_ids)))?;
        per_doc
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let (rows, sections, ids) = r.map_err(|e| e.at(format_args!("texts[{i}]")))?;
                Ok((matrix(py, &rows), sections, ids.map(|(ids, bounds)| id_arrays(py, ids, bounds))))
            })
            .collect()
    }
}
