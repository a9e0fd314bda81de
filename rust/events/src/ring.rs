//! The event ring buffer, with YuniKorn's id semantics (`event_ringbuffer.go`).
//!
//! - Ids start at 0 for the first record ever stored and are never reused, across wraps and
//!   resizes. They are not stored: a record's id follows from its position.
//! - The buffer holds the ids `lowest..next`; `highest` is `next - 1`, or 0 when nothing was
//!   ever stored (so after exactly one record lowest == highest == 0 as well: look at the
//!   records, not the ids).
//! - Adding to a full buffer overwrites the oldest record, which is handed back to the caller
//!   so that it can release what the record references.
//! - Capacity 0 turns collection off: nothing is stored and no id is used.

use std::collections::VecDeque;

pub struct Ring<T> {
    /// Oldest record at the front. A `VecDeque` is exactly a ring of `capacity` slots once it
    /// is full; it grows lazily, so an unused capacity costs no memory.
    records: VecDeque<T>,
    capacity: usize,
    /// The id the next record will get.
    next_id: u64,
}

impl<T: Copy> Ring<T> {
    pub fn new(capacity: usize) -> Self {
        Ring { records: VecDeque::new(), capacity, next_id: 0 }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The id the next stored record will get (also: how many records were ever stored).
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Oldest id still held (0 when empty).
    pub fn lowest_id(&self) -> u64 {
        if self.records.is_empty() {
            // Nothing held (never stored, or collection turned off by a resize to 0): report
            // the last id issued for both ends, which is YuniKorn's (0, 0) when never stored.
            return self.highest_id();
        }
        self.next_id - self.records.len() as u64
    }

    /// Newest id held, or 0 when nothing was ever stored (YuniKorn's `GetLastEventID`).
    pub fn highest_id(&self) -> u64 {
        self.next_id.saturating_sub(1)
    }

    /// Stores a record and returns `(id, evicted)`: the id it got (None when the capacity is 0
    /// and the record was not stored) and the record it displaced, if any. A record that was
    /// not stored comes back as the evicted one, so the caller releases it either way.
    pub fn push(&mut self, record: T) -> (Option<u64>, Option<T>) {
        if self.capacity == 0 {
            return (None, Some(record));
        }
        let evicted = if self.records.len() == self.capacity { self.records.pop_front() } else { None };
        if self.records.len() == self.records.capacity() {
            // Grow by doubling, never past the capacity, so a large ring is not reserved up front.
            let want = self.records.len().max(16).min(self.capacity - self.records.len());
            self.records.reserve_exact(want);
        }
        self.records.push_back(record);
        let id = self.next_id;
        self.next_id += 1;
        (Some(id), evicted)
    }

    /// Whether `id` is held.
    pub fn contains(&self, id: u64) -> bool {
        !self.records.is_empty() && id >= self.lowest_id() && id < self.next_id
    }

    /// Up to `count` records from `start` in id order, as (at most) two contiguous slices, the
    /// second one after the wrap. `None` when `start` is not held (YuniKorn's nil records).
    /// The count is capped at the capacity and never reads past the newest record.
    pub fn range(&self, start: u64, count: u64) -> Option<(&[T], &[T])> {
        if !self.contains(start) {
            return None;
        }
        let offset = (start - self.lowest_id()) as usize;
        let count = count.min(self.capacity as u64) as usize;
        let end = offset + count.min(self.records.len() - offset);
        let (a, b) = self.records.as_slices();
        Some(split_range(a, b, offset, end))
    }

    /// The last `count` records in id order, as (lowest id of them, slices). Fewer when fewer
    /// are held; `count == 0` gives nothing.
    pub fn recent(&self, count: u64) -> (u64, (&[T], &[T])) {
        let n = (count.min(self.records.len() as u64)) as usize;
        let start = self.next_id - n as u64;
        let (a, b) = self.records.as_slices();
        let len = self.records.len();
        (start, split_range(a, b, len - n, len))
    }

    /// Changes the capacity at run time, keeping the newest `min(len, new_capacity)` records and
    /// every id. Returns the records that no longer fit, oldest first, for the caller to release.
    pub fn resize(&mut self, new_capacity: usize) -> Vec<T> {
        let drop = self.records.len().saturating_sub(new_capacity);
        let evicted: Vec<T> = self.records.drain(..drop).collect();
        self.capacity = new_capacity;
        // Give memory back when shrinking; the next pushes regrow lazily.
        self.records.shrink_to(new_capacity.min(self.records.len().max(16)));
        evicted
    }

    /// Iterates over all held records, oldest first, with their ids.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &T)> + '_ {
        let low = self.lowest_id();
        self.records.iter().enumerate().map(move |(i, r)| (low + i as u64, r))
    }
}

/// The sub-range `[from, to)` of the logical sequence `a ++ b`, as two slices.
fn split_range<'a, T>(a: &'a [T], b: &'a [T], from: usize, to: usize) -> (&'a [T], &'a [T]) {
    if to <= a.len() {
        (&a[from..to], &[])
    } else if from >= a.len() {
        (&b[from - a.len()..to - a.len()], &[])
    } else {
        (&a[from..], &b[..to - a.len()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(capacity: usize, adds: u64) -> Ring<u64> {
        let mut r = Ring::new(capacity);
        for i in 0..adds {
            let (id, _) = r.push(i);
            assert_eq!(id, Some(i));
        }
        r
    }

    fn ids(r: &Ring<u64>, start: u64, count: u64) -> Option<Vec<u64>> {
        r.range(start, count).map(|(a, b)| a.iter().chain(b).copied().collect())
    }

    #[test]
    fn empty_buffer_reports_zero_zero_and_nothing() {
        let r: Ring<u64> = Ring::new(20);
        assert_eq!((r.lowest_id(), r.highest_id()), (0, 0));
        assert_eq!(ids(&r, 0, 10), None);
    }

    #[test]
    fn one_event_is_zero_zero_with_a_record() {
        let r = filled(20, 1);
        assert_eq!((r.lowest_id(), r.highest_id()), (0, 0));
        assert_eq!(ids(&r, 0, 10), Some(vec![0]));
    }

    #[test]
    fn yunikorn_examples_after_25_adds() {
        // events.md: cap 20, 25 adds: from 18 gives ids 18..=24, lowest 5, highest 24.
        let r = filled(20, 25);
        assert_eq!((r.lowest_id(), r.highest_id()), (5, 24));
        assert_eq!(ids(&r, 18, 100), Some((18..25).collect()));
        assert_eq!(ids(&r, 311, 10), None);
        assert_eq!(ids(&r, 4, 10), None);
        assert_eq!(ids(&r, 5, 3), Some(vec![5, 6, 7]));
    }

    #[test]
    fn yunikorn_examples_after_50_adds() {
        let r = filled(20, 50);
        assert_eq!((r.lowest_id(), r.highest_id()), (30, 49));
        assert_eq!(ids(&r, 18, 100), None);
        assert_eq!(ids(&r, 42, 100), Some((42..50).collect()));
        // Across the wrap: the whole buffer in id order.
        assert_eq!(ids(&r, 30, 1000), Some((30..50).collect()));
    }

    #[test]
    fn count_is_capped_at_capacity() {
        let r = filled(20, 20);
        assert_eq!(ids(&r, 0, u64::MAX).unwrap().len(), 20);
        assert_eq!(ids(&r, 0, 0), Some(vec![]));
    }

    #[test]
    fn recent_returns_the_newest_in_order() {
        let r = filled(10, 13);
        let (start, (a, b)) = r.recent(5);
        assert_eq!(start, 8);
        assert_eq!(a.iter().chain(b).copied().collect::<Vec<_>>(), vec![8, 9, 10, 11, 12]);
        assert_eq!(r.recent(0).1 .0.len() + r.recent(0).1 .1.len(), 0);
        let (start, (a, b)) = r.recent(100);
        assert_eq!((start, a.len() + b.len()), (3, 10));
    }

    #[test]
    fn push_evicts_the_oldest() {
        let mut r = filled(3, 3);
        assert_eq!(r.push(99), (Some(3), Some(0)));
        assert_eq!(ids(&r, 1, 10), Some(vec![1, 2, 99]));
    }

    #[test]
    fn resize_shrink_keeps_newest_and_ids() {
        let mut r = filled(20, 25);
        let evicted = r.resize(10);
        assert_eq!(evicted, (5..15).collect::<Vec<_>>());
        assert_eq!((r.lowest_id(), r.highest_id()), (15, 24));
        assert_eq!(ids(&r, 15, 100), Some((15..25).collect()));
        r.push(25);
        assert_eq!((r.lowest_id(), r.highest_id()), (16, 25));
        assert_eq!(ids(&r, 16, 100), Some((16..26).collect()));
    }

    #[test]
    fn resize_grow_keeps_everything_and_continues_ids() {
        let mut r = filled(10, 13);
        assert!(r.resize(30).is_empty());
        assert_eq!((r.lowest_id(), r.highest_id()), (3, 12));
        for i in 13..40 {
            assert_eq!(r.push(i).0, Some(i));
        }
        assert_eq!((r.lowest_id(), r.highest_id()), (10, 39));
        assert_eq!(ids(&r, 10, 100), Some((10..40).collect()));
    }

    #[test]
    fn capacity_zero_turns_collection_off_and_keeps_ids() {
        let mut r = filled(5, 7);
        let evicted = r.resize(0);
        assert_eq!(evicted.len(), 5);
        assert_eq!(r.push(100), (None, Some(100)));
        assert_eq!(r.next_id(), 7, "no id is used while collection is off");
        assert_eq!(ids(&r, 6, 1), None);
        r.resize(5);
        assert_eq!(r.push(101).0, Some(7), "ids are never reused");
        assert_eq!((r.lowest_id(), r.highest_id()), (7, 7));
    }
}
