//! Server-side field validation (`?fieldValidation=Strict|Warn|Ignore`), as
//! kube-apiserver does it: a written object is walked against its kind's
//! OpenAPI schema ([`crate::openapi::catalog`]) and every field the schema
//! does not declare is reported by its dotted path
//! (`spec.pytorchReplicaSpecs.Master.replica`, map keys as written, list
//! items as `[i]`). Strict refuses the write with kube-apiserver's "strict
//! decoding error"; Warn (the default) answers a `Warning: 299` header per
//! field; Ignore says nothing. Keys a body has twice ([`crate::duplicates`])
//! are reported the same way, as `duplicate field "…"`.
//!
//! It exists because kubectl's `apply` and `create` default to
//! `--validate=strict` and, seeing `fieldValidation` on the PATCH operation
//! of the OpenAPI v3 document, leave the check to the server instead of
//! fetching the protobuf `/openapi/v2` this server does not serve. Unknown
//! fields are reported, never dropped: the store keeps objects as sent.

use crate::openapi::{catalog, Catalog};
use axum::http::header::WARNING;
use axum::http::HeaderValue;
use axum::response::Response;
use ringleader_registry::resources::ResourceType;
use ringleader_registry::status::{ApiError, Cause};
use serde_json::{Map, Value};

/// The values `fieldValidation` takes (`""` means Warn).
const DIRECTIVES: &str = "\"Ignore\", \"Strict\", \"Warn\"";
/// How deep `$ref`/`allOf` chains are followed for one value (a guard
/// against a schema that refers to itself without nesting).
const MAX_HOPS: usize = 32;

/// What `fieldValidation` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Directive {
    Ignore,
    Warn,
    Strict,
}

impl Directive {
    /// The query value; absent or empty is Warn, as in kube-apiserver.
    pub(crate) fn parse(value: Option<&str>) -> Result<Directive, ApiError> {
        match value {
            None | Some("") | Some("Warn") => Ok(Directive::Warn),
            Some("Ignore") => Ok(Directive::Ignore),
            Some("Strict") => Ok(Directive::Strict),
            Some(other) => {
                let message = format!("Unsupported value: {other:?}: supported values: {DIRECTIVES}");
                let mut e = ApiError::bad_request(format!("fieldValidation: {message}"));
                e.causes.push(Cause {
                    field: "fieldValidation".into(),
                    message,
                    reason: "FieldValueNotSupported".into(),
                });
                Err(e)
            }
        }
    }
}

/// Checks an object about to be created or replaced, and the keys its body
/// had twice ([`crate::duplicates`]): the warnings to send back, or 400
/// under Strict.
pub(crate) fn check(
    rt: &ResourceType,
    object: &Value,
    duplicates: &[String],
    directive: Option<&str>,
) -> Result<Vec<String>, ApiError> {
    let directive = Directive::parse(directive)?;
    if directive == Directive::Ignore {
        return Ok(Vec::new());
    }
    decide(rt, directive, problems(unknown_fields(rt, object), duplicates))
}

/// Unknown fields then duplicate keys, as kube-apiserver words them.
fn problems(unknown: Vec<String>, duplicates: &[String]) -> Vec<String> {
    let unknown = unknown.into_iter().map(|f| format!("unknown field {f:?}"));
    unknown.chain(duplicates.iter().map(|f| format!("duplicate field {f:?}"))).collect()
}

/// Checks the result of a patch. Only fields the patch brought in count:
/// the store keeps what earlier writes sent under Warn or Ignore, and a
/// later strict `kubectl apply` must not fail on those.
pub(crate) fn check_patch(
    rt: &ResourceType,
    before: &Value,
    after: &Value,
    duplicates: &[String],
    directive: Option<&str>,
) -> Result<Vec<String>, ApiError> {
    let directive = Directive::parse(directive)?;
    if directive == Directive::Ignore {
        return Ok(Vec::new());
    }
    let old = unknown_fields(rt, before);
    let new = unknown_fields(rt, after).into_iter().filter(|f| !old.contains(f)).collect();
    decide(rt, directive, problems(new, duplicates))
}

/// `problems` are whole phrases (`unknown field "x"`).
fn decide(rt: &ResourceType, directive: Directive, problems: Vec<String>) -> Result<Vec<String>, ApiError> {
    if problems.is_empty() || directive != Directive::Strict {
        return Ok(problems);
    }
    Err(ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
        problems.join(", "),
        kind = rt.kind,
        version = rt.version,
    )))
}

/// Adds one `Warning: 299 - "unknown field \"…\""` header per problem.
pub(crate) fn warn(mut response: Response, problems: &[String]) -> Response {
    for text in problems {
        let value = format!("299 - {:?}", printable(text));
        if let Ok(v) = HeaderValue::from_str(&value) {
            response.headers_mut().append(WARNING, v);
        }
    }
    response
}

/// Header values are visible ASCII: anything else becomes `?`.
fn printable(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).collect()
}

/// Dotted paths of the fields of `object` that its kind's schema does not
/// declare, in document order. A kind without a schema declares anything.
pub(crate) fn unknown_fields(rt: &ResourceType, object: &Value) -> Vec<String> {
    let catalog = catalog();
    let mut out = Vec::new();
    if let Some(root) = catalog.root(rt) {
        walk(catalog, root, object, "", &mut out);
    }
    out
}

/// What a schema says about the values it admits, with `$ref`s and `allOf`
/// members merged in.
#[derive(Default)]
struct Shape<'a> {
    properties: Vec<&'a Map<String, Value>>,
    /// A schema every undeclared key's value must match.
    additional: Option<&'a Value>,
    /// Any key goes (`additionalProperties: true`, or preserve-unknown-fields).
    open: bool,
    items: Option<&'a Value>,
}

fn shape<'a>(catalog: &'a Catalog, schema: &'a Value, out: &mut Shape<'a>, hops: usize) {
    let Some(map) = schema.as_object() else {
        return;
    };
    if hops > MAX_HOPS {
        out.open = true;
        return;
    }
    if map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        out.open = true;
    }
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        match catalog.resolve(reference) {
            Some(target) => shape(catalog, target, out, hops + 1),
            // A reference we cannot follow declares nothing we can check.
            None => out.open = true,
        }
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        out.properties.push(props);
    }
    match map.get("additionalProperties") {
        Some(Value::Bool(true)) => out.open = true,
        Some(sub @ Value::Object(_)) => out.additional = out.additional.or(Some(sub)),
        _ => {}
    }
    if let Some(items) = map.get("items").filter(|i| i.is_object()) {
        out.items = out.items.or(Some(items));
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(members)) = map.get(key) {
            for member in members {
                shape(catalog, member, out, hops + 1);
            }
        }
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(catalog: &Catalog, schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    let mut s = Shape::default();
    shape(catalog, schema, &mut s, 0);
    if s.open {
        return;
    }
    match value {
        Value::Object(fields) => {
            // An object schema that declares no properties and no value
            // schema (FieldsV1, RawExtension) is free-form.
            if s.properties.is_empty() && s.additional.is_none() {
                return;
            }
            for (key, v) in fields {
                let sub = s.properties.iter().find_map(|p| p.get(key)).or(s.additional);
                match sub {
                    Some(sub) => walk(catalog, sub, v, &child(path, key), out),
                    None => out.push(child(path, key)),
                }
            }
        }
        Value::Array(list) => {
            if let Some(items) = s.items {
                for (i, v) in list.iter().enumerate() {
                    walk(catalog, items, v, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_registry::resources::{find, PODS};
    use serde_json::json;

    fn pytorchjob(master: Value) -> Value {
        json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "a"},
            "spec": {"pytorchReplicaSpecs": {"Master": master}}})
    }

    #[test]
    fn undeclared_fields_are_named_by_path() {
        let rt = find("pytorchjob").copied().unwrap_or(*PODS);
        let o = pytorchjob(json!({"replica": 1, "template": {"spec": {"containers": [{"name": "c", "imagee": "x"}]}}}));
        assert_eq!(
            unknown_fields(&rt, &o),
            [
                "spec.pytorchReplicaSpecs.Master.replica",
                "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].imagee"
            ]
        );
        let ok = pytorchjob(json!({"replicas": 1, "restartPolicy": "OnFailure",
            "template": {"metadata": {"labels": {"a": "b"}, "annotations": {"x": "y"}},
                "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}}));
        assert!(unknown_fields(&rt, &ok).is_empty(), "{:?}", unknown_fields(&rt, &ok));
    }

    #[test]
    fn status_and_metadata_the_server_writes_are_declared() {
        let rt = find("pytorchjob").copied().unwrap_or(*PODS);
        let mut o = pytorchjob(json!({"replicas": 1}));
        o["metadata"] = json!({"name": "a", "namespace": "default", "uid": "u", "resourceVersion": "3",
            "creationTimestamp": "2024-01-01T00:00:00Z", "generation": 1,
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:x": {}}}}]});
        o["status"] = json!({"conditions": [{"type": "Running"}], "anything": {"goes": 1}});
        assert!(unknown_fields(&rt, &o).is_empty(), "{:?}", unknown_fields(&rt, &o));
    }

    #[test]
    fn directives() {
        assert_eq!(Directive::parse(None).ok(), Some(Directive::Warn));
        assert_eq!(Directive::parse(Some("Strict")).ok(), Some(Directive::Strict));
        let e = Directive::parse(Some("strict")).err().map(|e| e.message).unwrap_or_default();
        assert!(e.contains("fieldValidation") && e.contains("\"Strict\""), "{e}");
        let rt = find("pytorchjob").copied().unwrap_or(*PODS);
        let o = pytorchjob(json!({"replica": 1, "foo": 2}));
        let e = check(&rt, &o, &[], Some("Strict")).err().map(|e| e.message).unwrap_or_default();
        assert_eq!(
            e,
            "PyTorchJob in version \"v1\" cannot be handled as a PyTorchJob: strict decoding error: \
             unknown field \"spec.pytorchReplicaSpecs.Master.foo\", unknown field \"spec.pytorchReplicaSpecs.Master.replica\""
        );
        assert_eq!(check(&rt, &o, &[], Some("Ignore")).ok(), Some(vec![]));
        assert_eq!(check(&rt, &o, &[], None).ok().map(|w| w.len()), Some(2));
        let dups = ["metadata.name".to_string()];
        let w = check(&rt, &o, &dups, None).unwrap_or_default();
        assert_eq!(w.last().map(String::as_str), Some("duplicate field \"metadata.name\""));
        let e = check(&rt, &pytorchjob(json!({})), &dups, Some("Strict")).err().map(|e| e.message);
        assert!(e.is_some_and(|e| e.ends_with("strict decoding error: duplicate field \"metadata.name\"")));
        // A patch is blamed only for what it adds.
        let after = pytorchjob(json!({"replica": 1, "foo": 2, "bar": 3}));
        let w = check_patch(&rt, &o, &after, &[], Some("Strict")).err().map(|e| e.message).unwrap_or_default();
        assert!(w.ends_with("unknown field \"spec.pytorchReplicaSpecs.Master.bar\""), "{w}");
    }
}
