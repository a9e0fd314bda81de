//! The writer's thread: every stream that caught up with its history, served from events
//! rendered once.
//!
//! A stream served by a thread of its own renders its own copy of every event and is one more
//! runnable thread for the kernel to share the CPU with: with a hundred busy streams the
//! scheduling thread gets about a hundredth of the machine. Here one thread renders each new
//! event once into blocks shared by every stream ([`Window`]), and writes a stream's chunk with
//! one non-blocking `sendmsg` whose iovecs point into those blocks: one stuck client never
//! holds up another.

use super::conn::{Conn, Step};
use super::socket::{self, hung_up};
use super::state::{StreamOutcome, StreamState};
use super::window::Window;
use pyscheduler_events::pipeline::Shared;
use std::ops::Deref;
use std::os::fd::AsRawFd;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Shortest time between two rounds of new events (the most an event waits to be gathered).
pub const ROUND_GAP: Duration = Duration::from_millis(20);
/// How often the unwritten end of a chunk is retried.
pub const RETRY_GAP: Duration = Duration::from_millis(5);
/// How often idle streams are checked for a client that hung up: a closed stream frees its
/// slot (the per-host and total stream limits) this soon. One `poll` over the attached sockets
/// (no GIL, microseconds for a hundred streams) per check.
pub const PEER_CHECK: Duration = Duration::from_millis(25);
/// Longest sleep of the thread (it is woken earlier by new events, hand-overs and releases).
const IDLE_WAIT: Duration = Duration::from_millis(500);
/// Most chunks one stream sends in a turn, so one stream with a backlog cannot hold up the
/// others.
const CHUNKS_PER_TURN: usize = 4;
/// How far the writer's thread stands back (Linux nice, added to the process's; nice is per
/// thread there). When the scheduling thread and the writer both want a core, scheduling
/// comes first: at 50,000 allocations/s on 2 cores, 100 streams (150,000 events/s each, the
/// kernel copying every byte to and from loopback clients) took a third of the scheduling
/// thread's CPU at equal priority. A writer that runs late only delays streams: they read
/// the ring, and what the writer has not offered is never a client's lag.
pub const WRITER_NICENESS: libc::c_int = 10;

/// The writer's state, held by the [`Writer`] beside the pipeline's.
#[derive(Default)]
pub(crate) struct Hub {
    state: Mutex<HubState>,
    /// Something besides new events needs the thread (a hand-over, a release). Set under the
    /// pipeline's progress lock ([`Shared::notify`]), so the thread's wait never misses it.
    dirty: AtomicBool,
    /// Streams ended because a chunk was not written in time.
    write_timeouts: AtomicU64,
    /// Makes the thread panic at its next pass (tests of the unwinding path).
    #[cfg(test)]
    pub(super) inject_panic: AtomicBool,
}

#[derive(Default)]
struct HubState {
    /// Streams handed over that the thread has not picked up yet.
    incoming: Vec<Conn>,
    /// Every stream opened and not ended (replaying or live).
    streams: Vec<Arc<StreamState>>,
    running: bool,
}

impl Hub {
    /// Streams opened and not yet ended.
    pub(super) fn attached(&self) -> u64 {
        self.state.lock().streams.len() as u64
    }

    pub(super) fn write_timeouts(&self) -> u64 {
        self.write_timeouts.load(Ordering::Relaxed)
    }

    pub(super) fn count_write_timeout(&self) {
        self.write_timeouts.fetch_add(1, Ordering::Relaxed);
    }
}

/// One pipeline's stream writer: the pipeline's shared state and the writer's own (the hub).
/// It derefs to the pipeline's [`Shared`], through which the writer reads the head, renders
/// from the store and waits for events.
pub(crate) struct Writer {
    pub(crate) pipeline: Arc<Shared>,
    pub(crate) hub: Hub,
}

impl Deref for Writer {
    type Target = Shared;

    #[inline]
    fn deref(&self) -> &Shared {
        &self.pipeline
    }
}

/// Reports `outcome` to the owner; after a socket failure the socket is shut down first, so
/// the owner's next write fails at once instead of waiting on a client that does not read.
pub(super) fn finish(shared: &Writer, conn: &Conn, outcome: StreamOutcome) {
    if matches!(outcome, StreamOutcome::WriteFailed | StreamOutcome::WriteTimeout) {
        socket::shutdown(&conn.fd);
    }
    if outcome == StreamOutcome::WriteTimeout {
        shared.hub.count_write_timeout();
    }
    forget(shared, &conn.stream);
    conn.stream.control.lock().outcome = Some(outcome);
    conn.stream.done.notify_all();
}

pub(super) fn register(shared: &Writer, stream: &Arc<StreamState>) {
    shared.hub.state.lock().streams.push(Arc::clone(stream));
}

pub(super) fn forget(shared: &Writer, stream: &Arc<StreamState>) {
    shared.hub.state.lock().streams.retain(|s| !Arc::ptr_eq(s, stream));
}

/// Takes a stream that caught up with its history; starts the thread when it is not running.
pub(super) fn adopt(shared: &Arc<Writer>, mut conn: Conn) {
    // Events may have come since the replay caught up: served without waiting for a round.
    conn.behind = true;
    let start = {
        let mut state = shared.hub.state.lock();
        state.incoming.push(conn);
        !std::mem::replace(&mut state.running, true)
    };
    if !start {
        wake(shared);
        return;
    }
    let worker = Arc::clone(shared);
    if let Err(e) = thread::Builder::new().name("pyscheduler-streams".into()).spawn(move || run(&worker)) {
        let incoming = {
            let mut state = shared.hub.state.lock();
            state.running = false;
            std::mem::take(&mut state.incoming)
        };
        eprintln!("pyscheduler: cannot start the stream thread: {e}");
        for conn in incoming {
            finish(shared, &conn, StreamOutcome::WriteFailed);
        }
    }
}

/// Asks every stream to end at its next chunk boundary.
pub(super) fn release_all(shared: &Writer) {
    for stream in &shared.hub.state.lock().streams {
        stream.control.lock().release = true;
    }
    wake(shared);
}

pub(super) fn wake(shared: &Writer) {
    shared.notify(|| shared.hub.dirty.store(true, Ordering::SeqCst));
}

/// The thread's streams. Should the thread ever unwind, every stream it holds ends
/// (`WriteFailed`) instead of leaving its owner waiting forever.
struct Held<'a> {
    shared: &'a Writer,
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

fn run(shared: &Writer) {
    // SAFETY: nice(3) changes only the calling thread's niceness on Linux; a failure (a
    // limit) leaves it as it was, which is harmless.
    unsafe {
        libc::nice(WRITER_NICENESS);
    }
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
            panic!("injected into the stream writer");
        }
        let head = shared.head();
        let now = Instant::now();
        let round = head.next_id > served_head && last_round.map_or(true, |t| now >= t + ROUND_GAP);
        if round {
            last_round = Some(now);
            served_head = head.next_id;
            let from = conns.iter().map(Conn::position).min().unwrap_or(head.next_id);
            window.extend(shared, from, head.next_id);
        }
        let gone = if now >= last_peer_check + PEER_CHECK {
            last_peer_check = now;
            hung_up(conns.iter().map(|c| c.fd.as_raw_fd()))
        } else {
            vec![false; conns.len()]
        };
        let mut i = 0;
        conns.retain_mut(|conn| {
            let peer_gone = gone[i] && !conn.has_pending();
            i += 1;
            let outcome = if peer_gone {
                Some(StreamOutcome::PeerClosed)
            } else {
                // After a stop every stream gets its remaining events at once.
                let outcome = serve(conn, head.next_id, round || head.stopped, &window, now);
                if outcome.is_none() {
                    // The client's lag is what it left in a full socket: with a chunk waiting, every
                    // event up to the last round's head was offered to it; otherwise it took all
                    // it was given and what is left (a burst since the round, the rest of a
                    // capped chunk) is the writer's backlog, never a reason to cut the stream.
                    // An ended stream is not offered anything (a write timeout is not also a cut).
                    conn.offer(if conn.has_pending() { served_head } else { conn.position() });
                }
                outcome
            };
            match outcome {
                None => true,
                Some(outcome) => {
                    finish(shared, conn, outcome);
                    false
                }
            }
        });
        if let Some(lowest) = conns.iter().map(Conn::position).min() {
            window.trim(lowest);
        }
        let pending = conns.iter().any(|c| c.has_pending() || c.behind);
        shared.wait_for_events(|now_head| {
            if hub.dirty.swap(false, Ordering::SeqCst) || (now_head.stopped && !head.stopped) {
                return None;
            }
            let now = Instant::now();
            let mut until = (now + IDLE_WAIT).min(last_peer_check + PEER_CHECK);
            if now_head.next_id > served_head {
                until = until.min(last_round.map_or(now, |t| t + ROUND_GAP));
            }
            if pending || (head.stopped && conns.iter().any(|c| c.position() < now_head.next_id)) {
                until = until.min(now + RETRY_GAP);
            }
            Some(until)
        });
    }
}

/// A stream's turn: new events are sent in rounds; a stream with a backlog writes until its
/// socket is full (a few chunks a turn) and is back after [`RETRY_GAP`]. Some when it ended.
fn serve(conn: &mut Conn, head: u64, round: bool, window: &Window, now: Instant) -> Option<StreamOutcome> {
    let may_send = round || conn.behind;
    for _ in 0..CHUNKS_PER_TURN {
        match conn.step(head, may_send, Some(window), now) {
            Step::Ended(outcome) => return Some(outcome),
            Step::Wrote => {}
            Step::Blocked | Step::Idle => break,
        }
    }
    conn.behind = !conn.has_pending() && conn.position() < head;
    None
}
