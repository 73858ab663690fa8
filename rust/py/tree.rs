//! `DocTree`, a document cut into its tree and not yet in an index, and `node_id`,
//! the stable id of a tree node.

use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::prelude::*;
use pyo3::types::PyString;

use super::convert::{id_arrays, index_matrix, surrogatepass_utf8, IdArrays};
use crate::error::{Error, Result};
use crate::tree;

/// A document cut into its tree by `Expander.build`, not yet in the index:
/// its nodes and its leaves' token ids (to embed) until `Expander.insert` takes it.
#[pyclass(module = "chunkforge._native")]
pub struct DocTree {
    pub(super) tree: Option<tree::Tree>,
}

impl DocTree {
    pub(super) fn get(&self) -> Result<&tree::Tree> {
        self.tree.as_ref().ok_or_else(|| Error::NotInIndex("this DocTree is already in an index".into()))
    }
}

#[pymethods]
impl DocTree {
    /// `(m, 5)` rows `(start, end, parent or -1, section, level)`, code points, parents first.
    #[getter]
    fn nodes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        Ok(index_matrix(py, &self.get()?.doc.node_rows()))
    }

    /// Node index of each leaf, in text order.
    #[getter]
    fn leaves<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        Ok(self.get()?.doc.leaves().iter().map(|&l| l as i64).collect::<Vec<_>>().into_pyarray(py))
    }

    /// The heading path of each section (a node's `section` indexes it).
    #[getter]
    fn headings(&self) -> PyResult<Vec<Vec<String>>> {
        Ok(self.get()?.doc.headings().to_vec())
    }

    /// `(token_ids, bounds)`: leaf `i`'s token ids (no special tokens, as if its
    /// text were encoded alone) are `token_ids[bounds[i]:bounds[i + 1]]`.
    #[getter]
    fn leaf_token_ids<'py>(&self, py: Python<'py>) -> PyResult<IdArrays<'py>> {
        let t = self.get()?;
        Ok(id_arrays(py, t.leaf_ids.clone(), t.leaf_bounds.clone()))
    }
}

/// The stable id of a tree node (`tree::node_id`).
#[pyfunction]
pub fn node_id(doc_id: &Bound<'_, PyString>, start: u64, end: u64, level: u64) -> PyResult<String> {
    Ok(tree::node_id(&surrogatepass_utf8(doc_id)?, start, end, level))
}
