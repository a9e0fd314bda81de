//! `NodeIndex`: the Python class over the core node index (the scheduling cycle's node order).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyDict, PyList};
use pyscheduler_schedmath::nodes::{self, Cursor, Score, SortPolicy};
use std::sync::{Arc, Mutex, MutexGuard};

/// Nodes ordered by (score, node id) under the `fair` or `binpacking` policy. Python keeps the
/// node objects; this keeps what ordering needs, and is told of every change to a node.
#[pyclass(module = "pyscheduler._native", frozen)]
pub struct NodeIndex {
    inner: Mutex<nodes::NodeIndex>,
}

#[pymethods]
impl NodeIndex {
    #[new]
    #[pyo3(signature = (policy = "fair", weights = None))]
    fn new(policy: &str, weights: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let policy = parse_policy(policy)?;
        let weights = weight_pairs(weights)?;
        let refs: Vec<(&str, f64)> = weights.iter().map(|(n, w)| (&**n, *w)).collect();
        Ok(NodeIndex { inner: Mutex::new(nodes::NodeIndex::new(policy, &refs)) })
    }

    /// Adds a node or updates its resources (re-scored in O(log n)).
    #[pyo3(signature = (node_id, total, available, schedulable = true))]
    fn upsert(&self, node_id: &str, total: &Bound<'_, PyAny>, available: &Bound<'_, PyAny>, schedulable: bool) -> PyResult<()> {
        let total = quantities(total)?;
        let available = quantities(available)?;
        let total: Vec<(&str, i64)> = total.iter().map(|(n, v)| (&**n, *v)).collect();
        let available: Vec<(&str, i64)> = available.iter().map(|(n, v)| (&**n, *v)).collect();
        self.lock()?.upsert(node_id, &total, &available, schedulable);
        Ok(())
    }

    fn remove(&self, node_id: &str) -> PyResult<bool> {
        Ok(self.lock()?.remove(node_id))
    }

    /// Reserved nodes are skipped by `first_fit` and `closest_fits` with `skip_reserved=True`.
    fn set_reserved(&self, node_id: &str, reserved: bool) -> PyResult<bool> {
        Ok(self.lock()?.set_reserved(node_id, reserved))
    }

    /// Changes the policy and weights (None or empty: vcore 1, memory 1); rebuilds the order.
    #[pyo3(signature = (policy, weights = None))]
    fn set_policy(&self, policy: &str, weights: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let policy = parse_policy(policy)?;
        let weights = weight_pairs(weights)?;
        let refs: Vec<(&str, f64)> = weights.iter().map(|(n, w)| (&**n, *w)).collect();
        self.lock()?.set_policy(policy, &refs);
        Ok(())
    }

    #[getter]
    fn policy(&self) -> PyResult<&'static str> {
        Ok(match self.lock()?.policy() {
            SortPolicy::Fair => "fair",
            SortPolicy::BinPacking => "binpacking",
        })
    }

    /// The first node, from the best (or after the cursor `after`), that is schedulable, not
    /// reserved (when `skip_reserved`), and whose capacity and available resources fit `ask`.
    /// Returns a cursor `(score, node_id)` to resume after, or None.
    #[pyo3(signature = (ask, after = None, skip_reserved = true))]
    fn first_fit(&self, ask: &Bound<'_, PyAny>, after: Option<(f64, PyBackedStr)>, skip_reserved: bool) -> PyResult<Option<(f64, String)>> {
        let ask = quantities(ask)?;
        let ask: Vec<(&str, i64)> = ask.iter().map(|(n, v)| (&**n, *v)).collect();
        let mut index = self.lock()?;
        let demand = index.demand(&ask);
        let after: Option<Cursor> = after.map(|(score, id)| (Score(score), Arc::from(&*id)));
        Ok(index.first_fit(&demand, after.as_ref(), skip_reserved).map(|(score, id)| (score.0, id.to_string())))
    }

    /// Up to `limit` nodes an ask could reserve, closest to fitting it first: `(fit_in_score,
    /// node_id)` in that order, after the cursor `after` (from this method) when resuming. Only
    /// schedulable nodes whose capacity holds `ask`, not reserved when `skip_reserved`. The
    /// scan over every node runs without the GIL.
    #[pyo3(signature = (ask, limit, after = None, skip_reserved = true))]
    fn closest_fits(
        &self,
        py: Python<'_>,
        ask: &Bound<'_, PyAny>,
        limit: usize,
        after: Option<(f64, PyBackedStr)>,
        skip_reserved: bool,
    ) -> PyResult<Vec<(f64, String)>> {
        let ask = quantities(ask)?;
        let ask: Vec<(&str, i64)> = ask.iter().map(|(n, v)| (&**n, *v)).collect();
        let after: Option<Cursor> = after.map(|(score, id)| (Score(score), Arc::from(&*id)));
        let closest = py.detach(|| -> PyResult<Vec<Cursor>> {
            let mut index = self.lock()?;
            let demand = index.demand(&ask);
            Ok(index.closest_fits(&demand, limit, after.as_ref(), skip_reserved))
        })?;
        Ok(closest.into_iter().map(|(score, id)| (score.0, id.to_string())).collect())
    }

    /// Node ids, best first.
    fn ordered<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let ids: Vec<String> = self.lock()?.ordered().into_iter().map(String::from).collect();
        PyList::new(py, ids)
    }

    fn score(&self, node_id: &str) -> PyResult<Option<f64>> {
        Ok(self.lock()?.score(node_id))
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.lock()?.len())
    }
}

impl NodeIndex {
    fn lock(&self) -> PyResult<MutexGuard<'_, nodes::NodeIndex>> {
        self.inner.lock().map_err(|_| PyValueError::new_err("node index lock poisoned"))
    }
}

fn parse_policy(name: &str) -> PyResult<SortPolicy> {
    SortPolicy::parse(name).ok_or_else(|| PyValueError::new_err(format!("unknown node sort policy {name:?} (fair or binpacking)")))
}

fn quantities(resource: &Bound<'_, PyAny>) -> PyResult<Vec<(PyBackedStr, i64)>> {
    let mut out = Vec::new();
    if let Some(pairs) = crate::resource::named(resource) {
        for (name, value) in pairs {
            out.push((name.extract()?, value));
        }
        return Ok(out);
    }
    if let Ok(dict) = resource.cast::<PyDict>() {
        for (name, value) in dict.iter() {
            out.push((name.extract()?, value.extract()?));
        }
        return Ok(out);
    }
    let items = resource.call_method0("items").map_err(|_| PyTypeError::new_err("a resource must be a mapping of name to integer"))?;
    for pair in items.try_iter()? {
        let (name, value): (PyBackedStr, i64) = pair?.extract()?;
        out.push((name, value));
    }
    Ok(out)
}

fn weight_pairs(weights: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<(PyBackedStr, f64)>> {
    let Some(weights) = weights.filter(|w| !w.is_none()) else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    let items = weights.call_method0("items").map_err(|_| PyTypeError::new_err("weights must be a mapping of name to number"))?;
    for pair in items.try_iter()? {
        let (name, weight): (PyBackedStr, f64) = pair?.extract()?;
        // NaN is refused too (it is not >= 0).
        if weight.is_nan() || weight < 0.0 {
            return Err(PyValueError::new_err(format!("resource weight for {:?} must be a non-negative number", &*name)));
        }
        out.push((name, weight));
    }
    Ok(out)
}
