//! The recently stored events, rendered once into blocks that every stream sends from.

use pyscheduler_events::pipeline::Shared;
use std::collections::VecDeque;
use std::sync::Arc;

/// Events per shared block.
const BLOCK_EVENTS: u64 = 4096;
/// Most events kept rendered; a stream further behind gets its own rendering.
const WINDOW_EVENTS: u64 = 65_536;
/// Most payload bytes in one chunk.
const CHUNK_BYTES: usize = 4 << 20;

/// One rendered run of events shared by every stream.
pub(super) struct Block {
    first: u64,
    pub(super) bytes: Vec<u8>,
    /// Offset just past each line's `\n`.
    ends: Vec<usize>,
}

impl Block {
    /// A block of ready NDJSON lines starting at event `first` (tests).
    #[cfg(test)]
    pub(super) fn for_test(first: u64, bytes: Vec<u8>) -> Block {
        let ends = bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1).collect();
        Block { first, bytes, ends }
    }

    fn end(&self) -> u64 {
        self.first + self.ends.len() as u64
    }

    fn start_of(&self, id: u64) -> usize {
        let i = (id - self.first) as usize;
        if i == 0 {
            0
        } else {
            self.ends[i - 1]
        }
    }
}

/// Part of a block: (block, first byte, end byte).
pub(super) type Slice = (Arc<Block>, usize, usize);

/// The recently stored events, rendered once.
#[derive(Default)]
pub(super) struct Window {
    blocks: VecDeque<Arc<Block>>,
}

impl Window {
    fn start(&self) -> Option<u64> {
        self.blocks.front().map(|b| b.first)
    }

    fn end(&self) -> Option<u64> {
        self.blocks.back().map(|b| b.end())
    }

    /// Renders what was stored up to `head`. An empty window starts at `from` (the lowest
    /// cursor that should be served from it).
    pub(super) fn extend(&mut self, shared: &Shared, from: u64, head: u64) {
        let store = shared.store();
        let floor = head.saturating_sub(WINDOW_EVENTS).max(store.lowest_id());
        let mut next = self.end().unwrap_or(from);
        if next < floor {
            // Too far back, or overwritten before it was rendered: the window restarts at
            // the floor (blocks stay contiguous; streams behind it render their own).
            self.blocks.clear();
            next = floor;
        }
        while next < head.min(store.next_id()) {
            let count = (head - next).min(BLOCK_EVENTS);
            let mut block = Block { first: next, bytes: Vec::new(), ends: Vec::new() };
            let n = store.write_ndjson_lines(&mut block.bytes, &mut block.ends, next, count);
            if n == 0 {
                break;
            }
            next += n as u64;
            self.blocks.push_back(Arc::new(block));
        }
        drop(store);
        while let (Some(start), Some(end)) = (self.start(), self.end()) {
            if end - start <= WINDOW_EVENTS + BLOCK_EVENTS || self.blocks.len() == 1 {
                break;
            }
            self.blocks.pop_front();
        }
    }

    /// Drops the blocks every stream is past.
    pub(super) fn trim(&mut self, lowest_cursor: u64) {
        while self.blocks.front().is_some_and(|b| b.end() <= lowest_cursor) {
            self.blocks.pop_front();
        }
    }

    /// Slices holding the events from `cursor` on (at most [`CHUNK_BYTES`], whole lines), and
    /// how many events they hold. None when `cursor` is not in the window.
    pub(super) fn slices(&self, cursor: u64) -> Option<(Vec<Slice>, u64)> {
        let start = self.start()?;
        if cursor < start || cursor >= self.end()? {
            return None;
        }
        let mut out = Vec::new();
        let (mut bytes, mut events, mut id) = (0usize, 0u64, cursor);
        for block in self.blocks.iter().skip_while(|b| b.end() <= cursor) {
            let from = block.start_of(id);
            let mut last = block.end();
            let mut to = block.bytes.len();
            if bytes + (to - from) > CHUNK_BYTES {
                // Whole lines only, and at least one.
                let limit = from + (CHUNK_BYTES - bytes).max(1);
                let i = block.ends.partition_point(|&e| e <= limit).max((id - block.first) as usize + 1);
                last = block.first + i as u64;
                to = block.ends[i - 1];
            }
            out.push((Arc::clone(block), from, to));
            bytes += to - from;
            events += last - id;
            id = last;
            if last < block.end() || bytes >= CHUNK_BYTES {
                break;
            }
        }
        Some((out, events))
    }
}
