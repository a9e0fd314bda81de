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

mod chunk;
mod conn;
mod hub;
mod replay;
mod socket;
#[cfg(test)]
mod tests;
mod window;

use crate::error::CoreError;
use crate::pipeline::{Cursor, Shared};
use conn::Conn;
use parking_lot::{Condvar, Mutex};
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) use hub::Hub;
pub use hub::{PEER_CHECK, RETRY_GAP, ROUND_GAP};

/// The `message` of YuniKorn's closing line.
pub const CLOSED_BY_PRODUCER: &str = "Event stream was closed by the producer";
/// The closing line's description when the owner released the stream (the service stops).
pub const RELEASED_DESCRIPTION: &str = "the scheduler is shutting down";

/// How the body is framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// HTTP/1.1 chunks; the owner writes the terminating chunk after the outcome.
    Chunked,
    /// The bytes as they are (an HTTP/1.0 body, ended by closing the connection).
    CloseDelimited,
}

/// What [`open`] needs besides the subscription and the socket.
#[derive(Debug, Clone, Copy)]
pub struct StreamOptions<'a> {
    /// Written before any event (YuniKorn's `{"InstanceUUID":...}` line).
    pub first_line: &'a [u8],
    pub framing: Framing,
    /// Longest time one chunk may take to be written (YuniKorn's write deadline).
    pub write_timeout: Duration,
}

/// How a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamOutcome {
    /// The subscription was closed, with its reason (for a stop, after every event stored
    /// before it); the closing line was written.
    Closed(&'static str),
    /// Ended on the owner's request ([`StreamTicket::release`]); the closing line was written.
    Released,
    /// The client hung up.
    PeerClosed,
    /// A write failed (the client is gone); the socket was shut down.
    WriteFailed,
    /// A chunk was not written within the write timeout; the socket was shut down.
    WriteTimeout,
}

struct Control {
    outcome: Option<StreamOutcome>,
    release: bool,
}

/// What the owner and the writer share about one stream.
struct StreamState {
    control: Mutex<Control>,
    done: Condvar,
    written: AtomicU64,
}

impl StreamState {
    fn release_requested(&self) -> bool {
        self.control.lock().release
    }
}

/// The owner's handle on a stream. Dropping it releases the stream.
pub struct StreamTicket {
    shared: Arc<Shared>,
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
pub(crate) fn open(cursor: &Cursor, fd: BorrowedFd<'_>, options: StreamOptions<'_>) -> Result<StreamTicket, CoreError> {
    let shared = cursor.shared();
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

/// Asks every stream to end (the service is shutting down).
pub(crate) fn release_all(shared: &Shared) {
    hub::release_all(shared);
}

/// Reports `outcome` to the owner; after a socket failure the socket is shut down first, so
/// the owner's next write fails at once instead of waiting on a client that does not read.
fn finish(shared: &Shared, conn: &Conn, outcome: StreamOutcome) {
    if matches!(outcome, StreamOutcome::WriteFailed | StreamOutcome::WriteTimeout) {
        socket::shutdown(&conn.fd);
    }
    if outcome == StreamOutcome::WriteTimeout {
        shared.hub.count_write_timeout();
    }
    hub::forget(shared, &conn.stream);
    conn.stream.control.lock().outcome = Some(outcome);
    conn.stream.done.notify_all();
}

/// YuniKorn's in-band end of a stream (a `YAPIError` with status 200: the head is gone).
fn closing_line(description: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + description.len());
    out.extend_from_slice(b"{\"status_code\":200,\"message\":");
    crate::wire::write_str(&mut out, CLOSED_BY_PRODUCER.as_bytes());
    out.extend_from_slice(b",\"description\":");
    let description = if description.is_empty() { CLOSED_BY_PRODUCER } else { description };
    crate::wire::write_str(&mut out, description.as_bytes());
    out.extend_from_slice(b"}\n");
    out
}
