//! Interned record payloads: an event's kind, message and resource together.
//!
//! These repeat together (every pod of an application has the same size, so all its "ask
//! added" events share kind and resource; most events have no message and state changes share
//! a handful of texts), so the triple is interned as one refcounted entry and a record keeps a
//! single `u32` for all three. Id 0 is the all-zero payload, permanently, and costs nothing.

use crate::interner::{Interner, EMPTY_ID};
use crate::record::Kind;
use hashbrown::HashTable;
use std::hash::{BuildHasher, Hash, Hasher};

pub const EMPTY_PAYLOAD: u32 = 0;

/// One resource quantity: interned resource name and its value.
pub type Quantity = (u32, i64);

struct Entry {
    refs: u32,
    kind: Kind,
    message: u32,
    /// Sorted by resource name (Go writes map keys in sorted order), names unique.
    resource: Box<[Quantity]>,
    /// The resource's wire JSON (`{}` or `{"resources":{...}}`), rendered once: every record
    /// that shares this payload writes these bytes as they are.
    resource_json: Box<[u8]>,
}

impl Entry {
    fn empty() -> Entry {
        Entry { refs: 0, kind: Kind::NONE, message: EMPTY_ID, resource: Box::new([]), resource_json: Box::from(&b"{}"[..]) }
    }
}

pub struct Payloads {
    entries: Vec<Entry>,
    free: Vec<u32>,
    index: HashTable<u32>,
    hasher: foldhash::fast::FixedState,
}

impl Default for Payloads {
    fn default() -> Self {
        Self::new()
    }
}

impl Payloads {
    pub fn new() -> Self {
        Payloads {
            entries: vec![Entry::empty()],
            free: Vec::new(),
            index: HashTable::new(),
            hasher: foldhash::fast::FixedState::with_seed(0xfeed_beef),
        }
    }

    /// Interns (kind, message, resource) and takes one reference. `message` and the names in
    /// `resource` are interner ids whose references this call takes over: when the payload
    /// already exists they are released again, so the caller never has to.
    pub fn intern(&mut self, strings: &mut Interner, kind: Kind, message: u32, mut resource: Vec<Quantity>) -> u32 {
        if kind == Kind::NONE && message == EMPTY_ID && resource.is_empty() {
            return EMPTY_PAYLOAD;
        }
        sort_by_name(strings, &mut resource);
        let hash = hash_parts(&self.hasher, kind, message, &resource);
        let entries = &self.entries;
        if let Some(&id) = self.index.find(hash, |&id| {
            let e = &entries[id as usize];
            e.kind == kind && e.message == message && *e.resource == *resource
        }) {
            self.entries[id as usize].refs += 1;
            strings.release(message);
            for (name, _) in &resource {
                strings.release(*name);
            }
            return id;
        }
        let mut resource_json = Vec::new();
        let names = resource.iter().map(|&(n, v)| (strings.get(n), v));
        crate::wire::write_resource(&mut resource_json, names);
        let entry = Entry { refs: 1, kind, message, resource: resource.into_boxed_slice(), resource_json: resource_json.into() };
        let id = match self.free.pop() {
            Some(id) => {
                self.entries[id as usize] = entry;
                id
            }
            None => {
                self.entries.push(entry);
                u32::try_from(self.entries.len() - 1).expect("more than 2^32 payloads")
            }
        };
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index.insert_unique(hash, id, |&other| {
            let e = &entries[other as usize];
            hash_parts(hasher, e.kind, e.message, &e.resource)
        });
        id
    }

    pub fn release(&mut self, strings: &mut Interner, id: u32) {
        if id == EMPTY_PAYLOAD {
            return;
        }
        let entry = &mut self.entries[id as usize];
        debug_assert!(entry.refs > 0, "release of a free payload");
        entry.refs -= 1;
        if entry.refs > 0 {
            return;
        }
        let hash = hash_parts(&self.hasher, entry.kind, entry.message, &entry.resource);
        if let Ok(found) = self.index.find_entry(hash, |&other| other == id) {
            found.remove();
        }
        let entry = std::mem::replace(&mut self.entries[id as usize], Entry::empty());
        strings.release(entry.message);
        for (name, _) in entry.resource.iter() {
            strings.release(*name);
        }
        self.free.push(id);
    }

    pub fn kind(&self, id: u32) -> Kind {
        self.entries[id as usize].kind
    }

    pub fn message(&self, id: u32) -> u32 {
        self.entries[id as usize].message
    }

    pub fn resource(&self, id: u32) -> &[Quantity] {
        &self.entries[id as usize].resource
    }

    /// The resource as wire JSON.
    pub fn resource_json(&self, id: u32) -> &[u8] {
        &self.entries[id as usize].resource_json
    }

    /// Number of live payloads (the empty payload not counted).
    pub fn len(&self) -> usize {
        self.entries.len() - 1 - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn memory_bytes(&self) -> usize {
        let boxed: usize = self
            .entries
            .iter()
            .map(|e| e.resource.len() * std::mem::size_of::<Quantity>() + e.resource_json.len())
            .sum();
        self.entries.capacity() * std::mem::size_of::<Entry>()
            + boxed
            + self.free.capacity() * 4
            + self.index.capacity() * 5
    }
}

/// Orders quantities by the bytes of their names, as Go's JSON encoder orders map keys.
fn sort_by_name(strings: &Interner, resource: &mut [Quantity]) {
    if resource.len() > 1 {
        resource.sort_by(|a, b| {
            strings.get(a.0).with_bytes(|x| strings.get(b.0).with_bytes(|y| x.cmp(y)))
        });
    }
}

fn hash_parts(hasher: &foldhash::fast::FixedState, kind: Kind, message: u32, resource: &[Quantity]) -> u64 {
    let mut h = hasher.build_hasher();
    kind.hash(&mut h);
    message.hash(&mut h);
    resource.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(strings: &mut Interner, items: &[(&str, i64)]) -> Vec<Quantity> {
        items.iter().map(|(n, v)| (strings.intern(n), *v)).collect()
    }

    #[test]
    fn equal_payloads_share_one_entry_and_names_are_not_leaked() {
        let mut s = Interner::new();
        let mut p = Payloads::new();
        let r1 = res(&mut s, &[("vcore", 1000), ("memory", 10)]);
        let k = Kind::new(2, 2, 201).unwrap();
        let a = p.intern(&mut s, k, EMPTY_ID, r1);
        let r2 = res(&mut s, &[("memory", 10), ("vcore", 1000)]);
        let b = p.intern(&mut s, k, EMPTY_ID, r2);
        assert_eq!(a, b, "order of names does not matter");
        assert_eq!(p.len(), 1);
        let memory = s.intern("memory");
        assert_eq!(s.refs(memory), 2, "the payload holds one reference, this test one");
        s.release(memory);
        // Names come back sorted.
        let names: Vec<String> = p.resource(a).iter().map(|(n, _)| s.get(*n).to_string()).collect();
        assert_eq!(names, ["memory", "vcore"]);
        p.release(&mut s, a);
        p.release(&mut s, b);
        assert_eq!(p.len(), 0);
        assert_eq!(s.len(), 0, "names freed with the last payload");
    }

    #[test]
    fn message_only_and_empty() {
        let mut s = Interner::new();
        let mut p = Payloads::new();
        assert_eq!(p.intern(&mut s, Kind::NONE, EMPTY_ID, vec![]), EMPTY_PAYLOAD);
        let m = s.intern("schedulable: true");
        let a = p.intern(&mut s, Kind::new(3, 1, 302).unwrap(), m, vec![]);
        assert_ne!(a, EMPTY_PAYLOAD);
        assert_eq!(s.get(p.message(a)).to_string(), "schedulable: true");
        assert!(p.resource(a).is_empty());
        p.release(&mut s, a);
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn kinds_are_part_of_the_key() {
        let mut s = Interner::new();
        let mut p = Payloads::new();
        let r = res(&mut s, &[("memory", 10)]);
        let a = p.intern(&mut s, Kind::new(2, 2, 201).unwrap(), EMPTY_ID, r);
        let r = res(&mut s, &[("memory", 10)]);
        let b = p.intern(&mut s, Kind::new(3, 2, 303).unwrap(), EMPTY_ID, r);
        assert_ne!(a, b);
        assert_eq!(p.kind(b).change_detail(), 303);
        assert_eq!(p.len(), 2);
    }
}
