//! The system calls of the stream writer: non-blocking `sendmsg`, the writability and hang-up
//! `poll`s, `shutdown`.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Instant;

/// `sendmsg` of `parts` without blocking; the bytes written (0 when the socket is full).
pub(super) fn send(fd: RawFd, parts: &[&[u8]]) -> Result<usize, ()> {
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
pub(super) fn hung_up(sockets: impl Iterator<Item = RawFd>) -> Vec<bool> {
    #[cfg(target_os = "linux")]
    const HANGUP: libc::c_short = libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
    #[cfg(not(target_os = "linux"))]
    const HANGUP: libc::c_short = libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
    let mut fds: Vec<libc::pollfd> = sockets.map(|fd| libc::pollfd { fd, events: HANGUP, revents: 0 }).collect();
    // SAFETY: fds is a valid array of pollfd for the duration of the call.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
    if ready <= 0 {
        return vec![false; fds.len()];
    }
    fds.iter().map(|p| p.revents & HANGUP != 0).collect()
}

/// Waits until the socket takes more bytes (or fails, or hangs up), or until `until`.
pub(super) fn wait_writable(fd: &OwnedFd, until: Instant) {
    let left = until.saturating_duration_since(Instant::now());
    // Rounded up, so a wait never ends just before the deadline it waits for.
    let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
    let mut pfd = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
    // SAFETY: one valid pollfd for the duration of the call. EINTR just ends this wait early.
    unsafe {
        libc::poll(&mut pfd, 1, ms);
    }
}

pub(super) fn shutdown(fd: &OwnedFd) {
    // SAFETY: shutting down an open socket descriptor the hub owns.
    unsafe {
        libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR);
    }
}
