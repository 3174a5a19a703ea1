//! The store calls of the request pipeline that are not a plain read or
//! write: the selector of a resource type, and dry runs (a write the store
//! checks and rolls back). Writes themselves go through [`crate::audit`],
//! which records each in the same transaction.

use crate::state::ServerState;
use ringleader_registry::resources::ResourceType;
use ringleader_registry::status::ApiError;
use ringleader_store::{ObjectKey, Op, Selector};
use serde_json::{json, Value};

/// Store selector of a resource type, in one namespace or all.
pub(crate) fn store_selector(rt: &ResourceType, ns: Option<&str>) -> Selector {
    let sel = Selector::kind(rt.api_version, rt.kind);
    match ns {
        Some(ns) if rt.namespaced => sel.in_namespace(ns),
        _ => sel,
    }
}

/// Runs one write as a dry run and answers the object it would leave. A
/// create's answer has no resourceVersion (none was taken); other writes
/// keep the version the object has now, since nothing changed.
pub(crate) async fn dry_run(state: &ServerState, op: Op) -> Result<Value, ApiError> {
    let current = match &op {
        Op::Create(_) => None,
        Op::Update(o) | Op::Apply(o) => ObjectKey::of(o).ok(),
        Op::Patch { key, .. } | Op::Delete { key, .. } => Some(key.clone()),
    };
    let (mut out, version) = state
        .blocking(move |s| {
            let version = match &current {
                Some(key) => s.get(key)?.map(|c| c.resource_version),
                None => None,
            };
            Ok((s.dry_run(vec![op])?, version))
        })
        .await?;
    let mut object = out.pop().map(|s| s.object).unwrap_or(Value::Null);
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        match version {
            Some(v) => meta.insert("resourceVersion".into(), json!(v.to_string())),
            None => meta.remove("resourceVersion"),
        };
    }
    Ok(object)
}
