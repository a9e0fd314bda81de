//! The one error type of pyscheduler's Rust crates (events, stream, schedmath). The binding
//! crate maps each variant to a Python exception in one place (`rust/python/src/errors.rs`).
//!
//! It lives in a crate of its own, below every other, so that the families (the event store
//! and stream writer, the scheduling arithmetic) share it without depending on each other.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// An enum field of an event is outside the range the record can hold.
    InvalidField { field: &'static str, value: i64, max: i64 },
    /// A subscription asked to start at an id the ring buffer no longer (or not yet) holds.
    StartOutOfRange { start: u64, lowest: u64, highest: u64 },
    /// The event pipeline was stopped.
    Stopped,
    /// A stream could not be handed to the stream writer (closed subscription, another store).
    StreamAttach(&'static str),
    /// A system call on a stream's socket failed.
    Io(String),
    /// A preemption plan's input does not hold together (lengths, unknown queues).
    InvalidPlan(&'static str),
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoreError::InvalidField { field, value, max } => {
                write!(f, "event {field} {value} is out of range (0 to {max})")
            }
            CoreError::StartOutOfRange { start, lowest, highest } => {
                write!(f, "event id {start} is not available: the buffer holds ids {lowest} to {highest}")
            }
            CoreError::Stopped => write!(f, "the event system is stopped"),
            CoreError::StreamAttach(why) => write!(f, "cannot attach the stream: {why}"),
            CoreError::Io(why) => write!(f, "stream socket: {why}"),
            CoreError::InvalidPlan(why) => write!(f, "preemption plan: {why}"),
        }
    }
}

impl std::error::Error for CoreError {}
