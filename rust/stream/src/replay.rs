//! The history: written from the opener's thread at full speed, before the stream joins the
//! hub. A full socket is waited for with `poll`, up to the chunk's deadline.

use super::conn::{Conn, Step};
use super::socket::wait_writable;
use super::state::StreamOutcome;
use std::time::Instant;

/// Writes the pending first line and every event up to the head. None when the stream caught
/// up (the hub takes it from there), else how it ended.
pub(super) fn run(conn: &mut Conn) -> Option<StreamOutcome> {
    loop {
        let head = conn.head();
        match conn.step(head, true, None, Instant::now()) {
            Step::Ended(outcome) => return Some(outcome),
            Step::Wrote => {}
            Step::Idle => return None,
            Step::Blocked => {
                // The deadline is set while a chunk is blocked; the step after it decides.
                let until = conn.deadline().unwrap_or_else(Instant::now);
                wait_writable(&conn.fd, until);
            }
        }
    }
}
