//! The encode stage of the request pipeline ([`crate::pipeline`]): an answer
//! as JSON, YAML or a `meta.k8s.io` Table, as the request asked.

use axum::body::{Body, Bytes};
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use ringleader_registry::status::ApiError;
use serde_json::Value;
use std::collections::HashMap;

/// JSON, or YAML when asked for with `?output=yaml` or `Accept: application/yaml`,
/// or a `meta.k8s.io` Table when `Accept` asks `as=Table` (kubectl's `get`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputFormat {
    Json,
    /// Kubernetes' protobuf (`Accept` names it first), for the kinds that
    /// have a message; others (custom resources) answer JSON, which the
    /// client's `*/*` or `application/json` fallback takes, as from
    /// kube-apiserver.
    Protobuf,
    Yaml,
    /// `include` is `None` when `?includeObject=` names no known value.
    Table {
        version: &'static str,
        include: Option<crate::table::IncludeObject>,
    },
}

impl OutputFormat {
    pub(crate) fn of(headers: &HeaderMap, query: &HashMap<String, String>) -> OutputFormat {
        let accept = headers.get(ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
        if let Some(version) = crate::table::requested_version(accept) {
            let include = crate::table::IncludeObject::parse(query.get("includeObject").map(String::as_str)).ok();
            return OutputFormat::Table { version, include };
        }
        let first = accept.split(',').next().unwrap_or_default().trim();
        if first.to_ascii_lowercase().starts_with(ringleader_protobuf::MEDIA_TYPE) {
            return OutputFormat::Protobuf;
        }
        let yaml = query.get("output").is_some_and(|o| o.eq_ignore_ascii_case("yaml"))
            || (accept.contains("yaml") && !accept.contains("json"));
        if yaml {
            OutputFormat::Yaml
        } else {
            OutputFormat::Json
        }
    }

    /// The body of `value` in this format, ready to send.
    pub(crate) fn encode(self, value: Value) -> Result<Encoded, ApiError> {
        let json = |v: &Value| {
            serde_json::to_vec(v)
                .map(|body| Encoded { content_type: "application/json", body })
                .map_err(|e| ApiError::internal(format!("cannot render JSON: {e}")))
        };
        match self {
            OutputFormat::Json => json(&value),
            OutputFormat::Protobuf => match protobuf(&value) {
                Some(body) => Ok(Encoded { content_type: ringleader_protobuf::MEDIA_TYPE, body }),
                None => json(&value),
            },
            OutputFormat::Table { version, include } => match include {
                Some(include) => json(&crate::table::render(value, include, version, ringleader_api::time::now())),
                None => Err(ApiError::bad_field("includeObject", "must be one of None, Metadata, Object")),
            },
            OutputFormat::Yaml => serde_yaml_ng::to_string(&value)
                .map(|text| Encoded { content_type: "application/yaml", body: text.into_bytes() })
                .map_err(|e| ApiError::internal(format!("cannot render YAML: {e}"))),
        }
    }

    pub(crate) fn respond(self, code: StatusCode, value: &Value) -> Response {
        match self {
            OutputFormat::Json => (code, axum::Json(value)).into_response(),
            OutputFormat::Protobuf => match protobuf(value) {
                Some(body) => (code, [(CONTENT_TYPE, ringleader_protobuf::MEDIA_TYPE)], body).into_response(),
                None => (code, axum::Json(value)).into_response(),
            },
            OutputFormat::Table { version, include } => match include {
                Some(include) => {
                    let now = ringleader_api::time::now();
                    (code, axum::Json(crate::table::render(value.clone(), include, version, now))).into_response()
                }
                None => ApiError::bad_field("includeObject", "must be one of None, Metadata, Object").into_response(),
            },
            OutputFormat::Yaml => match serde_yaml_ng::to_string(value) {
                Ok(text) => (code, [(CONTENT_TYPE, "application/yaml")], text).into_response(),
                Err(e) => ApiError::internal(format!("cannot render YAML: {e}")).into_response(),
            },
        }
    }
}

/// `value` in protobuf, when its kind has a message. Fields of ringleader's
/// own that the Kubernetes type lacks (a batch Job's `replicaStatuses`) are
/// left out, as a client decoding into that type drops them; a value that
/// does not fit its type at all is answered in JSON, and named in the log.
pub(crate) fn protobuf(value: &Value) -> Option<Vec<u8>> {
    let s = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or_default();
    if !ringleader_protobuf::supports(s("apiVersion"), s("kind")) {
        return None;
    }
    match ringleader_protobuf::encode_lenient(value) {
        Ok(body) => Some(body),
        Err(e) => {
            tracing::warn!(kind = s("kind"), "answered in JSON, not protobuf: {e}");
            None
        }
    }
}

/// A response body already encoded (see [`OutputFormat::encode`]).
pub(crate) struct Encoded {
    content_type: &'static str,
    body: Vec<u8>,
}

impl Encoded {
    pub(crate) fn into_response(self, code: StatusCode) -> Response {
        (code, [(CONTENT_TYPE, self.content_type)], self.body).into_response()
    }
}

/// A body for a streamed response.
pub(crate) fn stream_body<S>(stream: S) -> Body
where
    S: futures_util::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static,
{
    Body::from_stream(stream)
}
