//! One stream: its socket, its cursor, the unwritten end of its chunk, and one step of
//! writing. The replay (history, in the opener's thread) and the hub (live events) drive the
//! same steps, so a stream has one write path and one deadline whoever writes it.

use super::chunk::Chunk;
use super::window::Window;
use super::state::{closing_line, Framing, StreamOptions, StreamOutcome, StreamState, RELEASED_DESCRIPTION};
use pyscheduler_events::pipeline::{Cursor, CLOSED_STOPPED};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most events rendered at once for a stream behind the shared blocks (or replaying).
const OWN_CHUNK_EVENTS: u64 = 4096;

pub(super) struct Conn {
    pub(super) stream: Arc<StreamState>,
    cursor: Cursor,
    pub(super) fd: OwnedFd,
    framing: Framing,
    write_timeout: Duration,
    /// The unwritten end of the current chunk.
    chunk: Chunk,
    /// When the current chunk must be written by (set when the socket first refuses part of it).
    deadline: Option<Instant>,
    /// The closing line is on its way; this outcome follows it.
    ending: Option<StreamOutcome>,
    /// Behind the head after its last turn (not for a full socket): the hub serves it again
    /// without waiting for a round.
    pub(super) behind: bool,
}

/// What one step did.
pub(super) enum Step {
    Ended(StreamOutcome),
    /// A whole chunk went out.
    Wrote,
    /// The socket is full; the chunk's end waits.
    Blocked,
    /// Nothing to send now.
    Idle,
}

impl Conn {
    /// A stream whose first chunk is `options.first_line`.
    pub(super) fn new(stream: Arc<StreamState>, cursor: Cursor, fd: OwnedFd, options: StreamOptions<'_>) -> Conn {
        Conn {
            stream,
            cursor,
            fd,
            framing: options.framing,
            write_timeout: options.write_timeout,
            chunk: Chunk::of_bytes(options.first_line.to_vec(), options.framing),
            deadline: None,
            ending: None,
            behind: false,
        }
    }

    pub(super) fn has_pending(&self) -> bool {
        !self.chunk.is_done()
    }

    pub(super) fn position(&self) -> u64 {
        self.cursor.position()
    }

    /// The writer offered every event before `head` to the client (see [`Cursor::offer`]).
    pub(super) fn offer(&self, head: u64) {
        self.cursor.offer(head);
    }

    /// The id the next stored event will get.
    pub(super) fn head(&self) -> u64 {
        self.cursor.shared().head().next_id
    }

    pub(super) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Finishes the current chunk, then, at a chunk boundary, ends the stream or (when
    /// `may_send`) starts the next chunk: from `window` when it holds the position, else
    /// rendered for this stream alone.
    pub(super) fn step(&mut self, head: u64, may_send: bool, window: Option<&Window>, now: Instant) -> Step {
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
        if let Some(outcome) = self.ending {
            return Step::Ended(outcome);
        }
        // At a chunk boundary: the stream may end here.
        if self.stream.release_requested() {
            return self.end(StreamOutcome::Released, RELEASED_DESCRIPTION, now);
        }
        let closed = self.cursor.closed();
        // A stop closes subscriptions after storing the last events: the head read before
        // seeing the close may be short of them.
        let head = if closed == Some(CLOSED_STOPPED) { self.cursor.shared().head().next_id } else { head };
        let position = self.position();
        match closed {
            Some(reason) if reason != CLOSED_STOPPED || position >= head => {
                return self.end(StreamOutcome::Closed(reason), reason, now);
            }
            None if position >= head || !may_send => return Step::Idle,
            _ => {}
        }
        let cursor = self.cursor.clone();
        let _reading = cursor.lock_reads();
        let position = cursor.position();
        let (chunk, n) = match window.and_then(|w| w.slices(position)) {
            Some((slices, n)) => (Chunk::of_slices(&slices, self.framing), n),
            None => {
                let mut body = Vec::new();
                match cursor.render(&mut body, OWN_CHUNK_EVENTS) {
                    Some(n) => (Chunk::of_bytes(body, self.framing), n),
                    None => {
                        let reason = cursor.closed().unwrap_or(pyscheduler_events::pipeline::CLOSED_OVERWRITTEN);
                        return self.end(StreamOutcome::Closed(reason), reason, now);
                    }
                }
            }
        };
        cursor.advance(n);
        self.stream.written.fetch_add(n, Ordering::Relaxed);
        self.start(chunk, now)
    }

    /// Writes the closing line, then reports `outcome`.
    fn end(&mut self, outcome: StreamOutcome, description: &str, now: Instant) -> Step {
        self.ending = Some(outcome);
        self.start(Chunk::of_bytes(closing_line(description), self.framing), now)
    }

    /// Hands a new chunk to the socket; what it does not take now waits, with the deadline.
    fn start(&mut self, chunk: Chunk, now: Instant) -> Step {
        self.chunk = chunk;
        if self.chunk.write_to(self.fd.as_raw_fd()).is_err() {
            return Step::Ended(StreamOutcome::WriteFailed);
        }
        if self.has_pending() {
            self.deadline = Some(now + self.write_timeout);
            return Step::Blocked;
        }
        match self.ending {
            Some(outcome) => Step::Ended(outcome),
            None => Step::Wrote,
        }
    }
}
