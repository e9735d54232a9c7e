//! Raising groupcoord's typed Python exceptions from Rust.

use crate::assign::model::AssignError;
use crate::consumer_protocol::PayloadError;
use pyo3::prelude::*;
use pyo3::types::PyType;

fn raise(py: Python<'_>, class: &str, message: String) -> PyErr {
    match py
        .import("groupcoord.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from))
    {
        Ok(ty) => PyErr::from_type(ty, message),
        Err(e) => e,
    }
}

/// `repr(obj)`, so that messages name ids and values as the Python reference's `{x!r}` does.
pub fn py_repr(obj: &Bound<'_, PyAny>) -> String {
    obj.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<unprintable>".to_owned())
}

/// `groupcoord.errors.InvalidAssignorInput`
pub fn invalid_input(py: Python<'_>, message: impl Into<String>) -> PyErr {
    raise(py, "InvalidAssignorInput", message.into())
}

/// `groupcoord.errors.InvalidPayload`
pub fn invalid_payload(py: Python<'_>, what: &str, err: &PayloadError) -> PyErr {
    raise(py, "InvalidPayload", format!("{what}: {err}"))
}

pub fn from_assign_error(py: Python<'_>, err: &AssignError) -> PyErr {
    invalid_input(py, err.to_string())
}
