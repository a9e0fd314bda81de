//! The stream writer over real loopback sockets.

use super::hub::{self, wake};
use super::*;
use pyscheduler_events::pipeline::{EventPipeline, Subscription, CLOSED_SLOW, CLOSED_STOPPED};
use pyscheduler_events::record::{EventFields, Kind, OwnedEvent};
use std::ops::Deref;
use std::sync::atomic::AtomicBool;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::thread;

const FIRST_LINE: &[u8] = b"{\"InstanceUUID\":\"test\"}\n";

fn options(write_timeout: Duration) -> StreamOptions<'static> {
    StreamOptions { first_line: FIRST_LINE, framing: Framing::Chunked, write_timeout }
}

/// A pipeline with its stream writer, as the binding holds them.
struct Streamed {
    pipeline: EventPipeline,
    writer: StreamWriter,
}

impl Streamed {
    fn new(capacity: usize, queue_capacity: usize) -> Streamed {
        let pipeline = EventPipeline::new(capacity, queue_capacity);
        let writer = StreamWriter::new(&pipeline);
        Streamed { pipeline, writer }
    }

    fn open_stream(&self, sub: &Subscription, socket: BorrowedFd<'_>, options: StreamOptions<'_>) -> Result<StreamTicket, CoreError> {
        self.writer.open_stream(sub, socket, options)
    }

    fn attached_streams(&self) -> u64 {
        self.writer.attached_streams()
    }
}

impl Deref for Streamed {
    type Target = EventPipeline;

    fn deref(&self) -> &EventPipeline {
        &self.pipeline
    }
}

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
    /// Lines that are not events: the first line and the closing line.
    others: Vec<String>,
}

impl Reader {
    fn new(sock: TcpStream) -> Reader {
        sock.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        Reader { sock, buf: Vec::new(), body: Vec::new(), stamps: Vec::new(), chunks: 0, others: Vec::new() }
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
                if line.contains("InstanceUUID") || line.contains("status_code") {
                    self.others.push(line.to_string());
                    continue;
                }
                // A zero timestamp is left out of the record (omitempty).
                let stamp = line.find("\"timestampNano\":").map_or(0, |at| {
                    line[at + 16..].split([',', '}']).next().unwrap().parse().unwrap()
                });
                self.stamps.push(stamp);
            }
        }
    }
}

/// The closing line's description, once it arrived.
fn closing_description(reader: &Reader) -> Option<String> {
    let last = reader.others.last()?;
    let at = last.find("\"description\":\"")? + 15;
    Some(last[at..last.len() - 2].to_string())
}

/// A live subscription with `capacity` opened over a fresh loopback connection:
/// (ticket, subscription, server side, client side).
fn attached(p: &Streamed, capacity: u64, write_timeout: Duration) -> (StreamTicket, Subscription, TcpStream, TcpStream) {
    let (server, client) = connection();
    let sub = p.subscribe_recent(0, capacity).unwrap();
    let ticket = p.open_stream(&sub, server.as_fd(), options(write_timeout)).unwrap();
    (ticket, sub, server, client)
}

fn outcome(ticket: &StreamTicket, limit: Duration) -> StreamOutcome {
    ticket.wait(limit).expect("the stream should have ended")
}

/// A thread's niceness from its /proc stat line (field 19); None once the thread is gone.
fn niceness(stat_path: &std::path::Path) -> Option<i32> {
    let stat = std::fs::read_to_string(stat_path).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split(' ').nth(16)?.parse().ok()
}

#[test]
fn the_writer_thread_stands_back_for_the_scheduling_thread() {
    let p = Streamed::new(1_000, 1_000);
    let (_ticket, _sub, _server, _client) = attached(&p, 2_000, Duration::from_secs(5));
    let own = niceness(std::path::Path::new("/proc/thread-self/stat")).unwrap();
    let expected = (own + hub::WRITER_NICENESS).min(19);
    let writers = || -> Vec<i32> {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|task| task.ok().map(|t| t.path()))
            .filter(|task| std::fs::read_to_string(task.join("comm")).is_ok_and(|name| name.starts_with("pyscheduler-str")))
            .filter_map(|task| niceness(&task.join("stat")))
            .collect()
    };
    // Each test's pipeline has a writer of its own; every one sets its niceness as it starts.
    // Wait for this test's writer to exist too (none yet is no answer: it may not have started).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let found = writers();
        if (!found.is_empty() && found.iter().all(|&n| n == expected)) || Instant::now() >= deadline {
            break;
        }
        thread::sleep(Duration::from_millis(5));
    }
    let found = writers();
    assert!(!found.is_empty() && found.iter().all(|&n| n == expected), "{found:?}, own {own}");
}

#[test]
fn attached_streams_get_every_event_in_order_in_few_chunks() {
    let p = Streamed::new(100_000, 100_000);
    add(&p, 0..10);
    let mut tickets = Vec::new();
    let mut readers = Vec::new();
    for _ in 0..5 {
        let (server, client) = connection();
        let sub = p.subscribe_recent(10, 100_000).unwrap();
        tickets.push((p.open_stream(&sub, server.as_fd(), options(Duration::from_secs(5))).unwrap(), sub, server));
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
fn release_ends_with_the_closing_line_at_a_chunk_boundary() {
    let p = Streamed::new(10_000, 10_000);
    let (ticket, _sub, server, client) = attached(&p, 10_000, Duration::from_secs(5));
    add(&p, 0..500);
    let mut reader = Reader::new(client);
    assert_eq!(reader.read_until(500, Duration::from_secs(5)), 500);
    ticket.release();
    assert_eq!(outcome(&ticket, Duration::from_secs(5)), StreamOutcome::Released);
    // The owner writes after the writer: the framing stays one chunk sequence.
    (&server).write_all(b"14\r\n{\"timestampNano\":1}\n\r\n").unwrap();
    add(&p, 500..600);
    assert_eq!(reader.read_until(501, Duration::from_secs(2)), 501);
    assert_eq!(reader.stamps.last(), Some(&1), "nothing was written after the release");
    assert_eq!(reader.others.first().map(String::as_bytes), Some(&FIRST_LINE[..FIRST_LINE.len() - 1]));
    assert_eq!(closing_description(&reader).as_deref(), Some(RELEASED_DESCRIPTION));
    assert_eq!(p.attached_streams(), 0);
}

#[test]
fn open_writes_the_first_line_and_the_history_before_it_returns() {
    let p = Streamed::new(100_000, 100_000);
    add(&p, 0..50_000);
    let (server, client) = connection();
    let sub = p.subscribe_recent(30_000, 100_000).unwrap();
    // The reader runs alongside: the history is more than the socket buffers hold.
    let reader = thread::spawn(move || {
        let mut reader = Reader::new(client);
        reader.read_until(30_000, Duration::from_secs(20));
        reader
    });
    let ticket = p.open_stream(&sub, server.as_fd(), options(Duration::from_secs(5))).unwrap();
    assert_eq!(ticket.events_written(), 30_000, "open returns once the history is written");
    assert_eq!(ticket.outcome(), None);
    let reader = reader.join().unwrap();
    assert_eq!(reader.stamps, (20_000..50_000).collect::<Vec<i64>>());
    assert_eq!(reader.others.len(), 1, "the first line, once");
}

#[test]
fn a_history_the_client_does_not_read_ends_at_the_write_deadline_in_open() {
    let p = Streamed::new(200_000, 200_000);
    add(&p, 0..200_000);
    let (server, mut client) = connection();
    let sub = p.subscribe_recent(200_000, 1_000_000).unwrap();
    let started = Instant::now();
    let ticket = p.open_stream(&sub, server.as_fd(), options(Duration::from_millis(300))).unwrap();
    assert_eq!(ticket.outcome(), Some(StreamOutcome::WriteTimeout));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(p.writer.write_timeouts(), 1);
    assert_eq!(p.attached_streams(), 0);
    client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut sink = Vec::new();
    assert!(client.read_to_end(&mut sink).is_ok(), "the socket was shut down");
}

#[test]
fn a_close_delimited_body_has_no_chunk_framing() {
    let p = Streamed::new(1_000, 1_000);
    add(&p, 1..4);
    let (server, mut client) = connection();
    let sub = p.subscribe_recent(3, 1_000).unwrap();
    let opts = StreamOptions { first_line: FIRST_LINE, framing: Framing::CloseDelimited, write_timeout: Duration::from_secs(5) };
    let ticket = p.open_stream(&sub, server.as_fd(), opts).unwrap();
    ticket.release();
    assert_eq!(outcome(&ticket, Duration::from_secs(5)), StreamOutcome::Released);
    drop(ticket);
    drop(server);
    client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut body = String::new();
    client.read_to_string(&mut body).unwrap();
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.len(), 5, "{body}");
    assert_eq!(lines[0].as_bytes(), &FIRST_LINE[..FIRST_LINE.len() - 1]);
    assert!(lines[1].contains("\"timestampNano\":1,"), "{}", lines[1]);
    assert_eq!(
        lines[4],
        format!("{{\"status_code\":200,\"message\":\"{CLOSED_BY_PRODUCER}\",\"description\":\"{RELEASED_DESCRIPTION}\"}}")
    );
}

#[test]
fn a_client_that_stops_reading_is_cut_and_the_others_continue() {
    let p = Streamed::new(200_000, 200_000);
    let (slow_server, slow_client) = connection();
    let (fast_server, fast_client) = connection();
    let slow_sub = p.subscribe_recent(0, 2_000).unwrap();
    let fast_sub = p.subscribe_recent(0, 200_000).unwrap();
    let slow = p.open_stream(&slow_sub, slow_server.as_fd(), options(Duration::from_secs(30))).unwrap();
    let fast = p.open_stream(&fast_sub, fast_server.as_fd(), options(Duration::from_secs(30))).unwrap();
    let mut reader = Reader::new(fast_client);
    // Far more than the socket buffers hold: the slow client's socket fills, its chunk waits,
    // and the writer's next rounds offer it more than its capacity.
    let mut sent = 0i64;
    while p.stats().slow_closed == 0 && sent < 190_000 {
        add(&p, sent..sent + 10_000);
        sent += 10_000;
        reader.read_until(sent as usize, Duration::from_secs(10));
        thread::sleep(ROUND_GAP); // a round of the writer
    }
    assert_eq!(p.stats().slow_closed, 1);
    assert_eq!(reader.read_until(sent as usize, Duration::from_secs(10)), sent as usize);
    assert_eq!(fast.outcome(), None);
    // The closing line waits in the socket behind the chunk: a client that reads again gets
    // both, and the stream ends as cut for falling behind.
    let mut slow_reader = Reader::new(slow_client);
    let got = slow_reader.read_until(sent as usize, Duration::from_secs(2));
    assert!(got < sent as usize, "the cut client got {got} of {sent}");
    assert_eq!(outcome(&slow, Duration::from_secs(5)), StreamOutcome::Closed(CLOSED_SLOW));
    assert_eq!(closing_description(&slow_reader).as_deref(), Some(CLOSED_SLOW));
    assert_eq!(p.writer.write_timeouts(), 0);
}

#[test]
fn a_burst_beyond_the_capacity_between_two_rounds_does_not_cut_a_client_that_reads() {
    // The scheduler can store thousands of events within one of the writer's 20 ms rounds: a
    // client that takes every chunk it is given is not behind, whatever the burst.
    let p = Streamed::new(200_000, 200_000);
    let (server, client) = connection();
    let sub = p.subscribe_recent(0, 2_000).unwrap();
    let ticket = p.open_stream(&sub, server.as_fd(), options(Duration::from_secs(30))).unwrap();
    let bursts = 5;
    let reading = thread::spawn(move || {
        let mut reader = Reader::new(client);
        (reader.read_until(bursts * 10_000, Duration::from_secs(30)), reader) // the reader keeps the socket open
    });
    for burst in 0..bursts as i64 {
        add(&p, burst * 10_000..(burst + 1) * 10_000);
        thread::sleep(Duration::from_millis(30));
    }
    let (read, _open) = reading.join().unwrap();
    assert_eq!(read, bursts * 10_000);
    assert_eq!(ticket.outcome(), None);
    assert_eq!(p.stats().slow_closed, 0);
}

#[test]
fn a_chunk_not_written_within_the_write_timeout_ends_the_stream() {
    let p = Streamed::new(200_000, 200_000);
    let (server, mut client) = connection();
    let sub = p.subscribe_recent(0, 1_000_000).unwrap();
    let ticket = p.open_stream(&sub, server.as_fd(), options(Duration::from_millis(300))).unwrap();
    let mut sent = 0i64;
    while ticket.outcome().is_none() && sent < 190_000 {
        add(&p, sent..sent + 10_000);
        sent += 10_000;
        thread::sleep(Duration::from_millis(30));
    }
    assert_eq!(outcome(&ticket, Duration::from_secs(5)), StreamOutcome::WriteTimeout);
    assert_eq!(p.writer.write_timeouts(), 1);
    // The socket was shut down: the client reaches its end.
    client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut sink = Vec::new();
    assert!(client.read_to_end(&mut sink).is_ok());
}

#[test]
fn a_client_that_hangs_up_on_an_idle_stream_is_noticed() {
    let p = Streamed::new(1_000, 1_000);
    let (ticket, _sub, _server, client) = attached(&p, 1_000, Duration::from_secs(5));
    drop(client);
    assert_eq!(outcome(&ticket, PEER_CHECK + Duration::from_secs(2)), StreamOutcome::PeerClosed);
    assert_eq!(p.attached_streams(), 0);
}

#[test]
fn stop_delivers_what_was_stored_then_closes() {
    let p = Streamed::new(100_000, 100_000);
    let (ticket, sub, server, client) = attached(&p, 100_000, Duration::from_secs(5));
    for i in 0..30_000 {
        p.add(ev(i));
    }
    p.stop();
    let mut reader = Reader::new(client);
    assert_eq!(reader.read_until(30_000, Duration::from_secs(10)), 30_000);
    assert_eq!(outcome(&ticket, Duration::from_secs(5)), StreamOutcome::Closed(CLOSED_STOPPED));
    reader.read_until(30_001, Duration::from_millis(500));
    assert_eq!(closing_description(&reader).as_deref(), Some(CLOSED_STOPPED));
    assert_eq!(p.open_stream(&sub, server.as_fd(), options(Duration::from_secs(1))).err(), Some(CoreError::Stopped));
}

#[test]
fn a_live_stream_left_behind_the_shared_blocks_catches_up_without_a_gap() {
    let p = Streamed::new(200_000, 200_000);
    add(&p, 0..1_000);
    // Both caught up at once; the slow one then stops reading while 150,000 events come, so
    // it falls behind what the writer keeps rendered and is served its own rendering.
    let (_live, _live_sub, _live_server, live_client) = attached(&p, 200_000, Duration::from_secs(30));
    let (ticket, _sub, _server, client) = attached(&p, 200_000, Duration::from_secs(30));
    let mut live = Reader::new(live_client);
    let mut sent = 1_000i64;
    while sent < 151_000 {
        add(&p, sent..sent + 10_000);
        sent += 10_000;
        live.read_until((sent - 1_000) as usize, Duration::from_secs(10));
    }
    assert_eq!(live.stamps, (1_000..151_000).collect::<Vec<i64>>());
    let mut reader = Reader::new(client);
    assert_eq!(reader.read_until(150_000, Duration::from_secs(20)), 150_000);
    assert_eq!(reader.stamps, (1_000..151_000).collect::<Vec<i64>>());
    assert_eq!(ticket.outcome(), None);
}

#[test]
fn streams_end_when_the_hub_thread_unwinds_and_a_new_hub_serves_later_ones() {
    let p = Streamed::new(1_000, 1_000);
    let (ticket, _sub, _server, _client) = attached(&p, 1_000, Duration::from_secs(5));
    p.writer.writer.hub.inject_panic.store(true, Ordering::SeqCst);
    wake(&p.writer.writer);
    assert_eq!(outcome(&ticket, Duration::from_secs(5)), StreamOutcome::WriteFailed);
    assert_eq!(p.attached_streams(), 0);
    let (ticket, _sub, _server, client) = attached(&p, 1_000, Duration::from_secs(5));
    add(&p, 0..10);
    assert_eq!(Reader::new(client).read_until(10, Duration::from_secs(5)), 10);
    assert_eq!(ticket.outcome(), None);
}

/// Streams attached, read and ended every which way on several threads while events flow:
/// every stream sees a gapless run of events, every ticket gets an outcome, and nothing is
/// left attached or subscribed at the end.
#[test]
fn hammer_attach_read_and_end_concurrently() {
    let p = Arc::new(Streamed::new(200_000, 1_000_000));
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
                    let ticket = p.open_stream(&sub, server.as_fd(), options(Duration::from_secs(5))).unwrap();
                    drop(server); // the hub holds its own duplicate
                    let mut reader = Reader::new(client);
                    let want = 100 + roll(3_000) as usize;
                    assert!(reader.read_until(want, Duration::from_secs(20)) >= want, "the stream stalled");
                    assert!(reader.stamps.windows(2).all(|w| w[1] == w[0] + 1), "a gap or a duplicate");
                    match roll(3) {
                        0 => {
                            drop(reader); // the client hangs up
                            let end = ticket.wait(PEER_CHECK + Duration::from_secs(5));
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
    let p = Streamed::new(1_000, 1_000);
    let (server, _client) = connection();
    let sub = p.subscribe_recent(0, 1_000).unwrap();
    sub.close();
    assert!(matches!(p.open_stream(&sub, server.as_fd(), options(Duration::from_secs(1))), Err(CoreError::StreamAttach(_))));
    let other = Streamed::new(1_000, 1_000);
    let sub = p.subscribe_recent(0, 1_000).unwrap();
    assert!(matches!(other.open_stream(&sub, server.as_fd(), options(Duration::from_secs(1))), Err(CoreError::StreamAttach(_))));
    let ticket = p.open_stream(&sub, server.as_fd(), options(Duration::from_secs(1))).unwrap();
    drop(ticket);
    let deadline = Instant::now() + Duration::from_secs(5);
    while p.attached_streams() > 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(p.attached_streams(), 0);
}
