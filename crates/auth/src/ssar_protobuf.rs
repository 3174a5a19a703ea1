//! The protobuf bodies the server decodes: a SelfSubjectAccessReview (and
//! the namespace of a SelfSubjectRulesReview), as
//! `kubectl auth can-i` sends it (`application/vnd.kubernetes.protobuf`,
//! with no JSON fallback). Kubernetes wraps the message in its envelope
//! (`k8s\0` then a `runtime.Unknown` whose field 2 holds the object's
//! bytes); the review needs only strings from three nested messages, so a
//! wire-format reader of a few lines does it instead of generated code.

use serde_json::{json, Map, Value};

/// The envelope's magic prefix.
const MAGIC: &[u8] = b"k8s\0";
/// Deepest nesting read (the review's strings sit at depth 3).
const MAX_DEPTH: usize = 4;

/// One field: its number and, for length-delimited ones, the bytes.
struct Field<'a> {
    number: u64,
    bytes: Option<&'a [u8]>,
}

fn varint(buf: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*at).ok_or("truncated varint")?;
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("varint longer than 10 bytes".into())
}

fn fields(buf: &[u8]) -> Result<Vec<Field<'_>>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < buf.len() {
        let key = varint(buf, &mut at)?;
        let number = key >> 3;
        match key & 7 {
            0 => {
                varint(buf, &mut at)?;
                out.push(Field { number, bytes: None });
            }
            1 => at = at.checked_add(8).filter(|&e| e <= buf.len()).ok_or("truncated fixed64")?,
            2 => {
                let len = usize::try_from(varint(buf, &mut at)?).map_err(|_| "length too large")?;
                let end = at.checked_add(len).filter(|&e| e <= buf.len()).ok_or("truncated field")?;
                out.push(Field { number, bytes: Some(&buf[at..end]) });
                at = end;
            }
            5 => at = at.checked_add(4).filter(|&e| e <= buf.len()).ok_or("truncated fixed32")?,
            other => return Err(format!("wire type {other} is not supported")),
        }
    }
    Ok(out)
}

/// The bytes of field `number` (the last one, as protobuf merges).
fn message(buf: &[u8], number: u64) -> Result<Option<&[u8]>, String> {
    Ok(fields(buf)?.into_iter().filter(|f| f.number == number).filter_map(|f| f.bytes).next_back())
}

/// The string fields of a message, by the names their numbers stand for.
fn strings(buf: &[u8], names: &[(u64, &str)], depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err("nested too deep".into());
    }
    let mut map = Map::new();
    for f in fields(buf)? {
        let (Some(bytes), Some((_, name))) = (f.bytes, names.iter().find(|(n, _)| *n == f.number)) else {
            continue;
        };
        let text = std::str::from_utf8(bytes).map_err(|_| format!("{name}: not UTF-8"))?;
        map.insert((*name).to_string(), json!(text));
    }
    Ok(Value::Object(map))
}

/// The JSON form of a protobuf SelfSubjectAccessReview.
pub fn review(body: &[u8]) -> Result<Value, String> {
    let inner = body.strip_prefix(MAGIC).ok_or("not a Kubernetes protobuf envelope (no k8s\\0 prefix)")?;
    let object = message(inner, 2)?.ok_or("the envelope holds no object")?;
    let spec = message(object, 2)?.unwrap_or_default();
    let mut out = Map::new();
    if let Some(r) = message(spec, 1)? {
        let names = [
            (1, "namespace"),
            (2, "verb"),
            (3, "group"),
            (4, "version"),
            (5, "resource"),
            (6, "subresource"),
            (7, "name"),
        ];
        out.insert("resourceAttributes".into(), strings(r, &names, 3)?);
    }
    if let Some(n) = message(spec, 2)? {
        out.insert("nonResourceAttributes".into(), strings(n, &[(1, "path"), (2, "verb")], 3)?);
    }
    Ok(json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": out}))
}

/// `spec.namespace` of a protobuf SelfSubjectRulesReview (`kubectl auth
/// can-i --list` sends it as it sends the access review).
pub fn rules_review_namespace(body: &[u8]) -> Result<String, String> {
    let inner = body.strip_prefix(MAGIC).ok_or("not a Kubernetes protobuf envelope (no k8s\\0 prefix)")?;
    let object = message(inner, 2)?.ok_or("the envelope holds no object")?;
    let spec = message(object, 2)?.unwrap_or_default();
    let fields = strings(spec, &[(1, "namespace")], 2)?;
    Ok(fields.get("namespace").and_then(Value::as_str).unwrap_or_default().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(number << 3) | 2, u8::try_from(bytes.len()).unwrap_or(0)];
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn reads_what_kubectl_sends() {
        let attrs = [field(1, b"team-a"), field(2, b"list"), field(5, b"pods"), field(4, b"")].concat();
        let spec = field(1, &attrs);
        let object = [field(1, b""), field(2, &spec)].concat();
        let unknown = [
            field(1, &[field(1, b"authorization.k8s.io/v1"), field(2, b"SelfSubjectAccessReview")].concat()),
            field(2, &object),
        ]
        .concat();
        let body = [MAGIC, &unknown].concat();
        let v = review(&body).unwrap_or_default();
        assert_eq!(
            v["spec"]["resourceAttributes"],
            json!({"namespace": "team-a", "verb": "list", "resource": "pods", "version": ""})
        );
        assert!(review(b"{}").is_err());
        assert!(review(&[MAGIC, &[0x12, 0x40][..]].concat()).unwrap_err().contains("truncated"));
    }
}
