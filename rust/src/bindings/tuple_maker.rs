//! Building `TopicPartition` instances (a 2-field `NamedTuple`) without calling the class.
//!
//! `tuple.__new__(cls, items)` allocates through the type's `tp_alloc` and stores
//! the items; for a tuple subclass that adds no fields this is all a NamedTuple's
//! constructor amounts to. Doing the same here skips argument parsing and makes
//! a million partitions cost what allocating them costs. Types that add fields or
//! are not tuple subclasses fall back to an ordinary call.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple, PyType};

pub struct PairMaker<'py> {
    ty: Bound<'py, PyType>,
    alloc: Option<ffi::allocfunc>,
}

impl<'py> PairMaker<'py> {
    pub fn new(ty: &Bound<'py, PyType>) -> PyResult<Self> {
        let py = ty.py();
        let tuple = py.get_type::<PyTuple>();
        let plain_layout = ty.is_subclass(&tuple)?
            && ty
                .getattr("__basicsize__")?
                .eq(tuple.getattr("__basicsize__")?)?
            && ty
                .getattr("__itemsize__")?
                .eq(tuple.getattr("__itemsize__")?)?;
        let alloc = if plain_layout {
            // SAFETY: `ty` is a live type object; Py_tp_alloc is always set on heap types.
            let slot = unsafe { ffi::PyType_GetSlot(ty.as_type_ptr(), ffi::Py_tp_alloc) };
            (!slot.is_null()).then(|| unsafe {
                std::mem::transmute::<*mut std::ffi::c_void, ffi::allocfunc>(slot)
            })
        } else {
            None
        };
        Ok(Self {
            ty: ty.clone(),
            alloc,
        })
    }

    pub fn make(
        &self,
        first: &Bound<'py, PyString>,
        second: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = self.ty.py();
        let Some(alloc) = self.alloc else {
            return self.ty.call1((first, second));
        };
        // SAFETY: tp_alloc returns a new reference to a zeroed tuple-subclass object
        // of length 2 (or NULL with an exception set); PyTuple_SetItem steals the
        // references we pass and accepts subclass instances with refcount 1.
        unsafe {
            let obj = alloc(self.ty.as_type_ptr(), 2);
            let obj = Bound::from_owned_ptr_or_err(py, obj)?;
            ffi::PyTuple_SetItem(obj.as_ptr(), 0, first.clone().into_ptr());
            ffi::PyTuple_SetItem(obj.as_ptr(), 1, second.clone().into_ptr());
            Ok(obj)
        }
    }
}
