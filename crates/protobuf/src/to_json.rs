//! Protobuf message bytes → Kubernetes JSON, walking the wire with the
//! message descriptor. Hand-walked rather than via DynamicMessage so that
//! presence, depth and expansion are all under our control.

use base64::Engine as _;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Map, Number, Value};

use crate::path::{Path, Seg};
use crate::schema;
use crate::shape::{self, Shape};
use crate::special::{self, Special};
use crate::wire::{self, Reader, WireError};
use crate::Error;

/// Deepest nesting of messages (and envelopes inside RawExtensions) accepted.
/// Real objects stay under ~20; the bound keeps hostile input off the stack.
pub(crate) const MAX_DEPTH: usize = 64;

/// Decoded JSON values allowed per body byte (plus a floor). Honest data
/// spends at least a byte or two per value; the slack covers zero fields the
/// Go shape table adds back. Hostile bodies are refused, not expanded.
const NODES_PER_BYTE: usize = 4;
const NODES_FLOOR: usize = 1024;
/// Absolute cap whatever the body size.
const MAX_NODES: usize = 16_000_000;

pub(crate) struct Decoder {
    nodes: usize,
    limit: usize,
}

impl Decoder {
    pub(crate) fn for_body(len: usize) -> Self {
        let limit = len.saturating_mul(NODES_PER_BYTE).saturating_add(NODES_FLOOR).min(MAX_NODES);
        Decoder::with_limit(limit)
    }

    pub(crate) fn with_limit(limit: usize) -> Self {
        Decoder { nodes: 0, limit }
    }

    fn count(&mut self, n: usize) -> Result<(), Error> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > self.limit {
            return Err(Error::TooLarge { limit: self.limit });
        }
        Ok(())
    }

    pub(crate) fn message(
        &mut self,
        desc: &MessageDescriptor,
        buf: &[u8],
        path: &mut Path,
        depth: usize,
    ) -> Result<Value, Error> {
        if depth > MAX_DEPTH {
            return Err(Error::TooDeep { limit: MAX_DEPTH, path: path.to_string() });
        }
        self.count(1)?;
        if let Some(sp) = special::special(desc.full_name()) {
            return self.special(sp, desc, buf, path, depth);
        }
        let mut obj = Map::new();
        let mut r = Reader::new(buf);
        while !r.is_empty() {
            let (number, wt) = r.key().map_err(|e| wire_err(e, desc, path))?;
            let Some(field) = desc.get_field(number) else {
                // A field from a newer Kubernetes: skip it, as Go does.
                r.skip(wt).map_err(|e| wire_err(e, desc, path))?;
                continue;
            };
            path.push(Seg::Field(field.name().to_owned()));
            let result = self.field(desc, &field, wt, &mut r, &mut obj, path, depth);
            path.pop();
            result?;
        }
        self.apply_go_shape(desc, &mut obj)?;
        Ok(Value::Object(obj))
    }

    #[allow(clippy::too_many_arguments)]
    fn field(
        &mut self,
        desc: &MessageDescriptor,
        field: &FieldDescriptor,
        wt: u8,
        r: &mut Reader<'_>,
        obj: &mut Map<String, Value>,
        path: &mut Path,
        depth: usize,
    ) -> Result<(), Error> {
        let name = field.name();
        if field.is_map() {
            expect(desc, field, wt, wire::LEN, "a map entry", path)?;
            let entry = r.len_delimited().map_err(|e| wire_err(e, desc, path))?;
            let (k, v) = self.map_entry(field, entry, path, depth)?;
            let slot = obj.entry(name.to_owned()).or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = slot {
                m.insert(k, v);
            }
            return Ok(());
        }
        let kind = field.kind();
        if field.is_list() {
            let slot = obj.entry(name.to_owned()).or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(items) = slot else {
                return Ok(());
            };
            if wt == wire::LEN && packable(&kind) {
                let packed = r.len_delimited().map_err(|e| wire_err(e, desc, path))?;
                let mut pr = Reader::new(packed);
                while !pr.is_empty() {
                    let wt = scalar_wire_type(&kind);
                    items.push(self.value(desc, field, &kind, wt, &mut pr, path, depth)?);
                }
            } else {
                items.push(self.value(desc, field, &kind, wt, r, path, depth)?);
            }
            return Ok(());
        }
        let v = self.value(desc, field, &kind, wt, r, path, depth)?;
        obj.insert(name.to_owned(), v);
        Ok(())
    }

    fn map_entry(
        &mut self,
        map_field: &FieldDescriptor,
        entry: &[u8],
        path: &mut Path,
        depth: usize,
    ) -> Result<(String, Value), Error> {
        let Kind::Message(entry_desc) = map_field.kind() else {
            return Err(malformed(map_field.parent_message(), path, "map field without an entry message"));
        };
        let key_field = entry_desc.map_entry_key_field();
        let value_field = entry_desc.map_entry_value_field();
        let mut key = None;
        let mut value = None;
        let mut r = Reader::new(entry);
        while !r.is_empty() {
            let (number, wt) = r.key().map_err(|e| wire_err(e, &entry_desc, path))?;
            match number {
                1 => {
                    let k = self.value(&entry_desc, &key_field, &key_field.kind(), wt, &mut r, path, depth)?;
                    key = Some(match k {
                        Value::String(s) => s,
                        other => other.to_string(),
                    });
                }
                2 => {
                    path.push(Seg::Key(key.clone().unwrap_or_default()));
                    let v = self.value(&entry_desc, &value_field, &value_field.kind(), wt, &mut r, path, depth);
                    path.pop();
                    value = Some(v?);
                }
                _ => r.skip(wt).map_err(|e| wire_err(e, &entry_desc, path))?,
            }
        }
        let value = match value {
            Some(v) => v,
            // An absent value is the value type's zero, as in Go.
            None => match value_field.kind() {
                Kind::Message(m) => self.message(&m, &[], path, depth + 1)?,
                k => zero(&k),
            },
        };
        Ok((key.unwrap_or_default(), value))
    }

    #[allow(clippy::too_many_arguments)]
    fn value(
        &mut self,
        desc: &MessageDescriptor,
        field: &FieldDescriptor,
        kind: &Kind,
        wt: u8,
        r: &mut Reader<'_>,
        path: &mut Path,
        depth: usize,
    ) -> Result<Value, Error> {
        let werr = |e| wire_err(e, desc, path);
        let v = match kind {
            Kind::Message(m) => {
                expect(desc, field, wt, wire::LEN, "a message", path)?;
                let b = r.len_delimited().map_err(werr)?;
                return self.message(m, b, path, depth + 1);
            }
            Kind::String => {
                expect(desc, field, wt, wire::LEN, "a string", path)?;
                // Go's encoding/json writes invalid UTF-8 as U+FFFD too.
                Value::String(String::from_utf8_lossy(r.len_delimited().map_err(werr)?).into_owned())
            }
            Kind::Bytes => {
                expect(desc, field, wt, wire::LEN, "bytes", path)?;
                let b = r.len_delimited().map_err(werr)?;
                Value::String(base64::engine::general_purpose::STANDARD.encode(b))
            }
            Kind::Bool => {
                expect(desc, field, wt, wire::VARINT, "a bool", path)?;
                Value::Bool(r.varint().map_err(werr)? != 0)
            }
            Kind::Int32 | Kind::Enum(_) => {
                expect(desc, field, wt, wire::VARINT, "an int32", path)?;
                Value::from(r.varint().map_err(werr)? as i32)
            }
            Kind::Int64 => {
                expect(desc, field, wt, wire::VARINT, "an int64", path)?;
                Value::from(r.varint().map_err(werr)? as i64)
            }
            Kind::Uint32 => {
                expect(desc, field, wt, wire::VARINT, "a uint32", path)?;
                Value::from(r.varint().map_err(werr)? as u32)
            }
            Kind::Uint64 => {
                expect(desc, field, wt, wire::VARINT, "a uint64", path)?;
                Value::from(r.varint().map_err(werr)?)
            }
            Kind::Sint32 => {
                expect(desc, field, wt, wire::VARINT, "a sint32", path)?;
                let u = r.varint().map_err(werr)? as u32;
                Value::from(((u >> 1) as i32) ^ -((u & 1) as i32))
            }
            Kind::Sint64 => {
                expect(desc, field, wt, wire::VARINT, "a sint64", path)?;
                let u = r.varint().map_err(werr)?;
                Value::from(((u >> 1) as i64) ^ -((u & 1) as i64))
            }
            Kind::Fixed32 => {
                expect(desc, field, wt, wire::FIXED32, "a fixed32", path)?;
                Value::from(r.fixed32().map_err(werr)?)
            }
            Kind::Sfixed32 => {
                expect(desc, field, wt, wire::FIXED32, "an sfixed32", path)?;
                Value::from(r.fixed32().map_err(werr)? as i32)
            }
            Kind::Float => {
                expect(desc, field, wt, wire::FIXED32, "a float", path)?;
                float(f64::from(f32::from_bits(r.fixed32().map_err(werr)?)), desc, path)?
            }
            Kind::Fixed64 => {
                expect(desc, field, wt, wire::FIXED64, "a fixed64", path)?;
                Value::from(r.fixed64().map_err(werr)?)
            }
            Kind::Sfixed64 => {
                expect(desc, field, wt, wire::FIXED64, "an sfixed64", path)?;
                Value::from(r.fixed64().map_err(werr)? as i64)
            }
            Kind::Double => {
                expect(desc, field, wt, wire::FIXED64, "a double", path)?;
                float(f64::from_bits(r.fixed64().map_err(werr)?), desc, path)?
            }
        };
        self.count(1)?;
        Ok(v)
    }

    /// Makes the JSON match what encoding/json shows for the Go struct:
    /// zero `omitempty` scalars vanish, non-`omitempty` ones always appear.
    fn apply_go_shape(&mut self, desc: &MessageDescriptor, obj: &mut Map<String, Value>) -> Result<(), Error> {
        let go = shape::fields(desc.full_name());
        for g in go {
            let Some(field) = desc.get_field(g.number) else {
                continue;
            };
            match g.shape {
                Shape::OmitZero => {
                    if obj.get(field.name()).is_some_and(is_zero) {
                        obj.remove(field.name());
                    }
                }
                Shape::AlwaysScalar => {
                    if !obj.contains_key(field.name()) {
                        self.count(1)?;
                        obj.insert(field.name().to_owned(), zero(&field.kind()));
                    }
                }
                Shape::AlwaysStruct | Shape::Inline | Shape::Presence => {}
            }
        }
        // Then rename to Go's JSON names and flatten embedded structs.
        for g in go {
            let Some(field) = desc.get_field(g.number) else {
                continue;
            };
            if let Some(json) = g.json_name {
                if let Some(v) = obj.remove(field.name()) {
                    obj.insert(json.to_owned(), v);
                }
            } else if g.shape == Shape::Inline {
                if let Some(Value::Object(inner)) = obj.remove(field.name()) {
                    obj.extend(inner);
                }
            }
        }
        Ok(())
    }

    fn special(
        &mut self,
        sp: Special,
        desc: &MessageDescriptor,
        buf: &[u8],
        path: &mut Path,
        depth: usize,
    ) -> Result<Value, Error> {
        let fields = scalar_fields(desc, buf, path)?;
        let int = |n: u32| match fields.iter().rev().find(|(num, _)| *num == n) {
            Some((_, Raw::Varint(v))) => *v,
            _ => 0,
        };
        let bytes = |n: u32| match fields.iter().rev().find(|(num, _)| *num == n) {
            Some((_, Raw::Bytes(b))) => Some(*b),
            _ => None,
        };
        let bad = |detail: String| malformed(desc, path, &detail);
        Ok(match sp {
            Special::Time | Special::MicroTime => {
                let seconds = int(1) as i64;
                // Go writes a zero time as an empty message and shows it as null.
                if buf.is_empty() || seconds == special::GO_ZERO_TIME {
                    Value::Null
                } else if sp == Special::Time {
                    Value::String(special::format_time(seconds).map_err(bad)?)
                } else {
                    Value::String(special::format_micro_time(seconds, int(2) as i32).map_err(bad)?)
                }
            }
            Special::Duration => Value::String(special::format_duration(int(1) as i64)),
            Special::Quantity => Value::String(String::from_utf8_lossy(bytes(1).unwrap_or_default()).into_owned()),
            Special::IntOrString => {
                if int(1) == 1 {
                    Value::String(String::from_utf8_lossy(bytes(3).unwrap_or_default()).into_owned())
                } else {
                    Value::from(int(2) as i32)
                }
            }
            Special::RawExtension | Special::FieldsV1 => match bytes(1) {
                None => Value::Null,
                Some(raw) if raw.starts_with(wire::MAGIC) && sp == Special::RawExtension => {
                    decode_object(self, raw, path, depth + 1)?
                }
                Some(raw) => {
                    let v: Value = serde_json::from_slice(raw).map_err(|e| {
                        bad(format!("raw bytes are neither JSON nor an enveloped protobuf object ({e})"))
                    })?;
                    self.count(json_nodes(&v))?;
                    v
                }
            },
        })
    }
}

enum Raw<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

/// Reads a flat message of varint and length-delimited fields (the special
/// types are all such).
fn scalar_fields<'a>(desc: &MessageDescriptor, buf: &'a [u8], path: &Path) -> Result<Vec<(u32, Raw<'a>)>, Error> {
    let mut r = Reader::new(buf);
    let mut out = Vec::new();
    while !r.is_empty() {
        let (number, wt) = r.key().map_err(|e| wire_err(e, desc, path))?;
        if let Some(field) = desc.get_field(number) {
            let want = scalar_wire_type(&field.kind());
            expect(desc, &field, wt, want, "its declared type", path)?;
        }
        match wt {
            wire::VARINT => out.push((number, Raw::Varint(r.varint().map_err(|e| wire_err(e, desc, path))?))),
            wire::LEN => out.push((number, Raw::Bytes(r.len_delimited().map_err(|e| wire_err(e, desc, path))?))),
            other => r.skip(other).map_err(|e| wire_err(e, desc, path))?,
        }
    }
    Ok(out)
}

fn packable(kind: &Kind) -> bool {
    !matches!(kind, Kind::Message(_) | Kind::String | Kind::Bytes)
}

pub(crate) fn scalar_wire_type(kind: &Kind) -> u8 {
    match kind {
        Kind::Message(_) | Kind::String | Kind::Bytes => wire::LEN,
        Kind::Fixed32 | Kind::Sfixed32 | Kind::Float => wire::FIXED32,
        Kind::Fixed64 | Kind::Sfixed64 | Kind::Double => wire::FIXED64,
        _ => wire::VARINT,
    }
}

fn zero(kind: &Kind) -> Value {
    match kind {
        Kind::String | Kind::Bytes => Value::String(String::new()),
        Kind::Bool => Value::Bool(false),
        Kind::Message(_) => Value::Object(Map::new()),
        _ => Value::from(0),
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
        _ => false,
    }
}

fn json_nodes(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(json_nodes).sum::<usize>(),
        Value::Object(o) => 1 + o.values().map(json_nodes).sum::<usize>(),
        _ => 1,
    }
}

fn float(f: f64, desc: &MessageDescriptor, path: &Path) -> Result<Value, Error> {
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| malformed(desc, path, &format!("{f} cannot be written as JSON")))
}

fn expect(
    desc: &MessageDescriptor,
    field: &FieldDescriptor,
    got: u8,
    want: u8,
    what: &'static str,
    path: &Path,
) -> Result<(), Error> {
    if got == want {
        return Ok(());
    }
    Err(Error::WireType {
        message: desc.full_name().to_owned(),
        field: field.name().to_owned(),
        number: field.number(),
        path: path.to_string(),
        expected: match want {
            wire::VARINT => "a varint",
            wire::FIXED64 => "fixed64",
            wire::FIXED32 => "fixed32",
            _ => what,
        },
        got,
    })
}

pub(crate) fn wire_err(e: WireError, desc: &MessageDescriptor, path: &Path) -> Error {
    match e {
        WireError::Truncated(detail) => {
            Error::Truncated { message: desc.full_name().to_owned(), path: path.to_string(), detail }
        }
        WireError::Malformed(detail) => malformed(desc, path, &detail),
    }
}

fn malformed(desc: &MessageDescriptor, path: &Path, detail: &str) -> Error {
    Error::Malformed { message: desc.full_name().to_owned(), path: path.to_string(), detail: detail.to_owned() }
}

// The envelope, read (see `crate::envelope` for its layout).

const UNKNOWN: &str = "k8s.io.apimachinery.pkg.runtime.Unknown";

fn unknown_desc() -> Option<MessageDescriptor> {
    schema::message(UNKNOWN)
}

fn truncated(path: &Path, detail: &str) -> Error {
    Error::Truncated { message: UNKNOWN.to_owned(), path: path.to_string(), detail: detail.to_owned() }
}

pub(crate) fn decode_object(dec: &mut Decoder, body: &[u8], path: &mut Path, depth: usize) -> Result<Value, Error> {
    if depth > MAX_DEPTH {
        return Err(Error::TooDeep { limit: MAX_DEPTH, path: path.to_string() });
    }
    let Some(data) = body.strip_prefix(wire::MAGIC) else {
        if wire::MAGIC.starts_with(body) && !body.is_empty() {
            return Err(truncated(path, "body ends inside the k8s\\0 prefix"));
        }
        return Err(Error::MissingMagic);
    };
    let desc =
        unknown_desc().ok_or_else(|| Error::UnknownKind { api_version: "runtime".into(), kind: "Unknown".into() })?;
    let werr = |e, path: &Path| wire_err(e, &desc, path);
    let (mut api_version, mut kind, mut raw, mut encoding) = (String::new(), String::new(), None, Vec::new());
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let (number, wt) = r.key().map_err(|e| werr(e, path))?;
        match (number, wt) {
            (1, wire::LEN) => {
                let tm = r.len_delimited().map_err(|e| werr(e, path))?;
                let mut tr = Reader::new(tm);
                while !tr.is_empty() {
                    match tr.key().map_err(|e| werr(e, path))? {
                        (1, wire::LEN) => api_version = utf8(tr.len_delimited().map_err(|e| werr(e, path))?),
                        (2, wire::LEN) => kind = utf8(tr.len_delimited().map_err(|e| werr(e, path))?),
                        (_, wt) => tr.skip(wt).map_err(|e| werr(e, path))?,
                    }
                }
            }
            (2, wire::LEN) => raw = Some(r.len_delimited().map_err(|e| werr(e, path))?),
            (3, wire::LEN) => encoding = r.len_delimited().map_err(|e| werr(e, path))?.to_vec(),
            // contentType is informational: the serializer ignores it too.
            (4, wire::LEN) => r.skip(wire::LEN).map_err(|e| werr(e, path))?,
            (1..=4, got) => {
                return Err(Error::WireType {
                    message: UNKNOWN.to_owned(),
                    field: ["typeMeta", "raw", "contentEncoding", "contentType"][number as usize - 1].to_owned(),
                    number,
                    path: path.to_string(),
                    expected: "length-delimited",
                    got,
                })
            }
            (_, wt) => r.skip(wt).map_err(|e| werr(e, path))?,
        }
    }
    if !encoding.is_empty() {
        return Err(Error::Malformed {
            message: UNKNOWN.to_owned(),
            path: path.to_string(),
            detail: format!("contentEncoding {:?} is not supported", utf8(&encoding)),
        });
    }
    let desc = schema::lookup(&api_version, &kind)?;
    let mut obj = dec.message(&desc, raw.unwrap_or_default(), path, depth + 1)?;
    if let Value::Object(map) = &mut obj {
        map.insert("apiVersion".into(), Value::String(api_version));
        map.insert("kind".into(), Value::String(kind));
    }
    Ok(obj)
}

fn utf8(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
