//! `max_threads`: the bound on every `threads` argument.

use pyo3::prelude::*;

/// The largest `threads` value accepted (4 x the cores).
#[pyfunction(name = "max_threads")]
pub fn py_max_threads() -> usize {
    crate::threads::max_threads()
}
