//! `Tokenizer`: a `tokenizer.json` loaded once, shared by the chunkers and the index.

use std::path::PathBuf;
use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArray3};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::convert::{as_str, borrow_texts};
use crate::spans::{bytes_to_chars, ceil_char};
use crate::threads::parallel_map;
use crate::{encode, tokenizer};

/// A tokenizer loaded from a `tokenizer.json` (HF `tokenizers`), counting without
/// special tokens, truncation or padding.
#[pyclass(frozen, module = "chunkforge._native")]
pub struct Tokenizer {
    pub(super) inner: Arc<tokenizer::Tokenizer>,
}

type ModelInputs<'py> =
    (Bound<'py, PyArray2<i64>>, Bound<'py, PyArray2<i64>>, Option<Bound<'py, PyArray3<i64>>>, Bound<'py, PyArray1<i64>>);

#[pymethods]
impl Tokenizer {
    /// Loads a tokenizer from the JSON text of a `tokenizer.json`.
    #[staticmethod]
    fn from_str(json: &str) -> PyResult<Self> {
        Ok(Tokenizer { inner: Arc::new(tokenizer::Tokenizer::from_json(json)?) })
    }

    /// Loads a tokenizer from a `tokenizer.json` file.
    #[staticmethod]
    fn from_file(path: PathBuf) -> PyResult<Self> {
        Ok(Tokenizer { inner: Arc::new(tokenizer::Tokenizer::from_file(&path)?) })
    }

    /// True when documents take the exact fast path rather than HF's pipeline.
    #[getter]
    fn fast_path(&self) -> bool {
        self.inner.is_fast()
    }

    fn count(&self, py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<usize> {
        let text = as_str(text, &|| "text".into())?;
        let tk = &self.inner;
        Ok(py.detach(|| tk.with_cache(|c| tk.count(text, c)))?)
    }

    #[pyo3(signature = (texts, threads=None))]
    fn count_batch<'py>(&self, py: Python<'py>, texts: &Bound<'py, PyAny>, threads: Option<usize>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let mut holder = vec![];
        let strs = borrow_texts(texts, &mut holder)?;
        let tk = &self.inner;
        let counts = py.detach(|| parallel_map(&strs, threads, |t| tk.with_cache(|c| tk.count(t, c).map(|n| n as i64))))?;
        let counts = counts.into_iter().collect::<Result<Vec<i64>, _>>()?;
        Ok(counts.into_pyarray(py))
    }

    /// Each text's words, saved: `bytes` of 6 per word (`(gap since the last word's
    /// end, length, 2 * tokens + added)` as little-endian u16, byte lengths of its
    /// UTF-8; `added` 1 for an added token written in the text): what
    /// `Expander.add_docs` takes (`words=`) to add the text without tokenizing it again.
    /// None for a text whose words this tokenizer does not count alone (its slow path)
    /// or whose gaps or words do not fit 16 bits.
    #[pyo3(signature = (texts, threads=None))]
    fn words<'py>(&self, py: Python<'py>, texts: &Bound<'py, PyAny>, threads: Option<usize>) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let mut holder = vec![];
        let strs = borrow_texts(texts, &mut holder)?;
        let tk = &self.inner;
        let saved = py.detach(|| parallel_map(&strs, threads, |t| tk.with_cache(|c| tk.analyze(t, false, c)).map(|d| d.saved())))?;
        let saved = saved.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(saved.into_iter().map(|w| w.map(|w| PyBytes::new(py, &w))).collect())
    }

    /// Model inputs for many texts: `(input_ids, attention_mask, offsets, full_lengths)`;
    /// rows padded to the longest (at most `max_length`), special tokens added when
    /// `add_special_tokens`; `offsets` is `(n, width, 2)` code point offsets (0 for
    /// special and padding tokens) or None; `full_lengths` counts tokens before truncation.
    #[pyo3(signature = (texts, max_length, add_special_tokens=true, return_offsets=false, threads=None))]
    fn encode_padded<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        max_length: usize,
        add_special_tokens: bool,
        return_offsets: bool,
        threads: Option<usize>,
    ) -> PyResult<ModelInputs<'py>> {
        let mut holder = vec![];
        let strs = borrow_texts(texts, &mut holder)?;
        let tk = &self.inner;
        let rows = py.detach(|| parallel_map(&strs, threads, |t| encode::encode_one(tk, t, max_length, add_special_tokens)))?;
        let rows = rows.into_iter().collect::<Result<Vec<_>, _>>()?;
        let n = rows.len();
        let p = py.detach(|| encode::pad(rows, tk.pad_id as i64, return_offsets));
        let shape = (n, p.width);
        let ids = numpy::ndarray::Array2::from_shape_vec(shape, p.input_ids).unwrap().into_pyarray(py);
        let mask = numpy::ndarray::Array2::from_shape_vec(shape, p.attention_mask).unwrap().into_pyarray(py);
        let offsets = p.offsets.map(|o| numpy::ndarray::Array3::from_shape_vec((n, p.width, 2), o).unwrap().into_pyarray(py));
        Ok((ids, mask, offsets, p.full_lengths.into_pyarray(py)))
    }

    /// `(texts, bytes)` this tokenizer has tokenized whole so far (words recounted
    /// alone are not counted): a diagnostic, e.g. to check a document is tokenized once.
    #[getter]
    fn tokenized(&self) -> (usize, usize) {
        self.inner.tokenized()
    }

    /// The special token ids put before and after one sequence (e.g. `([101], [102])`).
    fn special_tokens(&self) -> (Vec<u32>, Vec<u32>) {
        let (a, b) = self.inner.special_tokens();
        (a.to_vec(), b.to_vec())
    }

    /// Token ids and `(n, 2)` code point offsets of `text`, without special tokens.
    fn encode_offsets<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyArray1<u32>>, Bound<'py, PyArray2<i64>>)> {
        let text = as_str(text, &|| "text".into())?;
        let tk = &self.inner;
        let doc = py.detach(|| tk.with_cache(|c| tk.analyze(text, true, c)))?;
        let tm = doc.tokens.unwrap_or_default();
        let n = tm.ids.len();
        // a token holding part of a character (byte-level BPE) spans the whole character, as in HF
        let mut offs: Vec<usize> = tm.start.iter().zip(&tm.end).flat_map(|(&s, &e)| [s as usize, ceil_char(text, e as usize)]).collect();
        bytes_to_chars(text, &mut offs);
        let offs: Vec<i64> = offs.into_iter().map(|x| x as i64).collect();
        let offsets = numpy::ndarray::Array2::from_shape_vec((n, 2), offs).unwrap().into_pyarray(py);
        Ok((tm.ids.into_pyarray(py), offsets))
    }
}
