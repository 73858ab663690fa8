//! The hot paths of the bindings that call CPython's own type slots, the functions
//! Python's generic machinery ends up calling, without that machinery: reading and
//! writing an attribute through its descriptor, and `tuple.__new__` for a named tuple.
//! Expansion reads two attributes of ~50 hits and makes ~26 passages per query:
//! through the descriptor, reading an attribute takes half the instructions of
//! `getattr` (93 against 196, counted by callgrind).

use std::ffi::{c_int, c_void};

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple, PyType};

/// Slot `slot` of type `t`, None when unset (PyType_GetSlot reads static types since
/// 3.10, the abi3 floor).
fn type_slot(t: *mut ffi::PyTypeObject, slot: c_int) -> Option<*mut c_void> {
    // SAFETY: `t` is a live type object and `slot` a slot number of the stable ABI
    let p = unsafe { ffi::PyType_GetSlot(t, slot) };
    (!p.is_null()).then_some(p)
}

/// One attribute of a class's instances, read and written through the class's data
/// descriptor (a slot, a property) when there is one: its `__get__` and `__set__` are what
/// `obj.name` and `object.__setattr__(obj, name, value)` call for an instance of exactly
/// that class once they have found the descriptor on the type (that lookup is most of
/// the cost of a slot's access). Other objects: `getattr` and `object.__setattr__`.
pub struct Field {
    cls: Py<PyType>,
    name: Py<PyString>,
    descr: Option<(Py<PyAny>, ffi::descrgetfunc, ffi::descrsetfunc)>,
}

impl Field {
    /// Attribute `name` of `cls`'s instances, its descriptor looked up once, here.
    pub fn of(cls: &Bound<'_, PyType>, name: Bound<'_, PyString>) -> Self {
        let descr = cls.getattr(&name).ok().and_then(|d| {
            let kind = d.get_type().as_type_ptr();
            // only a data descriptor (it has __set__ too) comes before an instance's __dict__
            let (get, set) = (type_slot(kind, ffi::Py_tp_descr_get)?, type_slot(kind, ffi::Py_tp_descr_set)?);
            // SAFETY: the Py_tp_descr_get and Py_tp_descr_set slots hold a descrgetfunc and a descrsetfunc
            unsafe {
                Some((
                    d.unbind(),
                    std::mem::transmute::<*mut c_void, ffi::descrgetfunc>(get),
                    std::mem::transmute::<*mut c_void, ffi::descrsetfunc>(set),
                ))
            }
        });
        Field { cls: cls.clone().unbind(), name: name.unbind(), descr }
    }

    /// `object.__setattr__(obj, name, value)` (so a frozen dataclass's own `__setattr__`
    /// is not asked, as its `__init__` does).
    pub fn write(&self, obj: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        match &self.descr {
            Some((descr, _, set)) if obj.get_type().is(self.cls.bind(obj.py())) => {
                // SAFETY: the descriptor's tp_descr_set with the descriptor, an instance and a value,
                // as object.__setattr__ calls it; it returns 0, or -1 with an exception set
                if unsafe { set(descr.as_ptr(), obj.as_ptr(), value.as_ptr()) } < 0 {
                    return Err(PyErr::fetch(obj.py()));
                }
                Ok(())
            }
            _ => {
                let py = obj.py();
                py.get_type::<PyAny>().getattr(pyo3::intern!(py, "__setattr__"))?.call1((obj, &self.name, value)).map(drop)
            }
        }
    }

    /// `obj.name`.
    pub fn read<'py>(&self, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        match &self.descr {
            Some((descr, get, _)) if obj.get_type().is(self.cls.bind(obj.py())) => {
                // SAFETY: the descriptor's tp_descr_get with the descriptor, an instance and its type, as
                // attribute lookup calls it; it returns a new reference, or NULL with an exception set
                unsafe { Bound::from_owned_ptr_or_err(obj.py(), get(descr.as_ptr(), obj.as_ptr(), self.cls.as_ptr())) }
            }
            _ => obj.getattr(&self.name),
        }
    }
}

/// A subclass of tuple (a named tuple) that `tuple.__new__` is safe for, checked once.
pub struct TupleType(Py<PyType>);

impl TupleType {
    pub fn check(cls: &Bound<'_, PyType>) -> PyResult<Self> {
        let py = cls.py();
        if !cls.is_subclass_of::<PyTuple>()? {
            return Err(PyTypeError::new_err(format!("{} is not a subclass of tuple", cls.name()?)));
        }
        // `tuple.__new__` itself refuses a class it is not safe for (one with a C base of
        // its own, as a struct sequence): asked once for an empty instance, it checks `cls`
        py.get_type::<PyTuple>().call_method1(pyo3::intern!(py, "__new__"), (cls, PyTuple::empty(py)))?;
        Ok(TupleType(cls.clone().unbind()))
    }
}

/// `tuple.__new__(cls, row)` for one checked [`TupleType`] `cls`: tuple's own `tp_new`,
/// which `tuple.__new__` calls after copying its arguments into a new tuple and
/// checking `cls`. Not a hand-made allocation: `tp_new` also sets what the running
/// Python caches in a tuple (3.14's hash). The arguments `(row,)` are one pair of
/// tuples, refilled in place while nothing else refers to them.
pub struct TupleNew<'py> {
    cls: Bound<'py, PyType>,
    new: ffi::newfunc,
    args: Bound<'py, PyTuple>,
}

impl<'py> TupleNew<'py> {
    pub fn of(cls: &TupleType, py: Python<'py>) -> PyResult<Self> {
        let new = type_slot(std::ptr::addr_of_mut!(ffi::PyTuple_Type), ffi::Py_tp_new)
            .ok_or_else(|| PyTypeError::new_err("tuple has no tp_new"))?;
        // SAFETY: the Py_tp_new slot holds a newfunc
        let new = unsafe { std::mem::transmute::<*mut c_void, ffi::newfunc>(new) };
        Ok(TupleNew { cls: cls.0.bind(py).clone(), new, args: PyTuple::new(py, [PyTuple::empty(py)])? })
    }

    /// A `cls` holding `items`.
    pub fn call<const N: usize>(&mut self, items: [Bound<'py, PyAny>; N]) -> PyResult<Bound<'py, PyAny>> {
        let py = self.cls.py();
        let row = self.args.get_borrowed_item(0)?;
        if self.args.get_refcnt() == 1 && row.get_refcnt() == 1 && row.len()? == N {
            for (i, item) in items.into_iter().enumerate() {
                // SAFETY: `row` is a tuple of N items that only `args` refers to (checked above),
                // so no one sees it change; PyTuple_SetItem takes over `item` and drops the old one
                if unsafe { ffi::PyTuple_SetItem(row.as_ptr(), i as ffi::Py_ssize_t, item.into_ptr()) } < 0 {
                    return Err(PyErr::fetch(py));
                }
            }
        } else {
            self.args = PyTuple::new(py, [PyTuple::new(py, items)?])?;
        }
        // SAFETY: tuple's tp_new with a subtype of tuple (checked by `TupleType::check`), a tuple of arguments
        // and no keywords, as `tuple.__new__(cls, row)` calls it; it returns a new reference or NULL
        unsafe { Bound::from_owned_ptr_or_err(py, (self.new)(self.cls.as_type_ptr(), self.args.as_ptr(), std::ptr::null_mut())) }
    }
}
