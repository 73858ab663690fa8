//! Python bindings of chunkforge's native core. Only binding code lives here:
//! the concepts are in their own modules.

/// The concept modules: private, and public with the `fuzzing` feature (for the
/// `cargo fuzz` targets in `fuzz/`, which check their invariants directly).
macro_rules! modules {
    ($($m:ident),*) => {$(
        #[cfg(feature = "fuzzing")]
        #[doc(hidden)]
        pub mod $m;
        #[cfg(not(feature = "fuzzing"))]
        mod $m;
    )*};
}
modules!(encode, expand, metrics, late, pretokenize, segment, sizer, slots, spans, structure, split, tokenizer, tree);

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use numpy::{IntoPyArray, PyArray1, PyArray2};
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use pyo3::exceptions::{PyIOError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyIterator, PyString, PyType};
use rayon::prelude::*;

use segment::Level;
use spans::{bytes_to_chars, ChunkSpan};
use split::{Config, Strategy};

/// Borrows the UTF-8 of a Python `str`; lone surrogates are a ValueError naming `what`.
fn as_str<'a>(obj: &'a Bound<'_, PyAny>, what: &dyn Fn() -> String) -> PyResult<&'a str> {
    let s = obj.downcast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!("{} must be str, not {}", what(), obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()))
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
    let iter = PyIterator::from_object(texts).map_err(|_| PyTypeError::new_err("texts must be an iterable of str"))?;
    for item in iter {
        holder.push(item?);
    }
    Ok(())
}

fn borrow_all<'a>(holder: &'a [Bound<'_, PyAny>]) -> PyResult<Vec<&'a str>> {
    holder.iter().enumerate().map(|(i, o)| as_str(o, &|| format!("texts[{i}]"))).collect()
}

/// The largest `threads` accepted: 4 x the cores (more threads than that only
/// cost memory and scheduling, and a typo like `threads=10**6` would otherwise
/// try to start a million OS threads).
fn max_threads() -> usize {
    4 * std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Pools kept for explicit `threads` values, least recently used first: at most
/// this many, so that many distinct values cannot pile up live threads.
const KEPT_POOLS: usize = 4;

/// A pool of `n` threads from a small LRU of pools (an evicted pool's threads
/// exit once the pool is no longer in use).
fn pool(n: usize) -> PyResult<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>>> = OnceLock::new();
    let mut pools = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = pools.iter().position(|(k, _)| *k == n) {
        let entry = pools.remove(i);
        let pool = entry.1.clone();
        pools.push(entry);
        return Ok(pool);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .map_err(|e| PyValueError::new_err(format!("threads={n}: cannot start the threads: {e}")))?;
    let pool = Arc::new(pool);
    if pools.len() >= KEPT_POOLS {
        pools.remove(0);
    }
    pools.push((n, pool.clone()));
    Ok(pool)
}

/// Checks a `threads` argument: `1 <= threads <= max_threads()`.
fn check_threads(threads: Option<usize>) -> PyResult<()> {
    match threads {
        Some(n) if n < 1 || n > max_threads() => Err(PyValueError::new_err(format!(
            "threads must be between 1 and {} (4 x the {} cores), got {n}",
            max_threads(),
            max_threads() / 4
        ))),
        _ => Ok(()),
    }
}

/// Runs `f` over `items` on `threads` threads (None: all cores), in input order.
fn parallel_map<T: Sync, R: Send>(items: &[T], threads: Option<usize>, f: impl Fn(&T) -> R + Sync + Send) -> PyResult<Vec<R>> {
    check_threads(threads)?;
    match threads {
        Some(1) => Ok(items.iter().map(f).collect()),
        None => Ok(items.par_iter().map(f).collect()),
        Some(n) => Ok(pool(n)?.install(|| items.par_iter().map(f).collect())),
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
        let inner = tokenizer::Tokenizer::from_json(json).map_err(|e| PyValueError::new_err(format!("not a valid tokenizer.json: {e}")))?;
        Ok(Tokenizer { inner: Arc::new(inner) })
    }

    /// Loads a tokenizer from a `tokenizer.json` file.
    #[staticmethod]
    fn from_file(path: PathBuf) -> PyResult<Self> {
        let json = std::fs::read_to_string(&path)
            .map_err(|e| PyIOError::new_err(format!("cannot read tokenizer file {}: {e}", path.display())))?;
        let inner = tokenizer::Tokenizer::from_json(&json)
            .map_err(|e| PyValueError::new_err(format!("{} is not a valid tokenizer.json: {e}", path.display())))?;
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
        let counts = py.detach(|| parallel_map(&strs, threads, |t| tk.with_cache(|c| tk.count(t, c).map(|n| n as i64))))?;
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
    ) -> PyResult<(Bound<'py, PyArray2<i64>>, Bound<'py, PyArray2<i64>>, Option<Bound<'py, numpy::PyArray3<i64>>>, Bound<'py, PyArray1<i64>>)>
    {
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
        let doc = py.detach(|| tk.with_cache(|c| tk.analyze(text, true, c))).map_err(PyValueError::new_err)?;
        let tm = doc.tokens.unwrap_or_default();
        let n = tm.ids.len();
        // a token holding part of a character (byte-level BPE) spans the whole character, as in HF
        let mut offs: Vec<usize> =
            tm.start.iter().zip(&tm.end).flat_map(|(&s, &e)| [s as usize, spans::ceil_char(text, e as usize)]).collect();
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

type Col<'py> = Bound<'py, PyArray1<i64>>;
type SpanArrays<'py> = (Col<'py>, Col<'py>, Col<'py>, Col<'py>);
type SpanRows<'py> = (Col<'py>, Col<'py>, Col<'py>, Col<'py>, Option<IdArrays<'py>>);
type SpanIdArrays<'py> = (Col<'py>, Col<'py>, Col<'py>, Col<'py>, Bound<'py, PyArray1<u32>>, Col<'py>);
type StructuredIdRow<'py> = (Bound<'py, PyArray2<i64>>, Vec<Vec<String>>, Bound<'py, PyArray1<u32>>, Col<'py>);

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
            "markdown" | "rst" | "asciidoc" => {
                Strategy::Structured { syntax: structure::Syntax::from_name(strategy).map_err(PyValueError::new_err)?, min_tokens }
            }
            other => return Err(PyValueError::new_err(format!("unknown strategy {other:?}"))),
        };
        Ok(Chunker { tk: tokenizer.inner.clone(), cfg: Config { strategy, max_tokens, overlap } })
    }

    /// `(starts, ends, token_counts)` of the chunks of `text`.
    fn spans<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
        let text = as_str(text, &|| "text".into())?;
        let spans = py.detach(|| split::chunk(&self.tk, text, &self.cfg).map(|s| char_spans(text, s))).map_err(PyValueError::new_err)?;
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
        collect_texts(texts, &mut holder)?;
        let strs = borrow_all(&holder)?;
        let per_doc = py.detach(|| {
            parallel_map(&strs, threads, |t| {
                if with_ids {
                    split::chunk_with(&self.tk, t, &self.cfg, true).map(|(s, ids)| (char_spans(t, s), ids))
                } else {
                    split::chunk(&self.tk, t, &self.cfg).map(|s| (char_spans(t, s), None))
                }
            })
        })?;
        let mut doc = vec![];
        let mut rows = vec![];
        let (mut all_ids, mut all_bounds) = (vec![], vec![0usize]);
        for (i, r) in per_doc.into_iter().enumerate() {
            let (spans, ids) = r.map_err(|e| PyValueError::new_err(format!("texts[{i}]: {e}")))?;
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
    ) -> PyResult<Vec<StructuredBatchRow<'py>>> {
        let mut holder = vec![];
        collect_texts(texts, &mut holder)?;
        let strs = borrow_all(&holder)?;
        let per_doc = py.detach(|| parallel_map(&strs, threads, |t| structured_rows(&self.tk, &self.cfg, t, with_ids)))?;
        per_doc
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let (rows, sections, ids) = r.map_err(|e| PyValueError::new_err(format!("texts[{i}]: {e}")))?;
                let flat: Vec<i64> = rows.iter().flatten().copied().collect();
                let arr = numpy::ndarray::Array2::from_shape_vec((rows.len(), 7), flat).unwrap().into_pyarray(py);
                Ok((arr, sections, ids.map(|(ids, bounds)| id_arrays(py, ids, bounds))))
            })
            .collect()
    }
}

/// Token ids of spans as numpy arrays: `(ids, bounds)`.
fn id_arrays(py: Python<'_>, ids: Vec<u32>, bounds: Vec<usize>) -> IdArrays<'_> {
    let bounds: Vec<i64> = bounds.into_iter().map(|b| b as i64).collect();
    (ids.into_pyarray(py), bounds.into_pyarray(py))
}

type IdArrays<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<i64>>);
type StructuredBatchRow<'py> = (Bound<'py, PyArray2<i64>>, Vec<Vec<String>>, Option<IdArrays<'py>>);

/// Columns of a structured document's chunks, its sections' heading paths, and maybe the chunks' token ids.
type StructuredRows = (Vec<[i64; 7]>, Vec<Vec<String>>, Option<(Vec<u32>, Vec<usize>)>);

fn structured_rows(tk: &tokenizer::Tokenizer, cfg: &Config, text: &str, with_ids: bool) -> Result<StructuredRows, String> {
    let Strategy::Structured { syntax, min_tokens } = &cfg.strategy else {
        return Err("this chunker has no document structure".into());
    };
    let outline = structure::outline(text, *syntax);
    let (spans, ids) = split::chunk_structured(tk, text, &outline, (cfg.max_tokens, *min_tokens, cfg.overlap), with_ids)?;
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
    Ok((rows, outline.sections, ids))
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
                return Err(PyValueError::new_err(format!("span ({s}, {e}) is not within the text (0..{})", self.chars)));
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

/// The largest `threads` value accepted (4 x the cores).
#[pyfunction(name = "max_threads")]
fn py_max_threads() -> usize {
    max_threads()
}

/// `s` as UTF-8, a lone surrogate written as Python's `surrogatepass` does.
fn surrogatepass_utf8<'a>(s: &'a Bound<'_, PyString>) -> PyResult<std::borrow::Cow<'a, [u8]>> {
    match s.to_str() {
        Ok(text) => Ok(std::borrow::Cow::Borrowed(text.as_bytes())),
        Err(_) => Ok(std::borrow::Cow::Owned(s.call_method1("encode", ("utf-8", "surrogatepass"))?.extract()?)),
    }
}

/// The stable id of a tree node (`tree::node_id`).
#[pyfunction]
fn node_id(doc_id: &Bound<'_, PyString>, start: u64, end: u64, level: u64) -> PyResult<String> {
    Ok(tree::node_id(&surrogatepass_utf8(doc_id)?, start, end, level))
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
fn late_windows<'py>(
    py: Python<'py>,
    n: usize,
    window: usize,
    overlap: usize,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
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
/// Owns each document's id and text as Python strings, and its sections'
/// heading paths as tuples, so that payloads share them.
///
/// Safe to share between threads: its documents sit behind a readers-writer lock
/// (parking_lot's: many readers, or one writer; a waiting writer holds back new
/// readers, so a stream of expansions cannot starve it), taken for the Rust work of
/// one call only, never while Python code may run, and waited for with the GIL
/// released. So `expand` needs no lock of the caller's.
#[pyclass(module = "chunkforge._native", frozen)]
struct Expander {
    tk: Arc<tokenizer::Tokenizer>,
    docs: RwLock<Docs>,
    types: Types,
}

/// The Python types an expander makes, checked once: hits (a frozen, slotted
/// dataclass whose `__slots__` are, in order, `(doc_id, start, end, score, text,
/// heading_path, id, leaf)`), passages and payloads (named tuples).
struct Types {
    hit: Py<PyType>,
    /// The hit's fields, in `__slots__` order.
    hit_fields: Vec<slots::Field>,
    /// Its `leaf` and `score`, which `expand` reads.
    leaf: slots::Field,
    score: slots::Field,
    passage: slots::TupleType,
    payload: slots::TupleType,
}

impl Types {
    fn check(hit: &Bound<'_, PyType>, passage: &Bound<'_, PyType>, payload: &Bound<'_, PyType>) -> PyResult<Self> {
        let py = hit.py();
        let names: Vec<Bound<'_, PyString>> = hit.getattr(pyo3::intern!(py, "__slots__"))?.extract()?;
        if names.len() != 8 {
            return Err(PyTypeError::new_err(format!("{} must have the 8 fields of a hit, not {}", hit.name()?, names.len())));
        }
        let hit_fields = names.into_iter().map(|name| slots::Field::of(hit, name)).collect();
        let (leaf, score) =
            (slots::Field::of(hit, pyo3::intern!(py, "leaf").clone()), slots::Field::of(hit, pyo3::intern!(py, "score").clone()));
        let (passage, payload) = (slots::TupleType::check(passage)?, slots::TupleType::check(payload)?);
        Ok(Types { hit: hit.clone().unbind(), hit_fields, leaf, score, passage, payload })
    }
}

/// An expander's documents.
#[derive(Default)]
struct Docs {
    store: expand::Store,
    /// Per slot: the document's id, text and heading path of each section.
    py_docs: Vec<Option<PyDoc>>,
}

struct PyDoc {
    id: Py<PyString>,
    text: Py<PyString>,
    headings: Vec<Py<pyo3::types::PyTuple>>,
}

/// A document cut into its tree by `Expander.build`, not yet in the index:
/// its nodes and its leaves' token ids (to embed) until `Expander.insert` takes it.
#[pyclass(module = "chunkforge._native")]
struct DocTree {
    tree: Option<tree::Tree>,
}

impl DocTree {
    fn get(&self) -> PyResult<&tree::Tree> {
        self.tree.as_ref().ok_or_else(|| PyValueError::new_err("this DocTree is already in an index"))
    }
}

#[pymethods]
impl DocTree {
    /// `(m, 5)` rows `(start, end, parent or -1, section, level)`, code points, parents first.
    #[getter]
    fn nodes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        Ok(node_array(py, &self.get()?.doc.node_rows()))
    }

    /// Node index of each leaf, in text order.
    #[getter]
    fn leaves<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        Ok(self.get()?.doc.leaves().iter().map(|&l| l as i64).collect::<Vec<_>>().into_pyarray(py))
    }

    /// `(token_ids, bounds)`: leaf `i`'s token ids (no special tokens, as if its
    /// text were encoded alone) are `token_ids[bounds[i]:bounds[i + 1]]`.
    #[getter]
    fn leaf_token_ids<'py>(&self, py: Python<'py>) -> PyResult<IdArrays<'py>> {
        let t = self.get()?;
        Ok(id_arrays(py, t.leaf_ids.clone(), t.leaf_bounds.clone()))
    }
}

fn node_array<'py>(py: Python<'py>, nodes: &[[u32; 5]]) -> Bound<'py, PyArray2<i64>> {
    let flat: Vec<i64> = nodes.iter().flat_map(|n| n.map(|x| if x == u32::MAX { -1 } else { x as i64 })).collect();
    numpy::ndarray::Array2::from_shape_vec((nodes.len(), 5), flat).unwrap().into_pyarray(py)
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
                *o = if x == -1 {
                    u32::MAX
                } else {
                    u32::try_from(x).map_err(|_| PyValueError::new_err(format!("{what}: {x} is out of range")))?
                };
            }
            Ok(out)
        })
        .collect()
}

/// Expansion parameters from the Python options.
#[allow(clippy::too_many_arguments)] // one per keyword of `Index.expand`
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
    /// An empty expander whose hits are `hit_type` objects, passages `passage_type` and
    /// payloads `payload_type` (see [`Types`]).
    #[new]
    fn new(
        tokenizer: &Tokenizer,
        hit_type: &Bound<'_, PyType>,
        passage_type: &Bound<'_, PyType>,
        payload_type: &Bound<'_, PyType>,
    ) -> PyResult<Self> {
        let types = Types::check(hit_type, passage_type, payload_type)?;
        Ok(Expander { tk: tokenizer.inner.clone(), docs: RwLock::default(), types })
    }

    /// Cuts documents into trees (in parallel, the GIL released), each tokenized
    /// once: sections by the headings of `syntaxes[i]` ("markdown", "rst",
    /// "asciidoc" or None: one section), levels of sentence-packed parents of
    /// `parent_tokens` (largest first), and leaves of one sentence or a piece of
    /// at most `leaf_tokens` tokens of a longer one.
    #[pyo3(signature = (texts, syntaxes, leaf_tokens, parent_tokens, threads=None))]
    fn build(
        &self,
        py: Python<'_>,
        texts: &Bound<'_, PyAny>,
        syntaxes: Vec<Option<String>>,
        leaf_tokens: usize,
        parent_tokens: Vec<usize>,
        threads: Option<usize>,
    ) -> PyResult<Vec<DocTree>> {
        let mut holder = vec![];
        collect_texts(texts, &mut holder)?;
        let strs = borrow_all(&holder)?;
        if syntaxes.len() != strs.len() {
            return Err(PyValueError::new_err("texts and syntaxes must have the same length"));
        }
        if leaf_tokens < 1 || parent_tokens.iter().any(|&n| n <= leaf_tokens) {
            return Err(PyValueError::new_err("leaf_tokens must be at least 1 and below every parent_tokens"));
        }
        let syntaxes: Vec<Option<structure::Syntax>> = syntaxes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_deref().map(structure::Syntax::from_name).transpose().map_err(|e| PyValueError::new_err(format!("syntaxes[{i}]: {e}")))
            })
            .collect::<PyResult<_>>()?;
        let cfg = tree::TreeConfig { parent_tokens, leaf_tokens };
        let items: Vec<(&str, Option<structure::Syntax>)> = strs.into_iter().zip(syntaxes).collect();
        let tk = &self.tk;
        let trees = py.detach(|| parallel_map(&items, threads, |&(t, syntax)| tree::build(tk, t, syntax, &cfg)))?;
        trees
            .into_iter()
            .enumerate()
            .map(|(i, t)| t.map(|t| DocTree { tree: Some(t) }).map_err(|e| PyValueError::new_err(format!("texts[{i}]: {e}"))))
            .collect()
    }

    /// Puts built trees into the index, their leaves labelled `labels[i]`, with
    /// their documents' ids and texts (`texts[i]` is the text the tree was built
    /// from); returns the documents' slots.
    fn insert(
        &self,
        py: Python<'_>,
        trees: Vec<PyRefMut<'_, DocTree>>,
        labels: Vec<Vec<u64>>,
        doc_ids: Vec<Bound<'_, PyString>>,
        texts: Vec<Bound<'_, PyString>>,
    ) -> PyResult<Vec<usize>> {
        if [labels.len(), doc_ids.len(), texts.len()].iter().any(|&m| m != trees.len()) {
            return Err(PyValueError::new_err("trees, labels, doc_ids and texts must have the same length"));
        }
        for t in &trees {
            t.get()?;
        }
        let mut docs = vec![];
        for mut t in trees {
            docs.push(t.tree.take().unwrap().doc);
        }
        self.add(py, docs, &labels, doc_ids, texts)
    }

    /// Adds documents whose trees were saved (each text tokenized once, in
    /// parallel); per document: its text, sentences `(n, 3)` `(start, end,
    /// section)`, nodes `(m, 4)` `(start, end, parent or -1, section)` parents
    /// first, leaf node indices, the leaves' labels, its id and the heading path
    /// of each section. Returns the documents' slots.
    #[allow(clippy::too_many_arguments)]
    fn add_docs(
        &self,
        py: Python<'_>,
        texts: Vec<Bound<'_, PyString>>,
        sentences: Vec<numpy::PyReadonlyArray2<'_, i64>>,
        nodes: Vec<numpy::PyReadonlyArray2<'_, i64>>,
        leaves: Vec<Vec<u32>>,
        labels: Vec<Vec<u64>>,
        doc_ids: Vec<Bound<'_, PyString>>,
        headings: Vec<Vec<Vec<String>>>,
    ) -> PyResult<Vec<usize>> {
        let n = texts.len();
        if [sentences.len(), nodes.len(), leaves.len(), labels.len(), doc_ids.len(), headings.len()].iter().any(|&m| m != n) {
            return Err(PyValueError::new_err("texts, sentences, nodes, leaves, labels, doc_ids and headings must have the same length"));
        }
        let mut inputs = Vec::with_capacity(n);
        for i in 0..n {
            let sents = rows::<3>(&sentences[i], &format!("sentences[{i}]"))?;
            let tree = rows::<4>(&nodes[i], &format!("nodes[{i}]"))?;
            inputs.push((texts[i].to_str()?.to_string(), sents, tree, leaves[i].clone(), headings[i].clone()));
        }
        let tk = &self.tk;
        let docs: Vec<Result<expand::Doc, String>> = py.detach(|| {
            inputs
                .into_par_iter()
                .map(|(text, sents, tree, leaves, headings)| {
                    let input = expand::DocInput {
                        text: &text,
                        sentences: sents.into_iter().map(|r| (r[0], r[1], r[2])).collect(),
                        nodes: tree.into_iter().map(|r| (r[0], r[1], r[2], r[3])).collect(),
                        leaves,
                        headings,
                    };
                    expand::Doc::new(tk, input, None)
                })
                .collect()
        });
        let docs: Vec<expand::Doc> = docs
            .into_iter()
            .enumerate()
            .map(|(i, d)| d.map_err(|e| PyValueError::new_err(format!("document {i}: {e}"))))
            .collect::<PyResult<_>>()?;
        self.add(py, docs, &labels, doc_ids, texts)
    }

    /// Removes the document in `slot`; its labels become free.
    fn remove(&self, py: Python<'_>, slot: usize) -> PyResult<()> {
        let removed = {
            let mut docs = self.write(py);
            docs.store.remove(slot).map_err(PyValueError::new_err)?;
            docs.py_docs[slot].take()
        };
        drop(removed); // its Python strings released after the lock
        Ok(())
    }

    /// The hits of leaves `labels` with `scores`, their ids those of tree `level`. Built
    /// as the hit dataclass's `__init__` would (`object.__new__`, then
    /// `object.__setattr__` of each field named by its `__slots__`), without its Python frame.
    fn hits<'py>(&self, py: Python<'py>, labels: Vec<u64>, scores: Vec<f64>, level: u64) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        use pyo3::intern;
        if labels.len() != scores.len() {
            return Err(PyValueError::new_err("labels and scores must have the same length"));
        }
        let new = py.get_type::<PyAny>().getattr(intern!(py, "__new__"))?;
        let leaves: Vec<((u32, u32), DocRefs)> = {
            let docs = self.read(py);
            labels
                .iter()
                .map(|&label| {
                    let (slot, start, end, section) =
                        docs.store.leaf(label).ok_or_else(|| PyValueError::new_err(format!("leaf {label} is not in the index")))?;
                    Ok(((start, end), docs.refs(py, slot, section)?))
                })
                .collect::<PyResult<_>>()?
        };
        let out = pyo3::types::PyList::empty(py);
        for ((&label, &score), ((start, end), (doc_id, text, heading))) in labels.iter().zip(&scores).zip(leaves) {
            let (doc_id, text) = (doc_id.into_bound(py), text.into_bound(py));
            let id = tree::node_id(&surrogatepass_utf8(&doc_id)?, start.into(), end.into(), level);
            let values: [Bound<'py, PyAny>; 8] = [
                doc_id.into_any(),
                start.into_pyobject(py)?.into_any(),
                end.into_pyobject(py)?.into_any(),
                score.into_pyobject(py)?.into_any(),
                text.get_item(pyo3::types::PySlice::new(py, start as isize, end as isize, 1))?,
                heading.into_bound(py).into_any(),
                PyString::new(py, &id).into_any(),
                label.into_pyobject(py)?.into_any(),
            ];
            let hit = new.call1((&self.types.hit,))?;
            for (field, value) in self.types.hit_fields.iter().zip(&values) {
                field.write(&hit, value)?;
            }
            out.append(hit)?;
        }
        Ok(out)
    }

    /// The indices of the leaves of the document in `slot` whose section's heading path starts with `prefix`.
    fn leaves_under(&self, py: Python<'_>, slot: usize, prefix: Vec<String>) -> PyResult<Vec<usize>> {
        let docs = self.read(py);
        let doc = docs.store.doc(slot).ok_or_else(|| PyValueError::new_err(format!("no document in slot {slot}")))?;
        Ok(doc.leaves_under(&prefix))
    }

    /// The saved form of the document in `slot`: `(nodes, leaves, sentences, headings)`,
    /// nodes `(m, 5)` `(start, end, parent or -1, section, level)`, sentences `(n, 3)`.
    fn tree<'py>(&self, py: Python<'py>, slot: usize) -> PyResult<SavedTree<'py>> {
        let (nodes, leaves, sents, headings) = {
            let docs = self.read(py);
            let doc = docs.store.doc(slot).ok_or_else(|| PyValueError::new_err(format!("no document in slot {slot}")))?;
            let leaves: Vec<i64> = doc.leaves().iter().map(|&l| l as i64).collect();
            let sents: Vec<i64> = doc.sentence_rows().iter().flatten().map(|&x| x as i64).collect();
            (doc.node_rows(), leaves, sents, doc.headings().to_vec())
        };
        let sents = numpy::ndarray::Array2::from_shape_vec((sents.len() / 3, 3), sents).unwrap().into_pyarray(py);
        Ok((node_array(py, &nodes), leaves.into_pyarray(py), sents, headings))
    }

    /// Expands hits (an iterable of objects with a `leaf` label and a `score`, mostly of
    /// the hit type) into passages (named tuples `(doc_id, start, end, token_count,
    /// score, heading_path, hits, document)`, whose `hits` are the hits they cover).
    /// Returns a payload (a named tuple): `(passages, dropped hits)`.
    #[pyo3(signature = (hits, window=None, window_tokens=None, parent=false, auto_merge=None, budget_tokens=None, order="score", pack="skip", trim=false))]
    #[allow(clippy::too_many_arguments)]
    fn expand<'py>(
        &self,
        py: Python<'py>,
        hits: &Bound<'py, PyAny>,
        window: Option<u32>,
        window_tokens: Option<u32>,
        parent: bool,
        auto_merge: Option<f64>,
        budget_tokens: Option<usize>,
        order: &str,
        pack: &str,
        trim: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        use pyo3::types::{PyList, PyTuple};
        let params = expand_params(window, window_tokens, parent, auto_merge, budget_tokens, order, pack, trim)?;
        let (leaf, score) = (&self.types.leaf, &self.types.score);
        let hits: Vec<Bound<'py, PyAny>> = match hits.downcast::<PyList>() {
            Ok(list) => list.iter().collect(),
            Err(_) => hits.try_iter()?.collect::<PyResult<_>>()?,
        };
        let pairs: Vec<(u64, f64)> = hits
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let read = || -> PyResult<(u64, f64)> { Ok((leaf.read(h)?.extract()?, score.read(h)?.extract()?)) };
                read().map_err(|e| PyTypeError::new_err(format!("hits[{i}] is not a Hit (from Index.search): {e}")))
            })
            .collect::<PyResult<_>>()?;
        // the passages' documents' ids, texts and headings are taken in one loop of
        // independent loads, so that their cache misses overlap instead of coming one by one
        let (payload, refs) = {
            let docs = self.read(py);
            let docs = &*docs;
            let payload = py.detach(|| docs.store.expand(&self.tk, &pairs, &params)).map_err(PyValueError::new_err)?;
            let refs: Vec<DocRefs> = payload.passages.iter().map(|p| docs.refs(py, p.doc, p.section)).collect::<PyResult<_>>()?;
            (payload, refs)
        };
        let (mut new_passage, mut new_payload) =
            (slots::TupleNew::of(&self.types.passage, py)?, slots::TupleNew::of(&self.types.payload, py)?);
        let passages = PyList::empty(py);
        for (p, (doc_id, text, heading)) in payload.passages.into_iter().zip(refs) {
            let covered = PyTuple::new(py, p.hits.iter().map(|&i| &hits[i as usize]))?;
            let row = [
                doc_id.into_bound(py).into_any(),
                p.start.into_pyobject(py)?.into_any(),
                p.end.into_pyobject(py)?.into_any(),
                p.tokens.into_pyobject(py)?.into_any(),
                p.score.into_pyobject(py)?.into_any(),
                heading.into_bound(py).into_any(),
                covered.into_any(),
                text.into_bound(py).into_any(),
            ];
            passages.append(new_passage.call(row)?)?;
        }
        let dropped = PyList::new(py, payload.dropped.iter().map(|&i| &hits[i as usize]))?;
        new_payload.call([passages.into_any(), dropped.into_any()])
    }
}

type SavedTree<'py> = (Bound<'py, PyArray2<i64>>, Bound<'py, PyArray1<i64>>, Bound<'py, PyArray2<i64>>, Vec<Vec<String>>);

/// A document's id and text and a section's heading path, held apart from the lock.
type DocRefs = (Py<PyString>, Py<PyString>, Py<pyo3::types::PyTuple>);

impl Docs {
    /// The id and text of the document in `slot` and the heading path of its `section`.
    fn refs(&self, py: Python<'_>, slot: u32, section: u32) -> PyResult<DocRefs> {
        let doc = self.py_docs.get(slot as usize).and_then(Option::as_ref);
        let doc = doc.ok_or_else(|| PyValueError::new_err(format!("no document in slot {slot}")))?;
        Ok((doc.id.clone_ref(py), doc.text.clone_ref(py), doc.headings[section as usize].clone_ref(py)))
    }
}

impl Expander {
    /// The documents, to read: at once when no writer holds or awaits them, else
    /// waited for with the GIL released, so that the writer can finish its call.
    fn read(&self, py: Python<'_>) -> RwLockReadGuard<'_, Docs> {
        self.docs.try_read().unwrap_or_else(|| py.detach(|| self.docs.read()))
    }

    /// The documents, to change: as [`Self::read`], once no one else holds them.
    fn write(&self, py: Python<'_>) -> RwLockWriteGuard<'_, Docs> {
        self.docs.try_write().unwrap_or_else(|| py.detach(|| self.docs.write()))
    }

    /// Stores documents with their labels and Python ids and texts; returns their slots.
    fn add(
        &self,
        py: Python<'_>,
        docs: Vec<expand::Doc>,
        labels: &[Vec<u64>],
        doc_ids: Vec<Bound<'_, PyString>>,
        texts: Vec<Bound<'_, PyString>>,
    ) -> PyResult<Vec<usize>> {
        // the Python objects are made before the lock is taken
        let mut py_docs = Vec::with_capacity(docs.len());
        for ((doc, id), text) in docs.iter().zip(doc_ids).zip(texts) {
            let headings =
                doc.headings().iter().map(|h| pyo3::types::PyTuple::new(py, h).map(Bound::unbind)).collect::<PyResult<Vec<_>>>()?;
            py_docs.push(PyDoc { id: id.unbind(), text: text.unbind(), headings });
        }
        let mut held = self.write(py);
        let mut slots = vec![];
        for (i, ((doc, l), py_doc)) in docs.into_iter().zip(labels).zip(py_docs).enumerate() {
            let slot = held.store.add(doc, l).map_err(|e| PyValueError::new_err(format!("document {i}: {e}")))?;
            debug_assert_eq!(slot, held.py_docs.len());
            held.py_docs.push(Some(py_doc));
            slots.push(slot);
        }
        Ok(slots)
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Tokenizer>()?;
    m.add_class::<Chunker>()?;
    m.add_class::<SpanCounter>()?;
    m.add_class::<Expander>()?;
    m.add_class::<DocTree>()?;
    m.add_function(wrap_pyfunction!(split_sentences, m)?)?;
    m.add_function(wrap_pyfunction!(node_id, m)?)?;
    m.add_function(wrap_pyfunction!(py_max_threads, m)?)?;
    m.add_function(wrap_pyfunction!(span_overlaps, m)?)?;
    m.add_function(wrap_pyfunction!(late_windows, m)?)?;
    m.add_function(wrap_pyfunction!(late_pool, m)?)?;
    Ok(())
}
