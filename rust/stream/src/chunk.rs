//! One chunk on its way to a stream's socket.
//!
//! A chunk is a list of parts: its size line, slices of the shared blocks (or a stream's own
//! rendering) and the closing CRLF (without the framing lines for a close-delimited body). Written parts are dropped as they go out; the shared
//! blocks are referenced, never copied, so a hundred slow streams holding the same events keep
//! one copy of them alive, not a hundred.

use super::socket::send;
use super::state::Framing;
use super::window::{Block, Slice};
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::sync::Arc;

enum Part {
    Owned(Vec<u8>),
    Shared(Arc<Block>, usize, usize),
}

impl Part {
    fn bytes(&self) -> &[u8] {
        match self {
            Part::Owned(bytes) => bytes,
            Part::Shared(block, from, to) => &block.bytes[*from..*to],
        }
    }
}

#[derive(Default)]
pub(super) struct Chunk {
    parts: VecDeque<Part>,
    /// Bytes of the first part already written.
    written: usize,
}

impl Chunk {
    /// A chunk of the events in `slices` of the shared blocks.
    pub(super) fn of_slices(slices: &[Slice], framing: Framing) -> Chunk {
        let size = slices.iter().map(|(_, from, to)| to - from).sum();
        let body = slices.iter().map(|(block, from, to)| Part::Shared(Arc::clone(block), *from, *to));
        Chunk::framed(size, body, framing)
    }

    /// A chunk of `body`, rendered for one stream.
    pub(super) fn of_bytes(body: Vec<u8>, framing: Framing) -> Chunk {
        let size = body.len();
        Chunk::framed(size, std::iter::once(Part::Owned(body)), framing)
    }

    fn framed(size: usize, body: impl Iterator<Item = Part>, framing: Framing) -> Chunk {
        let mut parts = VecDeque::new();
        match framing {
            Framing::Chunked => {
                parts.push_back(Part::Owned(format!("{size:X}\r\n").into_bytes()));
                parts.extend(body);
                parts.push_back(Part::Owned(b"\r\n".to_vec()));
            }
            Framing::CloseDelimited => parts.extend(body),
        }
        Chunk { parts, written: 0 }
    }

    /// Nothing left to write.
    pub(super) fn is_done(&self) -> bool {
        self.parts.is_empty()
    }

    /// Writes as much as the socket takes now. Err when the write failed.
    pub(super) fn write_to(&mut self, fd: RawFd) -> Result<(), ()> {
        let slices: Vec<&[u8]> = self
            .parts
            .iter()
            .enumerate()
            .map(|(i, part)| if i == 0 { &part.bytes()[self.written..] } else { part.bytes() })
            .collect();
        let mut sent = send(fd, &slices)?;
        while let Some(first) = self.parts.front() {
            let left = first.bytes().len() - self.written;
            if sent < left {
                self.written += sent;
                break;
            }
            sent -= left;
            self.parts.pop_front();
            self.written = 0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn a_chunk_written_in_pieces_arrives_whole_and_framed() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let block = Arc::new(Block::for_test(7, b"{\"a\":1}\n{\"b\":2}\n".to_vec()));
        let mut chunk = Chunk::of_slices(&[(Arc::clone(&block), 8, 16), (block, 0, 8)], Framing::Chunked);
        assert!(!chunk.is_done());
        chunk.write_to(server.as_raw_fd()).unwrap();
        assert!(chunk.is_done());
        client.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let mut got = vec![0u8; 22];
        client.read_exact(&mut got).unwrap();
        assert_eq!(got, b"10\r\n{\"b\":2}\n{\"a\":1}\n\r\n");
    }

    #[test]
    fn a_chunk_the_socket_takes_in_parts_keeps_its_place() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let line = b"{\"event\":\"0123456789abcdef0123456789abcdef\"}\n";
        let body: Vec<u8> = line.iter().copied().cycle().take(line.len() * 400_000).collect();
        let block = Arc::new(Block::for_test(0, body.clone()));
        let mut chunk = Chunk::of_slices(&[(block, 0, body.len())], Framing::Chunked);
        client.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        let reader = std::thread::spawn(move || {
            let mut client = client;
            // Let the socket fill up first, so the writes below are partial.
            std::thread::sleep(std::time::Duration::from_millis(100));
            let mut all = Vec::new();
            client.read_to_end(&mut all).unwrap();
            all
        });
        let mut partial_writes = 0;
        while !chunk.is_done() {
            chunk.write_to(server.as_raw_fd()).unwrap();
            if !chunk.is_done() {
                partial_writes += 1;
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        drop(server);
        let got = reader.join().unwrap();
        assert!(partial_writes > 0, "the socket took everything at once");
        let mut expected = format!("{:X}\r\n", body.len()).into_bytes();
        expected.extend_from_slice(&body);
        expected.extend_from_slice(b"\r\n");
        assert!(got == expected, "{} bytes arrived, {} expected", got.len(), expected.len());
    }
}
