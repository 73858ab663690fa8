//! Arguments from Python and results for it: borrowed `str`s, iterables of them,
//! and the numpy arrays of rows and token ids.

use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyIterator, PyString};

use crate::error::{input, Result};
use crate::spans::NONE;

/// Borrows the UTF-8 of a Python `str`; lone surrogates are an input error naming `what`.
pub fn as_str<'a>(obj: &'a Bound<'_, PyAny>, what: &dyn Fn() -> String) -> PyResult<&'a str> {
    let s = obj.downcast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!("{} must be str, not {}", what(), obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()))
    })?;
    let text = s.to_str().map_err(|e| {
        input!(
            "{} is not valid Unicode (it holds a lone surrogate; chunkforge needs text that encodes to UTF-8): {}",
            what(),
            e.value(obj.py())
        )
    })?;
    Ok(text)
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

/// The texts of a Python iterable of `str`, borrowed from the items kept in `holder`.
pub fn borrow_texts<'a, 'py>(texts: &Bound<'py, PyAny>, holder: &'a mut Vec<Bound<'py, PyAny>>) -> PyResult<Vec<&'a str>> {
    collect_texts(texts, holder)?;
    holder.iter().enumerate().map(|(i, o)| as_str(o, &|| format!("texts[{i}]"))).collect()
}

/// `s` as UTF-8, a lone surrogate written as Python's `surrogatepass` does.
pub fn surrogatepass_utf8<'a>(s: &'a Bound<'_, PyString>) -> PyResult<std::borrow::Cow<'a, [u8]>> {
    match s.to_str() {
        Ok(text) => Ok(std::borrow::Cow::Borrowed(text.as_bytes())),
        Err(_) => Ok(std::borrow::Cow::Owned(s.call_method1("encode", ("utf-8", "surrogatepass"))?.extract()?)),
    }
}

/// Token ids of spans as numpy arrays: `(ids, bounds)`.
pub type IdArrays<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<i64>>);

pub fn id_arrays(py: Python<'_>, ids: Vec<u32>, bounds: Vec<usize>) -> IdArrays<'_> {
    let bounds: Vec<i64> = bounds.into_iter().map(|b| b as i64).collect();
    (ids.into_pyarray(py), bounds.into_pyarray(py))
}

/// An `(n, W)` int64 array of `rows`.
pub fn matrix<'py, const W: usize>(py: Python<'py>, rows: &[[i64; W]]) -> Bound<'py, PyArray2<i64>> {
    let flat: Vec<i64> = rows.iter().flatten().copied().collect();
    numpy::ndarray::Array2::from_shape_vec((rows.len(), W), flat).unwrap().into_pyarray(py)
}

/// An `(n, W)` int64 array of `rows` of indices, [`NONE`] written -1.
pub fn index_matrix<'py, const W: usize>(py: Python<'py>, rows: &[[u32; W]]) -> Bound<'py, PyArray2<i64>> {
    let rows: Vec<[i64; W]> = rows.iter().map(|r| r.map(|x| if x == NONE { -1 } else { x as i64 })).collect();
    matrix(py, &rows)
}

/// The rows of an int64 array of width `W` as indices, -1 read as [`NONE`]; errors name `what`.
pub fn index_rows<const W: usize>(a: &numpy::PyReadonlyArray2<'_, i64>, what: &str) -> Result<Vec<[u32; W]>> {
    let a = a.as_array();
    if a.ncols() != W {
        return Err(input!("{what} must have {W} columns, not {}", a.ncols()));
    }
    a.rows()
        .into_iter()
        .map(|r| {
            let mut out = [0u32; W];
            for (o, &x) in out.iter_mut().zip(r.iter()) {
                *o = if x == -1 { NONE } else { u32::try_from(x).map_err(|_| input!("{what}: {x} is out of range"))? };
            }
            Ok(out)
        })
        .collect()
}
