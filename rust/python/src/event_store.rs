//! Python classes over the event pipeline (`pyscheduler-events`) and its stream writer
//! (`pyscheduler-stream`): `EventStore`, `Subscription`, `StreamTicket`, and the closing line.

use crate::errors;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyString, PyTuple};
use pyscheduler_events::pipeline::{EventPipeline, PipelineStats, SubscriptionStatus};
use pyscheduler_events::record::EventBuilder;
use pyscheduler_events::{EventFields, Kind, OwnedEvent};
use pyscheduler_stream::StreamOutcome as CoreOutcome;
use pyscheduler_stream::{Framing, StreamOptions, StreamWriter};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// YuniKorn's in-band end of a stream, the stream writer's own bytes (`pyscheduler-stream`):
/// the web layer writes the same line where no socket is handed to the writer.
#[pyfunction]
pub fn closing_line<'py>(py: Python<'py>, description: &str) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &pyscheduler_stream::closing_line(description))
}

/// Default number of live events a subscription may fall behind by before it is cut: the
/// slack YuniKorn's streams have (1000 in the producer-side buffer + 1000 in the handler's).
const DEFAULT_SUBSCRIBER_CAPACITY: u64 = 2000;

/// The event ring buffer and the pipeline that feeds it. `add` never blocks; strings are
/// interned and records kept compact in Rust; reads come back as wire-format `bytes`.
#[pyclass(module = "pyscheduler._native", frozen)]
pub struct EventStore {
    pipeline: EventPipeline,
    /// The writer of this store's streams (`open_stream`).
    streams: StreamWriter,
    /// `record` keeps nothing while false (tracking disabled).
    tracking: AtomicBool,
    /// Where `record` sends REQUEST events with change type NONE (they never enter the ring).
    request_sink: Mutex<Option<Py<PyAny>>>,
}

const REQUEST: u32 = 1;
const CHANGE_NONE: u32 = 0;

#[pymethods]
impl EventStore {
    #[new]
    #[pyo3(signature = (capacity = 100_000, queue_capacity = 100_000))]
    fn new(capacity: usize, queue_capacity: usize) -> PyResult<Self> {
        if queue_capacity == 0 {
            return Err(PyValueError::new_err("queue_capacity must be at least 1"));
        }
        let pipeline = EventPipeline::new(capacity, queue_capacity);
        let streams = StreamWriter::new(&pipeline);
        Ok(EventStore {
            pipeline,
            streams,
            tracking: AtomicBool::new(true),
            request_sink: Mutex::new(None),
        })
    }

    /// The scheduler's entry point (`EventSystem.add` with the real clock): keeps nothing while
    /// tracking is off; hands REQUEST/NONE events to the request sink (called with the same
    /// arguments, its result returned); queues every other event like `add`.
    #[pyo3(signature = (r#type, change_type, change_detail, object_id, reference_id = "", message = "", resource = None, timestamp_ns = None))]
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        py: Python<'_>,
        r#type: u32,
        change_type: u32,
        change_detail: u32,
        object_id: &str,
        reference_id: &str,
        message: &str,
        resource: Option<&Bound<'_, PyAny>>,
        timestamp_ns: Option<i64>,
    ) -> PyResult<bool> {
        if !self.tracking.load(Ordering::Relaxed) {
            return Ok(false);
        }
        if r#type == REQUEST && change_type == CHANGE_NONE {
            // The guard must be gone before the call: calling Python under this mutex would
            // deadlock with another thread that holds the GIL and waits for the mutex.
            let sink = {
                let guard = self.request_sink.lock().map_err(|_| PyValueError::new_err("request sink lock poisoned"))?;
                guard.as_ref().map(|s| s.clone_ref(py))
            };
            let Some(sink) = sink else { return Ok(false) };
            let args = (r#type, change_type, change_detail, object_id, reference_id, message, resource, timestamp_ns);
            return sink.call1(py, args)?.extract(py);
        }
        self.add(r#type, change_type, change_detail, timestamp_ns, object_id, reference_id, message, resource)
    }

    /// Turns `record` on or off (tracking enabled or disabled); `add` is not affected.
    fn set_tracking(&self, enabled: bool) {
        self.tracking.store(enabled, Ordering::Relaxed);
    }

    /// The callable that receives `record`'s REQUEST/NONE events (None: they are dropped).
    fn set_request_sink(&self, sink: Option<Py<PyAny>>) -> PyResult<()> {
        *self.request_sink.lock().map_err(|_| PyValueError::new_err("request sink lock poisoned"))? = sink;
        Ok(())
    }

    /// Queues one event (timestamp None: now); False when it was dropped (queue full or store
    /// stopped).
    #[pyo3(signature = (r#type, change_type, change_detail, timestamp_ns, object_id, reference_id = "", message = "", resource = None))]
    #[allow(clippy::too_many_arguments)]
    fn add(
        &self,
        r#type: u32,
        change_type: u32,
        change_detail: u32,
        timestamp_ns: Option<i64>,
        object_id: &str,
        reference_id: &str,
        message: &str,
        resource: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let kind = Kind::new(r#type, change_type, change_detail).map_err(errors::to_py)?;
        let timestamp_ns = timestamp_ns.unwrap_or_else(now_ns);
        let fields = EventFields { kind, timestamp_ns, object: object_id, reference: reference_id, message };
        let event = build_event(self.pipeline.event_builder(fields), resource)?;
        Ok(self.pipeline.add(event))
    }

    /// Queues many events given as tuples in `add`'s argument order (the first five required).
    /// Returns how many were accepted. Every tuple is checked before any is queued.
    fn add_many(&self, events: &Bound<'_, PyAny>) -> PyResult<usize> {
        let mut owned = Vec::new();
        for item in events.try_iter()? {
            let item = item?;
            let tuple = item.cast::<PyTuple>().map_err(|_| PyTypeError::new_err("add_many takes an iterable of tuples"))?;
            owned.push(event_from_tuple(&self.pipeline, tuple)?);
        }
        Ok(owned.into_iter().map(|e| self.pipeline.add(e)).filter(|ok| *ok).count())
    }

    /// Waits (GIL released) until every event accepted so far is stored; False on timeout.
    #[pyo3(signature = (timeout = None))]
    fn flush(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let timeout = timeout.map(duration).transpose()?;
        Ok(py.detach(|| self.pipeline.flush(timeout)))
    }

    fn lowest_id(&self) -> u64 {
        self.pipeline.read().lowest_id()
    }

    fn highest_id(&self) -> u64 {
        self.pipeline.read().highest_id()
    }

    /// The id the next stored event will get.
    fn next_id(&self) -> u64 {
        self.pipeline.read().next_id()
    }

    /// (lowest, highest), read together.
    fn id_range(&self) -> (u64, u64) {
        let store = self.pipeline.read();
        (store.lowest_id(), store.highest_id())
    }

    fn __len__(&self) -> usize {
        self.pipeline.read().len()
    }

    #[getter]
    fn capacity(&self) -> usize {
        self.pipeline.read().capacity()
    }

    /// Changes the ring capacity, keeping the newest events and every id (0: collection off).
    fn resize(&self, py: Python<'_>, capacity: usize) {
        py.detach(|| self.pipeline.resize(capacity));
    }

    /// The `/ws/v1/events/batch` body (with its trailing newline) for `count` events from
    /// `start`; `EventRecords` is null when `start` is not held.
    fn batch_body<'py>(&self, py: Python<'py>, instance_uuid: &str, start: u64, count: u64) -> Bound<'py, PyBytes> {
        render(py, |out| {
            self.pipeline.read().write_batch(out, instance_uuid, start, count);
        })
    }

    /// Up to `count` events from `start` as NDJSON lines (empty when `start` is not held).
    fn ndjson<'py>(&self, py: Python<'py>, start: u64, count: u64) -> Bound<'py, PyBytes> {
        render(py, |out| {
            self.pipeline.read().write_ndjson(out, start, count);
        })
    }

    /// Decoded events, for tests and debugging: tuples of (id, type, change_type,
    /// change_detail, timestamp_ns, object_id, reference_id, message, resource dict).
    fn records<'py>(&self, py: Python<'py>, start: u64, count: u64) -> PyResult<Bound<'py, PyList>> {
        let decoded = py.detach(|| self.pipeline.read().decode(start, count));
        let items = decoded
            .into_iter()
            .map(|d| {
                let resource = PyDict::new(py);
                for (name, value) in &d.resource {
                    resource.set_item(name, value)?;
                }
                (
                    d.id,
                    d.record_type,
                    d.change_type,
                    d.change_detail,
                    d.timestamp_ns,
                    d.object_id,
                    d.reference_id,
                    d.message,
                    resource,
                )
                    .into_pyobject(py)
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// A stream subscription: the last `count` stored events first, then live events.
    #[pyo3(signature = (count = 0, capacity = DEFAULT_SUBSCRIBER_CAPACITY))]
    fn subscribe_recent(&self, count: u64, capacity: u64) -> PyResult<Subscription> {
        let inner = self.pipeline.subscribe_recent(count, capacity).map_err(errors::to_py)?;
        Ok(Subscription { inner })
    }

    /// A stream subscription resuming at event id `start`, then live events. Raises
    /// EventIdOutOfRangeError when `start` is neither held nor the next id to come.
    #[pyo3(signature = (start, capacity = DEFAULT_SUBSCRIBER_CAPACITY))]
    fn subscribe_from(&self, start: u64, capacity: u64) -> PyResult<Subscription> {
        let inner = self.pipeline.subscribe_from(start, capacity).map_err(errors::to_py)?;
        Ok(Subscription { inner })
    }

    /// Hands `subscription` and the connected socket `fd` (an HTTP response whose head is
    /// sent) to the stream writer, which writes the whole body from then on: `first_line`, the
    /// history (from this call, GIL released: it returns once the stream caught up or ended),
    /// live events (from the writer's thread) and YuniKorn's closing line; HTTP/1.1 chunks
    /// when `chunked`, else the bytes as they are. The caller keeps the socket open until the
    /// ticket reports an outcome (the writer uses its own duplicate).
    #[pyo3(signature = (subscription, fd, first_line, chunked = true, write_timeout = 5.0))]
    fn open_stream(
        &self,
        py: Python<'_>,
        subscription: &Subscription,
        fd: i32,
        first_line: &[u8],
        chunked: bool,
        write_timeout: f64,
    ) -> PyResult<StreamTicket> {
        let write_timeout = duration(write_timeout)?;
        if fd < 0 {
            return Err(PyValueError::new_err("open_stream needs a socket file descriptor"));
        }
        let framing = if chunked { Framing::Chunked } else { Framing::CloseDelimited };
        let options = StreamOptions { first_line, framing, write_timeout };
        // SAFETY: the caller's socket is open for this call; the writer duplicates it at once.
        let socket = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let inner = py.detach(|| self.streams.open_stream(&subscription.inner, socket, options));
        Ok(StreamTicket { inner: inner.map_err(errors::to_py)? })
    }

    /// Asks every open stream to end at its next chunk boundary, with the closing line.
    fn release_streams(&self, py: Python<'_>) {
        py.detach(|| self.streams.release_streams());
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let PipelineStats {
            accepted,
            dropped,
            stored,
            not_stored,
            queued,
            subscribers,
            slow_closed,
            delivered,
            interned_strings,
            interned_payloads,
            memory_bytes,
            capacity,
            len,
        } = py.detach(|| self.pipeline.stats());
        let attached_streams = self.streams.attached_streams();
        let stream_write_timeouts = self.streams.write_timeouts();
        let d = PyDict::new(py);
        for (k, v) in [
            ("accepted", accepted),
            ("dropped", dropped),
            ("stored", stored),
            ("not_stored", not_stored),
            ("queued", queued),
            ("subscribers", subscribers),
            ("attached_streams", attached_streams),
            ("stream_write_timeouts", stream_write_timeouts),
            ("slow_closed", slow_closed),
            ("delivered", delivered),
            ("interned_strings", interned_strings),
            ("interned_payloads", interned_payloads),
            ("memory_bytes", memory_bytes),
            ("capacity", capacity),
            ("len", len),
        ] {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Stores what is queued, stops the consumer thread and closes every subscription.
    fn stop(&self, py: Python<'_>) {
        py.detach(|| self.pipeline.stop());
    }

    #[getter]
    fn stopped(&self) -> bool {
        self.pipeline.is_stopped()
    }
}

/// A cursor over the event ring: history first, then live events, as NDJSON chunks.
#[pyclass(module = "pyscheduler._native", frozen)]
pub struct Subscription {
    inner: pyscheduler_events::Subscription,
}

#[pymethods]
impl Subscription {
    /// Up to `max_events` events as NDJSON bytes, waiting (GIL released) up to `timeout`
    /// seconds for the first. b"" when nothing came in time; None once closed (see
    /// `closed_reason`).
    #[pyo3(signature = (max_events = 1000, timeout = 1.0))]
    fn next<'py>(&self, py: Python<'py>, max_events: usize, timeout: f64) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let timeout = duration(timeout)?;
        let status = py.detach(|| self.inner.next(max_events, timeout));
        Ok(match status {
            SubscriptionStatus::Events(bytes, _) => Some(PyBytes::new(py, &bytes)),
            SubscriptionStatus::Timeout => Some(PyBytes::new(py, b"")),
            SubscriptionStatus::Closed(_) => None,
        })
    }

    /// The id of the next event this subscription delivers.
    #[getter]
    fn next_id(&self) -> u64 {
        self.inner.next_id()
    }

    /// Why the subscription was closed, or None while it is open.
    #[getter]
    fn closed_reason(&self) -> Option<&'static str> {
        self.inner.closed_reason()
    }

    fn close(&self, py: Python<'_>) {
        py.detach(|| self.inner.close());
    }
}

/// How a stream ended (`StreamTicket.wait`, `StreamTicket.outcome`).
#[pyclass(module = "pyscheduler._native", frozen, eq, eq_int)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum StreamOutcome {
    /// The subscription closed (see `StreamTicket.closed_reason`); the closing line was written.
    #[pyo3(name = "CLOSED")]
    Closed,
    /// Ended on request (`release`, `release_streams`); the closing line was written.
    #[pyo3(name = "RELEASED")]
    Released,
    /// The client hung up.
    #[pyo3(name = "PEER_CLOSED")]
    PeerClosed,
    /// A write failed (the client is gone); the socket was shut down.
    #[pyo3(name = "WRITE_FAILED")]
    WriteFailed,
    /// One chunk was not written within the write timeout; the socket was shut down.
    #[pyo3(name = "WRITE_TIMEOUT")]
    WriteTimeout,
}

impl From<CoreOutcome> for StreamOutcome {
    fn from(outcome: CoreOutcome) -> Self {
        match outcome {
            CoreOutcome::Closed(_) => StreamOutcome::Closed,
            CoreOutcome::Released => StreamOutcome::Released,
            CoreOutcome::PeerClosed => StreamOutcome::PeerClosed,
            CoreOutcome::WriteFailed => StreamOutcome::WriteFailed,
            CoreOutcome::WriteTimeout => StreamOutcome::WriteTimeout,
        }
    }
}

/// A stream handed to the stream writer (`EventStore.open_stream`).
#[pyclass(module = "pyscheduler._native", frozen)]
pub struct StreamTicket {
    inner: pyscheduler_stream::StreamTicket,
}

#[pymethods]
impl StreamTicket {
    /// Waits (GIL released) up to `timeout` seconds for the stream to end: None while it
    /// runs, else its `StreamOutcome`.
    #[pyo3(signature = (timeout = 1.0))]
    fn wait(&self, py: Python<'_>, timeout: f64) -> PyResult<Option<StreamOutcome>> {
        let timeout = duration(timeout)?;
        Ok(py.detach(|| self.inner.wait(timeout)).map(StreamOutcome::from))
    }

    /// Asks the writer to end the stream at its next chunk boundary, with the closing line.
    fn release(&self, py: Python<'_>) {
        py.detach(|| self.inner.release());
    }

    /// The outcome, or None while the stream runs.
    #[getter]
    fn outcome(&self) -> Option<StreamOutcome> {
        self.inner.outcome().map(StreamOutcome::from)
    }

    /// Why the subscription closed, for `StreamOutcome.CLOSED`.
    #[getter]
    fn closed_reason(&self) -> Option<&'static str> {
        match self.inner.outcome() {
            Some(CoreOutcome::Closed(reason)) => Some(reason),
            _ => None,
        }
    }

    /// Events handed to the socket.
    #[getter]
    fn events_written(&self) -> u64 {
        self.inner.events_written()
    }
}

/// Largest scratch buffer a thread keeps between calls.
const SCRATCH_KEEP_BYTES: usize = 64 << 20;

thread_local! {
    /// Per-thread output buffer, reused so that large bodies are written into memory that is
    /// already mapped (fresh multi-MB buffers page-fault on every call).
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Writes with the GIL released into the thread's scratch buffer, then copies the result into
/// one `bytes` object.
fn render<'py>(py: Python<'py>, write: impl FnOnce(&mut Vec<u8>) + Send) -> Bound<'py, PyBytes> {
    let mut buf = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
    buf.clear();
    let mut buf = py.detach(move || {
        write(&mut buf);
        buf
    });
    let bytes = PyBytes::new(py, &buf);
    if buf.capacity() <= SCRATCH_KEEP_BYTES {
        buf.clear();
        SCRATCH.with(|s| *s.borrow_mut() = buf);
    }
    bytes
}

/// Unix time in nanoseconds, read in Rust so the common case costs no Python call.
fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn duration(seconds: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(seconds).map_err(|_| PyValueError::new_err(format!("invalid timeout: {seconds}")))
}

fn build_event(mut builder: EventBuilder, resource: Option<&Bound<'_, PyAny>>) -> PyResult<OwnedEvent> {
    let Some(resource) = resource.filter(|r| !r.is_none()) else {
        return Ok(builder.finish());
    };
    if let Some(pairs) = crate::resource::named(resource) {
        // A native Resource: checked when it was built.
        for (name, value) in pairs {
            builder.quantity(name.to_str()?, value);
        }
    } else if let Ok(dict) = resource.cast::<PyDict>() {
        for (name, value) in dict.iter() {
            add_quantity(&mut builder, &name, &value)?;
        }
    } else {
        let items = resource
            .call_method0("items")
            .map_err(|_| PyTypeError::new_err("resource must be a mapping of resource name to integer"))?;
        for pair in items.try_iter()? {
            let (name, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair?.extract()?;
            add_quantity(&mut builder, &name, &value)?;
        }
    }
    Ok(builder.finish())
}

/// Checks one (name, quantity) pair and copies it into the event being built.
fn add_quantity(builder: &mut EventBuilder, name: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let name = name.cast::<PyString>().map_err(|_| PyTypeError::new_err("resource names must be strings"))?.to_str()?;
    if !value.is_instance_of::<PyInt>() || value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!("resource quantity for {name:?} must be an integer")));
    }
    let value: i64 = value
        .extract()
        .map_err(|_| PyValueError::new_err(format!("resource quantity for {name:?} is outside the int64 range")))?;
    builder.quantity(name, value);
    Ok(())
}

fn event_from_tuple(pipeline: &EventPipeline, t: &Bound<'_, PyTuple>) -> PyResult<OwnedEvent> {
    let n = t.len();
    if !(5..=8).contains(&n) {
        return Err(PyTypeError::new_err(format!(
            "an event tuple has 5 to 8 fields (type, change_type, change_detail, timestamp_ns, object_id[, reference_id, message, resource]), got {n}"
        )));
    }
    let kind = Kind::new(t.get_item(0)?.extract()?, t.get_item(1)?.extract()?, t.get_item(2)?.extract()?)
        .map_err(errors::to_py)?;
    let timestamp_ns: i64 = t.get_item(3)?.extract::<Option<i64>>()?.unwrap_or_else(now_ns);
    let object = t.get_item(4)?;
    let reference = if n > 5 { Some(t.get_item(5)?) } else { None };
    let message = if n > 6 { Some(t.get_item(6)?) } else { None };
    let resource = if n > 7 { Some(t.get_item(7)?) } else { None };
    let object: PyBackedStr = object.extract()?;
    let reference: Option<PyBackedStr> = reference.map(|r| r.extract()).transpose()?;
    let message: Option<PyBackedStr> = message.map(|m| m.extract()).transpose()?;
    let fields = EventFields {
        kind,
        timestamp_ns,
        object: &object,
        reference: reference.as_deref().unwrap_or(""),
        message: message.as_deref().unwrap_or(""),
    };
    build_event(pipeline.event_builder(fields), resource.as_ref())
}
