//! The `k8s\0` + `runtime.Unknown` envelope around every protobuf object,
//! written here and read by [`crate::to_json::decode_object`] (which an
//! embedded `RawExtension` recurses into).
//!
//! Verified in k8s.io/apimachinery@v0.32.4
//! pkg/runtime/serializer/protobuf/protobuf.go (`protoEncodingPrefix`,
//! `Serializer.doEncode`): the body is the 4 magic bytes `6b 38 73 00`
//! followed by a `runtime.Unknown` { typeMeta (1) { apiVersion (1), kind (2) },
//! raw (2), contentEncoding (3), contentType (4) }, and gogo's marshaller
//! always writes typeMeta, contentEncoding and contentType (empty strings
//! included), raw only when non-nil. `raw` is the object's own message, which
//! has no TypeMeta field (TypeMeta is `protobuf:"-"` in the Go types), so
//! apiVersion/kind live only in the envelope.

use serde_json::Value;

use crate::from_json;
use crate::path::Path;
use crate::schema;
use crate::wire::{self, MAGIC};
use crate::Error;

pub(crate) fn encode_object(object: &Value, path: &mut Path, depth: usize, lenient: bool) -> Result<Vec<u8>, Error> {
    let type_field = |name: &'static str| object.get(name).and_then(Value::as_str).ok_or(Error::MissingTypeMeta(name));
    let api_version = type_field("apiVersion")?;
    let kind = type_field("kind")?;
    let desc = schema::lookup(api_version, kind)?;
    let mut raw = Vec::new();
    from_json::message(&desc, object, path, depth, from_json::Mode { top_level: true, lenient }, &mut raw)?;

    let mut type_meta = Vec::new();
    wire::put_bytes(&mut type_meta, 1, api_version.as_bytes());
    wire::put_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = Vec::with_capacity(raw.len() + type_meta.len() + 16);
    out.extend_from_slice(MAGIC);
    wire::put_bytes(&mut out, 1, &type_meta);
    wire::put_bytes(&mut out, 2, &raw);
    // contentEncoding and contentType: empty, but Go always writes them.
    wire::put_bytes(&mut out, 3, b"");
    wire::put_bytes(&mut out, 4, b"");
    Ok(out)
}
