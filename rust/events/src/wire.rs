//! YuniKorn's wire format, byte for byte.
//!
//! An event is written as Go's `encoding/json` writes the generated `si.EventRecord` struct:
//! keys in field order (`type`, `objectID`, `message`, `timestampNano`, `eventChangeType`,
//! `eventChangeDetail`, `referenceID`, `resource`), every key omitted when zero or empty except
//! `resource`, which upstream always sets: `{}` without quantities, otherwise
//! `{"resources":{"<name>":{"value":N}}}` with names in sorted order and a zero value written
//! as `{}`. Strings are escaped as Go escapes them (HTML-safe: `<`, `>`, `&`, U+2028 and U+2029
//! as `\u` escapes).

/// Bytes that cannot be copied verbatim into a JSON string by Go's encoder. 0xE2 is the lead
/// byte of U+2028 / U+2029 and only marks a possible escape.
const NEEDS_CARE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'<' as usize] = true;
    t[b'>' as usize] = true;
    t[b'&' as usize] = true;
    t[0xE2] = true;
    t
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether `s` can be copied into a JSON string verbatim (computed once, at interning).
pub fn is_clean(s: &[u8]) -> bool {
    s.iter().all(|&b| !NEEDS_CARE[b as usize])
}

/// Appends a string known to need no escaping, with its quotes.
pub fn write_clean_str(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s);
    out.push(b'"');
}

/// Appends `s` as a JSON string literal (with quotes), escaped as Go's encoder does.
pub fn write_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        if !NEEDS_CARE[b as usize] {
            i += 1;
            continue;
        }
        if b == 0xE2 {
            // U+2028 is E2 80 A8, U+2029 is E2 80 A9; any other E2 sequence is copied.
            if i + 2 < s.len() && s[i + 1] == 0x80 && (s[i + 2] == 0xA8 || s[i + 2] == 0xA9) {
                out.extend_from_slice(&s[start..i]);
                out.extend_from_slice(if s[i + 2] == 0xA8 { b"\\u2028" } else { b"\\u2029" });
                i += 3;
                start = i;
            } else {
                i += 1;
            }
            continue;
        }
        out.extend_from_slice(&s[start..i]);
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 0xF) as usize]]),
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

pub fn write_int<I: itoa::Integer>(out: &mut Vec<u8>, v: I) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(v).as_bytes());
}

/// A string the writer can put into JSON: raw bytes (always escaped as needed), or an
/// interned string that already knows whether it needs escaping.
pub trait JsonText {
    fn is_empty(&self) -> bool;
    fn write_json(&self, out: &mut Vec<u8>);
}

impl JsonText for &[u8] {
    fn is_empty(&self) -> bool {
        <[u8]>::is_empty(self)
    }

    fn write_json(&self, out: &mut Vec<u8>) {
        write_str(out, self)
    }
}

/// A record's fields as the writer needs them.
pub struct WireRecord<S: JsonText> {
    pub record_type: u32,
    pub object_id: S,
    pub message: S,
    pub timestamp_ns: i64,
    pub change_type: u32,
    pub change_detail: u32,
    pub reference_id: S,
}

/// Writes one EventRecord object (no trailing newline). `resource_json` is the resource
/// object as written by [`write_resource`].
pub fn write_record<S: JsonText>(out: &mut Vec<u8>, rec: &WireRecord<S>, resource_json: &[u8]) {
    out.push(b'{');
    let mut first = true;
    let mut key = |out: &mut Vec<u8>, k: &[u8]| {
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(k);
    };
    if rec.record_type != 0 {
        key(out, b"\"type\":");
        write_int(out, rec.record_type);
    }
    if !rec.object_id.is_empty() {
        key(out, b"\"objectID\":");
        rec.object_id.write_json(out);
    }
    if !rec.message.is_empty() {
        key(out, b"\"message\":");
        rec.message.write_json(out);
    }
    if rec.timestamp_ns != 0 {
        key(out, b"\"timestampNano\":");
        write_int(out, rec.timestamp_ns);
    }
    if rec.change_type != 0 {
        key(out, b"\"eventChangeType\":");
        write_int(out, rec.change_type);
    }
    if rec.change_detail != 0 {
        key(out, b"\"eventChangeDetail\":");
        write_int(out, rec.change_detail);
    }
    if !rec.reference_id.is_empty() {
        key(out, b"\"referenceID\":");
        rec.reference_id.write_json(out);
    }
    key(out, b"\"resource\":");
    out.extend_from_slice(resource_json);
    out.push(b'}');
}

/// Writes an `si.Resource` object: `{}` without quantities, otherwise
/// `{"resources":{"<name>":{"value":N}}}`, names in the order given (sorted by the caller),
/// a zero value as `{}` (Go's omitempty on `value`).
pub fn write_resource<N: JsonText>(out: &mut Vec<u8>, resource: impl ExactSizeIterator<Item = (N, i64)>) {
    if resource.len() == 0 {
        out.extend_from_slice(b"{}");
        return;
    }
    out.extend_from_slice(b"{\"resources\":{");
    for (i, (name, value)) in resource.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        name.write_json(out);
        if value == 0 {
            out.extend_from_slice(b":{}");
        } else {
            out.extend_from_slice(b":{\"value\":");
            write_int(out, value);
            out.push(b'}');
        }
    }
    out.extend_from_slice(b"}}");
}

/// Writes the head of a `/ws/v1/events/batch` body, up to and including `"EventRecords":`.
pub fn write_batch_head(out: &mut Vec<u8>, instance_uuid: &[u8], lowest: u64, highest: u64) {
    out.extend_from_slice(b"{\"InstanceUUID\":");
    write_str(out, instance_uuid);
    out.extend_from_slice(b",\"LowestID\":");
    write_int(out, lowest);
    out.extend_from_slice(b",\"HighestID\":");
    write_int(out, highest);
    out.extend_from_slice(b",\"EventRecords\":");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, x.as_bytes());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn go_escaping() {
        assert_eq!(s("plain"), "\"plain\"");
        assert_eq!(s("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(s("<b>&</b>"), r#""\u003cb\u003e\u0026\u003c/b\u003e""#);
        assert_eq!(s("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(s("\u{1}\u{1f}"), r#""\u0001\u001f""#);
        assert_eq!(s("x\u{2028}y\u{2029}z"), r#""x\u2028y\u2029z""#);
        assert_eq!(s("€ ✓ \u{7f}"), "\"€ ✓ \u{7f}\"");
    }

    fn rec(out: &mut Vec<u8>, r: &WireRecord<&[u8]>, res: &[(&str, i64)]) {
        let mut resource = Vec::new();
        write_resource(&mut resource, res.iter().map(|(n, v)| (n.as_bytes(), *v)));
        write_record(out, r, &resource);
    }

    #[test]
    fn record_key_order_and_omissions() {
        let mut out = Vec::new();
        let r = WireRecord::<&[u8]> {
            record_type: 2,
            object_id: b"app-1",
            message: b"",
            timestamp_ns: 1_700_000_000_000_000_000,
            change_type: 2,
            change_detail: 201,
            reference_id: b"alloc-1",
        };
        rec(&mut out, &r, &[("memory", 10000000), ("vcore", 1000)]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"type":2,"objectID":"app-1","timestampNano":1700000000000000000,"eventChangeType":2,"eventChangeDetail":201,"referenceID":"alloc-1","resource":{"resources":{"memory":{"value":10000000},"vcore":{"value":1000}}}}"#
        );
    }

    #[test]
    fn empty_record_still_has_resource() {
        let mut out = Vec::new();
        let r = WireRecord::<&[u8]> { record_type: 0, object_id: b"", message: b"", timestamp_ns: 0, change_type: 0, change_detail: 0, reference_id: b"" };
        rec(&mut out, &r, &[]);
        assert_eq!(out, br#"{"resource":{}}"#);
    }

    #[test]
    fn zero_quantity_is_an_empty_object_and_negative_values_are_kept() {
        let mut out = Vec::new();
        let r = WireRecord::<&[u8]> { record_type: 3, object_id: b"n", message: b"m", timestamp_ns: -5, change_type: 1, change_detail: 304, reference_id: b"" };
        rec(&mut out, &r, &[("memory", 0), ("pods", -1)]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"type":3,"objectID":"n","message":"m","timestampNano":-5,"eventChangeType":1,"eventChangeDetail":304,"resource":{"resources":{"memory":{},"pods":{"value":-1}}}}"#
        );
    }

    #[test]
    fn batch_head() {
        let mut out = Vec::new();
        write_batch_head(&mut out, b"uuid", 5, 24);
        out.extend_from_slice(b"null}");
        assert_eq!(out, br#"{"InstanceUUID":"uuid","LowestID":5,"HighestID":24,"EventRecords":null}"#);
    }
}
