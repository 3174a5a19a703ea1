//! The decode stage of the request pipeline ([`crate::pipeline`]): what a
//! request addresses ([`Target`], parsed by hand rather than by the router's
//! pattern table: `/apis/{group}/{version}/{plural}/{name}` and
//! `/apis/{group}/{version}/namespaces/{ns}/{plural}` overlap, and one parser
//! gives every unknown path the same `NotFound` Status), its query, and its
//! body — bounded in size and time, JSON or YAML with YAML's depth and alias
//! expansion bounded before anything is built.

use crate::encode::OutputFormat;
use crate::{duplicates, yaml_budget};
use axum::body::{Body, Bytes};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, Method, StatusCode};
use ringleader_auth::Identity;
use ringleader_registry::resources::{self, ResourceType};
use ringleader_registry::status::{ApiError, Cause};
use serde_json::Value;
use std::collections::HashMap;

/// Bodies above this are refused (a large multi-document apply fits).
pub(crate) const MAX_BODY: usize = 64 << 20;

/// What a path addresses.
#[derive(Debug)]
pub(crate) enum Target {
    Collection {
        rt: &'static ResourceType,
        ns: Option<String>,
    },
    /// An object, or with [`Part::Status`] its `status` subresource.
    Object {
        rt: &'static ResourceType,
        ns: String,
        name: String,
        part: Part,
    },
    Log {
        ns: String,
        name: String,
    },
    BulkApply,
}

/// What a write through a path may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// The object (its `status` too).
    Whole,
    /// The `status` subresource: only `status` (and the `resourceVersion`
    /// precondition) is taken from the write, as kube-apiserver does.
    Status,
}

pub(crate) fn parse_path(path: &str) -> Result<Target, ApiError> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let no_route = || ApiError::no_route(path);
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(no_route()),
    };
    if (group, version, rest) == ("ringleader.io", "v1alpha1", &["apply"][..]) {
        return Ok(Target::BulkApply);
    }
    let lookup = |plural: &str| resources::by_path(group, version, plural).ok_or_else(no_route);
    let valid = |s: &str| !s.is_empty();
    match rest {
        ["namespaces", ns, "pods", name, "log"] if group.is_empty() && valid(ns) && valid(name) => {
            Ok(Target::Log { ns: ns.to_string(), name: name.to_string() })
        }
        // A namespace's own status: the one path where `namespaces/{name}`
        // is the object, not the scope.
        ["namespaces", name, "status"] if group.is_empty() && valid(name) => Ok(Target::Object {
            rt: resources::NAMESPACES,
            ns: String::new(),
            name: name.to_string(),
            part: Part::Status,
        }),
        ["namespaces", ns, plural] if valid(ns) => {
            let rt = lookup(plural)?;
            if !rt.namespaced {
                return Err(no_route());
            }
            Ok(Target::Collection { rt, ns: Some(ns.to_string()) })
        }
        ["namespaces", ns, plural, name, "status"] if valid(ns) && valid(name) => {
            let rt = lookup(plural)?;
            if !rt.namespaced || !rt.has_status() {
                return Err(no_route());
            }
            Ok(Target::Object { rt, ns: ns.to_string(), name: name.to_string(), part: Part::Status })
        }
        [plural, name, "status"] if valid(name) => {
            let rt = lookup(plural)?;
            if rt.namespaced || !rt.has_status() {
                return Err(no_route());
            }
            Ok(Target::Object { rt, ns: String::new(), name: name.to_string(), part: Part::Status })
        }
        ["namespaces", ns, plural, name] if valid(ns) && valid(name) => {
            let rt = lookup(plural)?;
            if !rt.namespaced {
                return Err(no_route());
            }
            Ok(Target::Object { rt, ns: ns.to_string(), name: name.to_string(), part: Part::Whole })
        }
        [plural] => Ok(Target::Collection { rt: lookup(plural)?, ns: None }),
        [plural, name] if valid(name) => {
            let rt = lookup(plural)?;
            if rt.namespaced {
                return Err(no_route());
            }
            Ok(Target::Object { rt, ns: String::new(), name: name.to_string(), part: Part::Whole })
        }
        _ => Err(no_route()),
    }
}

/// The whole body, or 413 once it passes `limit` bytes (a declared
/// Content-Length over the limit is refused before reading).
pub(crate) async fn read_body(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    use http_body_util::BodyExt;
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(ApiError::too_large(limit)),
        Err(e) => Err(ApiError::bad_request(format!("cannot read the request body: {e}"))),
    }
}

/// A request, decoded: its method, path and query, the encoding its answer
/// wants, who asks (set by the auth middleware), and its whole body, read
/// within `within` (a body trickled in slower holds a connection and its
/// buffer; the head already had its own timeout) and at most [`MAX_BODY`].
pub(crate) async fn request(request: axum::extract::Request, within: std::time::Duration) -> Result<Req, ApiError> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let query: HashMap<String, String> =
        axum::extract::Query::<HashMap<String, String>>::try_from_uri(&parts.uri).map(|q| q.0).unwrap_or_default();
    let format = OutputFormat::of(&parts.headers, &query);
    let bytes = match tokio::time::timeout(within, read_body(body, MAX_BODY)).await {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err(ApiError::body_timeout(within)),
    };
    let identity = parts.extensions.get::<Identity>().cloned();
    Ok(Req { method: parts.method, path, query, headers: parts.headers, body: bytes, format, identity })
}

pub(crate) struct Req {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) query: HashMap<String, String>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) format: OutputFormat,
    /// Who asks (set by the auth middleware).
    pub(crate) identity: Option<Identity>,
}

impl Req {
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    pub(crate) fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("true" | "1" | ""))
    }

    pub(crate) fn content_type(&self) -> &str {
        self.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    /// `dryRun=All`: true; absent: false; any other value is refused with
    /// the options kind of the verb named, as kube-apiserver does.
    pub(crate) fn dry_run(&self, options: &str) -> Result<bool, ApiError> {
        match self.param("dryRun") {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => {
                let message = format!("Unsupported value: []string{{{other:?}}}: supported values: \"All\"");
                let mut e = ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Invalid",
                    format!("{options}.meta.k8s.io \"\" is invalid: dryRun: {message}"),
                );
                e.kind = Some(format!("{options}.meta.k8s.io"));
                e.name = Some(String::new());
                e.causes.push(Cause { field: "dryRun".into(), message, reason: "FieldValueNotSupported".into() });
                Err(e)
            }
        }
    }

    pub(crate) fn u64_param(&self, name: &str) -> Result<Option<u64>, ApiError> {
        match self.param(name) {
            None | Some("") => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| ApiError::bad_field(name, format!("{v:?} is not a non-negative integer"))),
        }
    }
}

/// Whether a body is JSON or YAML.
fn is_yaml(content_type: &str, body: &[u8]) -> bool {
    let ct = content_type.to_ascii_lowercase();
    if ct.contains("yaml") {
        return true;
    }
    if ct.contains("json") {
        return false;
    }
    body.iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|b| *b != b'{' && *b != b'[')
}

/// Deepest `[`/`{` nesting a YAML body may have.
const MAX_FLOW_DEPTH: usize = 1000;

/// Refuses YAML nested deeper than [`MAX_FLOW_DEPTH`] before parsing it: the
/// YAML scanner's time grows with the square of the depth, so a small body of
/// brackets would otherwise hold a worker for minutes. Brackets inside
/// strings count too, which only errs on the side of refusing.
pub(crate) fn check_yaml_depth(text: &str) -> Result<(), ApiError> {
    let mut depth = 0usize;
    for b in text.bytes() {
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_FLOW_DEPTH {
                    return Err(ApiError::bad_field(
                        "body",
                        format!("nested deeper than {MAX_FLOW_DEPTH} levels of [ and {{"),
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Parses a one-object body, JSON or YAML by Content-Type (sniffed when
/// absent), with the paths of the keys it has twice. A YAML body's alias
/// expansion is bounded ([`yaml_budget`]) before anything is built.
pub(crate) fn parse_value(content_type: &str, body: &[u8]) -> Result<(Value, Vec<String>), ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_field("body", "required: send the object as JSON or YAML"));
    }
    // Kubernetes' protobuf encoding: kubectl's typed clients (`kubectl create
    // configmap|namespace|…`, `run`) and Kubernetes' own components send it
    // for the built-in kinds.
    if is_protobuf(content_type) {
        let value = ringleader_protobuf::decode(body).map_err(|e| protobuf_refusal(content_type, e))?;
        return Ok((value, Vec::new()));
    }
    let (value, dups) = if is_yaml(content_type, body) {
        let text = std::str::from_utf8(body).map_err(|e| ApiError::bad_field("body", format!("not UTF-8: {e}")))?;
        check_yaml_depth(text)?;
        yaml_budget::check(text)?;
        duplicates::from_yaml(text).map_err(|e| ApiError::bad_field("body", format!("not valid YAML: {e}")))?
    } else {
        duplicates::from_json(body).map_err(|e| ApiError::bad_field("body", format!("not valid JSON: {e}")))?
    };
    if !value.is_object() {
        return Err(ApiError::bad_field("body", "must be an object with apiVersion, kind and metadata"));
    }
    Ok((value, dups))
}

pub(crate) fn body(req: &Req) -> Result<(Value, Vec<String>), ApiError> {
    parse_value(req.content_type(), &req.body)
}

/// Whether a `Content-Type` is Kubernetes' protobuf encoding.
pub(crate) fn is_protobuf(content_type: &str) -> bool {
    content_type.trim().to_ascii_lowercase().starts_with(ringleader_protobuf::MEDIA_TYPE)
}

/// A protobuf body that cannot be read: 415 for a kind that has no
/// protobuf message (custom resources are JSON, as on Kubernetes), 400 for
/// a body that is not a well-formed object of its kind.
fn protobuf_refusal(content_type: &str, e: ringleader_protobuf::Error) -> ApiError {
    match e {
        ringleader_protobuf::Error::UnknownKind { .. } => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!("the body of content type {content_type:?} cannot be read: {e}; send this kind as application/json or application/yaml"),
        ),
        e => ApiError::bad_request(format!("the object provided is unrecognized: {e}")),
    }
}

/// The `DeleteOptions` (or other options) in a request's body, in whichever
/// encoding it came; `null` when there are none or they cannot be read
/// (the query's options still apply).
pub(crate) fn options(req: &Req) -> Value {
    if is_protobuf(req.content_type()) {
        return ringleader_protobuf::decode(&req.body).unwrap_or(Value::Null);
    }
    serde_json::from_slice::<Value>(&req.body).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse() {
        assert!(matches!(parse_path("/api/v1/namespaces/a/pods"), Ok(Target::Collection { ns: Some(_), .. })));
        assert!(matches!(parse_path("/api/v1/namespaces"), Ok(Target::Collection { ns: None, .. })));
        assert!(matches!(parse_path("/api/v1/namespaces/a"), Ok(Target::Object { part: Part::Whole, .. })));
        assert!(matches!(
            parse_path("/api/v1/namespaces/a/status"),
            Ok(Target::Object { rt, part: Part::Status, .. }) if rt == resources::NAMESPACES
        ));
        assert!(matches!(parse_path("/api/v1/pods"), Ok(Target::Collection { ns: None, .. })));
        assert!(matches!(parse_path("/api/v1/namespaces/a/pods/p/log"), Ok(Target::Log { .. })));
        assert!(matches!(parse_path("/apis/ringleader.io/v1alpha1/nodes/n1"), Ok(Target::Object { .. })));
        assert!(matches!(parse_path("/apis/ringleader.io/v1alpha1/apply"), Ok(Target::BulkApply)));
        assert!(parse_path("/apis/ringleader.io/v1alpha1/namespaces/a/nodes").is_err());
        assert!(parse_path("/api/v1/pods/p").is_err());
        assert!(parse_path("/api/v1/widgets").is_err());
        assert!(parse_path("/nothing").is_err());
    }
}
