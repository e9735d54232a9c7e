//! Building the record a taken auto-commit is stored as (an `OffsetsRecord` of
//! `OffsetAndMetadata`s, frozen slotted dataclasses of `groupcoord.coordinator.offsets`)
//! without calling the classes.
//!
//! Why: the simulator's processing lane hands hundreds of thousands of taken commits per
//! simulated hour to the coordinator (`SyncShell.store_taken_commits`), and a frozen
//! dataclass's generated `__init__` sets each field through `object.__setattr__` (about
//! 1 µs per object in Python). `object.__new__` and `PyObject_GenericSetAttr` (what
//! `object.__setattr__` is) build the same objects for a fraction of that. The classes'
//! `__slots__` are checked once against the fields set here, so a field added to them
//! is an error here rather than an object with an unset slot.

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

const OFFSET_FIELDS: [&str; 5] = [
    "committed_offset",
    "leader_epoch",
    "metadata",
    "commit_timestamp_ms",
    "expire_timestamp_ms",
];
const RECORD_FIELDS: [&str; 2] = ["group_id", "offsets"];

pub struct OffsetRecords {
    object_new: Py<PyAny>,
    offset_type: Py<PyType>,
    record_type: Py<PyType>,
    offset_fields: [Py<PyString>; 5],
    record_fields: [Py<PyString>; 2],
    minus_one: Py<PyAny>,
    empty: Py<PyAny>,
}

impl OffsetRecords {
    pub fn new(py: Python<'_>) -> PyResult<Self> {
        let module = py.import("groupcoord.coordinator.offsets")?;
        let offset_type = module.getattr("OffsetAndMetadata")?.cast_into::<PyType>()?;
        let record_type = module.getattr("OffsetsRecord")?.cast_into::<PyType>()?;
        check_slots(&offset_type, &OFFSET_FIELDS)?;
        check_slots(&record_type, &RECORD_FIELDS)?;
        Ok(Self {
            object_new: py
                .get_type::<pyo3::types::PyAny>()
                .getattr("__new__")?
                .unbind(),
            offset_type: offset_type.unbind(),
            record_type: record_type.unbind(),
            offset_fields: OFFSET_FIELDS.map(|f| PyString::intern(py, f).unbind()),
            record_fields: RECORD_FIELDS.map(|f| PyString::intern(py, f).unbind()),
            minus_one: (-1i64).into_pyobject(py)?.into_any().unbind(),
            empty: PyString::intern(py, "").into_any().unbind(),
        })
    }

    /// `OffsetsRecord(group_id, {tp: committed_at(offset, now), ...})`, the partitions in
    /// the order given.
    pub fn record<'py>(
        &self,
        group_id: &Bound<'py, PyAny>,
        offsets: impl Iterator<Item = (Bound<'py, PyAny>, i64)>,
        now: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = group_id.py();
        let now = now.into_pyobject(py)?.into_any();
        let stored = PyDict::new(py);
        let [f_offset, f_epoch, f_metadata, f_time, f_expire] = &self.offset_fields;
        for (tp, offset) in offsets {
            let o = self.blank(py, &self.offset_type)?;
            set(&o, f_offset, &offset.into_pyobject(py)?.into_any())?;
            set(&o, f_epoch, self.minus_one.bind(py))?;
            set(&o, f_metadata, self.empty.bind(py))?;
            set(&o, f_time, &now)?;
            set(&o, f_expire, self.minus_one.bind(py))?;
            stored.set_item(tp, o)?;
        }
        let record = self.blank(py, &self.record_type)?;
        let [f_group, f_offsets] = &self.record_fields;
        set(&record, f_group, group_id)?;
        set(&record, f_offsets, stored.as_any())?;
        Ok(record)
    }

    fn blank<'py>(&self, py: Python<'py>, ty: &Py<PyType>) -> PyResult<Bound<'py, PyAny>> {
        self.object_new.bind(py).call1((ty.bind(py),))
    }
}

/// `object.__setattr__(obj, name, value)`: a slot of a frozen dataclass.
fn set(obj: &Bound<'_, PyAny>, name: &Py<PyString>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    // SAFETY: the three objects are alive (held by the caller) and the GIL is held (a
    // `Bound` proves it); PyObject_GenericSetAttr only borrows them.
    let rc = unsafe { ffi::PyObject_GenericSetAttr(obj.as_ptr(), name.as_ptr(), value.as_ptr()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(PyErr::fetch(obj.py()))
    }
}

fn check_slots(ty: &Bound<'_, PyType>, fields: &[&str]) -> PyResult<()> {
    let py = ty.py();
    let slots = ty.getattr(intern!(py, "__slots__"))?;
    let slots: Vec<String> = slots.cast::<PyTuple>()?.extract()?;
    let mut want: Vec<&str> = fields.to_vec();
    let mut have: Vec<&str> = slots.iter().map(String::as_str).collect();
    want.sort_unstable();
    have.sort_unstable();
    if want == have {
        Ok(())
    } else {
        Err(PyTypeError::new_err(format!(
            "{} has the slots {have:?}: the simulator's lane builds it with {want:?} \
             (rust/src/bindings/offset_records.rs)",
            ty.name()?
        )))
    }
}
