//! The one place where core errors become Python exceptions.

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyscheduler_core::CoreError;

create_exception!(
    _native,
    EventIdOutOfRangeError,
    PyValueError,
    "A start event id that the ring buffer does not hold. args: (message, start, lowest, highest)."
);
create_exception!(_native, EventSystemStoppedError, PyRuntimeError, "The event pipeline was stopped.");

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("EventIdOutOfRangeError", py.get_type::<EventIdOutOfRangeError>())?;
    m.add("EventSystemStoppedError", py.get_type::<EventSystemStoppedError>())?;
    Ok(())
}

pub fn to_py(err: CoreError) -> PyErr {
    let message = err.to_string();
    match err {
        CoreError::InvalidField { .. } | CoreError::StreamAttach(_) => PyValueError::new_err(message),
        CoreError::Io(_) => PyOSError::new_err(message),
        CoreError::StartOutOfRange { start, lowest, highest } => {
            EventIdOutOfRangeError::new_err((message, start, lowest, highest))
        }
        CoreError::Stopped => EventSystemStoppedError::new_err(message),
    }
}
