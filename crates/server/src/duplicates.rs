//! Decoding a JSON or YAML body into a `serde_json::Value` while noting
//! every key a mapping has twice. A plain decode keeps the last value
//! silently; kube-apiserver reports `duplicate field "spec.replicas"` as a
//! strict decoding error under `fieldValidation=Strict` and as a warning
//! under Warn, and [`crate::fields`] does the same with the paths found here.
//!
//! One pass: the seed below builds the value exactly as `Value`'s own
//! visitor would (keys as strings, last value wins), only remembering the
//! keys it has seen in each mapping.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::fmt;

/// The value of one document and the dotted paths of its duplicate keys,
/// in document order (list items as `[i]`, as [`crate::fields`] names them).
pub(crate) fn decode<'de, D: Deserializer<'de>>(de: D) -> Result<(Value, Vec<String>), D::Error> {
    let mut found = Vec::new();
    let value = Node { path: String::new(), found: &mut found }.deserialize(de)?;
    Ok((value, found))
}

/// A JSON text, with its duplicate keys.
pub(crate) fn from_json(body: &[u8]) -> Result<(Value, Vec<String>), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let out = decode(&mut de)?;
    de.end()?;
    Ok(out)
}

/// A one-document YAML text, with its duplicate keys.
pub(crate) fn from_yaml(text: &str) -> Result<(Value, Vec<String>), serde_yaml_ng::Error> {
    decode(serde_yaml_ng::Deserializer::from_str(text))
}

struct Node<'a> {
    path: String,
    found: &'a mut Vec<String>,
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // As serde_json's own visitor: a non-finite float becomes null.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) =
            seq.next_element_seed(Node { path: format!("{}[{}]", self.path, items.len()), found: &mut *self.found })?
        {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = child(&self.path, &key);
            let value = map.next_value_seed(Node { path: path.clone(), found: &mut *self.found })?;
            if !seen.insert(key.clone()) && !self.found.contains(&path) {
                self.found.push(path);
            }
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_duplicates_are_named_by_path() {
        let body =
            br#"{"metadata": {"name": "a", "name": "b"}, "spec": {"list": [{"x": 1, "x": 2}]}, "spec": {"r": 1}}"#;
        let (value, dups) = from_json(body).unwrap_or_default();
        assert_eq!(dups, ["metadata.name", "spec.list[0].x", "spec"]);
        // Last wins, as a plain decode.
        assert_eq!(value, json!({"metadata": {"name": "b"}, "spec": {"r": 1}}));
    }

    #[test]
    fn yaml_duplicates_are_named_by_path() {
        let (value, dups) = from_yaml("a: 1\nb:\n  c: x\n  c: y\na: 2\n").unwrap_or_default();
        assert_eq!(dups, ["b.c", "a"]);
        assert_eq!(value, json!({"a": 2, "b": {"c": "y"}}));
    }

    #[test]
    fn values_match_a_plain_decode() {
        let text = "a: [1, -2, 2.5, true, null, ~, 'x']\nb: {c: 1e3}\nn: 18446744073709551615\n";
        let plain: Value = serde_yaml_ng::from_str(text).unwrap_or_default();
        assert_eq!(from_yaml(text).map(|(v, _)| v).unwrap_or_default(), plain);
        let json = br#"{"a": [1, -2, 2.5e10, "s", null, {"b": {}}]}"#;
        let plain: Value = serde_json::from_slice(json).unwrap_or_default();
        assert_eq!(from_json(json).map(|(v, _)| v).unwrap_or_default(), plain);
        assert!(from_json(b"{} x").is_err());
    }
}
