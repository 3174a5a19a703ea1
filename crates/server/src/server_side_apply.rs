//! The HTTP side of field management: who the writer is (the
//! `fieldManager` parameter, else the program its user agent names), the
//! options kube-apiserver checks, and the server-side apply verb.

use crate::admission::{self, defaulting, fields, protect};
use crate::decode::{self, Part, Req};
use crate::managed_fields::{apply, conflict_message, entries, ApplyError, Schema, Writer};
use crate::patch::PatchType;
use crate::state::ServerState;
use crate::{audit, storage};
use axum::http::header::USER_AGENT;
use axum::http::StatusCode;
use axum::response::Response;
use ringleader_registry::resources::ResourceType;
use ringleader_registry::status::{ApiError, Cause, Resource};
use ringleader_store::{ObjectKey, Op, StoreError};
use serde_json::{json, Value};

/// 422 of the request's options (`PatchOptions`, `CreateOptions`…), as
/// kube-apiserver words it.
fn invalid_options(options: &str, field: &str, reason: &'static str, message: String) -> ApiError {
    let mut e = ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        format!("{options}.meta.k8s.io \"\" is invalid: {field}: {message}"),
    );
    e.causes.push(Cause { field: field.into(), message, reason: reason.into() });
    e.with_object(&format!("{options}.meta.k8s.io"), "")
}

/// The writer of a request to `rt` (`part` says whether to its status),
/// refused when its manager's name is not one kube-apiserver takes.
/// kube-apiserver's default manager is the user agent up to its first `/`.
pub(crate) fn writer(
    req: &Req,
    rt: &ResourceType,
    builtin: bool,
    part: Part,
    options: &str,
) -> Result<Writer, ApiError> {
    let manager = match req.param("fieldManager").filter(|m| !m.is_empty()) {
        Some(m) => m.to_string(),
        None => {
            let agent = req.headers.get(USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
            agent.split('/').next().unwrap_or("").chars().take(entries::MAX_MANAGER_LEN).collect()
        }
    };
    if let Some(why) = entries::check_manager(&manager) {
        return Err(invalid_options(
            options,
            "fieldManager",
            "FieldValueInvalid",
            format!("Invalid value: {manager:?}: {why}"),
        ));
    }
    Ok(Writer {
        manager,
        api_version: rt.api_version.to_string(),
        subresource: if part == Part::Status { "status".into() } else { String::new() },
        now: ringleader_api::time::now_rfc3339(),
        schema: Schema { builtin },
    })
}

/// `force` is an apply's alone, and an apply names its manager.
pub(crate) fn check_patch_options(req: &Req, kind: PatchType) -> Result<(), ApiError> {
    match kind {
        PatchType::Apply if req.param("fieldManager").is_none_or(str::is_empty) => Err(invalid_options(
            "PatchOptions",
            "fieldManager",
            "FieldValueRequired",
            "Required value: is required for apply patch".into(),
        )),
        PatchType::Apply => Ok(()),
        _ if req.param("force").is_some() => Err(invalid_options(
            "PatchOptions",
            "force",
            "FieldValueForbidden",
            "Forbidden: may not be specified for non-apply patch".into(),
        )),
        _ => Ok(()),
    }
}

/// An apply refused, in kube-apiserver's words.
pub(crate) fn apply_error(e: ApplyError, rt: &ResourceType, name: &str) -> ApiError {
    match e {
        ApplyError::BadRequest(m) => ApiError::bad_request(m),
        ApplyError::Invalid(m) => {
            let mut err = ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid",
                format!("{} {name:?} is invalid: {m}", rt.kind),
            );
            let field = m.split(':').next().unwrap_or_default().trim_start_matches('.').to_string();
            err.causes.push(Cause { field, message: m, reason: "FieldValueInvalid".into() });
            err.with_object(rt.kind, name)
        }
        ApplyError::Conflicts(conflicts) => {
            let mut err = ApiError::new(StatusCode::CONFLICT, "Conflict", conflict_message(&conflicts));
            err.causes = conflicts
                .into_iter()
                .map(|c| Cause {
                    field: c.field,
                    message: format!("conflict with {}", c.manager),
                    reason: "FieldManagerConflict".into(),
                })
                .collect();
            err
        }
    }
}

/// PATCH with `application/apply-patch+yaml` (or `+json`): the
/// configuration merged into the object (created when absent) as its
/// manager's, through admission as any whole object, stored only if the
/// object did not change meanwhile (retried then).
pub(crate) async fn serve(
    state: &ServerState,
    rt: &'static ResourceType,
    builtin: bool,
    key: ObjectKey,
    req: &Req,
    part: Part,
) -> Result<Response, ApiError> {
    check_patch_options(req, PatchType::Apply)?;
    let dry = req.dry_run("PatchOptions")?;
    let force = req.flag("force");
    let (mut config, dups) = decode::body(req)?;
    // The main resource's writes leave status as stored (it is written
    // through /status), as kube-apiserver resets it in an apply.
    if part == Part::Whole && rt.has_status() {
        if let Some(c) = config.as_object_mut() {
            c.remove("status");
        }
    }
    let pinned = config.pointer("/metadata/resourceVersion").and_then(Value::as_str).map(str::to_string);
    let resource = Resource::of_key(&key);
    let w = admission::Write {
        state,
        identity: req.identity.as_ref(),
        verb: "patch",
        rt,
        field_validation: req.param("fieldValidation"),
    };
    for _ in 0..8 {
        let writer = writer(req, rt, builtin, part, "PatchOptions")?;
        let k = key.clone();
        let existing = state.blocking(move |s| s.get(&k)).await?;
        if part == Part::Status && existing.is_none() {
            return Err(StoreError::NotFound(key).into());
        }
        if let (Some(p), Some(e)) = (&pinned, &existing) {
            if *p != e.resource_version.to_string() {
                return Err(ApiError::conflict(&resource, &key.name));
            }
        }
        let live = existing.as_ref().map(|e| &e.object);
        let merged = apply(live, &config, &writer, force).map_err(|e| apply_error(e, rt, &key.name))?;
        let ns = Some(key.namespace.as_str()).filter(|_| rt.namespaced);
        let before = protect::Before::Known(live);
        let (mut object, unknown) = admission::object(&w, ns, Some(&key.name), merged, &dups, before).await?;
        defaulting::carry_status(live, &mut object);
        let code = if existing.is_some() { StatusCode::OK } else { StatusCode::CREATED };
        let op = match &existing {
            Some(e) => {
                if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.insert("resourceVersion".into(), json!(e.resource_version.to_string()));
                }
                Op::Update(object)
            }
            None => Op::Create(object),
        };
        if dry {
            return Ok(fields::warn(req.format.respond(code, &storage::dry_run(state, op).await?), &unknown));
        }
        let after = match &op {
            Op::Update(o) | Op::Create(o) => Some(o),
            _ => None,
        };
        let record = audit::entry(req.identity.as_ref(), "patch", rt, live, after);
        match state.blocking(move |s| audit::write(s, op, record)).await {
            // Written meanwhile (or created): merge into what is there now.
            Err(e) if e.reason == "Conflict" || e.reason == "AlreadyExists" => continue,
            other => return other.map(|stored| fields::warn(req.format.respond(code, &stored.object), &unknown)),
        }
    }
    Err(ApiError::conflict(&resource, &key.name))
}
