//! The stream writer: every byte of an event stream's body, after the response head.
//!
//! `/ws/v1/events/stream` sends a first line, the history asked for (`count`, `start`), live
//! events as they are stored, and, when the stream ends on the server's side, YuniKorn's
//! closing line. All of it is written here, through one [`Conn`](conn) per stream:
//!
//! - **One write path.** A stream's bytes go out as chunks (HTTP/1.1 chunked framing, or as
//!   they are for an HTTP/1.0 body that ends with the connection: [`Framing`]) with
//!   non-blocking `sendmsg` on the writer's own duplicate of the socket (`MSG_DONTWAIT`: the
//!   socket's blocking mode, which belongs to the shared file description, is never touched).
//! - **One deadline.** A chunk not written within the stream's write timeout (YuniKorn's 5 s)
//!   ends the stream ([`StreamOutcome::WriteTimeout`]) and shuts the socket down, whoever was
//!   writing it.
//! - **History at full speed** ([`replay`]): [`open`] writes the first line and every event
//!   stored so far from the calling thread (the binding releases the GIL), waiting for the
//!   socket with `poll` when it is full.
//! - **Live events from one thread** ([`hub`]): once caught up, the stream joins the writer's
//!   thread, which renders each new event once for every stream and writes in rounds (at most
//!   every [`ROUND_GAP`]); a backlog is written until the socket is full and retried every
//!   [`RETRY_GAP`]; a client that hangs up on an idle stream is noticed within [`PEER_CHECK`].
//! - **Outcomes, not strings.** The owner waits on its [`StreamTicket`] for a
//!   [`StreamOutcome`]. When the stream ends on the server's side (the subscription closed, or
//!   the owner released it) the closing line is written first, so every outcome but the
//!   socket failures leaves the body at a chunk boundary for the owner's chunked terminator.
//!
//! The pipeline's side is a [`Cursor`] (position, close reason, rendering at the position,
//! advance) and its head; YuniKorn's rules (the subscription's 2,000-event cut, the close
//! reasons) stay the pipeline's business. The thread exists only while streams are attached;
//! should it ever panic, every stream it holds ends instead of hanging.
//!
//! **Layering.** This crate sits above `pyscheduler-events` and the pipeline knows nothing of
//! it: a [`StreamWriter`] is made for one [`EventPipeline`] and holds the writer's state (the
//! hub) beside the pipeline's [`Shared`](pyscheduler_events::pipeline::Shared) state, which it reads through the pipeline's small
//! public interface (head, store, notify, wait for events) and each subscription's [`Cursor`].
//! The closing line is defined here only ([`closing_line`], [`CLOSED_BY_PRODUCER`]); Python
//! gets it from the binding.

mod chunk;
mod conn;
mod hub;
mod replay;
mod socket;
mod state;
#[cfg(test)]
mod tests;
mod window;

use conn::Conn;
use hub::{finish, Hub, Writer};
use parking_lot::{Condvar, Mutex};
use pyscheduler_error::CoreError;
use pyscheduler_events::pipeline::{Cursor, EventPipeline, Subscription};
use state::{Control, StreamState};
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use hub::{PEER_CHECK, RETRY_GAP, ROUND_GAP};
pub use state::{closing_line, Framing, StreamOptions, StreamOutcome, CLOSED_BY_PRODUCER, RELEASED_DESCRIPTION};

/// The stream writer of one event pipeline: hands subscriptions with their sockets to the
/// writer ([`StreamWriter::open_stream`]) and ends them all on shutdown.
pub struct StreamWriter {
    writer: Arc<Writer>,
}

impl StreamWriter {
    /// The writer of `pipeline`'s streams (its thread starts with the first stream).
    pub fn new(pipeline: &EventPipeline) -> StreamWriter {
        StreamWriter { writer: Arc::new(Writer { pipeline: Arc::clone(pipeline.shared()), hub: Hub::default() }) }
    }

    /// Hands `sub` and its connected socket (an HTTP response whose head is sent) to the
    /// stream writer, which from then on writes every byte of the body: `first_line`, the
    /// history at full speed in this thread, then live events from the writer's thread, and
    /// YuniKorn's closing line.
    pub fn open_stream(
        &self,
        sub: &Subscription,
        socket: BorrowedFd<'_>,
        options: StreamOptions<'_>,
    ) -> Result<StreamTicket, CoreError> {
        if !Arc::ptr_eq(sub.cursor().shared(), &self.writer.pipeline) {
            return Err(CoreError::StreamAttach("the subscription belongs to another event store"));
        }
        open(&self.writer, sub.cursor(), socket, options)
    }

    /// Asks every attached stream to be handed back to its owner (shutting down).
    pub fn release_streams(&self) {
        hub::release_all(&self.writer);
    }

    /// Streams handed to the stream writer and not yet ended.
    pub fn attached_streams(&self) -> u64 {
        self.writer.hub.attached()
    }

    /// Streams ended because one chunk was not written within the write timeout.
    pub fn write_timeouts(&self) -> u64 {
        self.writer.hub.write_timeouts()
    }
}

/// The owner's handle on a stream. Dropping it releases the stream.
pub struct StreamTicket {
    shared: Arc<Writer>,
    stream: Arc<StreamState>,
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

    /// Asks the writer to end the stream at the next chunk boundary, with the closing line
    /// (the outcome is then [`StreamOutcome::Released`], unless it ended otherwise first).
    pub fn release(&self) {
        {
            let mut control = self.stream.control.lock();
            if control.outcome.is_some() || control.release {
                return;
            }
            control.release = true;
        }
        hub::wake(&self.shared);
    }

    pub fn outcome(&self) -> Option<StreamOutcome> {
        self.stream.control.lock().outcome
    }

    /// Events handed to the socket.
    pub fn events_written(&self) -> u64 {
        self.stream.written.load(Ordering::Relaxed)
    }
}

impl Drop for StreamTicket {
    fn drop(&mut self) {
        self.release();
    }
}

/// Takes over the body of a stream: writes the first line and the history from this thread,
/// then hands the stream to the writer's thread (or reports how it ended). The socket is
/// duplicated: the writer never touches the caller's descriptor and closes its own duplicate
/// when the stream ends. The caller keeps the socket open until the ticket has an outcome.
fn open(shared: &Arc<Writer>, cursor: &Cursor, fd: BorrowedFd<'_>, options: StreamOptions<'_>) -> Result<StreamTicket, CoreError> {
    if shared.head().stopped {
        return Err(CoreError::Stopped);
    }
    if cursor.closed().is_some() {
        return Err(CoreError::StreamAttach("the subscription is closed"));
    }
    let fd = fd.try_clone_to_owned().map_err(|e| CoreError::Io(e.to_string()))?;
    let stream = Arc::new(StreamState {
        control: Mutex::new(Control { outcome: None, release: false }),
        done: Condvar::new(),
        written: AtomicU64::new(0),
    });
    // Registered before the history goes out, so a release reaches a replaying stream too.
    hub::register(shared, &stream);
    let mut conn = Conn::new(Arc::clone(&stream), cursor.clone(), fd, options);
    // From here lag counts only what the writer offers (`Cursor::offer`): nothing while the
    // history goes out (a stuck client meets the write deadline), then what the hub's turns
    // leave in a full socket.
    conn.offer(conn.position());
    match replay::run(&mut conn) {
        Some(outcome) => finish(shared, &conn, outcome),
        None => hub::adopt(shared, conn),
    }
    Ok(StreamTicket { shared: Arc::clone(shared), stream })
}
