//! The one place where core errors become Python exceptions.
//!
//! The native exceptions belong to pyscheduler's one hierarchy: their bases are the Python
//! classes `SchedulerValueError` and `SchedulerRuntimeError` of `pyscheduler.common.errors`
//! (both `SchedulerError`s, and a `ValueError` / `RuntimeError` as before), and their
//! `__module__` is `pyscheduler._native`.

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::{create_exception, import_exception};
use pyscheduler_error::CoreError;

import_exception!(pyscheduler.common.errors, SchedulerValueError);
import_exception!(pyscheduler.common.errors, SchedulerRuntimeError);
import_exception!(pyscheduler.common.errors, ResourceError);

create_exception!(
    pyscheduler._native,
    EventIdOutOfRangeError,
    SchedulerValueError,
    "A start event id that the ring buffer does not hold. args: (message, start, lowest, highest)."
);
create_exception!(
    pyscheduler._native,
    EventSystemStoppedError,
    SchedulerRuntimeError,
    "The event pipeline was stopped."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("EventIdOutOfRangeError", py.get_type::<EventIdOutOfRangeError>())?;
    m.add("EventSystemStoppedError", py.get_type::<EventSystemStoppedError>())?;
    Ok(())
}

/// A resource quantity or name that is not acceptable (`pyscheduler.common.errors.ResourceError`).
pub fn resource_error(message: String) -> PyErr {
    ResourceError::new_err(message)
}

pub fn to_py(err: CoreError) -> PyErr {
    let message = err.to_string();
    match err {
        CoreError::InvalidField { .. } | CoreError::StreamAttach(_) | CoreError::InvalidPlan(_) => {
            PyValueError::new_err(message)
        }
        CoreError::Io(_) => PyOSError::new_err(message),
        CoreError::StartOutOfRange { start, lowest, highest } => {
            EventIdOutOfRangeError::new_err((message, start, lowest, highest))
        }
        CoreError::Stopped => EventSystemStoppedError::new_err(message),
    }
}
