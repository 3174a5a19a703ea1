//! `limit`, `continue`, `resourceVersion` and `resourceVersionMatch` of a
//! list, with Kubernetes' meaning. The continue token is opaque to clients:
//! URL-safe base64 of `{"v":"meta.k8s.io/v1","rv":<list version>,"start":<last key>}`,
//! as kube-apiserver's tokens are base64 JSON of the version and the key.

use axum::http::StatusCode;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ringleader_registry::status::{ApiError, Cause};
use ringleader_store::ObjectKey;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The store key a page resumes after, as it travels in a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Start {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    namespace: String,
    name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Token {
    v: String,
    rv: u64,
    start: Start,
}

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

/// The token that continues a list read at `version` after `last`.
pub fn encode_continue(version: u64, last: &ObjectKey) -> String {
    let token = Token {
        v: TOKEN_VERSION.to_string(),
        rv: version,
        start: Start {
            api_version: last.api_version.clone(),
            kind: last.kind.clone(),
            namespace: last.namespace.clone(),
            name: last.name.clone(),
        },
    };
    // Serializing plain strings and integers cannot fail.
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

fn bad_continue(value: &str, why: &str) -> ApiError {
    let message = format!("continue key is not valid: {why}");
    let mut e = ApiError::bad_request(format!("continue: Invalid value: {value:?}: {message}"));
    e.causes.push(Cause { field: "continue".into(), message, reason: "FieldValueInvalid".into() });
    e
}

/// A token's list version and key; it must belong to `api_version`/`kind`.
pub fn decode_continue(value: &str, api_version: &str, kind: &str) -> Result<(u64, ObjectKey), ApiError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(value.trim_end_matches('='))
        .map_err(|e| bad_continue(value, &format!("illegal base64 data: {e}")))?;
    let token: Token = serde_json::from_slice(&bytes).map_err(|e| bad_continue(value, &e.to_string()))?;
    if token.v != TOKEN_VERSION {
        return Err(bad_continue(value, &format!("incorrect encoded start resourceVersion (version {})", token.v)));
    }
    if token.start.api_version != api_version || token.start.kind != kind {
        return Err(bad_continue(value, "the token was issued for another resource"));
    }
    let s = token.start;
    Ok((token.rv, ObjectKey { api_version: s.api_version, kind: s.kind, namespace: s.namespace, name: s.name }))
}

/// What a list asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListParams {
    /// At most this many items (`limit=0` or absent: all).
    pub limit: Option<usize>,
    /// Resume after this key, for the list read at this version.
    pub after: Option<(u64, ObjectKey)>,
    /// `resourceVersion`, when a specific one was asked for.
    pub version: Option<u64>,
    /// `resourceVersionMatch=Exact`.
    pub exact: bool,
}

fn invalid_option(field: &str, message: String) -> ApiError {
    let mut e = ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        format!("ListOptions.meta.k8s.io \"\" is invalid: {field}: {message}"),
    );
    e.kind = Some("ListOptions.meta.k8s.io".into());
    e.name = Some(String::new());
    e.causes.push(Cause { field: field.into(), message, reason: "FieldValueInvalid".into() });
    e
}

/// A `resourceVersion` parameter: a decimal the store can hold (SQLite's
/// signed 64 bits), else 400 as kube-apiserver answers an unparsable one.
pub(crate) fn parse_version(v: &str) -> Result<u64, ApiError> {
    v.parse::<u64>().ok().filter(|n| i64::try_from(*n).is_ok()).ok_or_else(|| {
        ApiError::bad_request(format!(
            "resourceVersion: Invalid value: {v:?}: must be a resource version (an integer from 0 to {})",
            i64::MAX
        ))
    })
}

impl ListParams {
    /// Reads the list parameters of a query for a resource.
    pub fn parse(query: &HashMap<String, String>, api_version: &str, kind: &str) -> Result<ListParams, ApiError> {
        let get = |k: &str| query.get(k).map(String::as_str).filter(|v| !v.is_empty());
        let limit = match get("limit") {
            None => None,
            Some(v) => match v.parse::<i64>() {
                Ok(n) if n > 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
                Ok(_) => None,
                Err(_) => return Err(ApiError::bad_field("limit", format!("{v:?} is not an integer"))),
            },
        };
        let after = get("continue").map(|c| decode_continue(c, api_version, kind)).transpose()?;
        let version = match get("resourceVersion") {
            None => None,
            Some(v) => Some(parse_version(v)?),
        };
        let exact = match get("resourceVersionMatch") {
            None => false,
            Some(_) if version.is_none() => {
                return Err(invalid_option(
                    "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".into(),
                ))
            }
            Some(_) if after.is_some() => {
                return Err(invalid_option(
                    "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch is forbidden when continue is provided".into(),
                ))
            }
            Some("Exact") => true,
            Some("NotOlderThan") => false,
            Some(other) => {
                return Err(invalid_option(
                    "resourceVersionMatch",
                    format!("Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""),
                ))
            }
        };
        if after.is_some() && version.is_some_and(|v| v != 0) {
            return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
        }
        Ok(ListParams { limit, after, version, exact })
    }

    /// Whether a list read at `current` honours the version asked for: the
    /// store serves only its latest state, so `Exact` must name it and
    /// `NotOlderThan` (the default) must not be ahead of it.
    pub fn check_version(&self, current: u64) -> Result<(), ApiError> {
        match self.version {
            None | Some(0) if !self.exact => Ok(()),
            Some(v) if self.exact && v != current => Err(ApiError::new(
                StatusCode::GONE,
                "Expired",
                format!("The resourceVersion for the provided list is too old (asked {v}, only {current} is kept)."),
            )),
            Some(v) if v > current => {
                let mut e = ApiError::new(
                    StatusCode::GATEWAY_TIMEOUT,
                    "Timeout",
                    format!("Timeout: Too large resource version: {v}, current: {current}"),
                );
                e.causes.push(Cause {
                    field: String::new(),
                    message: "Too large resource version".into(),
                    reason: "ResourceVersionTooLarge".into(),
                });
                Err(e)
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn tokens_round_trip_and_are_checked() {
        let key = ObjectKey::new("v1", "Pod", "ns", "p-1");
        let t = encode_continue(42, &key);
        assert!(!t.contains('/') && !t.contains('+') && !t.contains('='), "{t}");
        assert_eq!(decode_continue(&t, "v1", "Pod").ok(), Some((42, key)));
        assert!(decode_continue(&t, "v1", "ConfigMap").is_err());
        let e = decode_continue("%%%", "v1", "Pod").err().map(|e| (e.code.as_u16(), e.message)).unwrap_or_default();
        assert_eq!(e.0, 400);
        assert!(e.1.starts_with("continue: Invalid value: \"%%%\": continue key is not valid"), "{}", e.1);
        assert!(decode_continue(&URL_SAFE_NO_PAD.encode(b"{\"v\":1}"), "v1", "Pod").is_err());
    }

    #[test]
    fn parameters() {
        let p = ListParams::parse(&q(&[("limit", "500")]), "v1", "Pod").unwrap_or_default();
        assert_eq!(p.limit, Some(500));
        let p = ListParams::parse(&q(&[("limit", "0")]), "v1", "Pod").unwrap_or_default();
        assert_eq!(p.limit, None);
        assert!(ListParams::parse(&q(&[("limit", "x")]), "v1", "Pod").is_err());
        let e = ListParams::parse(&q(&[("resourceVersionMatch", "Exact")]), "v1", "Pod").err();
        assert_eq!(e.map(|e| e.code.as_u16()), Some(422));
        let e = ListParams::parse(&q(&[("resourceVersion", "1"), ("resourceVersionMatch", "Soon")]), "v1", "Pod").err();
        assert!(e.is_some_and(|e| e.message.contains("Unsupported value: \"Soon\"")));
        let exact = ListParams::parse(&q(&[("resourceVersion", "7"), ("resourceVersionMatch", "Exact")]), "v1", "Pod")
            .unwrap_or_default();
        assert!(exact.check_version(7).is_ok());
        assert_eq!(exact.check_version(8).err().map(|e| e.code.as_u16()), Some(410));
        let newer = ListParams::parse(&q(&[("resourceVersion", "9")]), "v1", "Pod").unwrap_or_default();
        assert!(newer.check_version(9).is_ok());
        assert_eq!(newer.check_version(8).err().map(|e| e.code.as_u16()), Some(504));
        let any = ListParams::parse(&q(&[("resourceVersion", "0")]), "v1", "Pod").unwrap_or_default();
        assert!(any.check_version(3).is_ok());
    }
}
