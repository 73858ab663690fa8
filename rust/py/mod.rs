//! The Python bindings, one module per exposed concept; each converts arguments,
//! releases the GIL around the native work and builds the results' Python objects.
//! The algorithms are in the crate's other modules, which know nothing of Python.

mod chunker;
mod convert;
mod cpu;
mod errors;
mod expander;
mod late;
mod metrics;
mod sentences;
mod span_counter;
mod threads;
mod tokenizer;
mod tree;

pub use chunker::Chunker;
pub use cpu::int8_weights_exact;
pub use expander::Expander;
pub use late::{late_pool, late_windows};
pub use metrics::span_overlaps;
pub use sentences::split_sentences;
pub use span_counter::SpanCounter;
pub use threads::py_max_threads;
pub use tokenizer::Tokenizer;
pub use tree::{node_id, DocTree};
