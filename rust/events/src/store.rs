//! The event store: ring buffer of compact records plus the interners they point into.
//!
//! Single-threaded; `pipeline` puts it behind a lock and feeds it from a queue.

use crate::interner::Interner;
use crate::payload::{Payloads, Quantity};
use crate::record::{CompactRecord, OwnedEvent};
use crate::ring::Ring;
use crate::wire::{self, WireRecord};

/// One stored event, decoded back into owned values (for tests and debugging; the hot paths
/// write the wire format straight from the compact records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedEvent {
    pub id: u64,
    pub record_type: u32,
    pub change_type: u32,
    pub change_detail: u32,
    pub timestamp_ns: i64,
    pub object_id: String,
    pub reference_id: String,
    pub message: String,
    /// Sorted by name.
    pub resource: Vec<(String, i64)>,
}

pub struct EventStore {
    ring: Ring<CompactRecord>,
    strings: Interner,
    payloads: Payloads,
}

/// The outcome of a range read: the ids the buffer holds and the ids that were written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeInfo {
    pub lowest: u64,
    pub highest: u64,
    /// First id written, and how many records; `None` when the start id is not held.
    pub written: Option<(u64, usize)>,
}

impl EventStore {
    pub fn new(capacity: usize) -> Self {
        EventStore { ring: Ring::new(capacity), strings: Interner::new(), payloads: Payloads::new() }
    }

    /// Stores an event; returns its id, or None when collection is off (capacity 0).
    pub fn insert(&mut self, event: &OwnedEvent) -> Option<u64> {
        let object = self.strings.intern(event.object());
        let reference = self.strings.intern(event.reference());
        let message = self.strings.intern(event.message());
        let resource: Vec<Quantity> = event.resource().map(|(name, v)| (self.strings.intern(name), v)).collect();
        let resource = dedup_names(&mut self.strings, resource);
        let payload = self.payloads.intern(&mut self.strings, event.kind, message, resource);
        let record = CompactRecord { timestamp_ns: event.timestamp_ns, object, reference, payload };
        let (id, evicted) = self.ring.push(record);
        if let Some(old) = evicted {
            self.release(old);
        }
        id
    }

    fn release(&mut self, record: CompactRecord) {
        self.strings.release(record.object);
        self.strings.release(record.reference);
        self.payloads.release(&mut self.strings, record.payload);
    }

    /// Changes the capacity, keeping the newest records and every id; 0 turns collection off.
    pub fn resize(&mut self, capacity: usize) {
        for old in self.ring.resize(capacity) {
            self.release(old);
        }
    }

    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    pub fn len(&self) -> usize {
        self.ring.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    pub fn lowest_id(&self) -> u64 {
        self.ring.lowest_id()
    }

    pub fn highest_id(&self) -> u64 {
        self.ring.highest_id()
    }

    pub fn next_id(&self) -> u64 {
        self.ring.next_id()
    }

    pub fn contains(&self, id: u64) -> bool {
        self.ring.contains(id)
    }

    pub fn interned_strings(&self) -> usize {
        self.strings.len()
    }

    pub fn interned_payloads(&self) -> usize {
        self.payloads.len()
    }

    /// Estimated heap bytes of the store: records plus interners.
    pub fn memory_bytes(&self) -> usize {
        self.ring.len() * std::mem::size_of::<CompactRecord>() + self.strings.memory_bytes() + self.payloads.memory_bytes()
    }

    /// Writes the `/ws/v1/events/batch` body for `count` records from `start`, with the
    /// trailing newline Go's encoder writes. `EventRecords` is `null` when `start` is not held.
    pub fn write_batch(&self, out: &mut Vec<u8>, instance_uuid: &str, start: u64, count: u64) -> RangeInfo {
        let (lowest, highest) = (self.ring.lowest_id(), self.ring.highest_id());
        wire::write_batch_head(out, instance_uuid.as_bytes(), lowest, highest);
        let written = match self.ring.range(start, count) {
            None => {
                out.extend_from_slice(b"null");
                None
            }
            Some((a, b)) => {
                out.reserve((a.len() + b.len()) * 256);
                out.push(b'[');
                for (i, rec) in a.iter().chain(b).enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    self.write_record(out, rec);
                }
                out.push(b']');
                Some((start, a.len() + b.len()))
            }
        };
        out.extend_from_slice(b"}\n");
        RangeInfo { lowest, highest, written }
    }

    /// Writes up to `count` records from `start` as NDJSON (one object and `\n` per record).
    pub fn write_ndjson(&self, out: &mut Vec<u8>, start: u64, count: u64) -> RangeInfo {
        let (lowest, highest) = (self.ring.lowest_id(), self.ring.highest_id());
        let written = self.ring.range(start, count).map(|(a, b)| {
            out.reserve((a.len() + b.len()) * 256);
            for rec in a.iter().chain(b) {
                self.write_record(out, rec);
                out.push(b'\n');
            }
            (start, a.len() + b.len())
        });
        RangeInfo { lowest, highest, written }
    }

    /// Like [`EventStore::write_ndjson`], and records where each line ends in `out` (the
    /// offset just past its `\n`), so that a suffix of the lines can be sent on its own.
    pub fn write_ndjson_lines(&self, out: &mut Vec<u8>, line_ends: &mut Vec<usize>, start: u64, count: u64) -> usize {
        match self.ring.range(start, count) {
            None => 0,
            Some((a, b)) => {
                out.reserve((a.len() + b.len()) * 256);
                line_ends.reserve(a.len() + b.len());
                for rec in a.iter().chain(b) {
                    self.write_record(out, rec);
                    out.push(b'\n');
                    line_ends.push(out.len());
                }
                a.len() + b.len()
            }
        }
    }

    /// Writes one record's JSON object.
    pub fn write_record(&self, out: &mut Vec<u8>, rec: &CompactRecord) {
        let payload = rec.payload;
        let kind = self.payloads.kind(payload);
        let wire_rec = WireRecord {
            record_type: kind.record_type(),
            object_id: self.strings.get(rec.object),
            message: self.strings.get(self.payloads.message(payload)),
            timestamp_ns: rec.timestamp_ns,
            change_type: kind.change_type(),
            change_detail: kind.change_detail(),
            reference_id: self.strings.get(rec.reference),
        };
        wire::write_record(out, &wire_rec, self.payloads.resource_json(payload));
    }

    /// Decodes up to `count` records from `start` (empty when `start` is not held).
    pub fn decode(&self, start: u64, count: u64) -> Vec<DecodedEvent> {
        let Some((a, b)) = self.ring.range(start, count) else { return Vec::new() };
        a.iter().chain(b).enumerate().map(|(i, rec)| self.decode_one(start + i as u64, rec)).collect()
    }

    fn decode_one(&self, id: u64, rec: &CompactRecord) -> DecodedEvent {
        let payload = rec.payload;
        let kind = self.payloads.kind(payload);
        DecodedEvent {
            id,
            record_type: kind.record_type(),
            change_type: kind.change_type(),
            change_detail: kind.change_detail(),
            timestamp_ns: rec.timestamp_ns,
            object_id: self.strings.get(rec.object).to_string(),
            reference_id: self.strings.get(rec.reference).to_string(),
            message: self.strings.get(self.payloads.message(payload)).to_string(),
            resource: self.payloads.resource(payload).iter().map(|(n, v)| (self.strings.get(*n).to_string(), *v)).collect(),
        }
    }
}

/// A resource map cannot name a resource twice; when the input does, the last value wins (as
/// when a Go map is built from a list) and the duplicate name's reference is released.
fn dedup_names(strings: &mut Interner, resource: Vec<Quantity>) -> Vec<Quantity> {
    if resource.len() < 2 {
        return resource;
    }
    let mut out: Vec<Quantity> = Vec::with_capacity(resource.len());
    for (name, value) in resource {
        if let Some(existing) = out.iter_mut().find(|(n, _)| *n == name) {
            existing.1 = value;
            strings.release(name);
        } else {
            out.push((name, value));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{EventFields, Kind};

    #[allow(clippy::too_many_arguments)]
    fn event(t: u32, c: u32, d: u32, ts: i64, obj: &str, reference: &str, msg: &str, res: &[(&str, i64)]) -> OwnedEvent {
        let fields = EventFields { kind: Kind::new(t, c, d).unwrap(), timestamp_ns: ts, object: obj, reference, message: msg };
        OwnedEvent::new(fields, res.iter().copied())
    }

    fn text(out: Vec<u8>) -> String {
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn batch_body_exact_bytes() {
        let mut s = EventStore::new(10);
        s.insert(&event(4, 2, 0, 11, "root", "", "", &[]));
        s.insert(&event(2, 2, 201, 12, "app-1", "alloc-1", "", &[("vcore", 1000), ("memory", 10000000)]));
        let mut out = Vec::new();
        let info = s.write_batch(&mut out, "u-1", 0, 10);
        assert_eq!(info, RangeInfo { lowest: 0, highest: 1, written: Some((0, 2)) });
        assert_eq!(
            text(out),
            concat!(
                r#"{"InstanceUUID":"u-1","LowestID":0,"HighestID":1,"EventRecords":["#,
                r#"{"type":4,"objectID":"root","timestampNano":11,"eventChangeType":2,"resource":{}},"#,
                r#"{"type":2,"objectID":"app-1","timestampNano":12,"eventChangeType":2,"eventChangeDetail":201,"referenceID":"alloc-1","resource":{"resources":{"memory":{"value":10000000},"vcore":{"value":1000}}}}"#,
                "]}\n"
            )
        );
    }

    #[test]
    fn batch_out_of_range_is_null_with_current_range() {
        let mut s = EventStore::new(20);
        for i in 0..25 {
            s.insert(&event(3, 1, 304, i, "node-1", "", "", &[]));
        }
        let mut out = Vec::new();
        s.write_batch(&mut out, "u", 311, 10);
        assert_eq!(text(out), "{\"InstanceUUID\":\"u\",\"LowestID\":5,\"HighestID\":24,\"EventRecords\":null}\n");
        let mut out = Vec::new();
        s.write_batch(&mut out, "u", 0, 10);
        assert!(text(out).ends_with("\"EventRecords\":null}\n"));
    }

    #[test]
    fn empty_store_batch() {
        let s = EventStore::new(20);
        let mut out = Vec::new();
        s.write_batch(&mut out, "u", 0, 10);
        assert_eq!(text(out), "{\"InstanceUUID\":\"u\",\"LowestID\":0,\"HighestID\":0,\"EventRecords\":null}\n");
    }

    #[test]
    fn ndjson_lines() {
        let mut s = EventStore::new(5);
        for i in 0..7 {
            s.insert(&event(2, 1, 204, 100 + i, &format!("app-{i}"), "", "accepted", &[]));
        }
        let mut out = Vec::new();
        let info = s.write_ndjson(&mut out, 4, 2);
        assert_eq!(info.written, Some((4, 2)));
        assert_eq!(
            text(out),
            "{\"type\":2,\"objectID\":\"app-4\",\"message\":\"accepted\",\"timestampNano\":104,\"eventChangeType\":1,\"eventChangeDetail\":204,\"resource\":{}}\n\
             {\"type\":2,\"objectID\":\"app-5\",\"message\":\"accepted\",\"timestampNano\":105,\"eventChangeType\":1,\"eventChangeDetail\":204,\"resource\":{}}\n"
        );
    }

    #[test]
    fn strings_are_freed_when_the_last_record_leaves() {
        let mut s = EventStore::new(3);
        let uuid = "0b0e0c4e-7a0f-4f6e-8a43-4c9d2b0a1f00";
        s.insert(&event(2, 2, 201, 1, "app-1", uuid, "", &[("memory", 5)]));
        s.insert(&event(3, 2, 303, 2, "node-1", uuid, "", &[("memory", 5)]));
        assert_eq!(s.interned_strings(), 4, "app-1, uuid, node-1, memory");
        s.insert(&event(4, 2, 0, 3, "root", "", "", &[]));
        assert_eq!(s.interned_strings(), 5, "root added, nothing evicted yet");
        s.insert(&event(4, 2, 0, 4, "root", "", "", &[]));
        assert_eq!(s.interned_strings(), 4, "app-1 left with the first record");
        s.insert(&event(4, 2, 0, 5, "root", "", "", &[]));
        assert_eq!(s.interned_strings(), 1, "only root remains");
        assert_eq!(s.interned_payloads(), 1, "the root records share one (kind, no message, no resource) payload");
        s.resize(0);
        assert_eq!((s.interned_strings(), s.interned_payloads()), (0, 0));
        assert_eq!(s.insert(&event(4, 2, 0, 6, "root", "", "", &[])), None);
        assert_eq!(s.interned_strings(), 0, "a record that is not stored holds nothing");
    }

    #[test]
    fn duplicate_resource_names_keep_the_last_value() {
        let mut s = EventStore::new(3);
        s.insert(&event(3, 1, 304, 1, "n", "", "", &[("memory", 1), ("memory", 2)]));
        assert_eq!(s.decode(0, 1)[0].resource, vec![("memory".to_string(), 2)]);
        s.resize(0);
        assert_eq!(s.interned_strings(), 0);
    }

    #[test]
    fn decode_round_trip_with_uuid_and_unicode() {
        let mut s = EventStore::new(3);
        let uuid = "f47ac10b-58cc-4372-a567-0e02b2c3d479";
        s.insert(&event(1, 0, 0, 7, uuid, "app-ü", "no <fit> & \"quotes\"", &[("nvidia.com/gpu", 2)]));
        let d = &s.decode(0, 1)[0];
        assert_eq!((d.object_id.as_str(), d.reference_id.as_str()), (uuid, "app-ü"));
        assert_eq!(d.message, "no <fit> & \"quotes\"");
        let mut out = Vec::new();
        s.write_ndjson(&mut out, 0, 1);
        assert_eq!(
            text(out),
            format!("{{\"type\":1,\"objectID\":\"{uuid}\",\"message\":\"no \\u003cfit\\u003e \\u0026 \\\"quotes\\\"\",\"timestampNano\":7,\"referenceID\":\"app-ü\",\"resource\":{{\"resources\":{{\"nvidia.com/gpu\":{{\"value\":2}}}}}}}}\n")
        );
    }
}
