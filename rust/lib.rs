//! Python bindings of chunkforge's native core. Only binding code lives here:
//! the concepts are in their own modules.

mod encode;
mod expand;
mod metrics;
mod late;
mod pretokenize;
mod segment;
mod sizer;
mod spans;
mod structure;
mod split;
mod tokenizer;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::exceptions::{PyIOError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyIterator, PyString};
use rayon::prelude::*;

use segment::Level;
use spans::{bytes_to_chars, ChunkSpan};
use split::{Config, Strategy};

/// Borrows the UTF-8 of a Python `str`; lone surrogates are a ValueError naming `what`.
fn as_str<'a>(obj: &'a Bound<'_, PyAny>, what: &dyn Fn() -> String) -> PyResult<&'a str> {
    let s = obj.downcast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{} must be str, not {}",
            what(),
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    s.to_str().map_err(|e| {
        PyValueError::new_err(format!(
            "{} is not valid Unicode (it holds a lone surrogate; chunkforge needs text that \
             encodes to UTF-8): {}",
            what(),
            e.value(obj.py())
        ))
    })
}

/// The `str` items of a Python iterable, kept alive in `holder`.
fn collect_texts<'py>(texts: &Bound<'py, PyAny>, holder: &mut Vec<Bound<'py, PyAny>>) -> PyResult<()> {
    if texts.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err("texts must be a list of str, not a single str"));
    }
    let iter = PyIterator::from_object(texts)
        .map_err(|_| PyTypeError::new_err("texts must be an iterable of str"))?;
    for item in iter {
        holder.push(item?);
    }
    Ok(())
}

fn borrow_all<'a>(holder: &'a [Bound<'_, PyAny>]) -> PyResult<Vec<&'a str>> {
    holder.iter().enumerate().map(|(i, o)| as_str(o, &|| format!("texts[{i}]"))).collect()
}

/// Runs `f` over `items` on `threads` threads (None: all cores), in input order.
fn parallel_map<T: Sync, R: Send>(items: &[T], threads: Option<usize>, f: impl Fn(&T) -> R + Sync + Send) -> PyResult<Vec<R>> {
    match threads {
        Some(0) => Err(PyValueError::new_err("threads must be at least 1")),
        Some(1) => Ok(items.iter().map(f).collect()),
        None => Ok(items.par_iter().map(f).collect()),
        Some(n) => {
            static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
            let pool = POOLS
                .get_or_init(Default::default)
                .lock()
                .unwrap()
                .entry(n)
                .or_insert_with(|| Arc::new(rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap()))
                .clone();
            Ok(pool.install(|| items.par_iter().map(f).collect()))
        }
    }
}

/// A tokenizer loaded from a `tokenizer.json` (HF `tokenizers`), counting without
/// special tokens, truncation or padding.
#[pyclass(frozen, module = "chunkforge._native")]
struct Tokenizer {
    inner: Arc<tokenizer::Tokenizer>,
}

#[pymethods]
impl Tokenizer {
    /// Loads a tokenizer from the JSON text of a `tokenizer.json`.
    #[staticmethod]
    fn from_str(json: &str) -> PyResult<Self> {
        let inner = tokenizer::Tokenizer::from_json(json)
            .map_err(|e| PyValueError::new_err(format!("not a valid tokenizer.json: {e}")))?;
        Ok(Tokenizer { inner: Arc::new(inner) })
    }

    /// Loads a tokenizer from a `tokenizer.json` file.
    #[staticmethod]
    fn from_file(path: PathBuf) -> PyResult<Self> {
        let json = std::fs::read_to_string(&path)
            .map_err(|e| PyIOError::new_err(format!("cannot read tokenizer file {}: {e}", path.display())))?;
        let inner = tokenizer::Tokenizer::from_json(&json).map_err(|e| {
            PyValueError::new_err(format!("{} is not a valid tokenizer.json: {e}", path.display()))
        })?;
        Ok(Tokenizer { inner: Arc::new(inner) })
    }

    /// True when documents take the exact fast path rather than HF's pipeline.
    #[getter]
    fn fast_path(&self) -> bool {
        self.inner.is_fast()
    }

    fn count(&self, py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<usize> {
        let text = as_str(text, &|| "text".into())?;
        let tk = &self.inner;
        py.detach(|| tk.with_cache(|c| tk.count(text, c))).map_err(PyValueError::new_err)
    }

    #[pyo3(signature = (texts, threads=None))]
    fn count_batch<'py>(&self, py: Python<'py>, texts: &Bound<'py, PyAny>, threads: Option<usize>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let mut holder = vec![];
        collect_texts(texts, &mut holder)?;
        let strs = borrow_all(&holder)?;
        let tk = &self.inner;
        let counts = py.detach(|| {
            parallel_map(&strs, threads, |t| tk.with_cache(|c| tk.count(t, c).map(|n| n as i64)))
        })?;
        let counts: Result<Vec<i64>, String> = counts.into_iter().collect();
        Ok(counts.map_err(PyValueError::new_err)?.into_pyarray(py))
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
    ) -> PyResult<(Bound<'py, PyArray2<i64>>, Bound<'py, PyArray2<i64>>, Option<Bound<'py, numpy::PyArray3<i64>>>, Bound<'py, PyArray1<i64>>)> {
        let mut holder = vec![];
        collect_texts(texts, &mut holder)?;
        let strs = borrow_all(&holder)?;
        let tk = &self.inner;
        let rows = py.detach(|| parallel_map(&strs, threads, |t| encode::encode_one(tk, t, max_length, add_special_tokens)))?;
        let rows: Vec<_> = rows.into_iter().collect::<Result<_, _>>().map_err(PyValueError::new_err)?;
        let n = rows.len();
        let p = py.detach(|| encode::pad(rows, tk.pad_id as i64, return_offsets));
        let shape = (n, p.width);
        let ids = numpy::ndarray::Array2::from_shape_vec(shape, p.input_ids).unwrap().into_pyarray(py);
        let mask = numpy::ndarray::Array2::from_shape_vec(shape, p.attention_mask).unwrap().into_pyarray(py);
        let offsets = p.offsets.map(|o| numpy::ndarray::Array3::from_shape_vec((n, p.width, 2), o).unwrap().into_pyarray(py));
        Ok((ids, mask, offsets, p.full_lengths.into_pyarray(py)))
    }

    /// The special token ids put before and after one sequence (e.g. `([101], [102])`).
    fn special_tokens(&self) -> (Vec<u32>, Vec<u32>) {
        let (a, b) = self.inner.special_tokens();
        (a.to_vec(), b.to_vec())
    }

    /// Token ids and `(n, 2)` code point offsets of `text`, without special tokens.
    fn encode_offsets<'py>(&self, py: Python<'py>, text: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyArray1<u32>>, Bound<'py, PyArray2<i64>>)> {
        let text = as_str(text, &|| "text".into())?;
        let tk = &self.inner;
        let doc = py.detach(|| tk.with_cache(|c| tk.analyze(text, true, c))).map_err(PyValueError::new_err)?;
        let tm = doc.tokens.unwrap_or_default();
        let n = tm.ids.len();
        // a token holding part of a character (byte-level BPE) spans the whole character, as in HF
        let mut offs: Vec<usize> = tm.start.iter().zip(&tm.end).flat_map(|(&s, &e)| [s as usize, spans::ceil_char(text, e as usize)]).collect();
        bytes_to_chars(text, &mut offs);
        let offs: Vec<i64> = offs.into_iter().map(|x| x as i64).collect();
        let offsets = numpy::ndarray::Array2::from_shape_vec((n, 2), offs).unwrap().into_pyarray(py);
        Ok((tm.ids.into_pyarray(py), offsets))
    }
}

/// A configured chunker: `spans` / `spans_batch` return columnar numpy arrays.
#[pyclass(frozen, module = "chunkforge._native")]
struct Chunker {
    tk: Arc<tokenizer::Tokenizer>,
    cfg: Config,
}

type SpanArrays<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>);

/// Chunk spans of one document in code point offsets.
fn char_spans(text: &str, spans: Vec<ChunkSpan>) -> Vec<(i64, i64, i64)> {
    let mut offs: Vec<usize> = spans.iter().flat_map(|c| [c.start, c.end]).collect();
    bytes_to_chars(text, &mut offs);
    spans.iter().enumerate().map(|(i, c)| (offs[2 * i] as i64, offs[2 * i + 1] as i64, c.tokens as i64)).collect()
}

#[pymethods]
impl Chunker {
    /// `strategy` is "token", "recursive" or "sentence"; the Python classes
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
            return Err(PyValueError::new_err("max_tokens must be at least 1"));
        }
        if overlap >= max_tokens {
            return Err(PyValueError::new_err("overlap must be smaller than max_tokens"));
        }
        let strategy = match strategy {
            "token" => Strategy::Token,
            "recursive" => Strategy::Recursive {
                levels: match separators {
                    None => Level::defaults(),
                    Some(seps) => seps.into_iter().map(Level::Literal).collect(),
                },
                min_tokens,
            },
            "sentence" => Strategy::Sentence { overlap_sentences },
            "markdown" | "rst" | "asciidoc" => Strategy::Structured { syntax: strategy.to_string(), min_tokens },
            other => return Err(PyValueError::new_err(format!("unknown strategy {other:?}"))),
        };
        Ok(Chunker { tk: tokenizer.inner.clone(), cfg: Config { strategy, max_tokens, overlap } })
    }

    /// `(starts, ends, token_counts)` of the chunks of `text`.
    fn spans<'py>(&self, py: Python<'py>, text: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
        let text = as_str(text, &|| "text".into())?;
        let spans = py.detach(|| split::chunk(&self.tk, text, &self.cfg).map(|s| char_spans(text, s)))
            .map_err(PyValueError::new_err)?;
        let (s, e, n) = unzip3(spans.into_iter());
        Ok((s.into_pyarray(py), e.into_pyarray(py), n.into_pyarray(py)))
    }

    /// Chunks of structured documents (markdown, rst, asciidoc strategies): per
    /// text, a `(n, 7)` array of rows `(start, end, token_count, section, kind,
    /// context_start, context_end)` (context -1 when none) and the heading path
    /// of each section.
    #[pyo3(signature = (texts, threads=None))]
    fn structured_batch<'py>(&self, py: Python<'py>, texts: &Bound<'py, PyAny>, threads: Option<usize>) -> PyResult<Vec<(Bound<'py, PyArray2<i64>>, Vec<Vec<String>>)>> {
        let mut holder = vec![];
        collect_texts(texts, &mut holder)?;
        let strs = borrow_all(&holder)?;
        let per_doc = py.detach(|| parallel_map(&strs, threads, |t| structured_rows(&self.tk, &self.cfg, t)))?;
        per_doc
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let (rows, sections) = r.map_err(|e| PyValueError::new_err(format!("texts[{i}]: {e}")))?;
                let flat: Vec<i64> = rows.iter().flatten().copied().collect();
                let arr = numpy::ndarray::Array2::from_shape_vec((rows.len(), 7), flat).unwrap().into_pyarray(py);
                Ok((arr, sections))
            })
            .collect()
    }

    /// `(doc_index, starts, ends, token_counts)` of the chunks of every text, in input order.
    #[pyo3(signature = (texts, threads=None))]
    fn spans_batch<'py>(&self, py: Python<'py>, texts: &Bound<'py, PyAny>, threads: Option<usize>) -> PyResult<SpanArrays<'py>> {
        let mut holder = vec![];
        collect_texts(texts, &mut holder)?;
        let strs = borrow_all(&holder)?;
        let per_doc = py.detach(|| {
            parallel_map(&strs, threads, |t| split::chunk(&self.tk, t, &self.cfg).map(|s| char_spans(t, s)))
        })?;
        let mut doc = vec![];
        let mut rows = vec![];
        for (i, r) in per_doc.into_iter().enumerate() {
            let spans = r.map_err(|e| PyValueError::new_err(format!("texts[{i}]: {e}")))?;
            doc.extend(std::iter::repeat_n(i as i64, spans.len()));
            rows.extend(spans);
        }
        let (s, e, n) = unzip3(rows.into_iter());
        Ok((doc.into_pyarray(py), s.into_pyarray(py), e.into_pyarray(py), n.into_pyarray(py)))
    }
}

/// Columns of a structured document's chunks, and its sections' heading paths.
type StructuredRows = (Vec<[i64; 7]>, Vec<Vec<String>>);

fn structured_rows(tk: &tokenizer::Tokenizer, cfg: &Config, text: &str) -> Result<StructuredRows, String> {
    let Strategy::Structured { syntax, min_tokens } = &cfg.strategy else {
        return Err("this chunker has no document structure".into());
    };
    let outline = match syntax.as_str() {
        "markdown" => structure::markdown(text),
        other => structure::titled(text, other == "asciidoc"),
    };
    let spans = split::chunk_structured(tk, text, &outline, cfg.max_tokens, *min_tokens, cfg.overlap)?;
    let mut offs: Vec<usize> = spans
        .iter()
        .flat_map(|c| {
            let (cs, ce) = c.context.unwrap_or((0, 0));
            [c.span.start, c.span.end, cs, ce]
        })
        .collect();
    bytes_to_chars(text, &mut offs);
    let rows = spans
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let o = &offs[4 * i..4 * i + 4];
            let (cs, ce) = if c.context.is_some() { (o[2] as i64, o[3] as i64) } else { (-1, -1) };
            [o[0] as i64, o[1] as i64, c.span.tokens as i64, c.section as i64, c.kind as i64, cs, ce]
        })
        .collect();
    Ok((rows, outline.sections))
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

/// Exact token counts of any span of one text, tokenized once: the sizing
/// primitive for chunkers written in Python (code, hierarchy, packing).
#[pyclass(frozen, module = "chunkforge._native")]
struct SpanCounter {
    tk: Arc<tokenizer::Tokenizer>,
    text: String,
    doc: tokenizer::DocTokens,
    /// Byte offset of each char (None when the text is ASCII).
    char_bytes: Option<Vec<u32>>,
    chars: usize,
}

impl SpanCounter {
    fn byte(&self, i: usize) -> usize {
        self.char_bytes.as_ref().map_or(i, |b| b[i] as usize)
    }

    fn counts(&self, spans: &[(usize, usize)]) -> PyResult<Vec<usize>> {
        for &(s, e) in spans {
            if s > e || e > self.chars {
                return Err(PyValueError::new_err(format!(
                    "span ({s}, {e}) is not within the text (0..{})",
                    self.chars
                )));
            }
        }
        Ok(self.tk.with_cache(|cache| {
            let mut sz = sizer::Sizer::new(&self.tk, &self.text, &self.doc, cache);
            spans.iter().map(|&(s, e)| sz.exact(self.byte(s), self.byte(e))).collect()
        }))
    }
}

#[pymethods]
impl SpanCounter {
    #[new]
    fn new(py: Python<'_>, tokenizer: &Tokenizer, text: &Bound<'_, PyAny>) -> PyResult<Self> {
        let text = as_str(text, &|| "text".into())?.to_string();
        let tk = tokenizer.inner.clone();
        let doc = py.detach(|| tk.with_cache(|c| tk.analyze(&text, false, c))).map_err(PyValueError::new_err)?;
        let char_bytes = (!text.is_ascii()).then(|| {
            let mut v: Vec<u32> = text.char_indices().map(|(i, _)| i as u32).collect();
            v.push(text.len() as u32);
            v
        });
        let chars = char_bytes.as_ref().map_or(text.len(), |v| v.len() - 1);
        Ok(SpanCounter { tk, text, doc, char_bytes, chars })
    }

    /// Tokens of `text[start:end]` encoded alone (str indices).
    fn count(&self, start: usize, end: usize) -> PyResult<usize> {
        Ok(self.counts(&[(start, end)])?[0])
    }

    /// Token counts of many spans at once.
    fn count_many(&self, starts: Vec<usize>, ends: Vec<usize>) -> PyResult<Vec<usize>> {
        if starts.len() != ends.len() {
            return Err(PyValueError::new_err("starts and ends must have the same length"));
        }
        self.counts(&starts.into_iter().zip(ends).collect::<Vec<_>>())
    }

    fn __len__(&self) -> usize {
        self.chars
    }
}

/// Sentence spans `[(start, end), ...]` of `text` in code point offsets.
#[pyfunction]
fn split_sentences(py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<Vec<(usize, usize)>> {
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

/// Macro windows for late chunking over `n` tokens: `(starts, owner)`, the first
/// token of each window of `window` tokens (neighbours share at least `overlap`)
/// and, per token, the window its vector is taken from.
#[pyfunction]
fn late_windows<'py>(py: Python<'py>, n: usize, window: usize, overlap: usize) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
    if window <= overlap {
        return Err(PyValueError::new_err(format!("window_overlap ({overlap}) must be smaller than the window ({window} tokens)")));
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
fn late_pool<'py>(
    py: Python<'py>,
    vectors: numpy::PyReadonlyArray2<'py, f32>,
    offsets: numpy::PyReadonlyArray2<'py, i64>,
    spans: numpy::PyReadonlyArray2<'py, i64>,
    normalize: bool,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    use numpy::PyUntypedArrayMethods;
    let (t, dim) = (vectors.shape()[0], vectors.shape()[1]);
    if offsets.shape() != [t, 2] || spans.shape()[1] != 2 {
        return Err(PyValueError::new_err("offsets must be (t, 2) for (t, dim) vectors and spans (k, 2)"));
    }
    let (vec, offs, sp) = (vectors.as_slice()?, offsets.as_slice()?, spans.as_slice()?);
    let starts: Vec<i64> = offs.iter().step_by(2).copied().collect();
    let ends: Vec<i64> = offs.iter().skip(1).step_by(2).copied().collect();
    let ranges = sp
        .chunks_exact(2)
        .enumerate()
        .map(|(i, p)| {
            late::span_tokens(&starts, &ends, p[0], p[1])
                .ok_or_else(|| PyValueError::new_err(format!("spans[{i}] = ({}, {}) holds no token", p[0], p[1])))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let out = py.detach(|| late::mean_pool(vec, dim, &ranges, normalize));
    Ok(numpy::ndarray::Array2::from_shape_vec((ranges.len(), dim), out).unwrap().into_pyarray(py))
}

type SpanArgs<'py> = (
    numpy::PyReadonlyArray1<'py, i64>,
    numpy::PyReadonlyArray1<'py, i64>,
    numpy::PyReadonlyArray1<'py, i64>,
    numpy::PyReadonlyArray1<'py, i64>,
);

fn span_columns<'a>(cols: &'a SpanArgs<'_>, what: &str) -> PyResult<metrics::SpanColumns<'a>> {
    let slice = |a: &'a numpy::PyReadonlyArray1<'_, i64>| {
        a.as_slice().map_err(|_| PyValueError::new_err(format!("{what} arrays must be contiguous")))
    };
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
fn span_overlaps<'py>(
    py: Python<'py>,
    queries: usize,
    evidence: SpanArgs<'py>,
    retrieved: SpanArgs<'py>,
    token_ends: Option<Vec<numpy::PyReadonlyArray1<'py, i64>>>,
) -> PyResult<Vec<Bound<'py, PyArray1<i64>>>> {
    let ev = span_columns(&evidence, "evidence")?;
    let ret = span_columns(&retrieved, "retrieved")?;
    let measure = match &token_ends {
        None => metrics::Measure::Chars,
        Some(arrays) => metrics::Measure::Tokens(
            arrays
                .iter()
                .map(|a| a.as_slice().map_err(|_| PyValueError::new_err("token_ends arrays must be contiguous")))
                .collect::<PyResult<_>>()?,
        ),
    };
    let o = py.detach(|| metrics::overlaps(queries, &ev, &ret, &measure)).map_err(PyValueError::new_err)?;
    let cols = [o.intersection, o.evidence, o.retrieved, o.evidence_size, o.evidence_covered, o.retrieved_size, o.retrieved_relevant];
    Ok(cols.into_iter().map(|c| c.into_pyarray(py)).collect())
}

/// The expansion side of an index: documents (text, sentences, tree) and the
/// map from leaf labels to leaves; `expand` turns hits into a payload.
#[pyclass(module = "chunkforge._native")]
struct Expander {
    tk: Arc<tokenizer::Tokenizer>,
    store: expand::Store,
}

/// Rows of an int64 array as u32 tuples of width `W`; errors name `what`.
fn rows<const W: usize>(a: &numpy::PyReadonlyArray2<'_, i64>, what: &str) -> PyResult<Vec<[u32; W]>> {
    let a = a.as_array();
    if a.ncols() != W {
        return Err(PyValueError::new_err(format!("{what} must have {W} columns, not {}", a.ncols())));
    }
    a.rows()
        .into_iter()
        .map(|r| {
            let mut out = [0u32; W];
            for (o, &x) in out.iter_mut().zip(r.iter()) {
                *o = if x == -1 { u32::MAX } else { u32::try_from(x).map_err(|_| PyValueError::new_err(format!("{what}: {x} is out of range")))? };
            }
            Ok(out)
        })
        .collect()
}

/// Expansion parameters from the Python options.
fn expand_params(
    window: Option<u32>,
    window_tokens: Option<u32>,
    parent: bool,
    auto_merge: Option<f64>,
    budget: Option<usize>,
    order: &str,
    pack: &str,
    trim: bool,
) -> PyResult<expand::Params> {
    let by_document = match order {
        "score" => false,
        "document" => true,
        _ => return Err(PyValueError::new_err(format!("order must be 'score' or 'document', not {order:?}"))),
    };
    let stop = match pack {
        "skip" => false,
        "stop" => true,
        _ => return Err(PyValueError::new_err(format!("pack must be 'skip' or 'stop', not {pack:?}"))),
    };
    Ok(expand::Params { window, window_tokens, parent, auto_merge, budget, by_document, stop, trim })
}

#[pymethods]
impl Expander {
    #[new]
    fn new(tokenizer: &Tokenizer) -> Self {
        Expander { tk: tokenizer.inner.clone(), store: expand::Store::default() }
    }

    /// Adds documents (tokenized in parallel); per document: its text, sentences
    /// `(n, 3)` `(start, end, section)`, nodes `(m, 4)` `(start, end, parent or -1,
    /// section)` parents first, leaf node indices, and the leaves' labels.
    /// Returns the documents' slots.
    fn add_docs(
        &mut self,
        py: Python<'_>,
        texts: Vec<String>,
        sentences: Vec<numpy::PyReadonlyArray2<'_, i64>>,
        nodes: Vec<numpy::PyReadonlyArray2<'_, i64>>,
        leaves: Vec<Vec<u32>>,
        labels: Vec<Vec<u64>>,
    ) -> PyResult<Vec<usize>> {
        let n = texts.len();
        if [sentences.len(), nodes.len(), leaves.len(), labels.len()].iter().any(|&m| m != n) {
            return Err(PyValueError::new_err("texts, sentences, nodes, leaves and labels must have the same length"));
        }
        let mut inputs = Vec::with_capacity(n);
        for i in 0..n {
            let sents = rows::<3>(&sentences[i], &format!("sentences[{i}]"))?;
            let tree = rows::<4>(&nodes[i], &format!("nodes[{i}]"))?;
            inputs.push((sents, tree, leaves[i].clone()));
        }
        let tk = &self.tk;
        let docs: Vec<Result<expand::Doc, String>> = py.detach(|| {
            inputs
                .into_par_iter()
                .zip(texts.par_iter())
                .map(|((sents, tree, leaves), text)| {
                    expand::Doc::new(tk, expand::DocInput {
                        text,
                        sentences: sents.into_iter().map(|r| (r[0], r[1], r[2])).collect(),
                        nodes: tree.into_iter().map(|r| (r[0], r[1], r[2], r[3])).collect(),
                        leaves,
                    })
                })
                .collect()
        });
        let docs: Vec<expand::Doc> = docs
            .into_iter()
            .enumerate()
            .map(|(i, d)| d.map_err(|e| PyValueError::new_err(format!("document {i}: {e}"))))
            .collect::<PyResult<_>>()?;
        docs.into_iter()
            .zip(&labels)
            .enumerate()
            .map(|(i, (d, l))| self.store.add(d, l).map_err(|e| PyValueError::new_err(format!("document {i}: {e}"))))
            .collect()
    }

    /// Removes the document in `slot`; its labels become free.
    fn remove(&mut self, slot: usize) -> PyResult<()> {
        self.store.remove(slot).map_err(PyValueError::new_err)
    }

    /// Expands hits into passages, from and to Python objects, so that no per-hit
    /// or per-passage work is left to Python: `hits` is a sequence of objects with `leaf` and
    /// `score` attributes (`Hit`), `docs[slot]` has `doc_id`, `text` and
    /// `headings` attributes. Returns `(passages, dropped hits)`, each passage
    /// a `passage_type` tuple `(doc_id, start, end, token_count, score,
    /// heading_path, covered hits, document text)`.
    #[pyo3(signature = (hits, docs, passage_type, window=None, window_tokens=None, parent=false, auto_merge=None, budget=None, order="score", pack="skip", trim=false))]
    #[allow(clippy::too_many_arguments)]
    fn expand_objects<'py>(
        &self,
        py: Python<'py>,
        hits: &Bound<'py, PyAny>,
        docs: &Bound<'py, pyo3::types::PyList>,
        passage_type: &Bound<'py, pyo3::types::PyType>,
        window: Option<u32>,
        window_tokens: Option<u32>,
        parent: bool,
        auto_merge: Option<f64>,
        budget: Option<usize>,
        order: &str,
        pack: &str,
        trim: bool,
    ) -> PyResult<(Bound<'py, pyo3::types::PyList>, Bound<'py, pyo3::types::PyList>)> {
        use pyo3::intern;
        use pyo3::types::{PyList, PyTuple};
        let params = expand_params(window, window_tokens, parent, auto_merge, budget, order, pack, trim)?;
        let objects: Vec<Bound<'py, PyAny>> = hits.try_iter()?.collect::<PyResult<_>>()?;
        let mut pairs = Vec::with_capacity(objects.len());
        for (i, h) in objects.iter().enumerate() {
            let leaf = h.getattr(intern!(py, "leaf")).and_then(|x| x.extract::<u64>());
            let score = h.getattr(intern!(py, "score")).and_then(|x| x.extract::<f64>());
            match (leaf, score) {
                (Ok(l), Ok(s)) => pairs.push((l, s)),
                _ => return Err(PyTypeError::new_err(format!("hits[{i}] is not a Hit (from Index.search)"))),
            }
        }
        let payload = self.store.expand(&self.tk, &pairs, &params).map_err(PyValueError::new_err)?;
        let new = py.get_type::<PyTuple>().getattr(intern!(py, "__new__"))?;
        let passages = PyList::empty(py);
        for p in payload.passages {
            let doc = docs.get_item(p.doc as usize)?;
            let heading = doc.getattr(intern!(py, "headings"))?.get_item(p.section)?;
            let covered = PyTuple::new(py, p.hits.iter().map(|&i| &objects[i as usize]))?;
            let doc_id = doc.getattr(intern!(py, "doc_id"))?;
            let text = doc.getattr(intern!(py, "text"))?;
            let row = (doc_id, p.start, p.end, p.tokens, p.score, heading, covered, text);
            // tuple.__new__, not a hand-made allocation: it also sets what a tuple caches
            passages.append(new.call1((passage_type, row))?)?;
        }
        let dropped = PyList::new(py, payload.dropped.iter().map(|&i| &objects[i as usize]))?;
        Ok((passages, dropped))
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Tokenizer>()?;
    m.add_class::<Chunker>()?;
    m.add_class::<SpanCounter>()?;
    m.add_class::<Expander>()?;
    m.add_function(wrap_pyfunction!(split_sentences, m)?)?;
    m.add_function(wrap_pyfunction!(span_overlaps, m)?)?;
    m.add_function(wrap_pyfunction!(late_windows, m)?)?;
    m.add_function(wrap_pyfunction!(late_pool, m)?)?;
    Ok(())
}
