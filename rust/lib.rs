//! chunkforge's native core: tokenize once, chunk with exact offsets, expand hits
//! into passages. The algorithms are the modules below, free of Python; the
//! bindings are in `py/`, one module per exposed concept; this file only
//! registers them as `chunkforge._native`.

/// The core modules: private, and public with the `fuzzing` feature (for the
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
modules!(cpu, encode, error, expand, metrics, late, pretokenize, segment, sizer, spans, structure, split, threads, tokenizer, tree);

mod py;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<py::Tokenizer>()?;
    m.add_class::<py::Chunker>()?;
    m.add_class::<py::SpanCounter>()?;
    m.add_class::<py::Expander>()?;
    m.add_class::<py::DocTree>()?;
    m.add_function(wrap_pyfunction!(py::split_sentences, m)?)?;
    m.add_function(wrap_pyfunction!(py::node_id, m)?)?;
    m.add_function(wrap_pyfunction!(py::py_max_threads, m)?)?;
    m.add_function(wrap_pyfunction!(py::int8_weights_exact, m)?)?;
    m.add_function(wrap_pyfunction!(py::span_overlaps, m)?)?;
    m.add_function(wrap_pyfunction!(py::late_windows, m)?)?;
    m.add_function(wrap_pyfunction!(py::late_pool, m)?)?;
    Ok(())
}
