//! `int8_weights_exact`: which int8 weights the encoder's quantized graph takes here.

use pyo3::prelude::*;

/// Whether uint8-by-int8 products are exact on this CPU (see [`crate::cpu`]).
#[pyfunction]
pub fn int8_weights_exact() -> bool {
    crate::cpu::int8_weights_exact()
}
