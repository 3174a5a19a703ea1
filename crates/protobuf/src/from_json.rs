//! Kubernetes JSON → protobuf message bytes. Fields are written in field
//! number order and map entries in key order, as Go's gogo marshaller does,
//! so simple objects come out byte-identical to kube-apiserver's.

use std::borrow::Cow;

use base64::Engine as _;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Map, Value};

use crate::path::{Path, Seg};
use crate::shape::{self, Shape};
use crate::special::{self, Special};
use crate::to_json::{scalar_wire_type, MAX_DEPTH};
use crate::wire::{self, put_bytes, put_key, put_varint};
use crate::Error;

fn json_err(path: &Path, desc: &MessageDescriptor, detail: String) -> Error {
    Error::Json { path: path.to_string(), message: desc.full_name().to_owned(), detail }
}

/// A short rendering of a JSON value for error messages.
fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

/// Encodes `value` as message `desc` into `out` (without a length prefix).
/// `top_level` objects carry apiVersion/kind, which belong to the envelope.
/// How [`message`] writes: whether the object is the enveloped one (its
/// `apiVersion`/`kind` belong to the envelope), and whether a field the
/// Kubernetes type lacks is left out (as Go's JSON decoding drops it) or
/// refused.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mode {
    pub top_level: bool,
    pub lenient: bool,
}

pub(crate) fn message(
    desc: &MessageDescriptor,
    value: &Value,
    path: &mut Path,
    depth: usize,
    mode: Mode,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(Error::TooDeep { limit: MAX_DEPTH, path: path.to_string() });
    }
    if let Some(sp) = special::special(desc.full_name()) {
        return special_message(sp, desc, value, path, out);
    }
    let Value::Object(obj) = value else {
        return Err(json_err(path, desc, format!("expected an object, got {}", show(value))));
    };
    let mut fields: Vec<(FieldDescriptor, Cow<'_, Value>)> = Vec::with_capacity(obj.len());
    let inline: Vec<FieldDescriptor> = shape::inline_fields(desc).collect();
    let mut inline_objs: Vec<Map<String, Value>> = vec![Map::new(); inline.len()];
    for (key, v) in obj {
        let field = shape::field_by_json(desc, key);
        // The envelope carries a top-level object's type; a list's items
        // carry theirs in JSON but have none in protobuf (their list names it).
        if (mode.top_level || field.is_none()) && (key == "apiVersion" || key == "kind") {
            continue;
        }
        if let Some(field) = field {
            // null is how Go's JSON shows a nil pointer: absent.
            if !v.is_null() {
                fields.push((field, Cow::Borrowed(v)));
            }
        } else if let Some(i) = inline.iter().position(|f| shape::inline_accepts(f, key, 0)) {
            // Fields of an embedded Go struct sit in the parent's JSON.
            if let Some(slot) = inline_objs.get_mut(i) {
                slot.insert(key.clone(), v.clone());
            }
        } else if !mode.lenient {
            let known: Vec<String> = desc.fields().map(|f| f.name().to_owned()).collect();
            return Err(json_err(path, desc, format!("unknown field {key:?} (known fields: {})", known.join(", "))));
        }
    }
    // Embedded structs are non-pointer in Go, so always written.
    for (field, m) in inline.into_iter().zip(inline_objs) {
        fields.push((field, Cow::Owned(Value::Object(m))));
    }
    // Go writes its non-pointer fields even when zero; do the same so the
    // bytes match and Go readers see the same value either way.
    for g in shape::fields(desc.full_name()) {
        if g.shape == Shape::Presence || fields.iter().any(|(f, _)| f.number() == g.number) {
            continue;
        }
        let Some(field) = desc.get_field(g.number) else {
            continue;
        };
        let zero = match (g.shape, field.kind()) {
            (Shape::AlwaysStruct, Kind::Message(m)) => match special::special(m.full_name()) {
                None => Some(Value::Object(Map::new())),
                Some(Special::IntOrString) => Some(Value::from(0)),
                Some(Special::Duration) => Some(Value::String("0s".into())),
                Some(Special::Time | Special::MicroTime | Special::RawExtension | Special::FieldsV1) => {
                    // Zero times and nil raw bytes are written as empty messages.
                    put_bytes_later(&mut fields, field.clone());
                    None
                }
                Some(Special::Quantity) => None,
            },
            (Shape::AlwaysStruct | Shape::Inline | Shape::Presence, _) => None,
            (_, Kind::String | Kind::Bytes) => Some(Value::String(String::new())),
            (_, Kind::Bool) => Some(Value::Bool(false)),
            (_, Kind::Message(_)) => None,
            _ => Some(Value::from(0)),
        };
        if let Some(z) = zero {
            fields.push((field, Cow::Owned(z)));
        }
    }
    fields.sort_by_key(|(f, _)| f.number());
    for (field, v) in &fields {
        path.push(Seg::Field(field.name().to_owned()));
        let r = write_field(desc, field, v, path, depth, mode, out);
        path.pop();
        r?;
    }
    Ok(())
}

/// Marks a field to be written as an empty message (see `write_field`).
fn put_bytes_later(fields: &mut Vec<(FieldDescriptor, Cow<'_, Value>)>, field: FieldDescriptor) {
    fields.push((field, Cow::Owned(Value::Null)));
}

fn write_field(
    desc: &MessageDescriptor,
    field: &FieldDescriptor,
    v: &Value,
    path: &mut Path,
    depth: usize,
    mode: Mode,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    if v.is_null() {
        // Only the zero-special placeholders reach here with null.
        put_bytes(out, field.number(), b"");
        return Ok(());
    }
    if field.is_map() {
        let Value::Object(m) = v else {
            return Err(json_err(path, desc, format!("{} must be an object (a map), got {}", field.name(), show(v))));
        };
        let Kind::Message(entry) = field.kind() else {
            return Ok(());
        };
        let (kf, vf) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        let mut keys: Vec<&String> = m.keys().collect();
        keys.sort();
        for key in keys {
            let Some(val) = m.get(key) else { continue };
            path.push(Seg::Key(key.clone()));
            let mut e = Vec::new();
            let r = scalar(&entry, &kf, &Value::String(key.clone()), path, depth, mode, &mut e)
                .and_then(|()| scalar(&entry, &vf, val, path, depth, mode, &mut e));
            path.pop();
            r?;
            put_bytes(out, field.number(), &e);
        }
        return Ok(());
    }
    if field.is_list() {
        let Value::Array(items) = v else {
            return Err(json_err(path, desc, format!("{} must be an array, got {}", field.name(), show(v))));
        };
        let kind = field.kind();
        if field.is_packed() && !matches!(kind, Kind::Message(_) | Kind::String | Kind::Bytes) {
            let mut packed = Vec::new();
            for (i, item) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                let r = packed_scalar(desc, field, item, path, &mut packed);
                path.pop();
                r?;
            }
            if !packed.is_empty() {
                put_bytes(out, field.number(), &packed);
            }
            return Ok(());
        }
        for (i, item) in items.iter().enumerate() {
            path.push(Seg::Index(i));
            let r = if item.is_null() {
                Err(json_err(path, desc, format!("null is not allowed in {}", field.name())))
            } else {
                scalar(desc, field, item, path, depth, mode, out)
            };
            path.pop();
            r?;
        }
        return Ok(());
    }
    scalar(desc, field, v, path, depth, mode, out)
}

/// Writes one value of `field` with its key.
fn scalar(
    desc: &MessageDescriptor,
    field: &FieldDescriptor,
    v: &Value,
    path: &mut Path,
    depth: usize,
    mode: Mode,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let number = field.number();
    match field.kind() {
        Kind::Message(m) => {
            let mut body = Vec::new();
            message(&m, v, path, depth + 1, Mode { top_level: false, ..mode }, &mut body)?;
            put_bytes(out, number, &body);
        }
        Kind::String => {
            let Value::String(s) = v else {
                return Err(json_err(path, desc, format!("expected a string, got {}", show(v))));
            };
            put_bytes(out, number, s.as_bytes());
        }
        Kind::Bytes => {
            let Value::String(s) = v else {
                return Err(json_err(path, desc, format!("expected a base64 string, got {}", show(v))));
            };
            let b = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| json_err(path, desc, format!("{} is not standard base64 ({e})", show(v))))?;
            put_bytes(out, number, &b);
        }
        _ => {
            put_key(out, number, scalar_wire_type(&field.kind()));
            packed_scalar(desc, field, v, path, out)?;
        }
    }
    Ok(())
}

/// Writes a numeric or bool value without a key.
fn packed_scalar(
    desc: &MessageDescriptor,
    field: &FieldDescriptor,
    v: &Value,
    path: &Path,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let int = |lo: i128, hi: i128, what: &str| -> Result<i128, Error> {
        let n = v
            .as_i64()
            .map(i128::from)
            .or_else(|| v.as_u64().map(i128::from))
            .ok_or_else(|| json_err(path, desc, format!("expected {what}, got {}", show(v))))?;
        if n < lo || n > hi {
            return Err(json_err(path, desc, format!("{n} is out of range for {what} ({lo}..={hi})")));
        }
        Ok(n)
    };
    let float = || v.as_f64().ok_or_else(|| json_err(path, desc, format!("expected a number, got {}", show(v))));
    match field.kind() {
        Kind::Bool => {
            let b =
                v.as_bool().ok_or_else(|| json_err(path, desc, format!("expected true or false, got {}", show(v))))?;
            put_varint(out, u64::from(b));
        }
        Kind::Int32 | Kind::Enum(_) => {
            // Negative int32s are sign-extended to 10 bytes on the wire.
            put_varint(out, int(i32::MIN.into(), i32::MAX.into(), "an int32")? as i64 as u64)
        }
        Kind::Int64 => put_varint(out, int(i64::MIN.into(), i64::MAX.into(), "an int64")? as i64 as u64),
        Kind::Uint32 => put_varint(out, int(0, u32::MAX.into(), "a uint32")? as u64),
        Kind::Uint64 => put_varint(out, int(0, u64::MAX.into(), "a uint64")? as u64),
        Kind::Sint32 => {
            let n = int(i32::MIN.into(), i32::MAX.into(), "an int32")? as i32;
            put_varint(out, u64::from(((n << 1) ^ (n >> 31)) as u32));
        }
        Kind::Sint64 => {
            let n = int(i64::MIN.into(), i64::MAX.into(), "an int64")? as i64;
            put_varint(out, ((n << 1) ^ (n >> 63)) as u64);
        }
        Kind::Fixed32 => out.extend_from_slice(&(int(0, u32::MAX.into(), "a uint32")? as u32).to_le_bytes()),
        Kind::Sfixed32 => {
            out.extend_from_slice(&(int(i32::MIN.into(), i32::MAX.into(), "an int32")? as i32).to_le_bytes())
        }
        Kind::Fixed64 => out.extend_from_slice(&(int(0, u64::MAX.into(), "a uint64")? as u64).to_le_bytes()),
        Kind::Sfixed64 => {
            out.extend_from_slice(&(int(i64::MIN.into(), i64::MAX.into(), "an int64")? as i64).to_le_bytes())
        }
        Kind::Float => out.extend_from_slice(&(float()? as f32).to_le_bytes()),
        Kind::Double => out.extend_from_slice(&float()?.to_le_bytes()),
        Kind::Message(_) | Kind::String | Kind::Bytes => {
            return Err(json_err(path, desc, format!("{} cannot be packed", field.name())));
        }
    }
    Ok(())
}

fn special_message(
    sp: Special,
    desc: &MessageDescriptor,
    v: &Value,
    path: &Path,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let want_string =
        |what: &str| v.as_str().ok_or_else(|| json_err(path, desc, format!("expected {what}, got {}", show(v))));
    match sp {
        Special::Time | Special::MicroTime => {
            let s = want_string("an RFC 3339 time string like \"2026-11-28T13:00:00Z\"")?;
            let (seconds, nanos) = special::parse_time(s).map_err(|e| json_err(path, desc, e))?;
            // Time keeps whole seconds only, as Go's ProtoTime does.
            let nanos = if sp == Special::Time { 0 } else { nanos / 1000 * 1000 };
            put_key(out, 1, wire::VARINT);
            put_varint(out, seconds as u64);
            put_key(out, 2, wire::VARINT);
            put_varint(out, i64::from(nanos) as u64);
        }
        Special::Duration => {
            let s = want_string("a Go duration string like \"1h30m\"")?;
            let ns = special::parse_duration(s).map_err(|e| json_err(path, desc, e))?;
            put_key(out, 1, wire::VARINT);
            put_varint(out, ns as u64);
        }
        Special::Quantity => {
            let s = match v {
                Value::String(s) => s.clone(),
                // A bare JSON number is accepted as a quantity by Go too.
                Value::Number(n) => n.to_string(),
                _ => {
                    return Err(json_err(
                        path,
                        desc,
                        format!("expected a quantity like \"500m\" or \"1Gi\", got {}", show(v)),
                    ))
                }
            };
            put_bytes(out, 1, s.as_bytes());
        }
        Special::IntOrString => {
            let (ty, int, s) = match v {
                Value::String(s) => (1u64, 0i64, s.as_str()),
                Value::Number(_) => {
                    let n = v
                        .as_i64()
                        .filter(|n| i32::try_from(*n).is_ok())
                        .ok_or_else(|| json_err(path, desc, format!("{} is not an int32", show(v))))?;
                    (0, n, "")
                }
                _ => return Err(json_err(path, desc, format!("expected an integer or a string, got {}", show(v)))),
            };
            put_key(out, 1, wire::VARINT);
            put_varint(out, ty);
            put_key(out, 2, wire::VARINT);
            put_varint(out, int as u64);
            put_bytes(out, 3, s.as_bytes());
        }
        Special::RawExtension | Special::FieldsV1 => {
            let raw = serde_json::to_vec(v).map_err(|e| json_err(path, desc, e.to_string()))?;
            put_bytes(out, 1, &raw);
        }
    }
    Ok(())
}
