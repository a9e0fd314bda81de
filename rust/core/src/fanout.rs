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

use crate::error::CoreError;
use crate::pipeline::{unregister, Shared, SubState, Subscription, CLOSED_OVERWRITTEN, CLOSED_STOPPED};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Shortest time between two rounds of new events (the most an event waits to be gathered).
pub const ROUND_GAP: Duration = Duration::from_millis(20);
/// How often the unwritten end of a chunk is retried.
pub const RETRY_GAP: Duration = Duration::from_millis(5);
/// How often idle streams are checked for a client that hung up.
pub const PEER_CHECK: Duration = Duration::from_secs(1);
/// Longest sleep of the hub (it is woken earlier by new events, attaches and releases).
const IDLE_WAIT: Duration = Duration::from_millis(500);
/// Events per shared block.
const BLOCK_EVENTS: u64 = 4096;
/// Most events kept rendered; a stream further behind gets its own rendering.
const WINDOW_EVENTS: u64 = 65_536;
/// Most payload bytes in one chunk.
const CHUNK_BYTES: usize = 4 << 20;
/// Most events rendered at once for a stream behind the shared blocks.
const OWN_CHUNK_EVENTS: u64 = 4096;
/// Most chunks one stream sends in a turn.
const CHUNKS_PER_TURN: usize = 4;

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

/// One rendered run of events shared by every stream.
struct Block {
    first: u64,
    bytes: Vec<u8>,
    /// Offset just past each line's `\n`.
    ends: Vec<usize>,
}

impl Block {
    fn end(&self) -> u64 {
        self.first + self.ends.len() as u64
    }

    fn start_of(&self, id: u64) -> usize {
        let i = (id - self.first) as usize;
        if i == 0 {
            0
        } else {
            self.ends[i - 1]
        }
    }
}

/// Part of a block: (block, first byte, end byte).
type Slice = (Arc<Block>, usize, usize);

/// The recently stored events, rendered once.
#[derive(Default)]
struct Window {
    blocks: VecDeque<Arc<Block>>,
}

impl Window {
    fn start(&self) -> Option<u64> {
        self.blocks.front().map(|b| b.first)
    }

    fn end(&self) -> Option<u64> {
        self.blocks.back().map(|b| b.end())
    }

    /// Renders what was stored up to `head`. An empty window starts at `from` (the lowest
    /// cursor that should be served from it).
    fn extend(&mut self, shared: &Shared, from: u64, head: u64) {
        let store = shared.store.read();
        let floor = head.saturating_sub(WINDOW_EVENTS).max(store.lowest_id());
        let mut next = self.end().unwrap_or(from);
        if next < floor {
            // Too far back, or overwritten before it was rendered: the window restarts at
            // the floor (blocks stay contiguous; streams behind it render their own).
            self.blocks.clear();
            next = floor;
        }
        while next < head.min(store.next_id()) {
            let count = (head - next).min(BLOCK_EVENTS);
            let mut block = Block { first: next, bytes: Vec::new(), ends: Vec::new() };
            let n = store.write_ndjson_lines(&mut block.bytes, &mut block.ends, next, count);
            if n == 0 {
                break;
            }
            next += n as u64;
            self.blocks.push_back(Arc::new(block));
        }
        drop(store);
        while let (Some(start), Some(end)) = (self.start(), self.end()) {
            if end - start <= WINDOW_EVENTS + BLOCK_EVENTS || self.blocks.len() == 1 {
                break;
            }
            self.blocks.pop_front();
        }
    }

    /// Drops the blocks every stream is past.
    fn trim(&mut self, lowest_cursor: u64) {
        while self.blocks.front().is_some_and(|b| b.end() <= lowest_cursor) {
            self.blocks.pop_front();
        }
    }

    /// Slices holding the events from `cursor` on (at most [`CHUNK_BYTES`], whole lines), and
    /// how many events they hold. None when `cursor` is not in the window.
    fn slices(&self, cursor: u64) -> Option<(Vec<Slice>, u64)> {
        let start = self.start()?;
        if cursor < start || cursor >= self.end()? {
            return None;
        }
        let mut out = Vec::new();
        let (mut bytes, mut events, mut id) = (0usize, 0u64, cursor);
        for block in self.blocks.iter().skip_while(|b| b.end() <= cursor) {
            let from = block.start_of(id);
            let mut last = block.end();
            let mut to = block.bytes.len();
            if bytes + (to - from) > CHUNK_BYTES {
                // Whole lines only, and at least one.
                let limit = from + (CHUNK_BYTES - bytes).max(1);
                let i = block.ends.partition_point(|&e| e <= limit).max((id - block.first) as usize + 1);
                last = block.first + i as u64;
                to = block.ends[i - 1];
            }
            out.push((Arc::clone(block), from, to));
            bytes += to - from;
            events += last - id;
            id = last;
            if last < block.end() || bytes >= CHUNK_BYTES {
                break;
            }
        }
        Some((out, events))
    }
}

/// The hub's side of one stream.
struct Conn {
    stream: Arc<HubStream>,
    fd: OwnedFd,
    /// The unwritten end of the current chunk, from `pending_off`.
    pending: Vec<u8>,
    pending_off: usize,
    /// When the current chunk must be written by.
    deadline: Option<Instant>,
    /// Still behind the head after its last turn (not for a full socket): it is served
    /// again without waiting for a round.
    behind: bool,
}

enum Sent {
    All,
    Partly,
    Failed,
}

enum Step {
    Ended(StreamOutcome),
    /// A whole chunk went out.
    Wrote,
    /// The socket is full.
    Blocked,
    /// Nothing to send now.
    Idle,
}

impl Conn {
    fn new(stream: Arc<HubStream>, fd: OwnedFd) -> Conn {
        Conn { stream, fd, pending: Vec::new(), pending_off: 0, deadline: None, behind: false }
    }

    fn has_pending(&self) -> bool {
        self.pending_off < self.pending.len()
    }

    fn cursor(&self) -> u64 {
        self.stream.sub.cursor.load(Ordering::Acquire)
    }

    /// The stream's turn in a pass of the hub; Some when it ended. New events are sent in
    /// rounds; a stream with a backlog writes until its socket is full (a few chunks a turn,
    /// so one replaying stream cannot hold up the others) and is back after [`RETRY_GAP`].
    fn service(&mut self, shared: &Shared, head: u64, round: bool, window: &Window, now: Instant) -> Option<StreamOutcome> {
        let may_send = round || self.behind;
        for _ in 0..CHUNKS_PER_TURN {
            match self.step(shared, head, may_send, window, now) {
                Step::Ended(outcome) => return Some(outcome),
                Step::Wrote => {}
                Step::Blocked | Step::Idle => break,
            }
        }
        self.behind = !self.has_pending() && self.cursor() < head;
        None
    }

    /// Finishes the current chunk, then sends the next one when `may_send`.
    fn step(&mut self, shared: &Shared, head: u64, may_send: bool, window: &Window, now: Instant) -> Step {
        if self.has_pending() {
            match send(self.fd.as_raw_fd(), &[&self.pending[self.pending_off..]]) {
                Err(()) => return Step::Ended(StreamOutcome::WriteFailed),
                Ok(n) => self.pending_off += n,
            }
            if self.has_pending() {
                return match self.deadline {
                    Some(d) if now >= d => Step::Ended(StreamOutcome::WriteTimeout),
                    _ => Step::Blocked,
                };
            }
        }
        self.pending.clear();
        self.pending_off = 0;
        self.deadline = None;
        // At a chunk boundary: the stream may end here.
        if self.stream.control.lock().release {
            return Step::Ended(StreamOutcome::Released);
        }
        let closed = *self.stream.sub.closed.lock();
        let cursor = self.cursor();
        // A stop closes subscriptions after storing the last events: the head read before
        // seeing the close may be short of them.
        let head = if closed == Some(CLOSED_STOPPED) { shared.progress.lock().next_id } else { head };
        match closed {
            Some(reason) if reason != CLOSED_STOPPED => return Step::Ended(StreamOutcome::Closed(reason)),
            Some(reason) if cursor >= head => return Step::Ended(StreamOutcome::Closed(reason)),
            None if cursor >= head || !may_send => return Step::Idle,
            _ => {}
        }
        let sent = {
            let stream = Arc::clone(&self.stream);
            let _reading = stream.sub.reading.lock();
            match window.slices(cursor) {
                Some((slices, n)) => self.send_shared(shared, cursor, &slices, n),
                None => match self.send_own(shared, cursor) {
                    Some(sent) => sent,
                    None => return Step::Ended(StreamOutcome::Closed(CLOSED_OVERWRITTEN)),
                },
            }
        };
        match sent {
            Sent::Failed => Step::Ended(StreamOutcome::WriteFailed),
            Sent::All => Step::Wrote,
            Sent::Partly => {
                self.deadline = Some(now + self.stream.write_timeout);
                Step::Blocked
            }
        }
    }

    fn advance(&self, shared: &Shared, cursor: u64, n: u64) {
        self.stream.sub.cursor.store(cursor + n, Ordering::Release);
        shared.delivered.fetch_add(n, Ordering::Relaxed);
        self.stream.written.fetch_add(n, Ordering::Relaxed);
    }

    fn send_shared(&mut self, shared: &Shared, cursor: u64, slices: &[Slice], n: u64) -> Sent {
        let size: usize = slices.iter().map(|(_, from, to)| to - from).sum();
        let header = format!("{size:X}\r\n");
        let mut parts: Vec<&[u8]> = Vec::with_capacity(slices.len() + 2);
        parts.push(header.as_bytes());
        parts.extend(slices.iter().map(|(block, from, to)| &block.bytes[*from..*to]));
        parts.push(b"\r\n");
        self.advance(shared, cursor, n);
        let total = header.len() + size + 2;
        match send(self.fd.as_raw_fd(), &parts) {
            Err(()) => Sent::Failed,
            Ok(written) if written == total => Sent::All,
            Ok(written) => {
                // Keep the rest: the blocks may be gone by the retry.
                let mut skip = written;
                for part in parts {
                    if skip >= part.len() {
                        skip -= part.len();
                    } else {
                        self.pending.extend_from_slice(&part[skip..]);
                        skip = 0;
                    }
                }
                Sent::Partly
            }
        }
    }

    /// A stream behind the shared blocks (resumed far back): its own rendering. None when its
    /// next event was overwritten (the subscription is then closed).
    fn send_own(&mut self, shared: &Shared, cursor: u64) -> Option<Sent> {
        let store = shared.store.read();
        if !store.contains(cursor) {
            drop(store);
            if self.stream.sub.close(CLOSED_OVERWRITTEN) {
                shared.slow_closed.fetch_add(1, Ordering::Relaxed);
            }
            unregister(shared, &self.stream.sub);
            return None;
        }
        let mut body = Vec::new();
        let info = store.write_ndjson(&mut body, cursor, OWN_CHUNK_EVENTS);
        drop(store);
        let (_, n) = info.written.expect("cursor is held");
        self.pending.clear();
        self.pending.extend_from_slice(format!("{:X}\r\n", body.len()).as_bytes());
        self.pending.extend_from_slice(&body);
        self.pending.extend_from_slice(b"\r\n");
        self.pending_off = 0;
        self.advance(shared, cursor, n as u64);
        Some(match send(self.fd.as_raw_fd(), &[&self.pending]) {
            Err(()) => Sent::Failed,
            Ok(written) => {
                self.pending_off = written;
                if self.has_pending() {
                    Sent::Partly
                } else {
                    Sent::All
                }
            }
        })
    }
}

/// `sendmsg` of `parts` without blocking; the bytes written (0 when the socket is full).
fn send(fd: RawFd, parts: &[&[u8]]) -> Result<usize, ()> {
    let mut iov: Vec<libc::iovec> = parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| libc::iovec { iov_base: p.as_ptr() as *mut libc::c_void, iov_len: p.len() })
        .collect();
    let mut total = 0usize;
    let mut first = 0usize;
    // IOV_MAX is 1024 on Linux; chunks hold far fewer parts, but stay safe.
    while first < iov.len() {
        let last = (first + 1024).min(iov.len());
        let batch = &mut iov[first..last];
        // SAFETY: zeroed msghdr with only the iovec array set; the slices outlive the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = batch.as_mut_ptr();
        msg.msg_iovlen = batch.len() as _;
        let want: usize = batch.iter().map(|v| v.iov_len).sum();
        let n = loop {
            // SAFETY: fd is an open socket (the hub's own duplicate); msg points at live memory.
            let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
            if n >= 0 {
                break n as usize;
            }
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => break 0,
                #[allow(unreachable_patterns)]
                Some(libc::EWOULDBLOCK) => break 0,
                _ => return Err(()),
            }
        };
        total += n;
        if n < want {
            break;
        }
        first += batch.len();
    }
    Ok(total)
}

/// The idle streams whose client hung up (readable EOF, hang-up or error on the socket).
fn hung_up(conns: &[Conn]) -> Vec<bool> {
    #[cfg(target_os = "linux")]
    const HANGUP: libc::c_short = libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
    #[cfg(not(target_os = "linux"))]
    const HANGUP: libc::c_short = libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
    let mut fds: Vec<libc::pollfd> =
        conns.iter().map(|c| libc::pollfd { fd: c.fd.as_raw_fd(), events: HANGUP, revents: 0 }).collect();
    // SAFETY: fds is a valid array of pollfd for the duration of the call.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
    if ready <= 0 {
        return vec![false; conns.len()];
    }
    fds.iter().map(|p| p.revents & HANGUP != 0).collect()
}

fn shutdown(fd: &OwnedFd) {
    // SAFETY: shutting down an open socket descriptor the hub owns.
    unsafe {
        libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR);
    }
}

/// The hub thread.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{EventPipeline, CLOSED_SLOW};
    use crate::record::{EventFields, Kind, OwnedEvent};
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;

    fn ev(i: i64) -> OwnedEvent {
        let fields = EventFields { kind: Kind::new(2, 1, 204).unwrap(), timestamp_ns: i, object: "app-1", reference: "", message: "" };
        OwnedEvent::new(fields, [])
    }

    fn add(p: &EventPipeline, range: std::ops::Range<i64>) {
        for i in range {
            assert!(p.add(ev(i)));
        }
        assert!(p.flush(Some(Duration::from_secs(10))));
    }

    /// (server side, client side) of a loopback connection.
    fn connection() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (server, client)
    }

    /// Decodes HTTP/1.1 chunks from a socket and keeps the NDJSON lines' timestamps.
    struct Reader {
        sock: TcpStream,
        buf: Vec<u8>,
        body: Vec<u8>,
        stamps: Vec<i64>,
        chunks: usize,
    }

    impl Reader {
        fn new(sock: TcpStream) -> Reader {
            sock.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            Reader { sock, buf: Vec::new(), body: Vec::new(), stamps: Vec::new(), chunks: 0 }
        }

        /// Reads until `events` lines arrived or `limit` passed.
        fn read_until(&mut self, events: usize, limit: Duration) -> usize {
            let deadline = Instant::now() + limit;
            let mut tmp = vec![0u8; 1 << 16];
            while self.stamps.len() < events && Instant::now() < deadline {
                match self.sock.read(&mut tmp) {
                    Ok(0) => break,
                    Ok(n) => self.buf.extend_from_slice(&tmp[..n]),
                    Err(_) => {}
                }
                self.decode();
            }
            self.stamps.len()
        }

        fn decode(&mut self) {
            loop {
                let Some(eol) = self.buf.windows(2).position(|w| w == b"\r\n") else { return };
                let size = usize::from_str_radix(std::str::from_utf8(&self.buf[..eol]).unwrap(), 16).unwrap();
                if self.buf.len() < eol + 2 + size + 2 {
                    return;
                }
                assert_eq!(&self.buf[eol + 2 + size..eol + 4 + size], b"\r\n", "chunk trailer");
                self.body.extend_from_slice(&self.buf[eol + 2..eol + 2 + size]);
                self.buf.drain(..eol + 4 + size);
                self.chunks += 1;
                let text = String::from_utf8(std::mem::take(&mut self.body)).unwrap();
                let (complete, rest) = text.rsplit_once('\n').map(|(a, b)| (a.to_string(), b.to_string())).unwrap_or_default();
                assert!(rest.is_empty(), "a chunk ends at a line end");
                for line in complete.lines() {
                    // A zero timestamp is left out of the record (omitempty).
                    let stamp = line.find("\"timestampNano\":").map_or(0, |at| {
                        line[at + 16..].split([',', '}']).next().unwrap().parse().unwrap()
                    });
                    self.stamps.push(stamp);
                }
            }
        }
    }

    fn outcome(ticket: &StreamTicket, limit: Duration) -> StreamOutcome {
        ticket.wait(limit).expect("the stream should have ended")
    }

    #[test]
    fn attached_streams_get_every_event_in_order_in_few_chunks() {
        let p = EventPipeline::new(100_000, 100_000);
        add(&p, 0..10);
        let mut tickets = Vec::new();
        let mut readers = Vec::new();
        for _ in 0..5 {
            let (server, client) = connection();
            let sub = p.subscribe_recent(10, 100_000).unwrap();
            tickets.push((p.attach_stream(&sub, server.as_fd(), Duration::from_secs(5)).unwrap(), sub, server));
            readers.push(Reader::new(client));
        }
        assert_eq!(p.attached_streams(), 5);
        add(&p, 10..20_010);
        for r in &mut readers {
            assert_eq!(r.read_until(20_010, Duration::from_secs(10)), 20_010);
            assert_eq!(r.stamps, (0..20_010).collect::<Vec<i64>>());
            assert!(r.chunks < 100, "{} chunks for 20,010 events", r.chunks);
        }
        for (ticket, _, _) in &tickets {
            assert_eq!(ticket.events_written(), 20_010);
            assert_eq!(ticket.outcome(), None);
        }
        // A live event after a quiet spell goes out at once.
        thread::sleep(ROUND_GAP * 3);
        let before = Instant::now();
        add(&p, 20_010..20_011);
        assert_eq!(readers[0].read_until(20_011, Duration::from_secs(5)), 20_011);
        assert!(before.elapsed() < Duration::from_millis(100), "{:?}", before.elapsed());
    }

    #[test]
    fn release_hands_the_socket_back_at_a_chunk_boundary() {
        let p = EventPipeline::new(10_000, 10_000);
        let (server, client) = connection();
        let sub = p.subscribe_recent(0, 10_000).unwrap();
        let ticket = p.attach_stream(&sub, server.as_fd(), Duration::from_secs(5)).unwrap();
        add(&p, 0..500);
        let mut reader = Reader::new(client);
        assert_eq!(reader.read_until(500, Duration::from_secs(5)), 500);
        ticket.release();
        assert_eq!(outcome(&ticket, Duration::from_secs(5)), StreamOutcome::Released);
        // The owner writes after the hub: the framing stays one chunk sequence.
        (&server).write_all(b"14\r\n{\"timestampNano\":1}\n\r\n").unwrap();
        add(&p, 500..600);
        assert_eq!(reader.read_until(501, Duration::from_secs(2)), 501);
        assert_eq!(reader.stamps.last(), Some(&1), "nothing was written after the release");
        assert_eq!(p.attached_streams(), 0);
    }

    #[test]
    fn a_client_that_stops_reading_is_cut_and_the_others_continue() {
        let p = EventPipeline::new(200_000, 200_000);
        let (slow_server, _slow_client) = connection();
        let (fast_server, fast_client) = connection();
        let slow_sub = p.subscribe_recent(0, 2_000).unwrap();
        let fast_sub = p.subscribe_recent(0, 200_000).unwrap();
        let slow = p.attach_stream(&slow_sub, slow_server.as_fd(), Duration::from_secs(30)).unwrap();
        let fast = p.attach_stream(&fast_sub, fast_server.as_fd(), Duration::from_secs(30)).unwrap();
        let mut reader = Reader::new(fast_client);
        // Far more than the socket buffers hold.
        let mut sent = 0i64;
        while slow.outcome().is_none() && sent < 190_000 {
            add(&p, sent..sent + 10_000);
            sent += 10_000;
            reader.read_until(sent as usize, Duration::from_secs(10));
        }
        assert_eq!(outcome(&slow, Duration::from_secs(5)), StreamOutcome::Closed(CLOSED_SLOW));
        assert_eq!(reader.read_until(sent as usize, Duration::from_secs(10)), sent as usize);
        assert_eq!(fast.outcome(), None);
    }

    #[test]
    fn a_chunk_not_written_within_the_write_timeout_ends_the_stream() {
        let p = EventPipeline::new(200_000, 200_000);
        let (server, mut client) = connection();
        let sub = p.subscribe_recent(0, 1_000_000).unwrap();
        let ticket = p.attach_stream(&sub, server.as_fd(), Duration::from_millis(300)).unwrap();
        let mut sent = 0i64;
        while ticket.outcome().is_none() && sent < 190_000 {
            add(&p, sent..sent + 10_000);
            sent += 10_000;
            thread::sleep(Duration::from_millis(30));
        }
        assert_eq!(outcome(&ticket, Duration::from_secs(5)), StreamOutcome::WriteTimeout);
        // The socket was shut down: the client reaches its end.
        client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut sink = Vec::new();
        assert!(client.read_to_end(&mut sink).is_ok());
    }

    #[test]
    fn a_client_that_hangs_up_on_an_idle_stream_is_noticed() {
        let p = EventPipeline::new(1_000, 1_000);
        let (server, client) = connection();
        let sub = p.subscribe_recent(0, 1_000).unwrap();
        let ticket = p.attach_stream(&sub, server.as_fd(), Duration::from_secs(5)).unwrap();
        drop(client);
        assert_eq!(outcome(&ticket, PEER_CHECK * 3), StreamOutcome::PeerClosed);
        assert_eq!(p.attached_streams(), 0);
    }

    #[test]
    fn stop_delivers_what_was_stored_then_closes() {
        let p = EventPipeline::new(100_000, 100_000);
        let (server, client) = connection();
        let sub = p.subscribe_recent(0, 100_000).unwrap();
        let ticket = p.attach_stream(&sub, server.as_fd(), Duration::from_secs(5)).unwrap();
        for i in 0..30_000 {
            p.add(ev(i));
        }
        p.stop();
        let mut reader = Reader::new(client);
        assert_eq!(reader.read_until(30_000, Duration::from_secs(10)), 30_000);
        assert_eq!(outcome(&ticket, Duration::from_secs(5)), StreamOutcome::Closed(CLOSED_STOPPED));
        assert_eq!(p.attach_stream(&sub, server.as_fd(), Duration::from_secs(1)).err(), Some(CoreError::Stopped));
    }

    #[test]
    fn a_stream_resumed_behind_the_shared_blocks_catches_up_without_a_gap() {
        let p = EventPipeline::new(200_000, 200_000);
        add(&p, 0..150_000);
        let (live_server, live_client) = connection();
        let live_sub = p.subscribe_recent(0, 200_000).unwrap();
        let _live = p.attach_stream(&live_sub, live_server.as_fd(), Duration::from_secs(5)).unwrap();
        let (server, client) = connection();
        let sub = p.subscribe_from(1_000, 200_000).unwrap();
        let ticket = p.attach_stream(&sub, server.as_fd(), Duration::from_secs(5)).unwrap();
        add(&p, 150_000..160_000);
        let mut reader = Reader::new(client);
        assert_eq!(reader.read_until(159_000, Duration::from_secs(20)), 159_000);
        assert_eq!(reader.stamps, (1_000..160_000).collect::<Vec<i64>>());
        let mut live = Reader::new(live_client);
        assert_eq!(live.read_until(10_000, Duration::from_secs(10)), 10_000);
        assert_eq!(live.stamps, (150_000..160_000).collect::<Vec<i64>>());
        assert_eq!(ticket.outcome(), None);
    }

    #[test]
    fn streams_end_when_the_hub_thread_unwinds_and_a_new_hub_serves_later_ones() {
        let p = EventPipeline::new(1_000, 1_000);
        let (server, _client) = connection();
        let sub = p.subscribe_recent(0, 1_000).unwrap();
        let ticket = p.attach_stream(&sub, server.as_fd(), Duration::from_secs(5)).unwrap();
        p.shared.hub.inject_panic.store(true, Ordering::SeqCst);
        wake(&p.shared);
        assert_eq!(outcome(&ticket, Duration::from_secs(5)), StreamOutcome::WriteFailed);
        assert_eq!(p.attached_streams(), 0);
        let (server, client) = connection();
        let sub = p.subscribe_recent(0, 1_000).unwrap();
        let ticket = p.attach_stream(&sub, server.as_fd(), Duration::from_secs(5)).unwrap();
        add(&p, 0..10);
        assert_eq!(Reader::new(client).read_until(10, Duration::from_secs(5)), 10);
        assert_eq!(ticket.outcome(), None);
    }

    /// Streams attached, read and ended every which way on several threads while events flow:
    /// every stream sees a gapless run of events, every ticket gets an outcome, and nothing is
    /// left attached or subscribed at the end.
    #[test]
    fn hammer_attach_read_and_end_concurrently() {
        let p = Arc::new(EventPipeline::new(200_000, 1_000_000));
        let stop = Arc::new(AtomicBool::new(false));
        let producer = {
            let (p, stop) = (Arc::clone(&p), Arc::clone(&stop));
            thread::spawn(move || {
                let mut next = 1i64;
                let deadline = Instant::now() + Duration::from_secs(60);
                while !stop.load(Ordering::SeqCst) && next < 2_000_000 && Instant::now() < deadline {
                    add(&p, next..next + 500);
                    next += 500;
                    thread::sleep(Duration::from_millis(2));
                }
            })
        };
        let workers: Vec<_> = (0..6u64)
            .map(|w| {
                let p = Arc::clone(&p);
                thread::spawn(move || {
                    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (w + 1);
                    let mut roll = move |n: u64| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed % n
                    };
                    for _ in 0..12 {
                        let (server, client) = connection();
                        let sub = p.subscribe_recent(0, 1_000_000).unwrap();
                        let ticket = p.attach_stream(&sub, server.as_fd(), Duration::from_secs(5)).unwrap();
                        drop(server); // the hub holds its own duplicate
                        let mut reader = Reader::new(client);
                        let want = 100 + roll(3_000) as usize;
                        assert!(reader.read_until(want, Duration::from_secs(20)) >= want, "the stream stalled");
                        assert!(reader.stamps.windows(2).all(|w| w[1] == w[0] + 1), "a gap or a duplicate");
                        match roll(3) {
                            0 => {
                                drop(reader); // the client hangs up
                                let end = ticket.wait(PEER_CHECK * 4);
                                assert!(
                                    matches!(end, Some(StreamOutcome::PeerClosed | StreamOutcome::WriteFailed)),
                                    "{end:?}"
                                );
                            }
                            1 => {
                                ticket.release();
                                assert_eq!(outcome(&ticket, Duration::from_secs(10)), StreamOutcome::Released);
                            }
                            _ => drop(ticket), // the owner goes away without waiting
                        }
                        drop(sub);
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        stop.store(true, Ordering::SeqCst);
        producer.join().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while (p.attached_streams() > 0 || p.stats().subscribers > 0) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        assert_eq!((p.attached_streams(), p.stats().subscribers), (0, 0));
    }

    #[test]
    fn attach_refuses_a_closed_subscription_and_dropping_the_ticket_releases() {
        let p = EventPipeline::new(1_000, 1_000);
        let (server, _client) = connection();
        let sub = p.subscribe_recent(0, 1_000).unwrap();
        sub.close();
        assert!(matches!(p.attach_stream(&sub, server.as_fd(), Duration::from_secs(1)), Err(CoreError::StreamAttach(_))));
        let other = EventPipeline::new(1_000, 1_000);
        let sub = p.subscribe_recent(0, 1_000).unwrap();
        assert!(matches!(other.attach_stream(&sub, server.as_fd(), Duration::from_secs(1)), Err(CoreError::StreamAttach(_))));
        let ticket = p.attach_stream(&sub, server.as_fd(), Duration::from_secs(1)).unwrap();
        drop(ticket);
        let deadline = Instant::now() + Duration::from_secs(5);
        while p.attached_streams() > 0 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(p.attached_streams(), 0);
    }
}
