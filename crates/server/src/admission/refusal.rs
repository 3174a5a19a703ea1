//! The 422 an admission rule answers with when an object breaks it: one
//! cause per field, as kube-apiserver words a validation failure, so
//! clients (kubectl, the console) can mark each field.

use axum::http::StatusCode;
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
