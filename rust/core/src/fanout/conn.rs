//! The hub's side of one stream: its socket, the unwritten end of its chunk, and one turn of
//! sending.

use super::chunk::Chunk;
use super::window::Window;
use super::{HubStream, StreamOutcome};
use crate::pipeline::{unregister, Shared, CLOSED_OVERWRITTEN, CLOSED_STOPPED};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Most events rendered at once for a stream behind the shared blocks.
const OWN_CHUNK_EVENTS: u64 = 4096;
/// Most chunks one stream sends in a turn.
const CHUNKS_PER_TURN: usize = 4;

/// The hub's side of one stream.
pub(super) struct Conn {
    pub(super) stream: Arc<HubStream>,
    pub(super) fd: OwnedFd,
    /// The unwritten end of the current chunk.
    chunk: Chunk,
    /// When the current chunk must be written by.
    deadline: Option<Instant>,
    /// Still behind the head after its last turn (not for a full socket): it is served
    /// again without waiting for a round.
    pub(super) behind: bool,
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
    pub(super) fn new(stream: Arc<HubStream>, fd: OwnedFd) -> Conn {
        Conn { stream, fd, chunk: Chunk::default(), deadline: None, behind: false }
    }

    pub(super) fn has_pending(&self) -> bool {
        !self.chunk.is_done()
    }

    pub(super) fn cursor(&self) -> u64 {
        self.stream.sub.cursor.load(Ordering::Acquire)
    }

    /// The stream's turn in a pass of the hub; Some when it ended. New events are sent in
    /// rounds; a stream with a backlog writes until its socket is full (a few chunks a turn,
    /// so one replaying stream cannot hold up the others) and is back after [`RETRY_GAP`].
    pub(super) fn service(&mut self, shared: &Shared, head: u64, round: bool, window: &Window, now: Instant) -> Option<StreamOutcome> {
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
            if self.chunk.write_to(self.fd.as_raw_fd()).is_err() {
                return Step::Ended(StreamOutcome::WriteFailed);
            }
            if self.has_pending() {
                return match self.deadline {
                    Some(d) if now >= d => Step::Ended(StreamOutcome::WriteTimeout),
                    _ => Step::Blocked,
                };
            }
        }
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
                Some((slices, n)) => self.send(shared, cursor, Chunk::of_slices(&slices), n),
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

    /// Hands the chunk of the `n` events from `cursor` to the socket (what it does not take
    /// now stays for the next turn).
    fn send(&mut self, shared: &Shared, cursor: u64, chunk: Chunk, n: u64) -> Sent {
        self.advance(shared, cursor, n);
        self.chunk = chunk;
        match self.chunk.write_to(self.fd.as_raw_fd()) {
            Err(()) => Sent::Failed,
            Ok(()) if self.chunk.is_done() => Sent::All,
            Ok(()) => Sent::Partly,
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
        Some(self.send(shared, cursor, Chunk::of_bytes(body), n as u64))
    }
}
