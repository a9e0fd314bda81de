//! What a stream is, shared by every part of the writer: its framing and options, how it
//! ended, the state its owner and the writer share, and YuniKorn's closing line (defined here
//! only; the web layer takes it from the binding). A leaf: it imports no other module here.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::AtomicU64;
use std::time::Duration;

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

/// What [`crate::StreamWriter::open_stream`] needs besides the subscription and the socket.
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
    /// Ended on the owner's request ([`crate::StreamTicket::release`]); the closing line was written.
    Released,
    /// The client hung up.
    PeerClosed,
    /// A write failed (the client is gone); the socket was shut down.
    WriteFailed,
    /// A chunk was not written within the write timeout; the socket was shut down.
    WriteTimeout,
}

pub(crate) struct Control {
    pub(crate) outcome: Option<StreamOutcome>,
    pub(crate) release: bool,
}

/// What the owner and the writer share about one stream.
pub(crate) struct StreamState {
    pub(crate) control: Mutex<Control>,
    pub(crate) done: Condvar,
    pub(crate) written: AtomicU64,
}

impl StreamState {
    pub(crate) fn release_requested(&self) -> bool {
        self.control.lock().release
    }
}

/// YuniKorn's in-band end of a stream (a `YAPIError` with status 200: the head is gone), one
/// NDJSON line; an empty `description` is the message. The only definition of the line: the
/// web layer's own writer (a server without a socket) takes it from the binding.
pub fn closing_line(description: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + description.len());
    out.extend_from_slice(b"{\"status_code\":200,\"message\":");
    pyscheduler_events::wire::write_str(&mut out, CLOSED_BY_PRODUCER.as_bytes());
    out.extend_from_slice(b",\"description\":");
    let description = if description.is_empty() { CLOSED_BY_PRODUCER } else { description };
    pyscheduler_events::wire::write_str(&mut out, description.as_bytes());
    out.extend_from_slice(b"}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closing_line_is_yunikorns_yapierror_with_status_200() {
        assert_eq!(
            closing_line("the scheduler is shutting down"),
            b"{\"status_code\":200,\"message\":\"Event stream was closed by the producer\",\"description\":\"the scheduler is shutting down\"}\n"
        );
        assert_eq!(
            closing_line(""),
            b"{\"status_code\":200,\"message\":\"Event stream was closed by the producer\",\"description\":\"Event stream was closed by the producer\"}\n"
        );
        assert!(closing_line("a \"quoted\"\nline").ends_with(b"\"description\":\"a \\\"quoted\\\"\\nline\"}\n"));
    }
}
