//! The concurrent event pipeline.
//!
//! ```text
//! add() --(lock-free bounded queue; full: drop + count)--> consumer thread
//!        consumer: intern + store in the ring (write lock, per batch) --> wake waiters
//! readers (batch, NDJSON): read lock      subscribers: cursors over the ring
//! ```
//!
//! `add` never takes a lock that a reader holds: it copies the event into one buffer and
//! pushes it onto a bounded lock-free queue. A single consumer thread drains the queue in
//! batches into the store, which assigns ids in queue order.
//!
//! A stream subscription is a cursor (the next id to read) over the ring, not a copy of each
//! event: publishing costs the producer nothing per subscriber, and history and live events
//! come from one sequence of ids, so there is never a gap or a duplicate between them. Each
//! subscription has a capacity: the number of live events (produced after it subscribed) it
//! may fall behind by. One that falls further behind, or whose next record was overwritten,
//! is closed with a reason and never slows anybody else. For a stream served by the stream
//! writer, only the events the writer has offered count as lag: a burst stored between two of
//! its rounds is the writer's backlog, not the client's.

use pyscheduler_error::CoreError;
use crate::record::{EventBuffers, EventBuilder, EventFields, OwnedEvent};
use crate::store::EventStore;
use crossbeam_queue::ArrayQueue;
use parking_lot::{Condvar, Mutex, RwLock, RwLockReadGuard};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

/// Event buffers kept for reuse. Producers take them instead of allocating and the consumer
/// returns them instead of freeing: memory allocated on one thread and freed on another
/// costs glibc's malloc lock hand-offs on every event.
const RECYCLED_BUFFERS: usize = 4096;
/// A buffer that grew past this (a long message) is freed rather than kept.
const RECYCLE_MAX_BYTES: usize = 2048;

/// Most events the consumer moves per write-lock hold, so readers are never held off long.
const CONSUMER_BATCH: usize = 4096;
/// While events are flowing the consumer polls the queue this often, and producers never
/// have to wake it: an `add` then costs no system call, and events arrive in batches.
const CONSUMER_POLL: Duration = Duration::from_millis(1);
/// Empty polls in a row after which the consumer sleeps until the next `add` wakes it.
const IDLE_POLLS_BEFORE_SLEEP: u32 = 100;
/// Longest sleep of an idle consumer (it is woken earlier by `add`, `flush` and `stop`).
const CONSUMER_IDLE_WAIT: Duration = Duration::from_millis(100);

pub const CLOSED_SLOW: &str = "Event stream was closed by the producer: the consumer fell behind by more than its buffer";
pub const CLOSED_OVERWRITTEN: &str = "Event stream was closed by the producer: its next event was overwritten in the ring buffer";
pub const CLOSED_STOPPED: &str = "Event stream was closed by the producer: the event system stopped";
pub const CLOSED_BY_CLIENT: &str = "Event stream was closed by the consumer";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PipelineStats {
    /// Events accepted by `add` into the queue.
    pub accepted: u64,
    /// Events dropped by `add` because the queue was full or the pipeline stopped.
    pub dropped: u64,
    /// Events stored in the ring buffer.
    pub stored: u64,
    /// Events taken off the queue but not stored because collection is off (capacity 0).
    pub not_stored: u64,
    /// Events waiting in the queue.
    pub queued: u64,
    pub subscribers: u64,
    /// Subscriptions closed because they fell behind.
    pub slow_closed: u64,
    /// Events delivered to subscriptions.
    pub delivered: u64,
    pub interned_strings: u64,
    pub interned_payloads: u64,
    pub memory_bytes: u64,
    pub capacity: u64,
    pub len: u64,
}

pub(crate) struct Progress {
    /// Events the consumer has taken off the queue.
    processed: u64,
    /// The store's next id after the consumer's last batch.
    pub(crate) next_id: u64,
    pub(crate) stopped: bool,
}

struct SubState {
    /// The next id this subscription reads.
    cursor: AtomicU64,
    /// The first id produced after it subscribed: history before it does not count as lag.
    live_from: u64,
    capacity: u64,
    /// Lag is counted up to this id: u64::MAX (the store's head) while no writer serves the
    /// subscription; under the stream writer, what it offered the client (see
    /// `pyscheduler-stream`'s hub), so events stored since its last round (its 20 ms gathering: thousands
    /// when the scheduler places a thousand asks at once) never cut a client that takes every
    /// chunk.
    offered: AtomicU64,
    closed: Mutex<Option<&'static str>>,
    /// Held while reading, so two threads reading one subscription never deliver the same
    /// events twice.
    reading: Mutex<()>,
}

impl SubState {
    /// More live events than its capacity behind, counting up to `next` (the store's head) or
    /// what the writer offered, whichever is lower.
    fn too_far_behind(&self, cursor: u64, next: u64) -> bool {
        let offered = next.min(self.offered.load(Ordering::Acquire));
        offered.saturating_sub(cursor.max(self.live_from)) > self.capacity
    }

    fn close(&self, reason: &'static str) -> bool {
        let mut closed = self.closed.lock();
        if closed.is_some() {
            return false;
        }
        *closed = Some(reason);
        true
    }
}

/// A subscription's place in the ring, as the stream writer (`pyscheduler-stream`) sees it: the
/// whole interface between the pipeline and the writer, besides [`Shared::head`] and the wait
/// for new events. The writer moves the cursor when it hands events to a socket; the consumer
/// thread may close it at any time (it fell too far behind, or the pipeline stopped).
#[derive(Clone)]
pub struct Cursor {
    shared: Arc<Shared>,
    state: Arc<SubState>,
}

impl Cursor {
    /// The next id to deliver.
    #[inline]
    pub fn position(&self) -> u64 {
        self.state.cursor.load(Ordering::Acquire)
    }

    /// Why the subscription closed, or None while it is open.
    #[inline]
    pub fn closed(&self) -> Option<&'static str> {
        *self.state.closed.lock()
    }

    /// Held while events are read and the cursor moved, so no two readers deliver the same
    /// events.
    #[inline]
    pub fn lock_reads(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.state.reading.lock()
    }

    /// The writer offered the client every event before `head`: from now on lag is counted up
    /// to it, not up to the store's head. Checked here too, as the consumer checks each batch:
    /// the client that stopped reading may fall behind after the last batch was stored.
    pub fn offer(&self, head: u64) {
        self.state.offered.store(head, Ordering::Release);
        // u64::MAX as the store's head: only the offer bounds the lag here.
        if self.state.too_far_behind(self.position(), u64::MAX) {
            self.close_behind(CLOSED_SLOW);
        }
    }

    /// Marks `n` events from the position as delivered.
    #[inline]
    pub fn advance(&self, n: u64) {
        self.state.cursor.fetch_add(n, Ordering::AcqRel);
        self.shared.delivered.fetch_add(n, Ordering::Relaxed);
    }

    /// Renders up to `max` events from the position as NDJSON into `out` (the cursor does not
    /// move). None when the position was overwritten: the subscription is then closed.
    pub fn render(&self, out: &mut Vec<u8>, max: u64) -> Option<u64> {
        let store = self.shared.store.read();
        let position = self.position();
        if !store.contains(position) {
            drop(store);
            self.close_behind(CLOSED_OVERWRITTEN);
            return None;
        }
        let info = store.write_ndjson(out, position, max.max(1));
        Some(info.written.expect("the position is held").1 as u64)
    }

    /// Closed for falling behind (too slow, or its next event overwritten): counted once.
    fn close_behind(&self, reason: &'static str) {
        if self.state.close(reason) {
            self.shared.slow_closed.fetch_add(1, Ordering::Relaxed);
        }
        unregister(&self.shared, &self.state);
    }

    /// The pipeline this cursor reads.
    #[inline]
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

/// The head of the ring as the stream writer sees it.
#[derive(Debug, Clone, Copy)]
pub struct Head {
    /// The id the next stored event will get.
    pub next_id: u64,
    pub stopped: bool,
}

/// The pipeline's state shared by its handles, its consumer thread and the stream writer,
/// which sees only [`Shared::head`], [`Shared::store`], [`Shared::notify`] and
/// [`Shared::wait_for_events`] (its fields stay private to this module).
pub struct Shared {
    queue: ArrayQueue<OwnedEvent>,
    recycled: ArrayQueue<EventBuffers>,
    store: RwLock<EventStore>,
    consumer: OnceLock<Thread>,
    consumer_sleeping: AtomicBool,
    stopping: AtomicBool,
    /// `add` calls between their `stopping` check and the end of their push: `stop` waits for
    /// them, so no event accepted before the stop is left in the queue.
    in_flight: AtomicU64,
    accepted: AtomicU64,
    dropped: AtomicU64,
    stored: AtomicU64,
    not_stored: AtomicU64,
    slow_closed: AtomicU64,
    delivered: AtomicU64,
    progress: Mutex<Progress>,
    progress_changed: Condvar,
    subscribers: Mutex<Vec<Arc<SubState>>>,
}

impl Shared {
    #[inline]
    pub fn head(&self) -> Head {
        let p = self.progress.lock();
        Head { next_id: p.next_id, stopped: p.stopped }
    }

    /// Read access to the store (rendering the stream writer's shared blocks).
    pub fn store(&self) -> RwLockReadGuard<'_, EventStore> {
        self.store.read()
    }

    /// Runs `mark` under the lock that [`Shared::wait_for_events`] sleeps on, then wakes the
    /// sleepers: a flag set by `mark` is never missed.
    pub fn notify(&self, mark: impl FnOnce()) {
        {
            let _p = self.progress.lock();
            mark();
        }
        self.progress_changed.notify_all();
    }

    /// Sleeps until `due(head)` gives a time that has passed, re-evaluating it whenever events
    /// are stored, the pipeline stops or [`Shared::notify`] is called; `due` returning None
    /// ends the wait at once.
    pub fn wait_for_events(&self, mut due: impl FnMut(Head) -> Option<Instant>) {
        let mut p = self.progress.lock();
        loop {
            let Some(until) = due(Head { next_id: p.next_id, stopped: p.stopped }) else { return };
            if Instant::now() >= until {
                return;
            }
            self.progress_changed.wait_until(&mut p, until);
            if Instant::now() >= until {
                return;
            }
        }
    }
}

pub struct EventPipeline {
    shared: Arc<Shared>,
    consumer: Mutex<Option<JoinHandle<()>>>,
}

impl EventPipeline {
    /// `capacity`: ring buffer size (0: collection off). `queue_capacity`: how many events may
    /// wait between `add` and the store before new ones are dropped (at least 1).
    pub fn new(capacity: usize, queue_capacity: usize) -> EventPipeline {
        let shared = Arc::new(Shared {
            queue: ArrayQueue::new(queue_capacity.max(1)),
            recycled: ArrayQueue::new(RECYCLED_BUFFERS),
            store: RwLock::new(EventStore::new(capacity)),
            consumer: OnceLock::new(),
            consumer_sleeping: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            in_flight: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            stored: AtomicU64::new(0),
            not_stored: AtomicU64::new(0),
            slow_closed: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            progress: Mutex::new(Progress { processed: 0, next_id: 0, stopped: false }),
            progress_changed: Condvar::new(),
            subscribers: Mutex::new(Vec::new()),
        });
        let worker = Arc::clone(&shared);
        let handle = thread::Builder::new()
            .name("pyscheduler-events".into())
            .spawn(move || consume(&worker))
            .expect("cannot start the event consumer thread");
        shared.consumer.set(handle.thread().clone()).expect("consumer set once");
        EventPipeline { shared, consumer: Mutex::new(Some(handle)) }
    }

    /// Starts an event in buffers recycled from events already stored (no allocation in the
    /// common case); finish it and pass it to [`EventPipeline::add`].
    pub fn event_builder(&self, fields: EventFields<'_>) -> EventBuilder {
        let buffers = self.shared.recycled.pop().unwrap_or_default();
        OwnedEvent::builder_in(fields, buffers)
    }

    /// Queues an event for the store. Never blocks; returns false when the event was dropped
    /// (queue full, or the pipeline stopped).
    pub fn add(&self, event: OwnedEvent) -> bool {
        let s = &self.shared;
        s.in_flight.fetch_add(1, Ordering::SeqCst);
        let queued = !s.stopping.load(Ordering::SeqCst) && s.queue.push(event).is_ok();
        if queued {
            s.accepted.fetch_add(1, Ordering::Relaxed);
        } else {
            s.dropped.fetch_add(1, Ordering::Relaxed);
        }
        s.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !queued {
            return false;
        }
        // Only the first event after the consumer went to sleep pays for waking it.
        if s.consumer_sleeping.load(Ordering::SeqCst) && s.consumer_sleeping.swap(false, Ordering::SeqCst) {
            if let Some(t) = s.consumer.get() {
                t.unpark();
            }
        }
        true
    }

    /// Waits until every event accepted before this call is stored. False on timeout.
    pub fn flush(&self, timeout: Option<Duration>) -> bool {
        let s = &self.shared;
        let target = s.accepted.load(Ordering::SeqCst);
        if let Some(t) = s.consumer.get() {
            t.unpark();
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut p = s.progress.lock();
        while p.processed < target && !p.stopped {
            match deadline {
                Some(d) => {
                    if s.progress_changed.wait_until(&mut p, d).timed_out() {
                        return p.processed >= target;
                    }
                }
                None => s.progress_changed.wait(&mut p),
            }
        }
        p.processed >= target
    }

    /// Read access to the store (batch bodies, NDJSON, ids). Hold it briefly: the consumer
    /// waits for it (the producers never do).
    pub fn read(&self) -> RwLockReadGuard<'_, EventStore> {
        self.shared.store.read()
    }

    /// Changes the ring capacity at run time, keeping ids and the newest records.
    pub fn resize(&self, capacity: usize) {
        let mut store = self.shared.store.write();
        store.resize(capacity);
        let (next, lowest, empty) = (store.next_id(), store.lowest_id(), store.is_empty());
        drop(store);
        sweep_subscribers(&self.shared, next, lowest, empty);
        self.shared.progress_changed.notify_all();
    }

    /// A subscription that first replays the last `count` stored events, then live ones.
    pub fn subscribe_recent(&self, count: u64, capacity: u64) -> Result<Subscription, CoreError> {
        let store = self.shared.store.read();
        let next = store.next_id();
        let start = next - count.min(store.len() as u64);
        self.register(store, start, capacity)
    }

    /// A subscription that resumes at event id `start` (which must be held, or be the next id
    /// to come), then continues with live events.
    pub fn subscribe_from(&self, start: u64, capacity: u64) -> Result<Subscription, CoreError> {
        let store = self.shared.store.read();
        if start != store.next_id() && !store.contains(start) {
            return Err(CoreError::StartOutOfRange { start, lowest: store.lowest_id(), highest: store.highest_id() });
        }
        self.register(store, start, capacity)
    }

    fn register(&self, store: RwLockReadGuard<'_, EventStore>, start: u64, capacity: u64) -> Result<Subscription, CoreError> {
        if self.shared.progress.lock().stopped {
            return Err(CoreError::Stopped);
        }
        let state = Arc::new(SubState {
            cursor: AtomicU64::new(start),
            live_from: store.next_id(),
            capacity: capacity.max(1),
            offered: AtomicU64::new(u64::MAX),
            closed: Mutex::new(None),
            reading: Mutex::new(()),
        });
        // Registered while the store is read-locked, so no event lands between fixing
        // `live_from` and the consumer seeing this subscription.
        self.shared.subscribers.lock().push(Arc::clone(&state));
        drop(store);
        Ok(Subscription { cursor: Cursor { shared: Arc::clone(&self.shared), state } })
    }

    /// The state the stream writer (`pyscheduler-stream`) reads the pipeline through.
    #[inline]
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub fn stats(&self) -> PipelineStats {
        let s = &self.shared;
        let store = s.store.read();
        PipelineStats {
            accepted: s.accepted.load(Ordering::Relaxed),
            dropped: s.dropped.load(Ordering::Relaxed),
            stored: s.stored.load(Ordering::Relaxed),
            not_stored: s.not_stored.load(Ordering::Relaxed),
            queued: s.queue.len() as u64,
            subscribers: s.subscribers.lock().len() as u64,
            slow_closed: s.slow_closed.load(Ordering::Relaxed),
            delivered: s.delivered.load(Ordering::Relaxed),
            interned_strings: store.interned_strings() as u64,
            interned_payloads: store.interned_payloads() as u64,
            memory_bytes: store.memory_bytes() as u64,
            capacity: store.capacity() as u64,
            len: store.len() as u64,
        }
    }

    /// Stores what is queued, stops the consumer and closes every subscription. Idempotent.
    pub fn stop(&self) {
        let s = &self.shared;
        s.stopping.store(true, Ordering::SeqCst);
        // Every add that saw `stopping` false finishes its push; later ones are dropped.
        while s.in_flight.load(Ordering::SeqCst) > 0 {
            thread::yield_now();
        }
        if let Some(t) = s.consumer.get() {
            t.unpark();
        }
        if let Some(handle) = self.consumer.lock().take() {
            let _ = handle.join();
        }
        // The consumer may have exited just before the last pushes landed: store them here.
        while !s.queue.is_empty() {
            drain_batch(s);
        }
        let subs: Vec<Arc<SubState>> = std::mem::take(&mut *s.subscribers.lock());
        for sub in subs {
            sub.close(CLOSED_STOPPED);
        }
        s.progress.lock().stopped = true;
        s.progress_changed.notify_all();
    }

    pub fn is_stopped(&self) -> bool {
        self.shared.stopping.load(Ordering::SeqCst)
    }

    /// Write access for tests in this crate.
    #[cfg(test)]
    fn write(&self) -> parking_lot::RwLockWriteGuard<'_, EventStore> {
        self.shared.store.write()
    }
}

impl Drop for EventPipeline {
    fn drop(&mut self) {
        self.stop();
    }
}

fn consume(s: &Shared) {
    let mut idle_polls = 0u32;
    loop {
        if !s.queue.is_empty() {
            drain_batch(s);
            idle_polls = 0;
            continue;
        }
        if s.stopping.load(Ordering::SeqCst) {
            // Everything queued before stop() is stored (the queue is empty here).
            return;
        }
        if idle_polls < IDLE_POLLS_BEFORE_SLEEP {
            // Recently busy: poll without announcing a sleep, so producers never wake us.
            idle_polls += 1;
            thread::park_timeout(CONSUMER_POLL);
            continue;
        }
        s.consumer_sleeping.store(true, Ordering::SeqCst);
        if !s.queue.is_empty() || s.stopping.load(Ordering::SeqCst) {
            s.consumer_sleeping.store(false, Ordering::SeqCst);
            continue;
        }
        thread::park_timeout(CONSUMER_IDLE_WAIT);
        s.consumer_sleeping.store(false, Ordering::SeqCst);
    }
}

fn drain_batch(s: &Shared) {
    let mut store = s.store.write();
    let (mut taken, mut stored) = (0u64, 0u64);
    while (taken as usize) < CONSUMER_BATCH {
        let Some(event) = s.queue.pop() else { break };
        taken += 1;
        if store.insert(&event).is_some() {
            stored += 1;
        }
        let buffers = event.into_buffers();
        if buffers.0.capacity() <= RECYCLE_MAX_BYTES {
            // A full recycle queue just means this buffer is freed.
            let _ = s.recycled.push(buffers);
        }
    }
    let (next, lowest, empty) = (store.next_id(), store.lowest_id(), store.is_empty());
    drop(store);
    s.stored.fetch_add(stored, Ordering::Relaxed);
    s.not_stored.fetch_add(taken - stored, Ordering::Relaxed);
    sweep_subscribers(s, next, lowest, empty);
    {
        let mut p = s.progress.lock();
        p.processed += taken;
        p.next_id = next;
    }
    s.progress_changed.notify_all();
}

/// Closes the subscriptions that fell too far behind. O(subscribers) per consumer batch,
/// never per event, and never on the producer's side.
fn sweep_subscribers(s: &Shared, next: u64, lowest: u64, empty: bool) {
    let mut subs = s.subscribers.lock();
    subs.retain(|sub| {
        let cursor = sub.cursor.load(Ordering::Acquire);
        let overwritten = cursor < next && (empty || cursor < lowest);
        let reason = if sub.too_far_behind(cursor, next) {
            Some(CLOSED_SLOW)
        } else if overwritten {
            Some(CLOSED_OVERWRITTEN)
        } else {
            None
        };
        match reason {
            Some(r) => {
                if sub.close(r) {
                    s.slow_closed.fetch_add(1, Ordering::Relaxed);
                }
                false
            }
            None => sub.closed.lock().is_none(),
        }
    });
}

/// What a subscription read returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscriptionStatus {
    /// NDJSON lines and how many events they hold.
    Events(Vec<u8>, usize),
    /// Nothing new before the timeout.
    Timeout,
    /// Closed, with the reason; nothing more will come.
    Closed(&'static str),
}

pub struct Subscription {
    cursor: Cursor,
}

impl Subscription {
    /// Its place in the ring, for the stream writer (`pyscheduler-stream`).
    #[inline]
    pub fn cursor(&self) -> &Cursor {
        &self.cursor
    }

    /// Up to `max_events` events as NDJSON, waiting up to `timeout` for the first one.
    pub fn next(&self, max_events: usize, timeout: Duration) -> SubscriptionStatus {
        let deadline = Instant::now() + timeout;
        let shared = &self.cursor.shared;
        loop {
            // A stream cut for falling behind ends at once; one closed by a stop first
            // delivers what was stored before the stop.
            let closed = self.cursor.closed();
            if let Some(reason) = closed {
                if reason != CLOSED_STOPPED {
                    return SubscriptionStatus::Closed(reason);
                }
            }
            if let Some(status) = self.read_available(max_events) {
                return status;
            }
            if let Some(reason) = closed {
                return SubscriptionStatus::Closed(reason);
            }
            let mut p = shared.progress.lock();
            if p.next_id > self.cursor.position() || p.stopped || self.cursor.closed().is_some() {
                continue;
            }
            if shared.progress_changed.wait_until(&mut p, deadline).timed_out() {
                return SubscriptionStatus::Timeout;
            }
        }
    }

    fn read_available(&self, max_events: usize) -> Option<SubscriptionStatus> {
        let _reading = self.cursor.lock_reads();
        if self.cursor.position() >= self.cursor.shared.head().next_id {
            return None;
        }
        let mut out = Vec::new();
        match self.cursor.render(&mut out, max_events as u64) {
            None => Some(SubscriptionStatus::Closed(CLOSED_OVERWRITTEN)),
            Some(n) => {
                self.cursor.advance(n);
                Some(SubscriptionStatus::Events(out, n as usize))
            }
        }
    }

    /// The next id this subscription will deliver.
    pub fn next_id(&self) -> u64 {
        self.cursor.position()
    }

    pub fn closed_reason(&self) -> Option<&'static str> {
        self.cursor.closed()
    }

    /// Ends the subscription from the consumer's side (client went away).
    pub fn close(&self) {
        self.cursor.state.close(CLOSED_BY_CLIENT);
        unregister(&self.cursor.shared, &self.cursor.state);
        self.cursor.shared.progress_changed.notify_all();
    }
}

fn unregister(shared: &Shared, state: &Arc<SubState>) {
    shared.subscribers.lock().retain(|s| !Arc::ptr_eq(s, state));
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if self.cursor.closed().is_none() {
            self.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{EventFields, Kind};

    fn ev(i: i64) -> OwnedEvent {
        let fields = EventFields { kind: Kind::new(2, 1, 204).unwrap(), timestamp_ns: i, object: "app-1", reference: "", message: "" };
        OwnedEvent::new(fields, [])
    }

    fn lines(status: SubscriptionStatus) -> Vec<String> {
        match status {
            SubscriptionStatus::Events(b, n) => {
                let v: Vec<String> = String::from_utf8(b).unwrap().lines().map(String::from).collect();
                assert_eq!(v.len(), n);
                v
            }
            other => panic!("expected events, got {other:?}"),
        }
    }

    fn ts_of(line: &str) -> i64 {
        let start = line.find("\"timestampNano\":").unwrap() + 16;
        line[start..].split([',', '}']).next().unwrap().parse().unwrap()
    }

    #[test]
    fn add_flush_and_read() {
        let p = EventPipeline::new(100, 1000);
        for i in 1..=50 {
            assert!(p.add(ev(i)));
        }
        assert!(p.flush(Some(Duration::from_secs(5))));
        let store = p.read();
        assert_eq!((store.lowest_id(), store.highest_id(), store.len()), (0, 49, 50));
        drop(store);
        let st = p.stats();
        assert_eq!((st.accepted, st.stored, st.dropped), (50, 50, 0));
    }

    #[test]
    fn full_queue_drops_and_counts_without_blocking() {
        let p = EventPipeline::new(100, 4);
        // Hold the store so the consumer cannot drain while we overfill the queue.
        let guard = p.write();
        let mut accepted = 0;
        for i in 0..20 {
            if p.add(ev(i)) {
                accepted += 1;
            }
        }
        drop(guard);
        assert!(p.flush(Some(Duration::from_secs(5))));
        let st = p.stats();
        assert!((4..20).contains(&accepted), "accepted {accepted}");
        assert_eq!(st.accepted + st.dropped, 20);
        assert_eq!(st.stored, st.accepted);
    }

    #[test]
    fn concurrent_producers_lose_nothing_and_ids_are_dense() {
        let p = Arc::new(EventPipeline::new(100_000, 100_000));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let p = Arc::clone(&p);
                thread::spawn(move || {
                    for i in 0..10_000 {
                        assert!(p.add(ev(t * 1_000_000 + i)));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(p.flush(Some(Duration::from_secs(10))));
        let store = p.read();
        assert_eq!((store.lowest_id(), store.highest_id()), (0, 39_999));
        // Each producer's events stay in its own order.
        let decoded = store.decode(0, 40_000);
        for t in 0..4 {
            let mine: Vec<i64> = decoded.iter().map(|d| d.timestamp_ns).filter(|ts| ts / 1_000_000 == t).collect();
            assert_eq!(mine.len(), 10_000);
            assert!(mine.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn subscription_replays_history_then_live_without_gap_or_duplicate() {
        let p = EventPipeline::new(1000, 1000);
        for i in 1..=10 {
            p.add(ev(i));
        }
        p.flush(None);
        let sub = p.subscribe_recent(3, 100).unwrap();
        for i in 11..=15 {
            p.add(ev(i));
        }
        p.flush(None);
        let mut seen = Vec::new();
        while seen.len() < 8 {
            seen.extend(lines(sub.next(2, Duration::from_secs(5))).iter().map(|l| ts_of(l)));
        }
        assert_eq!(seen, (8..=15).collect::<Vec<_>>());
        assert_eq!(sub.next(10, Duration::from_millis(20)), SubscriptionStatus::Timeout);
        assert_eq!(sub.next_id(), 15);
    }

    #[test]
    fn live_event_wakes_a_waiting_subscriber() {
        let p = Arc::new(EventPipeline::new(1000, 1000));
        let sub = p.subscribe_recent(0, 100).unwrap();
        let producer = {
            let p = Arc::clone(&p);
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(30));
                p.add(ev(99));
            })
        };
        let got = lines(sub.next(10, Duration::from_secs(5)));
        producer.join().unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(ts_of(&got[0]), 99);
    }

    #[test]
    fn slow_subscriber_is_closed_and_others_continue() {
        let p = EventPipeline::new(10_000, 10_000);
        let slow = p.subscribe_recent(0, 100).unwrap();
        let fast = p.subscribe_recent(0, 100).unwrap();
        for round in 0..25 {
            for i in 0..100 {
                p.add(ev(round * 100 + i));
            }
            p.flush(None);
            let mut got = 0;
            while got < 100 {
                got += lines(fast.next(1000, Duration::from_secs(5))).len();
            }
        }
        assert_eq!(slow.next(10, Duration::from_millis(10)), SubscriptionStatus::Closed(CLOSED_SLOW));
        assert_eq!(fast.closed_reason(), None);
        let st = p.stats();
        assert_eq!((st.subscribers, st.slow_closed), (1, 1));
    }

    #[test]
    fn subscriber_whose_events_were_overwritten_is_closed() {
        let p = EventPipeline::new(10, 1000);
        for i in 0..10 {
            p.add(ev(i));
        }
        p.flush(None);
        let sub = p.subscribe_recent(10, 1000).unwrap();
        for i in 10..15 {
            p.add(ev(i));
        }
        p.flush(None);
        assert_eq!(sub.next(100, Duration::from_millis(10)), SubscriptionStatus::Closed(CLOSED_OVERWRITTEN));
    }

    #[test]
    fn subscribe_from_resumes_and_rejects_missing_ids() {
        let p = EventPipeline::new(10, 1000);
        for i in 0..25 {
            p.add(ev(i));
        }
        p.flush(None);
        let sub = p.subscribe_from(20, 100).unwrap();
        let got: Vec<i64> = lines(sub.next(100, Duration::from_secs(1))).iter().map(|l| ts_of(l)).collect();
        assert_eq!(got, (20..25).collect::<Vec<_>>());
        assert_eq!(
            p.subscribe_from(3, 100).err(),
            Some(CoreError::StartOutOfRange { start: 3, lowest: 15, highest: 24 })
        );
        assert!(p.subscribe_from(25, 100).is_ok(), "the next id is a valid resume point");
        assert!(p.subscribe_from(26, 100).is_err());
    }

    #[test]
    fn resize_keeps_ids_and_capacity_zero_stops_collection() {
        let p = EventPipeline::new(20, 1000);
        for i in 0..25 {
            p.add(ev(i));
        }
        p.flush(None);
        p.resize(10);
        assert_eq!((p.read().lowest_id(), p.read().highest_id()), (15, 24));
        p.resize(0);
        p.add(ev(100));
        p.flush(None);
        assert_eq!(p.read().next_id(), 25);
        assert_eq!(p.stats().not_stored, 1);
        p.resize(5);
        p.add(ev(101));
        p.flush(None);
        assert_eq!((p.read().lowest_id(), p.read().highest_id()), (25, 25));
    }

    #[test]
    fn stop_stores_queued_events_closes_streams_and_drops_later_adds() {
        let p = EventPipeline::new(100, 100);
        let sub = p.subscribe_recent(0, 100).unwrap();
        for i in 0..10 {
            p.add(ev(i));
        }
        p.stop();
        assert_eq!(p.read().len(), 10);
        assert!(!p.add(ev(11)));
        // Events stored before the stop are still delivered, then the close reason.
        assert_eq!(lines(sub.next(100, Duration::from_millis(10))).len(), 10);
        assert_eq!(sub.next(100, Duration::from_millis(10)), SubscriptionStatus::Closed(CLOSED_STOPPED));
        assert!(p.flush(Some(Duration::from_millis(10))));
        assert!(matches!(p.subscribe_recent(0, 1), Err(CoreError::Stopped)));
    }
}
