//! The one place where the core's errors become Python exceptions: each kind of
//! [`Error`] is one class of `chunkforge.errors` (all of them `ValueError`s), and a
//! tokenizer file that cannot be read an `OSError`.

use pyo3::exceptions::PyOSError;
use pyo3::PyErr;

use crate::error::Error;

pyo3::import_exception!(chunkforge.errors, InputError);
pyo3::import_exception!(chunkforge.errors, TokenizerError);
pyo3::import_exception!(chunkforge.errors, NotInIndexError);

impl From<Error> for PyErr {
    fn from(error: Error) -> PyErr {
        let message = error.to_string();
        match error {
            Error::Input(_) => InputError::new_err(message),
            Error::Tokenizer(_) => TokenizerError::new_err(message),
            Error::NotInIndex(_) => NotInIndexError::new_err(message),
            Error::TokenizerFile { .. } => PyOSError::new_err(message),
        }
    }
}
