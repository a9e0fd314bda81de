//! `Resource`: the Python class over the core's resource quantities (values converted only).
//!
//! Resource type names are interned once per process into `TypeId`s (at most [`MAX_TYPES`]
//! distinct names, so a hostile RM inventing names cannot grow the table without bound); the
//! class holds the core `Quantities` and answers Python's Mapping protocol over them.

use pyo3::basic::CompareOp;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyType};
use pyscheduler_schedmath::resource::{self, Quantities, Saturation, TypeId};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{LazyLock, Mutex, MutexGuard};

use crate::errors::resource_error;

/// Distinct resource type names a process accepts (a real cluster has a few dozen; each costs about 100 bytes).
pub const MAX_TYPES: usize = 65_536;

struct Names {
    ids: HashMap<String, TypeId>,
    names: Vec<Py<PyString>>,
}

static NAMES: LazyLock<Mutex<Names>> = LazyLock::new(|| Mutex::new(Names { ids: HashMap::new(), names: Vec::new() }));

fn names() -> MutexGuard<'static, Names> {
    // A panic while holding the table cannot leave it inconsistent (push after insert): go on.
    NAMES.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Names {
    fn intern(&mut self, name: &Bound<'_, PyString>) -> PyResult<TypeId> {
        let text = name.to_str()?;
        if let Some(&id) = self.ids.get(text) {
            return Ok(id);
        }
        if self.names.len() >= MAX_TYPES {
            return Err(resource_error(format!(
                "too many distinct resource types: at most {MAX_TYPES} per scheduler, {text:?} would be one more"
            )));
        }
        let id = self.names.len() as TypeId;
        self.ids.insert(text.to_owned(), id);
        self.names.push(PyString::intern(name.py(), text).unbind());
        Ok(id)
    }

    fn name<'py>(&self, py: Python<'py>, id: TypeId) -> Bound<'py, PyString> {
        self.names[id as usize].bind(py).clone()
    }
}

/// Warns as YuniKorn does when a result saturated (after the arithmetic, once per type).
#[derive(Default)]
struct Warnings(Vec<(TypeId, bool)>);

impl Saturation for Warnings {
    fn saturated(&mut self, type_id: TypeId, upper: bool) {
        self.0.push((type_id, upper));
    }
}

impl Warnings {
    fn emit(self, py: Python<'_>) -> PyResult<()> {
        if self.0.is_empty() {
            return Ok(());
        }
        let log = py.import("logging")?.call_method1("getLogger", ("pyscheduler.common.resources",))?;
        for (id, upper) in self.0 {
            let name = names().name(py, id);
            let bound = if upper { "maximum" } else { "minimum" };
            log.call_method1("warning", (format!("resource calculation wrapped for %r: returned the {bound} value possible"), name))?;
        }
        Ok(())
    }
}

/// An immutable map of resource name to int64 quantity (see `pyscheduler.common.resources`).
#[pyclass(module = "pyscheduler._native", frozen, mapping)]
pub struct Resource {
    q: Quantities,
    /// The dict `view()` returns, built on its first call (preemption reads the same victims'
    /// resources many times): shared, so its readers never write it (the Python class's
    /// contract was the same).
    view: std::sync::OnceLock<Py<PyDict>>,
}

fn new_resource(py: Python<'_>, q: Quantities) -> PyResult<Py<Resource>> {
    Py::new(py, Resource { q, view: std::sync::OnceLock::new() })
}

/// An int that is not a bool (True is an int to Python, never a quantity or a factor here).
fn is_plain_int(value: &Bound<'_, PyAny>) -> bool {
    value.is_instance_of::<pyo3::types::PyInt>() && !value.is_instance_of::<pyo3::types::PyBool>()
}

/// A checked `Quantities` from a mapping of name to int64 (ResourceError naming the entry).
fn checked(quantities: &Bound<'_, PyAny>) -> PyResult<Quantities> {
    if let Ok(resource) = quantities.cast::<Resource>() {
        return Ok(resource.get().q.clone());
    }
    let mut q = Quantities::new();
    if !quantities.is_truthy()? {
        return Ok(q);
    }
    let items = match quantities.cast::<PyDict>() {
        Ok(dict) => dict.items(),
        Err(_) => quantities.call_method0("items")?.try_iter()?.collect::<PyResult<Vec<_>>>().map(|v| pyo3::types::PyList::new(quantities.py(), v))??,
    };
    // Checked first, interned after: nothing runs Python code (a mapping's items, a repr)
    // while the names table is locked, so another thread can never wait on it holding the GIL.
    let mut entries = Vec::with_capacity(items.len());
    for item in items.iter() {
        let (name, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
        let name = match name.cast::<PyString>() {
            // A str that is not valid UTF-8 (lone surrogates) cannot be a resource type either.
            Ok(text) if text.to_str().is_ok_and(|t| !t.is_empty()) => text.clone(),
            _ => return Err(resource_error(format!("resource names must be non-empty UTF-8 strings, got {}", name.repr()?))),
        };
        if !is_plain_int(&value) {
            return Err(resource_error(format!("quantity of {} must be an integer, got {}", name.repr()?, value.repr()?)));
        }
        let Ok(amount) = value.extract::<i64>() else {
            return Err(resource_error(format!("quantity of {} is outside the int64 range: {}", name.repr()?, value.str()?)));
        };
        entries.push((name, amount));
    }
    let mut table = names();
    for (name, amount) in entries {
        let id = table.intern(&name)?;
        q.set(id, amount);
    }
    Ok(q)
}

/// An operand: a Resource's own quantities, or any other mapping checked as the constructor does.
fn operand<'a>(other: &'a Bound<'_, PyAny>) -> PyResult<std::borrow::Cow<'a, Quantities>> {
    match other.cast::<Resource>() {
        Ok(resource) => Ok(std::borrow::Cow::Borrowed(&resource.get().q)),
        Err(_) => Ok(std::borrow::Cow::Owned(checked(other)?)),
    }
}

fn is_operand(other: &Bound<'_, PyAny>) -> bool {
    other.is_instance_of::<Resource>() || other.is_instance_of::<PyDict>() || other.hasattr("items").unwrap_or(false)
}

impl Resource {
    fn combined(&self, py: Python<'_>, other: &Bound<'_, PyAny>, sign: i128) -> PyResult<Py<PyAny>> {
        if !is_operand(other) {
            return Ok(py.NotImplemented());
        }
        let mut warnings = Warnings::default();
        let q = self.q.combined(&*operand(other)?, sign, &mut warnings);
        warnings.emit(py)?;
        Ok(new_resource(py, q)?.into_any())
    }

    fn dict<'py>(&self, py: Python<'py>, entries: &[(TypeId, i64)]) -> PyResult<Bound<'py, PyDict>> {
        let keys: Vec<Bound<'py, PyString>> = {
            let table = names();
            entries.iter().map(|&(id, _)| table.name(py, id)).collect()
        };
        let dict = PyDict::new(py);
        for (key, &(_, v)) in keys.into_iter().zip(entries) {
            dict.set_item(key, v)?;
        }
        Ok(dict)
    }

    fn lookup(name: &Bound<'_, PyAny>) -> Option<TypeId> {
        let text = name.cast::<PyString>().ok()?.to_str().ok()?;
        names().ids.get(text).copied()
    }
}

#[pymethods]
impl Resource {
    #[new]
    #[pyo3(signature = (quantities = None))]
    fn new(quantities: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(Resource { q: quantities.map(checked).transpose()?.unwrap_or_default(), view: std::sync::OnceLock::new() })
    }

    fn __getitem__(&self, name: &Bound<'_, PyAny>) -> PyResult<i64> {
        Self::lookup(name).and_then(|id| self.q.get(id)).ok_or_else(|| PyKeyError::new_err(name.clone().unbind()))
    }

    /// `self[name]`, or `default` (0 when not given: a missing type is 0; `get(k, None)`
    /// tells a missing type apart).
    #[pyo3(signature = (name, *default))]
    fn get(&self, py: Python<'_>, name: &Bound<'_, PyAny>, default: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<Py<PyAny>> {
        match Self::lookup(name).and_then(|id| self.q.get(id)) {
            Some(v) => Ok(v.into_pyobject(py)?.into_any().unbind()),
            None => match default.len() {
                0 => Ok(0i64.into_pyobject(py)?.into_any().unbind()),
                1 => Ok(default.get_item(0)?.unbind()),
                n => Err(pyo3::exceptions::PyTypeError::new_err(format!("get expected at most 2 arguments, got {}", n + 1))),
            },
        }
    }

    fn __contains__(&self, name: &Bound<'_, PyAny>) -> bool {
        Self::lookup(name).is_some_and(|id| self.q.get(id).is_some())
    }

    fn __len__(&self) -> usize {
        self.q.len()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.dict(py, self.q.entries())?.try_iter()?.into_any())
    }

    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.dict(py, self.q.entries())?.call_method0("keys")
    }

    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.dict(py, self.q.entries())?.call_method0("values")
    }

    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.dict(py, self.q.entries())?.call_method0("items")
    }

    /// A plain dict copy (DAO output, events).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.dict(py, self.q.entries())
    }

    /// The quantities as a dict for readers that read several types, built once and shared:
    /// never write it (`to_dict()` gives a copy to keep or change).
    fn view<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if let Some(dict) = self.view.get() {
            return Ok(dict.bind(py).clone());
        }
        let dict = self.dict(py, self.q.entries())?;
        // Another thread may have set it meanwhile (the GIL can switch inside dict building):
        // either dict holds the same quantities; keep the first.
        Ok(self.view.get_or_init(|| dict.unbind()).bind(py).clone())
    }

    fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let equal = match op {
            CompareOp::Eq | CompareOp::Ne => {
                if let Ok(resource) = other.cast::<Resource>() {
                    self.q.same_as(&resource.get().q)
                } else if other.is_instance_of::<PyDict>() || other.hasattr("items")? {
                    // Any other mapping: compared as Python compares the pruned dicts.
                    let mine = self.dict(py, &self.q.pruned().entries().to_vec())?;
                    let theirs = PyDict::new(py);
                    for item in PyDict::from_sequence(&other.call_method0("items")?)?.items().iter() {
                        let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
                        if v.ne(0)? {
                            theirs.set_item(k, v)?;
                        }
                    }
                    mine.eq(theirs)?
                } else {
                    return Ok(py.NotImplemented());
                }
            }
            _ => return Ok(py.NotImplemented()),
        };
        let result = if matches!(op, CompareOp::Eq) { equal } else { !equal };
        Ok(pyo3::types::PyBool::new(py, result).to_owned().into_any().unbind())
    }

    fn __hash__(&self) -> isize {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.q.canonical().hash(&mut hasher);
        let hash = hasher.finish() as isize;
        if hash == -1 { -2 } else { hash }
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let keys: Vec<Bound<'_, PyString>> = {
            let table = names();
            self.q.entries().iter().map(|&(id, _)| table.name(py, id)).collect()
        };
        let mut pairs: Vec<(String, i64)> = keys.iter().zip(self.q.entries()).map(|(k, &(_, v))| (k.to_string(), v)).collect();
        pairs.sort();
        let inner: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}: {v}")).collect();
        format!("Resource({{{}}})", inner.join(", "))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, (Bound<'py, PyDict>,))> {
        let py = slf.py();
        Ok((py.get_type::<Resource>(), (slf.get().dict(py, slf.get().q.entries())?,)))
    }

    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.combined(py, other, 1)
    }

    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.combined(py, other, -1)
    }

    fn __neg__(&self, py: Python<'_>) -> PyResult<Py<Resource>> {
        let mut warnings = Warnings::default();
        let q = self.q.negated(&mut warnings);
        warnings.emit(py)?;
        new_resource(py, q)
    }

    /// `self` as a maximum: per type it names, the maximum minus `used` (saturated); types it
    /// does not name stay absent (unlimited).
    fn room_above(&self, py: Python<'_>, used: &Bound<'_, PyAny>) -> PyResult<Py<Resource>> {
        let mut warnings = Warnings::default();
        let q = self.q.room_above(&*operand(used)?, &mut warnings);
        warnings.emit(py)?;
        new_resource(py, q)
    }

    /// `self - other` with negative results clamped to 0.
    fn sub_eliminate_negative(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<Resource>> {
        let mut warnings = Warnings::default();
        let q = self.q.combined(&*operand(other)?, -1, &mut warnings).without_negatives();
        warnings.emit(py)?;
        new_resource(py, q)
    }

    fn multiply(&self, py: Python<'_>, factor: &Bound<'_, PyAny>) -> PyResult<Py<Resource>> {
        if !is_plain_int(factor) {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!("a resource is multiplied by an integer, got {}", factor.repr()?)));
        }
        // A factor past i128 saturates like any other product past int64.
        let factor: i128 = factor.extract().or_else(|_| factor.gt(0).map(|positive| if positive { i128::MAX } else { i128::MIN }))?;
        let mut warnings = Warnings::default();
        let q = self.q.multiplied(factor, &mut warnings);
        warnings.emit(py)?;
        new_resource(py, q)
    }

    /// Without zero quantities (YuniKorn prunes node capacity this way).
    fn pruned(&self, py: Python<'_>) -> PyResult<Py<Resource>> {
        new_resource(py, self.q.pruned())
    }

    fn is_zero(&self) -> bool {
        self.q.is_zero()
    }

    fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    fn has_negative(&self) -> bool {
        self.q.has_negative()
    }

    /// At least one quantity above 0 and none below (a valid ask).
    fn strictly_greater_than_zero(&self) -> bool {
        self.q.strictly_greater_than_zero()
    }

    /// Every type of self is at most the same type of `larger` (missing there: 0).
    fn fits_in(&self, larger: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.q.fits_in(&*operand(larger)?))
    }

    /// Like `fits_in`, but a type missing from `maximum` is unlimited; None: no maximum.
    fn fits_in_max_undef(&self, maximum: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        match maximum {
            None => Ok(true),
            Some(maximum) => Ok(self.q.fits_in_max_undef(&*operand(maximum)?)),
        }
    }

    /// As allocated usage: the largest share over its positive types of `guaranteed` (None: no
    /// guarantee) or, for a type without a guarantee, of `fairmax` (the fair sort's key; the
    /// Python twin is `pyscheduler.policies.sorting.fair_share`).
    fn fair_share(&self, py: Python<'_>, guaranteed: Option<PyRef<'_, Resource>>, fairmax: PyRef<'_, Resource>) -> f64 {
        self.q.fair_share(guaranteed.as_deref().map(|g| &g.q), &fairmax.q, |used, denominator| {
            const EXACT: i64 = 1 << 53;
            if (-EXACT..=EXACT).contains(&used) && (-EXACT..=EXACT).contains(&denominator) {
                used as f64 / denominator as f64 // both exact: IEEE division rounds as Python's
            } else {
                // Python's int / int, exactly rounded (a double of each first would round twice).
                (|| used.into_pyobject(py)?.div(denominator)?.extract::<f64>())().unwrap_or(f64::NAN)
            }
        })
    }

    /// The positive quantities summed.
    fn positive_total(&self) -> i128 {
        self.q.positive_total()
    }

    /// Per type the smaller quantity, over the union of types (a missing type is 0).
    fn component_min(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<Resource>> {
        new_resource(py, self.q.per_type_of_union(&*operand(other)?, i64::min))
    }

    fn component_max(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<Resource>> {
        new_resource(py, self.q.per_type_of_union(&*operand(other)?, i64::max))
    }
}

/// `(source - amount, target + amount)` in one pass over `amount`.
#[pyfunction]
pub fn transferred(py: Python<'_>, source: PyRef<'_, Resource>, target: PyRef<'_, Resource>, amount: PyRef<'_, Resource>)
    -> PyResult<(Py<Resource>, Py<Resource>)> {
    let mut warnings = Warnings::default();
    let (taken, given) = Quantities::transferred(&source.q, &target.q, &amount.q, &mut warnings);
    warnings.emit(py)?;
    Ok((new_resource(py, taken)?, new_resource(py, given)?))
}

/// A native Resource's (name, quantity) pairs in order; None for any other object (the node
/// index and the event store read a Resource so, without a dict in between).
pub fn named<'py>(obj: &Bound<'py, PyAny>) -> Option<Vec<(Bound<'py, PyString>, i64)>> {
    let resource = obj.cast::<Resource>().ok()?;
    let table = names();
    Some(resource.get().q.entries().iter().map(|&(id, v)| (table.name(obj.py(), id), v)).collect())
}

/// Per-type minimum of two maximums where a missing type (or a None maximum) is unlimited.
#[pyfunction]
#[pyo3(signature = (a, b))]
pub fn component_min_undef(py: Python<'_>, a: Option<Py<Resource>>, b: Option<Py<Resource>>) -> PyResult<Option<Py<Resource>>> {
    match (a, b) {
        (None, b) => Ok(b),
        (a, None) => Ok(a),
        (Some(a), Some(b)) => Ok(Some(new_resource(py, resource::component_min_undef(&a.get().q, &b.get().q))?)),
    }
}
