//! The 422 an admission rule answers with when an object breaks it: one
//! cause per field, as kube-apiserver words a validation failure, so
//! clients (kubectl, the console) can mark each field; and the 403 of a
//! rule that depends on who writes ([`refuse`]), naming its fields too.

use crate::authz::{self, Attributes};
use axum::http::StatusCode;
use ringleader_auth::identity::Identity;
use ringleader_registry::resources::ResourceType;
use ringleader_registry::status::{ApiError, Cause};
use serde_json::Value;

/// `Ok` when `errors` is empty; else [`error`].
pub(crate) fn invalid(rt: &ResourceType, object: &Value, errors: Vec<(String, String)>) -> Result<(), ApiError> {
    if errors.is_empty() {
        return Ok(());
    }
    Err(error(rt, object, errors))
}

/// `Invalid` naming each `(field, message)`.
pub(crate) fn error(rt: &ResourceType, object: &Value, errors: Vec<(String, String)>) -> ApiError {
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let kind = format!("{}.{}", rt.kind, rt.group);
    let detail: Vec<String> = errors.iter().map(|(f, m)| format!("{f}: {m}")).collect();
    let mut e = ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        format!("{kind} {name:?} is invalid: {}", detail.join(", ")),
    )
    .with_object(&kind, name);
    e.causes = errors
        .into_iter()
        .map(|(field, message)| Cause { field, message, reason: "FieldValueInvalid".into() })
        .collect();
    e
}

/// 403 for `id`'s write, worded as kube-apiserver's, each field a cause.
pub(crate) fn refuse(
    id: &Identity,
    verb: &str,
    rt: &ResourceType,
    object: &Value,
    fields: &[String],
    why: &str,
) -> ApiError {
    let s = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    let a = Attributes::write_of(verb, rt, &s("/metadata/namespace"), &s("/metadata/name"));
    let because = if fields.is_empty() { why.to_string() } else { format!("{}: {why}", fields.join(", ")) };
    let mut e = authz::forbidden(id, &a, &because);
    e.causes = fields
        .iter()
        .map(|f| Cause { field: f.clone(), message: why.to_string(), reason: "FieldValueForbidden".into() })
        .collect();
    e
}
