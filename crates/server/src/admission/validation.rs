//! Validation: what holds for any object ([`super::objects`]) and the
//! kind's own rules (`ringleader-api`, what `ringleader validate` says),
//! refused as one 422 naming each field; for a patch, only the errors it
//! introduced.

use super::objects;
use ringleader_api::{check_documents, Document};
use ringleader_registry::resources::ResourceType;
use ringleader_registry::status::ApiError;
use serde_json::{json, Value};

/// Every object passes the [`admission`] checks, and kinds `ringleader
/// validate` knows its checks too, before they are stored: 413 for an
/// object over the size limit, else 422 naming each field, value and rule.
pub(crate) fn validate(rt: &ResourceType, object: &Value) -> Result<(), ApiError> {
    objects::check_size(rt, object)?;
    refuse_errors(rt, object, object_errors(rt, object))
}

/// [`validate`] for the result of a patch: only errors the stored object
/// did not have already count (see [`objects::new_errors`]).
pub(crate) fn validate_patch(rt: &ResourceType, before: &Value, after: &Value) -> Result<(), ApiError> {
    objects::check_size(rt, after)?;
    let errors = objects::new_errors(&object_errors(rt, before), object_errors(rt, after));
    refuse_errors(rt, after, errors)
}

fn object_errors(rt: &ResourceType, object: &Value) -> Vec<ringleader_api::FieldError> {
    let ours = objects::errors(rt, object);
    let known = ringleader_api::kinds::SUPPORTED.iter().any(|(a, k)| *a == rt.api_version && *k == rt.kind);
    if !known {
        return ours;
    }
    let doc = Document { source: "body".into(), index: 0, value: object.clone() };
    let typed = check_documents(std::slice::from_ref(&doc)).into_iter().flat_map(|r| r.errors).collect();
    objects::merge(ours, typed)
}

fn refuse_errors(rt: &ResourceType, object: &Value, errors: Vec<ringleader_api::FieldError>) -> Result<(), ApiError> {
    if errors.is_empty() {
        return Ok(());
    }
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    Err(ApiError::invalid(&objects::qualified_kind(rt), name, &errors))
}

/// 422 when a JSON patch changed (or removed) a field that names the
/// object: kube-apiserver refuses these rather than ignoring them.
pub(crate) fn immutable_identity(rt: &ResourceType, name: &str, before: &Value, after: &Value) -> Result<(), ApiError> {
    const IDENTITY: [(&str, &str); 5] = [
        ("/apiVersion", "apiVersion"),
        ("/kind", "kind"),
        ("/metadata/name", "metadata.name"),
        ("/metadata/namespace", "metadata.namespace"),
        ("/metadata/uid", "metadata.uid"),
    ];
    let errors: Vec<ringleader_api::FieldError> = IDENTITY
        .iter()
        .filter(|(pointer, _)| before.pointer(pointer) != after.pointer(pointer))
        .map(|(pointer, field)| {
            let value = after.pointer(pointer).map_or_else(|| "null".to_string(), Value::to_string);
            ringleader_api::FieldError::new(*field, value, "field is immutable")
        })
        .collect();
    refuse_errors(rt, &json!({"metadata": {"name": name}}), errors)
}
