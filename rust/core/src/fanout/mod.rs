//! The stream fan-out: one thread writes every attached event stream.
//!
//! A stream served by a thread of its own renders its own copy of every event and is one more
//! runnable thread for the kernel to share the CPU with: with a hundred busy streams the
//! scheduling thread gets about a hundredth of the machine, and each event is serialised a
//! hundred times. Streams attached here are served by one hub thread instead, which
//!
//! - renders each new event once, into blocks shared by every stream (with each line's end
//!   kept, so a stream can start anywhere in a block);
//! - writes a stream's chunk (HTTP/1.1 chunked framing) with one `sendmsg` whose iovecs point
//!   into the shared blocks, never blocking: one stuck client never holds up another;
//! - works in rounds at most every [`ROUND_GAP`] while events flow, so each stream gets one
//!   chunk holding everything that arrived since its last one; after a quiet spell the first
//!   new event goes out at once;
//! - keeps the unwritten end of a chunk and retries it every [`RETRY_GAP`]; a chunk not
//!   written within the stream's write timeout ends the stream (YuniKorn's write deadline);
//! - notices clients that hung up on an idle stream.
//!
//! Lag stays the subscription's business: its cursor moves when a chunk is handed to the
//! socket, and the consumer thread cuts a stream that falls more than its capacity behind.
//!
//! The thread that attached a stream owns the socket and waits on its [`StreamTicket`]. The hub
//! writes through a duplicate of the descriptor, sends with `MSG_DONTWAIT` (the blocking mode
//! belongs to the shared file description, so it is never changed) and reports an outcome only
//! at a chunk boundary, so the owner can write its closing line and the chunked terminator
//! after it. The hub thread exists only while streams are attached.


mod chunk;
mod conn;
mod socket;
#[cfg(test)]
mod tests;
mod window;

use crate::error::CoreError;
use crate::pipeline::{Shared, SubState, Subscription};
use conn::Conn;
use socket::{hung_up, shutdown};
use parking_lot::{Condvar, Mutex};
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use window::Window;

/// Shortest time between two rounds of new events (the most an event waits to be gathered).
pub const ROUND_GAP: Duration = Duration::from_millis(20);
/// How often the unwritten end of a chunk is retried.
pub const RETRY_GAP: Duration = Duration::from_millis(5);
/// How often idle streams are checked for a client that hung up: a closed stream frees its
/// slot (the per-host and total stream limits) this soon. One `poll` over the attached sockets
/// (no GIL, microseconds for a hundred streams) per check.
pub const PEER_CHECK: Duration = Duration::from_millis(25);
/// Longest sleep of the hub (it is woken earlier by new events, attaches and releases).
const IDLE_WAIT: Duration = Duration::from_millis(500);

/// How an attached stream ended. The owner gets it back at a chunk boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamOutcome {
    /// The subscription was closed, with its reason; for a stop, every event stored before
    /// it was written first.
    Closed(&'static str),
    /// A write failed (the client is gone); the socket was shut down.
    WriteFailed,
    /// A chunk was not written within the write timeout; the socket was shut down.
    WriteTimeout,
    /// The client hung up.
    PeerClosed,
    /// Handed back on the owner's request ([`StreamTicket::release`]).
    Released,
}

impl StreamOutcome {
    pub fn name(&self) -> &'static str {
        match self {
            StreamOutcome::Closed(_) => "closed",
            StreamOutcome::WriteFailed => "write_failed",
            StreamOutcome::WriteTimeout => "write_timeout",
            StreamOutcome::PeerClosed => "peer_closed",
            StreamOutcome::Released => "released",
        }
    }
}

/// The fan-out's state, held by the pipeline.
#[derive(Default)]
pub(crate) struct Hub {
    state: Mutex<HubState>,
    /// Something besides new events needs the hub (an attach, a release). Set with the
    /// pipeline's progress lock held, so the hub's wait never misses it.
    dirty: AtomicBool,
    /// Makes the hub thread panic at its next pass (tests of the unwinding path).
    #[cfg(test)]
    inject_panic: AtomicBool,
}

#[derive(Default)]
struct HubState {
    /// Attached streams the hub thread has not picked up yet.
    incoming: Vec<Conn>,
    /// Every attached stream that has not ended.
    streams: Vec<Arc<HubStream>>,
    running: bool,
}

impl Hub {
    /// Streams attached and not yet ended.
    pub(crate) fn attached(&self) -> u64 {
        self.state.lock().streams.len() as u64
    }
}

struct Control {
    outcome: Option<StreamOutcome>,
    release: bool,
}

struct HubStream {
    sub: Arc<SubState>,
    write_timeout: Duration,
    control: Mutex<Control>,
    done: Condvar,
    written: AtomicU64,
}

/// The owner's handle on an attached stream. Dropping it releases the stream.
pub struct StreamTicket {
    shared: Arc<Shared>,
    stream: Arc<HubStream>,
}

impl StreamTicket {
    /// Waits up to `timeout` for the stream to end; None while it runs.
    pub fn wait(&self, timeout: Duration) -> Option<StreamOutcome> {
        let deadline = Instant::now() + timeout;
        let mut control = self.stream.control.lock();
        while control.outcome.is_none() {
            if self.stream.done.wait_until(&mut control, deadline).timed_out() {
                break;
            }
        }
        control.outcome
    }

    /// Asks the hub to hand the stream back at the next chunk boundary (the outcome is then
    /// [`StreamOutcome::Released`], unless it ended otherwise first).
    pub fn release(&self) {
        {
            let mut control = self.stream.control.lock();
            if control.outcome.is_some() || control.release {
                return;
            }
            control.release = true;
        }
        wake(&self.shared);
    }

    pub fn outcome(&self) -> Option<StreamOutcome> {
        self.stream.control.lock().outcome
    }

    /// Events handed to the socket by the hub.
    pub fn events_written(&self) -> u64 {
        self.stream.written.load(Ordering::Relaxed)
    }
}

impl Drop for StreamTicket {
    fn drop(&mut self) {
        self.release();
    }
}

/// Hands a subscription and its socket to the fan-out. The socket is duplicated: the hub never
/// touches the caller's descriptor, and it closes its duplicate when the stream ends.
pub(crate) fn attach(sub: &Subscription, fd: BorrowedFd<'_>, write_timeout: Duration) -> Result<StreamTicket, CoreError> {
    let shared = &sub.shared;
    if shared.progress.lock().stopped {
        return Err(CoreError::Stopped);
    }
    if sub.state.closed.lock().is_some() {
        return Err(CoreError::StreamAttach("the subscription is closed"));
    }
    let stream = Arc::new(HubStream {
        sub: Arc::clone(&sub.state),
        write_timeout,
        control: Mutex::new(Control { outcome: None, release: false }),
        done: Condvar::new(),
        written: AtomicU64::new(0),
    });
    let fd = fd.try_clone_to_owned().map_err(|e| CoreError::Io(e.to_string()))?;
    let conn = Conn::new(Arc::clone(&stream), fd);
    let start = {
        let mut state = shared.hub.state.lock();
        state.incoming.push(conn);
        state.streams.push(Arc::clone(&stream));
        !std::mem::replace(&mut state.running, true)
    };
    if start {
        let worker = Arc::clone(shared);
        let spawned = thread::Builder::new().name("pyscheduler-streams".into()).spawn(move || run(&worker));
        if let Err(e) = spawned {
            let mut state = shared.hub.state.lock();
            state.running = false;
            state.incoming.clear();
            state.streams.clear();
            return Err(CoreError::Io(format!("cannot start the stream thread: {e}")));
        }
    } else {
        wake(shared);
    }
    Ok(StreamTicket { shared: Arc::clone(shared), stream })
}

/// Asks every attached stream to be handed back (the service is shutting down).
pub(crate) fn release_all(shared: &Shared) {
    for stream in &shared.hub.state.lock().streams {
        stream.control.lock().release = true;
    }
    wake(shared);
}

fn wake(shared: &Shared) {
    {
        let _p = shared.progress.lock();
        shared.hub.dirty.store(true, Ordering::SeqCst);
    }
    shared.progress_changed.notify_all();
}

/// The hub's streams. Should the hub thread ever unwind, every stream it holds ends
/// (`write_failed`) instead of leaving its owner waiting forever.
struct Held<'a> {
    shared: &'a Shared,
    conns: Vec<Conn>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if !thread::panicking() {
            return;
        }
        let incoming = {
            let mut state = self.shared.hub.state.lock();
            state.running = false;
            std::mem::take(&mut state.incoming)
        };
        for conn in self.conns.drain(..).chain(incoming) {
            finish(self.shared, &conn, StreamOutcome::WriteFailed);
        }
    }
}

/// The hub thread.
fn run(shared: &Shared) {
    let hub = &shared.hub;
    let mut held = Held { shared, conns: Vec::new() };
    let conns = &mut held.conns;
    let mut window = Window::default();
    let mut last_round: Option<Instant> = None;
    let mut served_head = 0u64;
    let mut last_peer_check = Instant::now();
    loop {
        {
            let mut state = hub.state.lock();
            conns.append(&mut state.incoming);
            if conns.is_empty() {
                state.running = false;
                return;
            }
        }
        #[cfg(test)]
        if hub.inject_panic.swap(false, Ordering::SeqCst) {
            panic!("injected into the stream hub");
        }
        let (head, stopped) = {
            let p = shared.progress.lock();
            (p.next_id, p.stopped)
        };
        let now = Instant::now();
        let round = head > served_head && last_round.map_or(true, |t| now >= t + ROUND_GAP);
        if round {
            last_round = Some(now);
            served_head = head;
            let from = conns.iter().map(Conn::cursor).min().unwrap_or(head);
            window.extend(shared, from, head);
        }
        let check_peers = now >= last_peer_check + PEER_CHECK;
        let gone = if check_peers {
            last_peer_check = now;
            hung_up(conns)
        } else {
            Vec::new()
        };
        let mut i = 0;
        conns.retain_mut(|conn| {
            let peer_gone = gone.get(i).copied().unwrap_or(false) && !conn.has_pending();
            i += 1;
            let outcome = if peer_gone {
                Some(StreamOutcome::PeerClosed)
            } else {
                // After a stop every stream gets its remaining events at once.
                conn.service(shared, head, round || stopped, &window, now)
            };
            match outcome {
                None => true,
                Some(outcome) => {
                    finish(shared, conn, outcome);
                    false
                }
            }
        });
        if let Some(lowest) = conns.iter().map(Conn::cursor).min() {
            window.trim(lowest);
        }
        // Wait for the next thing to do.
        let pending = conns.iter().any(|c| c.has_pending() || c.behind);
        let mut p = shared.progress.lock();
        loop {
            if hub.dirty.swap(false, Ordering::SeqCst) || (p.stopped && !stopped) {
                break;
            }
            let now = Instant::now();
            let mut until = now + IDLE_WAIT;
            if p.next_id > served_head {
                let due = last_round.map_or(now, |t| t + ROUND_GAP);
                if now >= due {
                    break;
                }
                until = until.min(due);
            }
            if pending || (stopped && conns.iter().any(|c| c.cursor() < p.next_id)) {
                until = until.min(now + RETRY_GAP);
            }
            until = until.min(last_peer_check + PEER_CHECK);
            if now >= until {
                break;
            }
            shared.progress_changed.wait_until(&mut p, until);
            if Instant::now() >= until {
                break;
            }
        }
    }
}

fn finish(shared: &Shared, conn: &Conn, outcome: StreamOutcome) {
    if matches!(outcome, StreamOutcome::WriteFailed | StreamOutcome::WriteTimeout) {
        // The owner's next write (its closing line, the chunked terminator) fails at once
        // instead of waiting on a client that does not read.
        shutdown(&conn.fd);
    }
    shared.hub.state.lock().streams.retain(|s| !Arc::ptr_eq(s, &conn.stream));
    conn.stream.control.lock().outcome = Some(outcome);
    conn.stream.done.notify_all();
}
