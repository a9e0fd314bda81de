//! Event records: the compact form kept in the ring buffer and the owned form that travels
//! from `add` to the store.

use pyscheduler_error::CoreError;

/// Largest message kept, in bytes (YuniKorn's limit, for Kubernetes event compatibility).
pub const MAX_MESSAGE_BYTES: usize = 1024;
/// A longer message keeps this many bytes (at most, on a UTF-8 boundary) followed by "...".
pub const TRUNCATED_MESSAGE_BYTES: usize = 1021;

/// Record type, change type and change detail packed in 16 bits: detail (10 bits, 0..=1023),
/// change type (2 bits), record type (3 bits). YuniKorn's enums all fit (details go to 604).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Kind(u16);

impl Kind {
    /// All zero: UNKNOWN type, change NONE, DETAILS_NONE.
    pub const NONE: Kind = Kind(0);

    pub fn new(record_type: u32, change_type: u32, change_detail: u32) -> Result<Kind, CoreError> {
        if record_type > 7 {
            return Err(CoreError::InvalidField { field: "type", value: record_type as i64, max: 7 });
        }
        if change_type > 3 {
            return Err(CoreError::InvalidField { field: "change_type", value: change_type as i64, max: 3 });
        }
        if change_detail > 1023 {
            return Err(CoreError::InvalidField { field: "change_detail", value: change_detail as i64, max: 1023 });
        }
        Ok(Kind((record_type << 12 | change_type << 10 | change_detail) as u16))
    }

    pub fn record_type(self) -> u32 {
        (self.0 >> 12) as u32
    }

    pub fn change_type(self) -> u32 {
        ((self.0 >> 10) & 0x3) as u32
    }

    pub fn change_detail(self) -> u32 {
        (self.0 & 0x3ff) as u32
    }
}

/// The record as the ring buffer keeps it: 20 bytes, no heap allocation of its own. The
/// object and reference ids are interned strings; `payload` is the interned (kind, message,
/// resource) triple; the event id is not stored, it follows from the record's position.
///
/// Packed to an alignment of 4 so the timestamp does not pad the record to 24 bytes; fields
/// are only ever read by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, packed(4))]
pub struct CompactRecord {
    pub timestamp_ns: i64,
    pub object: u32,
    pub reference: u32,
    pub payload: u32,
}

/// An event on its way from `add` to the store. All strings and resource names share one heap
/// buffer so that queuing an event costs a single allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedEvent {
    pub kind: Kind,
    pub timestamp_ns: i64,
    object_len: u32,
    reference_len: u32,
    message_len: u32,
    /// object | reference | message | resource names, concatenated.
    text: String,
    /// (end offset of the name in `text`, value) per resource quantity.
    resource: Vec<(u32, i64)>,
}

/// An event's two buffers, handed back by the consumer for the next event to reuse.
pub type EventBuffers = (String, Vec<(u32, i64)>);

/// Borrowed view of an event's fields, for building an `OwnedEvent`.
#[derive(Debug, Clone, Copy)]
pub struct EventFields<'a> {
    pub kind: Kind,
    pub timestamp_ns: i64,
    pub object: &'a str,
    pub reference: &'a str,
    pub message: &'a str,
}

impl OwnedEvent {
    /// Copies the fields into one buffer, cutting an over-long message as YuniKorn does.
    pub fn new<'a>(fields: EventFields<'_>, resource: impl IntoIterator<Item = (&'a str, i64)>) -> OwnedEvent {
        let mut builder = OwnedEvent::builder(fields);
        for (name, value) in resource {
            builder.quantity(name, value);
        }
        builder.finish()
    }

    /// Starts an event whose resource quantities are added one at a time (see
    /// [`EventBuilder`]): no intermediate collection of names is needed.
    pub fn builder(fields: EventFields<'_>) -> EventBuilder {
        OwnedEvent::builder_in(fields, (String::new(), Vec::new()))
    }

    /// [`OwnedEvent::builder`] reusing the buffers of an earlier event.
    pub fn builder_in(fields: EventFields<'_>, buffers: EventBuffers) -> EventBuilder {
        let message = truncate_message(fields.message);
        let (mut text, mut quantities) = buffers;
        text.clear();
        quantities.clear();
        text.push_str(fields.object);
        text.push_str(fields.reference);
        text.push_str(message);
        if message.len() < fields.message.len() {
            text.push_str("...");
        }
        let message_len = (text.len() - fields.object.len() - fields.reference.len()) as u32;
        EventBuilder {
            kind: fields.kind,
            timestamp_ns: fields.timestamp_ns,
            object_len: fields.object.len() as u32,
            reference_len: fields.reference.len() as u32,
            message_len,
            text,
            quantities,
        }
    }

    /// The event's buffers, for reuse by a later event.
    pub fn into_buffers(self) -> EventBuffers {
        (self.text, self.resource)
    }

    pub fn object(&self) -> &str {
        &self.text[..self.object_len as usize]
    }

    pub fn reference(&self) -> &str {
        let start = self.object_len as usize;
        &self.text[start..start + self.reference_len as usize]
    }

    pub fn message(&self) -> &str {
        let start = (self.object_len + self.reference_len) as usize;
        &self.text[start..start + self.message_len as usize]
    }

    /// The resource quantities, in the order they were given.
    pub fn resource(&self) -> impl Iterator<Item = (&str, i64)> + '_ {
        let mut start = (self.object_len + self.reference_len + self.message_len) as usize;
        self.resource.iter().map(move |&(end, value)| {
            let name = &self.text[start..end as usize];
            start = end as usize;
            (name, value)
        })
    }
}

/// Builds an [`OwnedEvent`] quantity by quantity, copying each resource name into the event's
/// one text buffer as it comes.
pub struct EventBuilder {
    kind: Kind,
    timestamp_ns: i64,
    object_len: u32,
    reference_len: u32,
    message_len: u32,
    text: String,
    quantities: Vec<(u32, i64)>,
}

impl EventBuilder {
    pub fn quantity(&mut self, name: &str, value: i64) {
        self.text.push_str(name);
        self.quantities.push((self.text.len() as u32, value));
    }

    pub fn finish(self) -> OwnedEvent {
        OwnedEvent {
            kind: self.kind,
            timestamp_ns: self.timestamp_ns,
            object_len: self.object_len,
            reference_len: self.reference_len,
            message_len: self.message_len,
            text: self.text,
            resource: self.quantities,
        }
    }
}

/// YuniKorn cuts messages longer than 1024 bytes to their first 1021 bytes and appends "...".
/// The cut backs off to a character boundary so the result stays valid UTF-8. Returns the
/// kept prefix (without the "..."); the caller appends it when the prefix is shorter.
pub fn truncate_message(message: &str) -> &str {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let mut end = TRUNCATED_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    &message[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_packs_every_yunikorn_value() {
        for t in 0..=5 {
            for c in 0..=3 {
                for d in [0, 100, 102, 200, 216, 300, 306, 400, 407, 500, 504, 600, 604] {
                    let k = Kind::new(t, c, d).unwrap();
                    assert_eq!((k.record_type(), k.change_type(), k.change_detail()), (t, c, d));
                }
            }
        }
        assert!(Kind::new(8, 0, 0).is_err());
        assert!(Kind::new(0, 4, 0).is_err());
        assert!(Kind::new(0, 0, 1024).is_err());
    }

    #[test]
    fn compact_record_is_20_bytes() {
        assert_eq!(std::mem::size_of::<CompactRecord>(), 20);
    }

    #[test]
    fn owned_event_round_trips_fields() {
        let kind = Kind::new(2, 2, 201).unwrap();
        let fields = EventFields { kind, timestamp_ns: 42, object: "app-1", reference: "alloc-1", message: "hi" };
        let e = OwnedEvent::new(fields, [("memory", 10), ("vcore", 1000)]);
        assert_eq!((e.object(), e.reference(), e.message()), ("app-1", "alloc-1", "hi"));
        assert_eq!(e.resource().collect::<Vec<_>>(), [("memory", 10), ("vcore", 1000)]);
    }

    #[test]
    fn builder_matches_new() {
        let kind = Kind::new(2, 2, 201).unwrap();
        let fields = EventFields { kind, timestamp_ns: 42, object: "app-1", reference: "alloc-1", message: "hi" };
        let mut b = OwnedEvent::builder(fields);
        b.quantity("memory", 10);
        b.quantity("vcore", 1000);
        assert_eq!(b.finish(), OwnedEvent::new(fields, [("memory", 10), ("vcore", 1000)]));
        assert_eq!(OwnedEvent::builder(fields).finish(), OwnedEvent::new(fields, []));
    }

    #[test]
    fn long_messages_are_cut_to_1021_bytes_plus_dots() {
        let kind = Kind::new(1, 0, 0).unwrap();
        let long = "x".repeat(2000);
        let e = OwnedEvent::new(EventFields { kind, timestamp_ns: 0, object: "o", reference: "", message: &long }, []);
        assert_eq!(e.message().len(), 1024);
        assert!(e.message().ends_with("x..."));
        let exact = "y".repeat(1024);
        let e = OwnedEvent::new(EventFields { kind, timestamp_ns: 0, object: "o", reference: "", message: &exact }, []);
        assert_eq!(e.message(), exact, "1024 bytes are kept whole");
    }

    #[test]
    fn cut_backs_off_to_a_character_boundary() {
        // 1020 ASCII bytes then a 3-byte character straddling byte 1021.
        let msg = format!("{}€€", "a".repeat(1020));
        assert!(msg.len() > 1024 || msg.len() == 1026);
        let msg = format!("{}{}", msg, "b".repeat(10));
        let kept = truncate_message(&msg);
        assert_eq!(kept.len(), 1020);
        assert!(kept.is_char_boundary(kept.len()));
    }
}
