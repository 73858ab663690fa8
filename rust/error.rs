//! The errors of the native core, by kind, each with a message that names the value
//! at fault. The bindings turn each kind into one Python exception class, in one
//! place (`py::errors`).

use std::fmt::Display;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An argument or input that is out of range, inconsistent or unknown: a span
    /// outside its text, columns of different lengths, an unknown strategy.
    #[error("{0}")]
    Input(String),
    /// A `tokenizer.json` that cannot be loaded, or a text its model fails on.
    #[error("{0}")]
    Tokenizer(String),
    /// A leaf label or document slot that is not in the index (deleted, or from
    /// another index), or a built tree already put in one.
    #[error("{0}")]
    NotInIndex(String),
    /// A tokenizer file that cannot be read.
    #[error("cannot read tokenizer file {}: {source}", path.display())]
    TokenizerFile { path: PathBuf, source: std::io::Error },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The same kind of error, its message prefixed by where it happened (`texts[3]: ...`).
    pub fn at(self, place: impl Display) -> Error {
        match self {
            Error::Input(m) => Error::Input(format!("{place}: {m}")),
            Error::Tokenizer(m) => Error::Tokenizer(format!("{place}: {m}")),
            Error::NotInIndex(m) => Error::NotInIndex(format!("{place}: {m}")),
            file @ Error::TokenizerFile { .. } => file,
        }
    }
}

/// An [`Error::Input`] from a format string: `input!("span ({s}, {e}) ...")`.
macro_rules! input {
    ($($arg:tt)*) => { $crate::error::Error::Input(format!($($arg)*)) };
}
pub(crate) use input;
