//! Facts about Kubernetes' Go structs that the .proto files cannot express,
//! generated into proto/goshape.txt by proto/goshape/main.go. Go's marshaller
//! writes every non-pointer field, zero or not, and encoding/json drops zero
//! `omitempty` fields; without this table a Go client's bytes would decode to
//! JSON full of `""` and `0` that Kubernetes' own JSON never shows.

use std::collections::HashMap;
use std::sync::LazyLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Non-pointer scalar, `omitempty`: a zero value means "absent".
    OmitZero,
    /// Non-pointer scalar without `omitempty`: JSON always shows it.
    AlwaysScalar,
    /// Non-pointer struct: always on the wire, always in JSON.
    AlwaysStruct,
    /// Embedded struct (`json:",inline"`): its fields appear in the parent.
    Inline,
    /// Pointer, slice or map: wire presence is JSON presence.
    Presence,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct GoField {
    pub(crate) number: u32,
    pub(crate) shape: Shape,
    /// The JSON name where it differs from the .proto name.
    pub(crate) json_name: Option<&'static str>,
}

static TABLE: LazyLock<HashMap<&'static str, Vec<GoField>>> = LazyLock::new(|| {
    include_str!("../proto/goshape.txt")
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?;
            let fields = words
                .filter_map(|w| {
                    let mut parts = w.split(':');
                    let number = parts.next()?.parse().ok()?;
                    let shape = match parts.next()? {
                        "o" => Shape::OmitZero,
                        "z" => Shape::AlwaysScalar,
                        "s" => Shape::AlwaysStruct,
                        "i" => Shape::Inline,
                        "p" => Shape::Presence,
                        _ => return None,
                    };
                    // "-" marks Go fields JSON never shows (special types).
                    let json_name = parts.next().filter(|n| *n != "-");
                    Some(GoField { number, shape, json_name })
                })
                .collect();
            Some((name, fields))
        })
        .collect()
});

/// The Go shape of each non-pointer field of `message`; other fields
/// (pointers, slices, maps) follow wire presence.
pub(crate) fn fields(message: &str) -> &'static [GoField] {
    TABLE.get(message).map(Vec::as_slice).unwrap_or(&[])
}

/// The field of `desc` that JSON key `key` names directly (not via an
/// inline struct).
pub(crate) fn field_by_json(
    desc: &prost_reflect::MessageDescriptor,
    key: &str,
) -> Option<prost_reflect::FieldDescriptor> {
    let go = fields(desc.full_name());
    if let Some(f) = go.iter().find(|f| f.json_name == Some(key)) {
        return desc.get_field(f.number);
    }
    let field = desc.get_field_by_name(key)?;
    let hidden = go.iter().any(|f| f.number == field.number() && (f.json_name.is_some() || f.shape == Shape::Inline));
    (!hidden).then_some(field)
}

/// Whether JSON key `key` belongs (maybe through nested inline structs) to
/// the message of inline field `field`.
pub(crate) fn inline_accepts(field: &prost_reflect::FieldDescriptor, key: &str, depth: usize) -> bool {
    let prost_reflect::Kind::Message(m) = field.kind() else {
        return false;
    };
    if depth > 8 {
        return false;
    }
    field_by_json(&m, key).is_some() || inline_fields(&m).any(|f| inline_accepts(&f, key, depth + 1))
}

pub(crate) fn inline_fields(
    desc: &prost_reflect::MessageDescriptor,
) -> impl Iterator<Item = prost_reflect::FieldDescriptor> + '_ {
    fields(desc.full_name()).iter().filter(|f| f.shape == Shape::Inline).filter_map(|f| desc.get_field(f.number))
}
