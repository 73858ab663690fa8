//! `SpanCounter`: exact token counts of any span of one text, tokenized once.

use std::sync::Arc;

use pyo3::prelude::*;

use super::convert::as_str;
use super::tokenizer::Tokenizer;
use crate::error::{input, Result};
use crate::sizer::Sizer;
use crate::spans::CharOffsets;
use crate::tokenizer::{self, DocTokens};

/// Exact token counts of any span of one text, tokenized once: the sizing
/// primitive for chunkers written in Python (code, hierarchy, packing).
#[pyclass(frozen, module = "chunkforge._native")]
pub struct SpanCounter {
    tk: Arc<tokenizer::Tokenizer>,
    text: String,
    doc: DocTokens,
    offsets: CharOffsets,
}

impl SpanCounter {
    fn counts(&self, spans: &[(usize, usize)]) -> Result<Vec<usize>> {
        let chars = self.offsets.chars();
        if let Some(&(s, e)) = spans.iter().find(|&&(s, e)| s > e || e > chars) {
            return Err(input!("span ({s}, {e}) is not within the text (0..{chars})"));
        }
        Ok(self.tk.with_cache(|cache| {
            let mut sz = Sizer::new(&self.tk, &self.text, &self.doc, cache);
            spans.iter().map(|&(s, e)| sz.exact(self.offsets.byte(&self.text, s), self.offsets.byte(&self.text, e))).collect()
        }))
    }
}

#[pymethods]
impl SpanCounter {
    #[new]
    fn new(py: Python<'_>, tokenizer: &Tokenizer, text: &Bound<'_, PyAny>) -> PyResult<Self> {
        let text = as_str(text, &|| "text".into())?.to_string();
        let tk = tokenizer.inner.clone();
        let doc = py.detach(|| tk.with_cache(|c| tk.analyze(&text, false, c)))?;
        let offsets = CharOffsets::new(&text);
        Ok(SpanCounter { tk, text, doc, offsets })
    }

    /// Tokens of `text[start:end]` encoded alone (str indices).
    fn count(&self, start: usize, end: usize) -> PyResult<usize> {
        Ok(self.counts(&[(start, end)])?[0])
    }

    /// Token counts of many spans at once.
    fn count_many(&self, starts: Vec<usize>, ends: Vec<usize>) -> PyResult<Vec<usize>> {
        if starts.len() != ends.len() {
            return Err(input!("starts and ends must have the same length").into());
        }
        Ok(self.counts(&starts.into_iter().zip(ends).collect::<Vec<_>>())?)
    }

    /// The text's length in code points.
    fn __len__(&self) -> usize {
        self.offsets.chars()
    }
}
