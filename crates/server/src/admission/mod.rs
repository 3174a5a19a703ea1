//! The admission stage of the request pipeline ([`crate::pipeline`]): every
//! rule a written object passes before the store sees it, in the order they
//! run — [`object`] for a whole object (create, replace, server-side apply,
//! each document of a bulk apply), [`patched`] for the result of a patch,
//! and the delete guards ([`delete_guard`]). A new admission rule is one
//! more step in [`object`] and [`patched`] (in a module of its own here); a
//! new kind needs none here: its rules are `ringleader-api`'s, which
//! [`validation`] applies to every kind that crate knows.

pub(crate) mod defaulting;
pub(crate) mod delete_guard;
pub(crate) mod fields;
pub(crate) mod namespaces;
pub(crate) mod objects;
pub(crate) mod platform_nodes;
pub(crate) mod protect;
pub(crate) mod refusal;
pub(crate) mod service_accounts;
pub(crate) mod services;
pub(crate) mod validation;
pub(crate) mod vip;
pub(crate) mod workspace_fields;

use crate::state::ServerState;
use ringleader_api::kinds::namespace;
use ringleader_auth::Identity;
use ringleader_registry::resources::{ResourceType, NAMESPACES, PODS};
use ringleader_registry::status::ApiError;
use serde_json::Value;

/// Who writes what, for the rules that depend on it.
pub(crate) struct Write<'a> {
    pub state: &'a ServerState,
    pub identity: Option<&'a Identity>,
    /// `create`, `update` or `patch`, as RBAC and the audit name them.
    pub verb: &'static str,
    pub rt: &'static ResourceType,
    /// `?fieldValidation=`: Strict, Warn (the default) or Ignore.
    pub field_validation: Option<&'a str>,
}

/// A whole object sent to `ns`/`name` (either absent on a collection),
/// rule by rule: the object as it will be stored, and the warnings to send
/// back about its unknown or duplicate fields. `before` is what it replaces.
pub(crate) async fn object(
    w: &Write<'_>,
    ns: Option<&str>,
    name: Option<&str>,
    object: Value,
    duplicates: &[String],
    before: protect::Before<'_>,
) -> Result<(Value, Vec<String>), ApiError> {
    // 1. Defaulting: apiVersion, kind, namespace and name agree with the path;
    //    a namespace gets its finalizer, label and (the server's) phase.
    let mut object = defaulting::prepare(w.rt, ns, name, object)?;
    if w.rt == NAMESPACES {
        match &before {
            protect::Before::Absent => namespace::defaulted(&mut object, None),
            protect::Before::Known(b) => namespace::defaulted(&mut object, *b),
            protect::Before::Lookup => namespace::fill_spec(&mut object),
        }
    }
    // A Service gets its defaults and cluster IP (kept from before on an update).
    services::admit(w.state, w.rt, &mut object, &before).await?;
    // 2. Fields: unknown and duplicate ones refused (Strict) or warned about.
    let warnings = fields::check(w.rt, &object, duplicates, w.field_validation)?;
    // 3. Validation: what holds for any object, then the kind's own rules.
    validation::validate(w.rt, &object)?;
    // 4. Devices: a Pod's devices are among its node's.
    objects::pod_devices(w.state, w.rt, &object, None).await?;
    // 5. Namespace lifecycle: what is created goes into a namespace that
    //    exists and is not being deleted.
    if matches!(before, protect::Before::Absent | protect::Before::Known(None)) {
        namespaces::admit_create(w.state, w.rt, &object).await?;
        // 5b. ServiceAccount: a new pod runs as an account that exists.
        service_accounts::admit_create(w.state, w.rt, &mut object).await?;
    }
    // 5c. Visibility: an only-me job, dataset or run is its creator's, who
    //     is recorded by the server.
    if crate::visibility::concerned(w.rt) {
        let fetched;
        let prior = match &before {
            protect::Before::Absent => None,
            protect::Before::Known(b) => *b,
            protect::Before::Lookup => {
                let key = ringleader_store::ObjectKey::of(&object).map_err(ApiError::from)?;
                fetched = w.state.blocking(move |s| s.get(&key)).await?;
                fetched.as_ref().map(|s| &s.object)
            }
        };
        crate::visibility::admit_write(w.state, w.identity, w.verb, w.rt, &mut object, prior).await?;
    }
    // 6. Protection: fields only the scheduler and controllers may set, and
    //    the platform's rules (quotas, workspaces, who may write where).
    let creates = matches!(before, protect::Before::Absent | protect::Before::Known(None));
    protect::admit(w.state, w.identity, w.verb, w.rt, &object, before).await?;
    // 7. A new pod is Pending until its node says otherwise, as kube-apiserver
    //    defaults it (after protection: the server sets it, not the user), so
    //    `--field-selector status.phase=Pending` finds a bare pod too.
    if creates && w.rt == PODS {
        defaulting::pending_phase(&mut object);
    }
    Ok((object, warnings))
}

/// The result of a JSON, merge or strategic patch of `before`, through the
/// same rules as [`object`] (the path cannot disagree: a patch keeps the
/// object's identity); only what the patch changed is held against it.
pub(crate) async fn patched(
    w: &Write<'_>,
    before: &Value,
    patched: &Value,
    duplicates: &[String],
) -> Result<Vec<String>, ApiError> {
    let warnings = fields::check_patch(w.rt, before, patched, duplicates, w.field_validation)?;
    validation::validate_patch(w.rt, before, patched)?;
    services::patched(w.rt, before, patched)?;
    objects::pod_devices(w.state, w.rt, patched, Some(before)).await?;
    crate::visibility::admit_patch(w.state, w.identity, w.verb, w.rt, before, patched).await?;
    protect::admit(w.state, w.identity, w.verb, w.rt, patched, protect::Before::Known(Some(before))).await?;
    Ok(warnings)
}
