//! Errors as Python sees them: `FlussError`, with the library's error kind as its
//! `kind` attribute (a value, never parsed out of the message).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    _fluss_datafusion,
    FlussError,
    PyException,
    "An error of fluss-datafusion; `kind` names its kind (e.g. 'NotFound')."
);

/// The Python exception of a library error.
pub fn to_py(error: fluss_datafusion::Error) -> PyErr {
    let kind = format!("{:?}", error.kind());
    let err = FlussError::new_err(error.to_string());
    Python::attach(|py| {
        // Setting an attribute on a fresh exception instance cannot fail in practice;
        // if it did, the message still says what happened.
        let _ = err.value(py).setattr("kind", kind);
    });
    err
}

/// The Python exception of a DataFusion error (planning through the FFI).
pub fn from_datafusion(error: datafusion::error::DataFusionError) -> PyErr {
    to_py(fluss_datafusion::Error::from(error))
}
