//! A reference-counted string interner: strings in, `u32` ids out.
//!
//! Event records refer to object ids, reference ids and messages by interned id, so a string
//! that appears in hundreds of events (an application id, a node name, a queue path) is kept
//! once. Each id carries a reference count; when the last record that uses a string leaves the
//! ring buffer the count drops to zero and the string's memory is freed and its id reused.
//!
//! Memory layout, chosen for the event-history workload (millions of records, roughly one
//! UUID allocation key per two records):
//! - every string has a 20-byte slot: a 24-bit refcount, a tag, a "needs no JSON escaping"
//!   flag and 16 bytes of data;
//! - lower-case canonical UUIDs (36 characters) are stored as their 16 raw bytes;
//! - strings of up to 16 bytes are stored inline in the slot;
//! - longer strings live in a side table of boxed strings, the slot holding the index;
//! - the lookup index is a `hashbrown::HashTable<u32>` of ids only: the key bytes are never
//!   stored twice, hashes are recomputed from the slot when the table grows.
//!
//! Id 0 is the empty string, permanently: it is never counted, so the common "no reference
//! id" / "no message" case costs nothing.

use hashbrown::HashTable;
use std::hash::BuildHasher;

/// The id of the empty string. Interning "" always returns it; releasing it is a no-op.
pub const EMPTY_ID: u32 = 0;

const TAG_FREE: u8 = 0;
const TAG_UUID: u8 = 1;
const TAG_HEAP: u8 = 2;
/// Inline strings use tags `TAG_INLINE_BASE + len` for len in 0..=16.
const TAG_INLINE_BASE: u8 = 3;
const INLINE_MAX: usize = 16;

/// A count that reaches this value pins the string for the life of the interner: its count
/// no longer moves. Only strings used by more than 16 million live records at once (a queue
/// path, a node name in a huge ring) can get there; keeping those is cheaper than a wider
/// count in every slot.
const REFS_PINNED: u32 = (1 << 24) - 1;
const CLEAN_BIT: u32 = 1 << 31;
const TAG_SHIFT: u32 = 24;

#[derive(Clone, Copy)]
struct Slot {
    /// Bits 0-23: reference count; bits 24-28: tag; bit 31: the string needs no JSON escaping
    /// (the writer copies it verbatim). Packed so that a slot is 20 bytes, not 24.
    meta: u32,
    /// UUID bytes, inline string bytes, or (heap / free) a little-endian u32 index.
    data: [u8; 16],
}

impl Slot {
    fn new(tag: u8, clean: bool, data: [u8; 16]) -> Slot {
        let clean = if clean { CLEAN_BIT } else { 0 };
        Slot { meta: 1 | (tag as u32) << TAG_SHIFT | clean, data }
    }

    fn with_index(tag: u8, clean: bool, index: u32) -> Slot {
        let mut data = [0u8; 16];
        data[..4].copy_from_slice(&index.to_le_bytes());
        Slot::new(tag, clean, data)
    }

    fn index(&self) -> u32 {
        u32::from_le_bytes([self.data[0], self.data[1], self.data[2], self.data[3]])
    }

    fn refs(&self) -> u32 {
        self.meta & REFS_PINNED
    }

    fn tag(&self) -> u8 {
        ((self.meta >> TAG_SHIFT) & 0x1f) as u8
    }

    fn clean(&self) -> bool {
        self.meta & CLEAN_BIT != 0
    }

    fn retain(&mut self) {
        if self.refs() < REFS_PINNED {
            self.meta += 1;
        }
    }

    /// Drops a reference; true when it was the last one.
    fn release(&mut self) -> bool {
        match self.refs() {
            REFS_PINNED => false,
            0 => panic!("release of a free interner id"),
            _ => {
                self.meta -= 1;
                self.refs() == 0
            }
        }
    }
}

/// A string as stored: borrowed from the interner (`Clean` when it needs no JSON escaping,
/// which is known from interning time) or a UUID to be formatted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrRef<'a> {
    Str(&'a str),
    Clean(&'a str),
    Uuid([u8; 16]),
}

impl<'a> StrRef<'a> {
    /// Writes the string's UTF-8 bytes; UUIDs are formatted in their canonical lower-case form.
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            StrRef::Str(s) | StrRef::Clean(s) => f(s.as_bytes()),
            StrRef::Uuid(bytes) => f(&format_uuid(bytes)),
        }
    }

    #[allow(clippy::inherent_to_string)]
    pub fn to_string(&self) -> String {
        self.with_bytes(|b| String::from_utf8(b.to_vec()).expect("interned strings are UTF-8"))
    }
}

impl crate::wire::JsonText for StrRef<'_> {
    fn is_empty(&self) -> bool {
        matches!(self, StrRef::Str("") | StrRef::Clean(""))
    }

    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            StrRef::Clean(s) => crate::wire::write_clean_str(out, s.as_bytes()),
            StrRef::Uuid(bytes) => crate::wire::write_clean_str(out, &format_uuid(bytes)),
            StrRef::Str(s) => crate::wire::write_str(out, s.as_bytes()),
        }
    }
}

/// What the lookup compares: a UUID is matched by its 16 bytes, any other string by its bytes.
#[derive(Clone, Copy)]
enum Key<'a> {
    Uuid([u8; 16]),
    Str(&'a str),
}

pub struct Interner {
    slots: Vec<Slot>,
    heap: Vec<Box<str>>,
    /// Head of the free-slot list threaded through free slots' data (u32::MAX = empty).
    free_slot: u32,
    /// Free entries of `heap`, reused before growing it.
    free_heap: Vec<u32>,
    index: HashTable<u32>,
    hasher: foldhash::fast::FixedState,
    live: usize,
    heap_bytes: usize,
}

impl Default for Interner {
    fn default() -> Self {
        Self::new()
    }
}

impl Interner {
    pub fn new() -> Self {
        // Slot 0 is the permanent empty string.
        let mut empty = Slot::new(TAG_INLINE_BASE, true, [0; 16]);
        empty.meta -= 1; // the empty string is never counted
        Interner {
            slots: vec![empty],
            heap: Vec::new(),
            free_slot: u32::MAX,
            free_heap: Vec::new(),
            index: HashTable::new(),
            hasher: foldhash::fast::FixedState::with_seed(0x5eed_cafe),
            live: 0,
            heap_bytes: 0,
        }
    }

    /// Interns `s` and takes one reference on it. The same string gives the same id for as
    /// long as anything holds a reference to it.
    pub fn intern(&mut self, s: &str) -> u32 {
        if s.is_empty() {
            return EMPTY_ID;
        }
        let key = match parse_uuid(s) {
            Some(bytes) => Key::Uuid(bytes),
            None => Key::Str(s),
        };
        let hash = self.hash_key(key);
        let slots = &self.slots;
        let heap = &self.heap;
        if let Some(&id) = self.index.find(hash, |&id| slot_matches(slots, heap, id, key)) {
            self.slots[id as usize].retain();
            return id;
        }
        let slot = self.new_slot(key);
        let id = self.alloc_slot(slot);
        let (slots, heap, hasher) = (&self.slots, &self.heap, &self.hasher);
        self.index.insert_unique(hash, id, |&other| hash_key_with(hasher, slot_key(slots, heap, other)));
        self.live += 1;
        id
    }

    /// Takes one more reference on an id that is already live.
    pub fn retain(&mut self, id: u32) {
        if id == EMPTY_ID {
            return;
        }
        let slot = &mut self.slots[id as usize];
        debug_assert!(slot.refs() > 0, "retain of a free interner id");
        slot.retain();
    }

    /// Drops one reference; the string is freed (and its id becomes reusable) at zero.
    pub fn release(&mut self, id: u32) {
        if id == EMPTY_ID {
            return;
        }
        if !self.slots[id as usize].release() {
            return;
        }
        let key = slot_key(&self.slots, &self.heap, id);
        let hash = self.hash_key(key);
        if let Ok(entry) = self.index.find_entry(hash, |&other| other == id) {
            entry.remove();
        }
        let slot = self.slots[id as usize];
        if slot.tag() == TAG_HEAP {
            let index = slot.index();
            self.heap_bytes -= self.heap[index as usize].len();
            self.heap[index as usize] = Box::from("");
            self.free_heap.push(index);
        }
        let mut free = Slot::with_index(TAG_FREE, false, self.free_slot);
        free.meta &= !REFS_PINNED;
        self.slots[id as usize] = free;
        self.free_slot = id;
        self.live -= 1;
    }

    /// The string behind a live id.
    pub fn get(&self, id: u32) -> StrRef<'_> {
        let slot = &self.slots[id as usize];
        match slot.tag() {
            TAG_UUID => StrRef::Uuid(slot.data),
            TAG_FREE => panic!("interner id {id} is not live"),
            tag => {
                let text = if tag == TAG_HEAP {
                    &*self.heap[slot.index() as usize]
                } else {
                    // Inline bytes were copied from a &str, so they are valid UTF-8.
                    std::str::from_utf8(&slot.data[..(tag - TAG_INLINE_BASE) as usize]).expect("inline string is UTF-8")
                };
                if slot.clean() {
                    StrRef::Clean(text)
                } else {
                    StrRef::Str(text)
                }
            }
        }
    }

    /// The reference count of an id (0 for the empty string and for free ids).
    pub fn refs(&self, id: u32) -> u32 {
        self.slots.get(id as usize).map_or(0, |s| s.refs())
    }

    /// Number of distinct live strings (the empty string not counted).
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Bytes held by the interner's tables and strings (an estimate of its heap footprint).
    pub fn memory_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.heap.capacity() * std::mem::size_of::<Box<str>>()
            + self.heap_bytes
            + self.free_heap.capacity() * 4
            + self.index.capacity() * (std::mem::size_of::<u32>() + 1)
    }

    fn new_slot(&mut self, key: Key<'_>) -> Slot {
        match key {
            Key::Uuid(bytes) => Slot::new(TAG_UUID, true, bytes),
            Key::Str(s) if s.len() <= INLINE_MAX => {
                let mut data = [0u8; 16];
                data[..s.len()].copy_from_slice(s.as_bytes());
                Slot::new(TAG_INLINE_BASE + s.len() as u8, crate::wire::is_clean(s.as_bytes()), data)
            }
            Key::Str(s) => {
                self.heap_bytes += s.len();
                let boxed: Box<str> = Box::from(s);
                let index = match self.free_heap.pop() {
                    Some(i) => {
                        self.heap[i as usize] = boxed;
                        i
                    }
                    None => {
                        self.heap.push(boxed);
                        (self.heap.len() - 1) as u32
                    }
                };
                Slot::with_index(TAG_HEAP, crate::wire::is_clean(s.as_bytes()), index)
            }
        }
    }

    fn alloc_slot(&mut self, slot: Slot) -> u32 {
        if self.free_slot != u32::MAX {
            let id = self.free_slot;
            self.free_slot = self.slots[id as usize].index();
            self.slots[id as usize] = slot;
            return id;
        }
        let id = u32::try_from(self.slots.len()).expect("more than 2^32 interned strings");
        assert!(id != u32::MAX, "more than 2^32 interned strings");
        self.slots.push(slot);
        id
    }

    fn hash_key(&self, key: Key<'_>) -> u64 {
        hash_key_with(&self.hasher, key)
    }
}

fn hash_key_with(hasher: &foldhash::fast::FixedState, key: Key<'_>) -> u64 {
    match key {
        Key::Uuid(bytes) => hasher.hash_one(u128::from_le_bytes(bytes)),
        Key::Str(s) => hasher.hash_one(s),
    }
}

fn slot_key<'a>(slots: &'a [Slot], heap: &'a [Box<str>], id: u32) -> Key<'a> {
    let slot = &slots[id as usize];
    match slot.tag() {
        TAG_UUID => Key::Uuid(slot.data),
        TAG_HEAP => Key::Str(&heap[slot.index() as usize]),
        tag => {
            let len = (tag - TAG_INLINE_BASE) as usize;
            Key::Str(std::str::from_utf8(&slot.data[..len]).expect("inline string is UTF-8"))
        }
    }
}

fn slot_matches(slots: &[Slot], heap: &[Box<str>], id: u32, key: Key<'_>) -> bool {
    match (slot_key(slots, heap, id), key) {
        (Key::Uuid(a), Key::Uuid(b)) => a == b,
        (Key::Str(a), Key::Str(b)) => a == b,
        _ => false,
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Parses a canonical lower-case UUID (8-4-4-4-12 hex digits). Upper-case or otherwise
/// non-canonical spellings are not UUIDs here, so every string round-trips byte for byte.
pub fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let b = s.as_bytes();
    if b.len() != 36 || b[8] != b'-' || b[13] != b'-' || b[18] != b'-' || b[23] != b'-' {
        return None;
    }
    let mut out = [0u8; 16];
    let mut nibbles = 0usize;
    for (i, &c) in b.iter().enumerate() {
        if i == 8 || i == 13 || i == 18 || i == 23 {
            continue;
        }
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        out[nibbles / 2] |= if nibbles % 2 == 0 { v << 4 } else { v };
        nibbles += 1;
    }
    Some(out)
}

/// The canonical lower-case text of a UUID.
pub fn format_uuid(bytes: &[u8; 16]) -> [u8; 36] {
    let mut out = [b'-'; 36];
    let mut pos = 0;
    for (i, byte) in bytes.iter().enumerate() {
        if i == 4 || i == 6 || i == 8 || i == 10 {
            pos += 1;
        }
        out[pos] = HEX[(byte >> 4) as usize];
        out[pos + 1] = HEX[(byte & 0xf) as usize];
        pos += 2;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_string_same_id() {
        let mut i = Interner::new();
        let a = i.intern("spark-app-000123");
        let b = i.intern("spark-app-000123");
        assert_eq!(a, b);
        assert_eq!(i.refs(a), 2);
        assert_eq!(i.len(), 1);
        assert_eq!(i.get(a), StrRef::Clean("spark-app-000123"));
    }

    #[test]
    fn empty_string_is_id_zero_and_uncounted() {
        let mut i = Interner::new();
        assert_eq!(i.intern(""), EMPTY_ID);
        i.release(EMPTY_ID);
        assert_eq!(i.get(EMPTY_ID), StrRef::Clean(""));
        assert_eq!(i.len(), 0);
    }

    #[test]
    fn every_storage_kind_round_trips() {
        let mut i = Interner::new();
        let cases = [
            "a",
            "exactly-16-bytes",
            "seventeen bytes!!",
            "node-0421.rack-07.example",
            "123e4567-e89b-42d3-a456-426614174000",
            "123E4567-E89B-42D3-A456-426614174000",
            "123e4567-e89b-42d3-a456-42661417400g",
            "héllo wörld ✓ 𝄞",
        ];
        let ids: Vec<u32> = cases.iter().map(|s| i.intern(s)).collect();
        for (s, id) in cases.iter().zip(&ids) {
            assert_eq!(i.get(*id).to_string(), *s);
        }
        assert_eq!(i.len(), cases.len());
        // The upper-case UUID is a different string from the lower-case one.
        assert_ne!(ids[4], ids[5]);
        assert!(matches!(i.get(ids[4]), StrRef::Uuid(_)));
        assert!(matches!(i.get(ids[5]), StrRef::Clean(_)));
        // Strings that need JSON escaping are flagged as such.
        assert!(matches!(i.get(ids[7]), StrRef::Str(_)));
        let quoted = i.intern("say \"hi\"");
        assert!(matches!(i.get(quoted), StrRef::Str(_)));
    }

    #[test]
    fn released_strings_are_freed_and_ids_reused() {
        let mut i = Interner::new();
        let long = "a string that is longer than sixteen bytes";
        let a = i.intern(long);
        i.retain(a);
        i.release(a);
        assert_eq!(i.len(), 1, "one reference still held");
        i.release(a);
        assert_eq!(i.len(), 0);
        assert_eq!(i.heap_bytes, 0);
        let b = i.intern("another long string that replaces the first");
        assert_eq!(a, b, "the freed slot is reused");
        assert_eq!(i.get(b).to_string(), "another long string that replaces the first");
        // The old string is gone from the index: interning it again gives a fresh entry.
        let c = i.intern(long);
        assert_ne!(c, b);
        assert_eq!(i.refs(c), 1);
    }

    #[test]
    fn many_strings_survive_index_growth_and_churn() {
        let mut i = Interner::new();
        let mut ids = Vec::new();
        for n in 0..20_000u32 {
            ids.push(i.intern(&format!("{:08x}-0000-4000-8000-{:012x}", n, n)));
            ids.push(i.intern(&format!("node-{n}")));
        }
        for (n, pair) in ids.chunks(2).enumerate() {
            assert_eq!(i.get(pair[0]).to_string(), format!("{:08x}-0000-4000-8000-{:012x}", n, n));
            assert_eq!(i.get(pair[1]).to_string(), format!("node-{n}"));
        }
        for id in ids.iter().step_by(3) {
            i.release(*id);
        }
        for (k, id) in ids.iter().enumerate() {
            if k % 3 != 0 {
                let s = i.get(*id).to_string();
                assert_eq!(i.intern(&s), *id, "surviving strings keep their ids");
            }
        }
    }

    #[test]
    fn uuid_parse_and_format_are_inverse() {
        let s = "f47ac10b-58cc-4372-a567-0e02b2c3d479";
        let bytes = parse_uuid(s).unwrap();
        assert_eq!(&format_uuid(&bytes), s.as_bytes());
        assert!(parse_uuid("f47ac10b58cc4372a5670e02b2c3d479").is_none());
        assert!(parse_uuid("f47ac10b-58cc-4372-a567-0e02b2c3d47").is_none());
    }

    #[test]
    fn slot_is_20_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 20);
    }

    #[test]
    fn a_count_that_saturates_pins_the_string() {
        let mut i = Interner::new();
        let id = i.intern("root");
        i.slots[id as usize].meta |= REFS_PINNED;
        i.retain(id);
        i.release(id);
        i.release(id);
        assert_eq!(i.refs(id), REFS_PINNED);
        assert_eq!(i.get(id).to_string(), "root");
        assert_eq!(i.intern("root"), id);
    }
}
