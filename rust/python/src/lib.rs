//! `pyscheduler._native`: the thin PyO3 binding of the pyscheduler crates: `pyscheduler-events`
//! (the event store), `pyscheduler-stream` (its stream writer) and `pyscheduler-schedmath`
//! (resources, node index, preemption plan).
//!
//! Only translation lives here: Python arguments to core calls, core results to `bytes`,
//! ints and tuples, and `CoreError` to Python exceptions (in `errors`, one place). Anything
//! that can take a while (flush, batch bodies, stream reads) runs with the GIL released.

mod errors;
mod event_store;
mod node_index;
mod plan;
mod resource;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<event_store::EventStore>()?;
    m.add_class::<event_store::Subscription>()?;
    m.add_class::<event_store::StreamTicket>()?;
    m.add_class::<event_store::StreamOutcome>()?;
    m.add_function(wrap_pyfunction!(event_store::closing_line, m)?)?;
    m.add("CLOSED_BY_PRODUCER", pyscheduler_stream::CLOSED_BY_PRODUCER)?;
    m.add("RELEASED_DESCRIPTION", pyscheduler_stream::RELEASED_DESCRIPTION)?;
    m.add_class::<node_index::NodeIndex>()?;
    m.add_class::<plan::PlanQueues>()?;
    m.add_class::<resource::Resource>()?;
    m.add_function(wrap_pyfunction!(resource::transferred, m)?)?;
    m.add_function(wrap_pyfunction!(resource::component_min_undef, m)?)?;
    m.add("MAX_RESOURCE_TYPES", resource::MAX_TYPES)?;
    errors::register(m)?;
    Ok(())
}
