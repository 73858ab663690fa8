//! `Expander`: an index's documents, their trees and its leaf labels; turns labels
//! into hits and hits into a payload of passages.

use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyArray2};
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyList, PySlice, PyString, PyTuple, PyType};
use rayon::prelude::*;

use super::convert::{borrow_texts, index_matrix, index_rows, matrix, surrogatepass_utf8};
use super::tokenizer::Tokenizer;
use super::tree::DocTree;
use crate::error::{input, Error, Result};
use crate::expand::{self, Doc, DocInput, Order, Pack, Params, Store, SPREAD_REACH};
use crate::spans::NONE;
use crate::structure::Syntax;
use crate::threads::parallel_map;
use crate::tokenizer::DocTokens;
use crate::{tokenizer, tree};

/// A document's heading paths, one a section: as lists, or as the JSON array a docs
/// table holds (read natively, in parallel).
#[derive(FromPyObject)]
enum Headings {
    Json(PyBackedStr),
    Paths(Vec<Vec<String>>),
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
pub struct Expander {
    tk: Arc<tokenizer::Tokenizer>,
    docs: RwLock<Docs>,
    types: Types,
}

/// The options of an expansion, read by attribute from an `ExpandOptions` (which
/// checked them; its `max_chars` is Python's to apply).
#[derive(FromPyObject)]
struct Options {
    window: Option<u32>,
    window_tokens: Option<u32>,
    parent: bool,
    auto_merge: Option<f64>,
    spread: Option<f64>,
    budget_tokens: Option<usize>,
    order: String,
    pack: String,
    trim: bool,
}

impl Options {
    fn params(&self) -> Result<Params> {
        let (order, pack) = (Order::from_name(&self.order)?, Pack::from_name(&self.pack)?);
        let Options { window, window_tokens, parent, auto_merge, budget_tokens: budget, trim, .. } = *self;
        Ok(Params { window, window_tokens, parent, auto_merge, budget, order, pack, trim })
    }
}

/// `decay`, a spread's, checked to be in [0, 1).
fn check_decay(decay: f64) -> Result<f64> {
    if (0.0..1.0).contains(&decay) {
        Ok(decay)
    } else {
        Err(input!("spread must be in [0, 1), not {decay}"))
    }
}

/// The Python types an expander makes, checked once: hits (a frozen, slotted
/// dataclass whose `__slots__` are, in order, `(doc_id, start, end, score, text,
/// heading_path, id, leaf)`), passages and payloads (named tuples).
struct Types {
    hit: Py<PyType>,
    /// The hit's fields, in `__slots__` order.
    hit_fields: Vec<Py<PyString>>,
    passage: Py<PyType>,
    payload: Py<PyType>,
}

/// `cls`, checked to be a subclass of tuple that `tuple.__new__` accepts (it refuses one
/// with a C base of its own, as a struct sequence: asked once, for an empty instance).
fn tuple_type(cls: &Bound<'_, PyType>) -> PyResult<Py<PyType>> {
    let py = cls.py();
    if !cls.is_subclass_of::<PyTuple>()? {
        return Err(PyTypeError::new_err(format!("{} is not a subclass of tuple", cls.name()?)));
    }
    py.get_type::<PyTuple>().call_method1(intern!(py, "__new__"), (cls, PyTuple::empty(py)))?;
    Ok(cls.clone().unbind())
}

impl Types {
    fn check(hit: &Bound<'_, PyType>, passage: &Bound<'_, PyType>, payload: &Bound<'_, PyType>) -> PyResult<Self> {
        let py = hit.py();
        let names: Vec<Bound<'_, PyString>> = hit.getattr(intern!(py, "__slots__"))?.extract()?;
        if names.len() != 8 {
            return Err(PyTypeError::new_err(format!("{} must have the 8 fields of a hit, not {}", hit.name()?, names.len())));
        }
        let hit_fields = names.into_iter().map(Bound::unbind).collect();
        Ok(Types { hit: hit.clone().unbind(), hit_fields, passage: tuple_type(passage)?, payload: tuple_type(payload)? })
    }
}

/// An expander's documents.
#[derive(Default)]
struct Docs {
    store: Store,
    /// Per slot: the document's id, text and heading path of each section.
    py_docs: Vec<Option<PyDoc>>,
}

struct PyDoc {
    id: Py<PyString>,
    text: Py<PyString>,
    /// Where `text` starts in the document (code points; not 0 for a part of one).
    base: u32,
    headings: Vec<Py<PyTuple>>,
}

/// A document's id, text and its text's start, and a section's heading path, held apart from the lock.
type DocRefs = (Py<PyString>, Py<PyString>, u32, Py<PyTuple>);

type SavedTree<'py> = (Bound<'py, PyArray2<i64>>, Bound<'py, PyArray1<i64>>, Bound<'py, PyArray2<i64>>, Vec<Vec<String>>);

fn no_document(slot: impl std::fmt::Display) -> Error {
    Error::NotInIndex(format!("no document in slot {slot}"))
}

impl Docs {
    /// The id, text and base of the document in `slot` and the heading path of its `section`.
    fn refs(&self, py: Python<'_>, slot: u32, section: u32) -> Result<DocRefs> {
        let doc = self.py_docs.get(slot as usize).and_then(Option::as_ref).ok_or_else(|| no_document(slot))?;
        Ok((doc.id.clone_ref(py), doc.text.clone_ref(py), doc.base, doc.headings[section as usize].clone_ref(py)))
    }

    /// The document in `slot`.
    fn doc(&self, slot: usize) -> Result<&Doc> {
        self.store.doc(slot).ok_or_else(|| no_document(slot))
    }
}

/// What a hit says of its leaf: its document's id and its span.
type Claim<'py> = (Bound<'py, PyString>, u32, u32);

impl Docs {
    /// Checks that each hit's leaf label is the leaf its document id and span name (a hit
    /// from another index, or one edited, is refused rather than expanded as another leaf).
    fn check_claims(&self, pairs: &[(u64, f64)], claims: &[Option<Claim<'_>>]) -> PyResult<()> {
        for (i, (&(label, _), claim)) in pairs.iter().zip(claims).enumerate() {
            let Some((doc_id, start, end)) = claim else { continue };
            let named = self.store.leaf(label).and_then(|(slot, s, e, _)| {
                let doc = self.py_docs.get(slot as usize)?.as_ref()?;
                Some(
                    (s, e) == (*start, *end)
                        && (doc.id.is(doc_id) || PyAnyMethods::eq(doc.id.bind(doc_id.py()).as_any(), doc_id).unwrap_or(false)),
                )
            });
            if named != Some(true) {
                let why = if named.is_none() { "is not in the index" } else { "is another span" };
                return Err(Error::NotInIndex(format!(
                    "hits[{i}]: {} {start}-{end} is not a leaf of this index (its leaf {label} {why}; a hit from another index?)",
                    doc_id.repr()?
                ))
                .into());
            }
        }
        Ok(())
    }
}

impl Expander {
    /// What each hit of the hit type says of its leaf (other objects, with only a `leaf`
    /// and a `score`, say nothing and are not checked).
    fn claims<'py>(&self, py: Python<'py>, hits: &[Bound<'py, PyAny>]) -> PyResult<Vec<Option<Claim<'py>>>> {
        let hit_type = self.types.hit.bind(py);
        let (doc_id, start, end) = (intern!(py, "doc_id"), intern!(py, "start"), intern!(py, "end"));
        hits.iter()
            .enumerate()
            .map(|(i, h)| {
                if !h.get_type().is(hit_type) {
                    return Ok(None);
                }
                let read = || -> PyResult<Claim<'py>> {
                    Ok((h.getattr(doc_id)?.downcast_into::<PyString>()?, h.getattr(start)?.extract()?, h.getattr(end)?.extract()?))
                };
                read().map(Some).map_err(|e| PyTypeError::new_err(format!("hits[{i}]: bad doc_id, start or end: {e}")))
            })
            .collect()
    }

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
        docs: Vec<Doc>,
        labels: &[Vec<u64>],
        doc_ids: Vec<Bound<'_, PyString>>,
        texts: Vec<Bound<'_, PyString>>,
    ) -> PyResult<Vec<usize>> {
        // the Python objects are made before the lock is taken
        let mut py_docs = Vec::with_capacity(docs.len());
        for ((doc, id), text) in docs.iter().zip(doc_ids).zip(texts) {
            let headings = doc.headings().iter().map(|h| PyTuple::new(py, h).map(Bound::unbind)).collect::<PyResult<Vec<_>>>()?;
            py_docs.push(PyDoc { id: id.unbind(), text: text.unbind(), base: doc.base(), headings });
        }
        let mut held = self.write(py);
        let mut slots = vec![];
        for (i, ((doc, l), py_doc)) in docs.into_iter().zip(labels).zip(py_docs).enumerate() {
            let slot = held.store.add(doc, l).map_err(|e| e.at(format_args!("document {i}")))?;
            if slot == held.py_docs.len() {
                held.py_docs.push(Some(py_doc));
            } else {
                held.py_docs[slot] = Some(py_doc);
            }
            slots.push(slot);
        }
        Ok(slots)
    }
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
        let strs = borrow_texts(texts, &mut holder)?;
        if syntaxes.len() != strs.len() {
            return Err(input!("texts and syntaxes must have the same length").into());
        }
        if leaf_tokens < 1 || parent_tokens.iter().any(|&n| n <= leaf_tokens) {
            return Err(input!("leaf_tokens must be at least 1 and below every parent_tokens").into());
        }
        let syntaxes: Vec<Option<Syntax>> = syntaxes
            .iter()
            .enumerate()
            .map(|(i, s)| s.as_deref().map(Syntax::from_name).transpose().map_err(|e| e.at(format_args!("syntaxes[{i}]"))))
            .collect::<Result<_>>()?;
        let cfg = tree::TreeConfig { parent_tokens, leaf_tokens };
        let items: Vec<(&str, Option<Syntax>)> = strs.into_iter().zip(syntaxes).collect();
        let tk = &self.tk;
        let trees = py.detach(|| parallel_map(&items, threads, |&(t, syntax)| tree::build(tk, t, syntax, &cfg)))?;
        let trees =
            trees.into_iter().enumerate().map(|(i, t)| t.map(|t| DocTree { tree: Some(t) }).map_err(|e| e.at(format_args!("texts[{i}]"))));
        Ok(trees.collect::<Result<_>>()?)
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
            return Err(input!("trees, labels, doc_ids and texts must have the same length").into());
        }
        for t in &trees {
            t.get()?;
        }
        let docs = trees.into_iter().map(|mut t| t.tree.take().unwrap().doc).collect();
        self.add(py, docs, &labels, doc_ids, texts)
    }

    /// Adds documents whose trees were saved (each text tokenized once, in
    /// parallel); per document: its text, sentences `(n, 3)` `(start, end,
    /// section)`, nodes `(m, 4)` `(start, end, parent or -1, section)` parents
    /// first, leaf node indices, the leaves' labels, its id and the heading path
    /// of each section (or them as a JSON array, as a docs table holds them: read
    /// in parallel); and, when saved with it, its words (the bytes `Tokenizer.words`
    /// of this expander's tokenizer made; None: the text is tokenized here). With `parts`,
    /// document `i` is a part of one (its sections, as a store's reader adds them):
    /// `parts[i]` is `(base, group)`, its text is the document's from code point `base`
    /// on, every offset given is the document's, and the parts of one document share a
    /// `group`. Returns the documents' slots.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (texts, sentences, nodes, leaves, labels, doc_ids, headings, words=None, parts=None))]
    fn add_docs(
        &self,
        py: Python<'_>,
        texts: Vec<Bound<'_, PyString>>,
        sentences: Vec<numpy::PyReadonlyArray2<'_, i64>>,
        nodes: Vec<numpy::PyReadonlyArray2<'_, i64>>,
        leaves: Vec<Vec<u32>>,
        labels: Vec<Vec<u64>>,
        doc_ids: Vec<Bound<'_, PyString>>,
        headings: Vec<Headings>,
        mut words: Option<Vec<Option<PyBackedBytes>>>,
        parts: Option<Vec<(u32, u32)>>,
    ) -> PyResult<Vec<usize>> {
        let n = texts.len();
        if [sentences.len(), nodes.len(), leaves.len(), labels.len(), doc_ids.len(), headings.len()].iter().any(|&m| m != n)
            || words.as_ref().is_some_and(|w| w.len() != n)
            || parts.as_ref().is_some_and(|p| p.len() != n)
        {
            return Err(
                input!("texts, sentences, nodes, leaves, labels, doc_ids, headings, words and parts must have the same length").into()
            );
        }
        let mut inputs = Vec::with_capacity(n);
        for i in 0..n {
            let sents = index_rows::<3>(&sentences[i], &format!("sentences[{i}]"))?;
            let tree = index_rows::<4>(&nodes[i], &format!("nodes[{i}]"))?;
            let saved = words.as_mut().and_then(|w| w[i].take());
            // borrowed: each text is copied in parallel, by `Doc::new`
            let part = parts.as_ref().map_or((0, NONE), |p| p[i]);
            if part.1 == NONE && part.0 != 0 {
                return Err(input!("parts[{i}]: a part of a document needs a group below {NONE}").into());
            }
            inputs.push((texts[i].to_str()?, sents, tree, leaves[i].clone(), saved, part));
        }
        let tk = &self.tk;
        let docs: Vec<Result<Doc>> = py.detach(|| {
            inputs
                .into_par_iter()
                .zip(headings)
                .map(|((text, sents, tree, leaves, saved, part), headings)| {
                    let headings = match headings {
                        Headings::Paths(paths) => paths,
                        Headings::Json(json) => {
                            serde_json::from_str(&json).map_err(|e| input!("headings: not a JSON array of heading paths ({e})"))?
                        }
                    };
                    let tokens = saved.map(|w| DocTokens::from_saved(text, &w)).transpose()?;
                    let input = DocInput {
                        text: text.into(),
                        part,
                        sentences: sents.into_iter().map(|r| (r[0], r[1], r[2])).collect(),
                        nodes: tree.into_iter().map(|r| (r[0], r[1], r[2], r[3])).collect(),
                        leaves,
                        headings,
                    };
                    Doc::new(tk, input, tokens)
                })
                .collect()
        });
        let docs = docs
            .into_iter()
            .enumerate()
            .map(|(i, d)| d.map_err(|e| e.at(format_args!("document {i} ({})", doc_ids[i]))))
            .collect::<Result<_>>()?;
        self.add(py, docs, &labels, doc_ids, texts)
    }

    /// Removes the document in `slot`; its labels and its slot become free.
    fn remove(&self, py: Python<'_>, slot: usize) -> PyResult<()> {
        let removed = {
            let mut docs = self.write(py);
            docs.store.remove(slot)?;
            docs.py_docs[slot].take()
        };
        drop(removed); // its Python strings released after the lock
        Ok(())
    }

    /// The hits of leaves `labels` with `scores`, their ids those of tree `level`. Built
    /// as the hit dataclass's `__init__` would (`object.__new__`, then
    /// `object.__setattr__` of each field named by its `__slots__`), without its Python frame.
    fn hits<'py>(&self, py: Python<'py>, labels: Vec<u64>, scores: Vec<f64>, level: u64) -> PyResult<Bound<'py, PyList>> {
        if labels.len() != scores.len() {
            return Err(input!("labels and scores must have the same length").into());
        }
        let object = py.get_type::<PyAny>();
        let (new, setattr) = (object.getattr(intern!(py, "__new__"))?, object.getattr(intern!(py, "__setattr__"))?);
        let leaves: Vec<((u32, u32), DocRefs)> = {
            let docs = self.read(py);
            labels
                .iter()
                .map(|&label| {
                    let (slot, start, end, section) =
                        docs.store.leaf(label).ok_or_else(|| Error::NotInIndex(format!("leaf {label} is not in the index")))?;
                    Ok(((start, end), docs.refs(py, slot, section)?))
                })
                .collect::<Result<_>>()?
        };
        let out = PyList::empty(py);
        for ((&label, &score), ((start, end), (doc_id, text, base, heading))) in labels.iter().zip(&scores).zip(leaves) {
            let (doc_id, text) = (doc_id.into_bound(py), text.into_bound(py));
            let id = tree::node_id(&surrogatepass_utf8(&doc_id)?, start.into(), end.into(), level);
            let values: [Bound<'py, PyAny>; 8] = [
                doc_id.into_any(),
                start.into_pyobject(py)?.into_any(),
                end.into_pyobject(py)?.into_any(),
                score.into_pyobject(py)?.into_any(),
                text.get_item(PySlice::new(py, (start - base) as isize, (end - base) as isize, 1))?,
                heading.into_bound(py).into_any(),
                PyString::new(py, &id).into_any(),
                label.into_pyobject(py)?.into_any(),
            ];
            let hit = new.call1((&self.types.hit,))?;
            for (field, value) in self.types.hit_fields.iter().zip(values) {
                setattr.call1((&hit, field, value))?;
            }
            out.append(hit)?;
        }
        Ok(out)
    }

    /// The indices of the leaves of the document in `slot` whose section's heading path starts with `prefix`.
    fn leaves_under(&self, py: Python<'_>, slot: usize, prefix: Vec<String>) -> PyResult<Vec<usize>> {
        Ok(self.read(py).doc(slot)?.leaves_under(&prefix))
    }

    /// The saved form of the document in `slot`: `(nodes, leaves, sentences, headings)`,
    /// nodes `(m, 5)` `(start, end, parent or -1, section, level)`, sentences `(n, 3)`.
    fn tree<'py>(&self, py: Python<'py>, slot: usize) -> PyResult<SavedTree<'py>> {
        let (nodes, leaves, sents, headings) = {
            let docs = self.read(py);
            let doc = docs.doc(slot)?;
            let leaves: Vec<i64> = doc.leaves().iter().map(|&l| l as i64).collect();
            let sents: Vec<[i64; 3]> = doc.sentence_rows().iter().map(|r| r.map(i64::from)).collect();
            (doc.node_rows(), leaves, sents, doc.headings().to_vec())
        };
        Ok((index_matrix(py, &nodes), leaves.into_pyarray(py), matrix(py, &sents), headings))
    }

    /// The leaves hits `(labels, scores)` reach by spreading their relevance `decay**d` to
    /// the leaves `d <= 4` away in their section, best first, with their utilities (see
    /// `chunkforge.index.Index.expand`'s `spread`).
    fn spread(&self, py: Python<'_>, labels: Vec<u64>, scores: Vec<f64>, decay: f64) -> PyResult<(Vec<u64>, Vec<f64>)> {
        if labels.len() != scores.len() {
            return Err(input!("labels and scores must have the same length").into());
        }
        let pairs: Vec<(u64, f64)> = labels.into_iter().zip(scores).collect();
        let spread = self.read(py).store.spread(&pairs, check_decay(decay)?, SPREAD_REACH)?;
        Ok(spread.into_iter().unzip())
    }

    /// Expands hits (an iterable of objects with a `leaf` label and a `score`, mostly of
    /// the hit type) into passages (named tuples `(doc_id, start, end, token_count,
    /// score, heading_path, hits, document, document_start)`, whose `hits` are the hits
    /// they cover and whose `document` is the text from code point `document_start`), as
    /// `options` say (an `ExpandOptions`, read by attribute); with `spread`, the hits
    /// go on as the leaves they reach (see [`Self::spread`]), new hits whose ids are
    /// those of tree `level`. Returns a payload (a named tuple): `(passages, dropped hits)`.
    fn expand<'py>(&self, py: Python<'py>, hits: &Bound<'py, PyAny>, options: Options, level: u64) -> PyResult<Bound<'py, PyAny>> {
        let params = options.params()?;
        let (leaf, score) = (intern!(py, "leaf"), intern!(py, "score"));
        let hits: Vec<Bound<'py, PyAny>> = match hits.downcast::<PyList>() {
            Ok(list) => list.iter().collect(),
            Err(_) => hits.try_iter()?.collect::<PyResult<_>>()?,
        };
        let pairs: Vec<(u64, f64)> = hits
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let read = || -> PyResult<(u64, f64)> { Ok((h.getattr(leaf)?.extract()?, h.getattr(score)?.extract()?)) };
                read().map_err(|e| PyTypeError::new_err(format!("hits[{i}] is not a Hit (from Index.search): {e}")))
            })
            .collect::<PyResult<_>>()?;
        let claims = self.claims(py, &hits)?;
        let Some(decay) = options.spread else { return self.expand_checked(py, &hits, &pairs, &claims, &params) };
        let spread = {
            let docs = self.read(py);
            docs.check_claims(&pairs, &claims)?;
            docs.store.spread(&pairs, check_decay(decay)?, SPREAD_REACH)?
        };
        let (labels, scores): (Vec<u64>, Vec<f64>) = spread.iter().copied().unzip();
        let made: Vec<Bound<'py, PyAny>> = self.hits(py, labels, scores, level)?.iter().collect();
        self.expand_checked(py, &made, &spread, &vec![None; made.len()], &params)
    }
}

impl Expander {
    /// [`Self::expand`] of hits read as `(label, score)` `pairs`, whose `claims` are checked here.
    fn expand_checked<'py>(
        &self,
        py: Python<'py>,
        hits: &[Bound<'py, PyAny>],
        pairs: &[(u64, f64)],
        claims: &[Option<Claim<'py>>],
        params: &Params,
    ) -> PyResult<Bound<'py, PyAny>> {
        // the passages' documents' ids, texts and headings are taken in one loop of
        // independent loads, so that their cache misses overlap instead of coming one by one
        let (payload, refs) = {
            let docs = self.read(py);
            let docs = &*docs;
            docs.check_claims(pairs, claims)?;
            let payload: expand::Payload = py.detach(|| docs.store.expand(&self.tk, pairs, params))?;
            let refs: Vec<DocRefs> = payload.passages.iter().map(|p| docs.refs(py, p.doc, p.section)).collect::<Result<_>>()?;
            (payload, refs)
        };
        let new_tuple = py.get_type::<PyTuple>().getattr(intern!(py, "__new__"))?;
        let (passage_type, payload_type) = (self.types.passage.bind(py), self.types.payload.bind(py));
        let passages = PyList::empty(py);
        for (p, (doc_id, text, base, heading)) in payload.passages.into_iter().zip(refs) {
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
                base.into_pyobject(py)?.into_any(),
            ];
            passages.append(new_tuple.call1((passage_type, PyTuple::new(py, row)?))?)?;
        }
        let dropped = PyList::new(py, payload.dropped.iter().map(|&i| &hits[i as usize]))?;
        new_tuple.call1((payload_type, (passages, dropped)))
    }
}
