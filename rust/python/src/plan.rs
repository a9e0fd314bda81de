//! `PlanQueues`: the Python class over the core's node preemption plan (values converted only).

use pyo3::prelude::*;
use pyscheduler_schedmath::plan::{self, Candidate, NodeRoom};
use std::sync::{Mutex, MutexGuard};

use crate::errors::to_py;

/// The queues of one ask leaf's preemption attempts on the ask's resource types.
#[pyclass(module = "pyscheduler._native", frozen)]
pub struct PlanQueues {
    inner: Mutex<plan::PlanQueues>,
}

#[pymethods]
impl PlanQueues {
    #[new]
    fn new(types: usize) -> Self {
        PlanQueues { inner: Mutex::new(plan::PlanQueues::new(types)) }
    }

    /// Adds a queue; returns its index.
    fn add(&self, parent: Option<usize>, guaranteed: Vec<Option<i128>>, none: bool, merge: bool) -> PyResult<usize> {
        self.lock()?.add(parent, guaranteed, none, merge).map_err(to_py)
    }

    fn set_used(&self, queue: usize, used: Vec<i128>) -> PyResult<()> {
        self.lock()?.set_used(queue, used).map_err(to_py)
    }

    /// A node's plan: `(start index, kept positions)` or None.
    fn plan(&self, ask_queue: usize, queues: Vec<usize>, amounts: Vec<Vec<i128>>, freed: Vec<Vec<i128>>,
            wanted: Vec<i128>, available: Vec<i128>) -> PyResult<Option<(usize, Vec<usize>)>> {
        if amounts.len() != queues.len() || freed.len() != queues.len() {
            return Err(to_py(pyscheduler_error::CoreError::InvalidPlan("one queue, amounts and freed per candidate")));
        }
        let candidates: Vec<Candidate<'_>> = queues.iter().zip(amounts.iter().zip(&freed))
            .map(|(&queue, (amounts, freed))| Candidate { queue, amounts, freed })
            .collect();
        self.lock()?.plan(ask_queue, &candidates, &NodeRoom { wanted: &wanted, available: &available }).map_err(to_py)
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.lock()?.len())
    }
}

impl PlanQueues {
    fn lock(&self) -> PyResult<MutexGuard<'_, plan::PlanQueues>> {
        self.inner.lock().map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("plan queues poisoned"))
    }
}
