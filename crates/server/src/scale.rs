//! The `scale` subresource: `GET`, `PUT` and `PATCH` (merge, strategic as
//! merge, JSON patch) of an `autoscaling/v1 Scale` at
//! `…/{deployments|replicasets|pytorchjobs}/{name}/scale`, as
//! kube-apiserver serves it (`kubectl scale`, a HorizontalPodAutoscaler).
//! The Scale is a view of the object ([`ringleader_registry::scale`] says
//! where each kind keeps the numbers); a write changes the object's desired
//! replicas alone, through the same admission as a patch of the object. A
//! `metadata.resourceVersion` in the Scale written is a precondition (409
//! when the object moved on), which `kubectl scale --current-replicas`
//! relies on.

use crate::admission;
use crate::audit;
use crate::decode::{self, Req};
use crate::patch::{self as patches, PatchType};
use crate::state::ServerState;
use crate::storage::dry_run;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use ringleader_api::FieldError;
use ringleader_registry::resources::{self, ResourceType};
use ringleader_registry::scale::{paths, ScalePaths, SelectorAt};
use ringleader_registry::status::{ApiError, Resource};
use ringleader_store::{ObjectKey, Op, StoreError};
use serde_json::{json, Value};

/// `(type, namespace, name)` of a `…/namespaces/{ns}/{plural}/{name}/scale` path.
pub(crate) fn target(path: &str) -> Option<(&'static ResourceType, String, String)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["apis", group, version, "namespaces", ns, plural, name, "scale"] if !ns.is_empty() && !name.is_empty() => {
            let rt = resources::by_path(group, version, plural).filter(|rt| paths(rt).is_some())?;
            Some((rt, ns.to_string(), name.to_string()))
        }
        _ => None,
    }
}

/// A `metav1.LabelSelector` as the label-selector string a Scale shows
/// (`app=web,tier in (a,b)`), requirements sorted by key as Kubernetes
/// sorts them.
pub(crate) fn selector_text(selector: &Value) -> String {
    let mut parts: Vec<(String, String)> = Vec::new();
    for (k, v) in selector.get("matchLabels").and_then(Value::as_object).into_iter().flatten() {
        parts.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
    }
    for e in selector.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let mut values: Vec<&str> =
            e.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        values.sort_unstable();
        let text = match e.get("operator").and_then(Value::as_str).unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        parts.push((key.to_string(), text));
    }
    parts.sort();
    parts.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join(",")
}

/// The Scale of `object`.
pub(crate) fn to_scale(p: &ScalePaths, object: &Value) -> Value {
    let meta = object.get("metadata").cloned().unwrap_or(json!({}));
    let keep = ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"];
    let metadata: serde_json::Map<String, Value> =
        keep.iter().filter_map(|k| meta.get(*k).map(|v| (k.to_string(), v.clone()))).collect();
    let selector = match p.selector {
        SelectorAt::LabelSelector(at) => object.pointer(at).map(selector_text).unwrap_or_default(),
        SelectorAt::Text(at) => object.pointer(at).and_then(Value::as_str).unwrap_or_default().to_string(),
    };
    let spec = object.pointer(p.spec).and_then(Value::as_i64).unwrap_or(if p.spec == "/spec/replicas" { 1 } else { 0 });
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": spec},
        "status": {"replicas": object.pointer(p.status).and_then(Value::as_i64).unwrap_or(0), "selector": selector},
    })
}

/// The replicas a Scale asks for: `spec.replicas`, an integer from 0 up
/// (422 naming `spec.replicas` otherwise, as kube-apiserver's validation).
pub(crate) fn wanted_replicas(scale: &Value, name: &str) -> Result<i64, ApiError> {
    let v = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
    let err = |what: &str| ApiError::invalid("Scale.autoscaling", name, &[FieldError::new("spec.replicas", &v, what)]);
    match v.as_i64() {
        Some(n) if n < 0 => Err(err("must be greater than or equal to 0")),
        Some(n) if n > i64::from(i32::MAX) => Err(err("must be a 32-bit integer")),
        Some(n) => Ok(n),
        None if v.is_null() => Ok(0),
        None => Err(err("must be an integer")),
    }
}

/// `object` with its desired replicas at `p` set to `n` (the maps on the
/// way created, as a CRD's specpath is written).
fn with_replicas(p: &ScalePaths, object: &Value, n: i64) -> Value {
    let mut out = object.clone();
    let mut at = &mut out;
    for seg in p.spec.trim_start_matches('/').split('/') {
        if !at.is_object() {
            *at = json!({});
        }
        at = &mut at[seg];
    }
    *at = json!(n);
    out
}

/// Serves one request on a scale subresource.
pub(crate) async fn serve(
    state: &ServerState,
    req: &Req,
    rt: &'static ResourceType,
    ns: &str,
    name: &str,
) -> Result<Response, ApiError> {
    let Some(p) = paths(rt) else { return Err(ApiError::no_route(&req.path)) };
    let key = ObjectKey::new(rt.api_version, rt.kind, ns, name);
    let resource = Resource::of_key(&key);
    let (verb, body) = match req.method {
        Method::GET => ("get", None),
        Method::PUT => ("update", Some((None, decode::body(req)?.0))),
        Method::PATCH => ("patch", Some(patch_body(req)?)),
        _ => return Err(ApiError::method(req.method.as_str(), &req.path)),
    };
    let dry = verb != "get" && req.dry_run(if verb == "update" { "UpdateOptions" } else { "PatchOptions" })?;
    for _ in 0..8 {
        let k = key.clone();
        let Some(current) = state.blocking(move |s| s.get(&k)).await? else {
            return Err(StoreError::NotFound(key).into());
        };
        let scale = to_scale(&p, &current.object);
        let Some((kind, body)) = body.as_ref() else {
            return Ok(req.format.respond(StatusCode::OK, &scale));
        };
        let wanted = match kind {
            None => body.clone(),
            Some(PatchType::Json) => patches::json_patch(&scale, body, 1 << 20).map_err(|e| match e {
                patches::PatchError::Invalid(m) => ApiError::bad_request(m),
                patches::PatchError::TooLarge(n) => ApiError::too_large(n),
            })?,
            Some(_) => patches::merge_patch(&scale, body),
        };
        let replicas = wanted_replicas(&wanted, name)?;
        let claimed = wanted.pointer("/metadata/resourceVersion").and_then(Value::as_str).filter(|v| !v.is_empty());
        let pinned = claimed.is_some();
        if claimed.is_some_and(|c| c != current.resource_version.to_string()) {
            return Err(ApiError::conflict(&resource, name));
        }
        let mut object = with_replicas(&p, &current.object, replicas);
        object["metadata"]["resourceVersion"] = json!(current.resource_version.to_string());
        let w = admission::Write {
            state,
            identity: req.identity.as_ref(),
            verb,
            rt,
            field_validation: req.param("fieldValidation"),
        };
        admission::patched(&w, &current.object, &object, &[]).await?;
        if dry {
            let out = dry_run(state, Op::Update(object)).await?;
            return Ok(req.format.respond(StatusCode::OK, &to_scale(&p, &out)));
        }
        let record = audit::entry(req.identity.as_ref(), verb, rt, Some(&current.object), Some(&object));
        match state.blocking(move |s| audit::write(s, Op::Update(object), record)).await {
            Err(e) if e.reason == "Conflict" && !pinned => continue,
            Err(e) => return Err(e),
            Ok(stored) => return Ok(req.format.respond(StatusCode::OK, &to_scale(&p, &stored.object))),
        }
    }
    Err(ApiError::conflict(&resource, name))
}

/// A patch body and its type (`None` never: apply is refused).
fn patch_body(req: &Req) -> Result<(Option<PatchType>, Value), ApiError> {
    let kind = PatchType::of(req.content_type());
    let accepted = patches::BUILTIN_PATCH_TYPES;
    let kind = match kind {
        Some(k @ (PatchType::Json | PatchType::Merge | PatchType::Strategic)) => k,
        _ => return Err(ApiError::unsupported_patch(req.content_type(), accepted)),
    };
    let body: Value =
        serde_json::from_slice(&req.body).map_err(|e| ApiError::bad_field("body", format!("not valid JSON: {e}")))?;
    Ok((Some(kind), body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_registry::scale::DEPLOYMENTS;

    #[test]
    fn a_scale_shows_replicas_and_the_selector_as_text() {
        let d = json!({"metadata": {"name": "web", "namespace": "default", "uid": "u", "resourceVersion": "7"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"tier": "front", "app": "web"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]}},
            "status": {"replicas": 2}});
        let p = paths(DEPLOYMENTS).unwrap_or_else(|| panic!("deployments scale"));
        let s = to_scale(&p, &d);
        assert_eq!(s["spec"]["replicas"], 3);
        assert_eq!(s["status"], json!({"replicas": 2, "selector": "app=web,env in (dev,prod),tier=front"}));
        assert_eq!(s["metadata"]["resourceVersion"], "7");
        assert_eq!(with_replicas(&p, &d, 5)["spec"]["replicas"], 5);
        let e = wanted_replicas(&json!({"spec": {"replicas": -1}}), "web").err().map(|e| e.message);
        assert_eq!(e.as_deref(), Some("Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"));
        assert!(target("/apis/apps/v1/namespaces/default/deployments/web/scale").is_some());
        assert!(target("/apis/apps/v1/namespaces/default/replicasets/web-x/scale").is_some());
        assert!(target("/apis/kubeflow.org/v1/namespaces/default/tfjobs/t/scale").is_none());
        let pt = paths(ringleader_registry::scale::PYTORCH_JOBS).unwrap_or_else(|| panic!("pytorchjobs scale"));
        assert_eq!(with_replicas(&pt, &json!({"spec": {}}), 4)["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"], 4);
    }
}
