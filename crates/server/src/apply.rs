//! `POST /apis/ringleader.io/v1alpha1/apply`, behind `ringleader apply -f`:
//! a multi-document YAML/JSON stream parsed and validated exactly as
//! `ringleader validate` does, then stored in one batch — all of it, or (on
//! any error in any document) none of it.
//!
//! Unknown fields refuse the apply unless `?fieldValidation=Warn|Ignore`
//! says otherwise: its callers (`ringleader apply`, the console) mean what
//! they write, as kubectl's `--validate=strict` default does, and a typo
//! such as `comand:` would otherwise start a job that fails for a reason
//! the user never sees.

use crate::admission::defaulting::{carry_status, pending_phase, prepare};
use crate::admission::fields::{self, Directive};
use crate::admission::objects as admission;
use crate::decode::check_yaml_depth;
use crate::ServerState;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ringleader_api::document::parse_str;
use ringleader_api::kinds::namespace;
use ringleader_api::kinds::SUPPORTED;
use ringleader_api::{check_documents, FieldError};
pub use ringleader_registry::apply::{ApplyAction, ApplyResult};
use ringleader_registry::resources::{self, ResourceType, NAMESPACES, PODS};
use ringleader_registry::status::{cause_of, ApiError, Cause};
use ringleader_store::{ObjectKey, Op};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Fields the store sets; they do not make two objects differ.
const SERVER_FIELDS: &[&str] = &["resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"];

fn without_server_fields(object: &Value) -> Value {
    let mut o = object.clone();
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in SERVER_FIELDS {
            meta.remove(*f);
        }
    }
    o
}

/// Who a bulk apply's writes are recorded as, in `managedFields`.
fn writer(rt: &ResourceType, now: &str) -> crate::managed_fields::Writer {
    crate::managed_fields::Writer {
        manager: "ringleader-apply".into(),
        api_version: rt.api_version.to_string(),
        subresource: String::new(),
        now: now.to_string(),
        schema: crate::managed_fields::Schema { builtin: crate::patch::builtin(rt) },
    }
}

/// Kinds served here that `ringleader validate` does not know (`Pod`, `Event`):
/// they are stored without the job rules.
fn unchecked(rt: &ResourceType) -> bool {
    !SUPPORTED.iter().any(|(a, k)| *a == rt.api_version && *k == rt.kind)
}

fn type_of(value: &Value) -> Option<&'static ResourceType> {
    let s = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or_default();
    resources::by_kind(s("apiVersion"), s("kind"))
}

/// Handles the bulk apply; `namespace` is where documents without one go
/// (else `default`).
pub async fn bulk(
    state: &ServerState,
    identity: Option<&ringleader_auth::Identity>,
    body: &[u8],
    source: Option<&str>,
    namespace: Option<&str>,
    field_validation: Option<&str>,
) -> Result<Response, ApiError> {
    let directive = match field_validation {
        None | Some("") => Directive::Strict,
        given => Directive::parse(given)?,
    };
    let source = source.filter(|s| !s.is_empty()).unwrap_or("-");
    let text = std::str::from_utf8(body).map_err(|e| ApiError::bad_field("body", format!("not UTF-8 text: {e}")))?;
    check_yaml_depth(text)?;
    crate::yaml_budget::check(text)?;
    let docs = parse_str(source, text).map_err(|e| ApiError::bad_field("body", e.to_string()))?;
    if docs.is_empty() {
        return Err(ApiError::bad_field("body", "no documents to apply"));
    }

    let checked: Vec<_> = docs.iter().filter(|d| type_of(&d.value).is_none_or(|rt| !unchecked(rt))).cloned().collect();
    let mut failures: Vec<(String, FieldError)> = Vec::new();
    for r in check_documents(&checked) {
        for e in r.errors.iter() {
            failures.push((format!("{}[{}] {}", r.path, r.index, r.object()), e.clone()));
        }
    }
    let mut objects: Vec<(&'static ResourceType, Value)> = Vec::new();
    let mut warnings = Vec::new();
    for doc in &docs {
        let Some(rt) = type_of(&doc.value) else { continue };
        if directive != Directive::Ignore {
            let name = doc.value.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            let ns = doc.value.pointer("/metadata/namespace").and_then(Value::as_str);
            let ns = ns.or(namespace).unwrap_or("default");
            let at = format!("{}[{}] {}/{ns}/{name}", doc.source, doc.index, rt.kind);
            for field in fields::unknown_fields(rt, &doc.value) {
                match directive {
                    Directive::Strict => failures.push((
                        at.clone(),
                        FieldError::new(
                            field,
                            "",
                            "unknown field (strict decoding error; --validate=false to apply it)",
                        ),
                    )),
                    _ => warnings.push(format!("{at}: unknown field {field:?}")),
                }
            }
        }
        if !rt.writable() {
            let name = doc.value.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            failures.push((
                format!("{}[{}] {}/{name}", doc.source, doc.index, rt.kind),
                FieldError::new("kind", rt.kind, format!("{} are written by the API server only", rt.qualified())),
            ));
            continue;
        }
        match prepare(rt, namespace, None, doc.value.clone()) {
            Ok(o) => {
                admission::check_size(rt, &o)?;
                let name = o.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
                let ns = o.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
                let at = format!("{}[{}] {}/{ns}/{name}", doc.source, doc.index, rt.kind);
                for e in admission::errors(rt, &o) {
                    // The typed rules may have named this field already.
                    if !failures.iter().any(|(a, f)| *a == at && f.field == e.field) {
                        failures.push((at.clone(), e));
                    }
                }
                objects.push((rt, o))
            }
            Err(e) => {
                let kind = doc.value.get("kind").and_then(Value::as_str).unwrap_or_default();
                let name = doc.value.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
                let ns = doc.value.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
                let at = format!("{}[{}] {kind}/{ns}/{name}", doc.source, doc.index);
                let mut causes = e.causes.clone();
                if causes.is_empty() {
                    causes.push(Cause { field: String::new(), message: e.message.clone(), reason: String::new() });
                }
                for c in causes {
                    failures.push((at.clone(), FieldError::new(c.field, "", c.message)));
                }
            }
        }
    }
    if !failures.is_empty() {
        failures.dedup();
        let lines: Vec<String> = failures.iter().map(|(at, e)| format!("{at}: {e}")).collect();
        let invalid_docs = {
            let mut at: Vec<&String> = failures.iter().map(|(a, _)| a).collect();
            at.dedup();
            at.len()
        };
        let mut err = ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            format!(
                "{invalid_docs} of {} documents are invalid; nothing was applied:\n{}",
                docs.len(),
                lines.join("\n")
            ),
        );
        err.causes =
            failures.iter().zip(&lines).map(|((_, e), line)| Cause { message: line.clone(), ..cause_of(e) }).collect();
        return Err(err);
    }
    for (rt, object) in &objects {
        admission::pod_devices(state, rt, object, None).await?;
    }
    for (rt, object) in &mut objects {
        if crate::visibility::concerned(rt) {
            let key = ObjectKey::of(object)?;
            let existing = state.blocking(move |s| s.get(&key)).await?;
            let verb = if existing.is_some() { "patch" } else { "create" };
            let before = existing.as_ref().map(|e| &e.object);
            crate::visibility::admit_write(state, identity, verb, rt, object, before).await?;
        }
    }
    for (rt, object) in &objects {
        crate::admission::protect::admit_applied(state, identity, rt, object).await?;
    }

    let identity = identity.cloned();
    let results = state
        .blocking(move |store| {
            let mut ops = Vec::new();
            let mut results = Vec::new();
            // Namespaces the documents are in but do not create are made
            // first (as `helm install --create-namespace`), so `ringleader
            // apply` of a manifest naming its namespace just works; one being
            // deleted refuses the whole apply, as the API would each object.
            let applied: BTreeSet<&str> = objects
                .iter()
                .filter(|(rt, _)| *rt == NAMESPACES)
                .filter_map(|(_, o)| o.pointer("/metadata/name").and_then(Value::as_str))
                .collect();
            let mut needed: BTreeMap<&str, (&ResourceType, &Value)> = BTreeMap::new();
            // Reported after the documents' own results, which keep their order.
            let mut made = Vec::new();
            for (rt, o) in objects.iter().filter(|(rt, _)| rt.namespaced) {
                let ns = o.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
                if !applied.contains(ns) {
                    needed.entry(ns).or_insert((rt, o));
                }
            }
            for (ns, (rt, o)) in needed {
                let existing = store.get(&crate::admission::namespaces::key(ns))?;
                match existing {
                    Some(n) => {
                        if let Some(refused) = crate::admission::namespaces::refusal(rt, o, Some(&n.object)) {
                            return Ok(Err(refused));
                        }
                    }
                    None => {
                        let created = namespace::object(ns);
                        let record = crate::audit::entry(identity.as_ref(), "create", NAMESPACES, None, Some(&created));
                        ops.push(Op::Create(created));
                        ops.extend(record.map(Op::Create));
                        made.push(ApplyResult {
                            api_version: NAMESPACES.api_version.to_string(),
                            kind: NAMESPACES.kind.to_string(),
                            namespace: String::new(),
                            name: ns.to_string(),
                            action: ApplyAction::Created,
                        });
                    }
                }
            }
            let now = ringleader_api::time::now_rfc3339();
            for (rt, mut object) in objects {
                let key = ObjectKey::of(&object)?;
                let existing = store.get(&key)?;
                carry_status(existing.as_ref().map(|e| &e.object), &mut object);
                if rt == NAMESPACES {
                    namespace::defaulted(&mut object, existing.as_ref().map(|e| &e.object));
                }
                if rt == PODS && existing.is_none() {
                    pending_phase(&mut object);
                }
                let action = match &existing {
                    None => ApplyAction::Created,
                    Some(e) if without_server_fields(&e.object) == without_server_fields(&object) => {
                        ApplyAction::Unchanged
                    }
                    Some(_) => ApplyAction::Configured,
                };
                if action != ApplyAction::Unchanged {
                    let before = existing.as_ref().map(|e| &e.object);
                    let object = crate::managed_fields::record_update(before, object, &writer(rt, &now));
                    let record = crate::audit::entry(identity.as_ref(), "update", rt, before, Some(&object));
                    ops.push(Op::Apply(object));
                    ops.extend(record.map(Op::Create));
                }
                results.push(ApplyResult {
                    api_version: rt.api_version.to_string(),
                    kind: rt.kind.to_string(),
                    namespace: key.namespace,
                    name: key.name,
                    action,
                });
            }
            results.extend(made);
            if !ops.is_empty() {
                store.batch(ops)?;
            }
            Ok(Ok(results))
        })
        .await??;
    let reply = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "ApplyResultList", "items": results});
    Ok(fields::warn((StatusCode::OK, axum::Json(reply)).into_response(), &warnings))
}
