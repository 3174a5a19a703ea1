//! `NoExecute` taints, as Kubernetes' taint eviction controller: a pod on a
//! node with a `NoExecute` taint it does not tolerate is deleted (through
//! its agent, as any deleted pod, so its devices come free and its job
//! controller replaces it elsewhere); one that tolerates it for
//! `tolerationSeconds` goes once that long has passed since the taint's
//! `timeAdded`; one that tolerates it without a limit stays.

use crate::cache::Cache;
use crate::events::{self, EventType, Recorder};
use crate::jobs::delete_pod_once;
use crate::node_view::{node_views, NodeView};
use crate::pods;
use crate::ManagerError;
use k8s_openapi::api::core::v1::{Taint, Toleration};
use ringleader_api::time::parse_rfc3339;
use ringleader_scheduler::predicates::tolerates_one;
use ringleader_store::Backend;
use serde_json::Value;
use std::collections::BTreeMap;

/// One pass: evicts the pods [`due`] names, each with a
/// `TaintManagerEviction` event as Kubernetes writes it.
pub fn evict(store: &dyn Backend, cache: &mut Cache, now: f64) -> Result<(), ManagerError> {
    let tainted: BTreeMap<String, Vec<Taint>> = cache
        .of_kind("ringleader.io/v1alpha1", "Node")
        .filter_map(|n| {
            // Typed only where a NoExecute taint is: this runs every pass over every Node.
            let raw = n.object.get("spec")?.get("taints")?.as_array()?;
            if !raw.iter().any(|t| t.get("effect").and_then(Value::as_str) == Some("NoExecute")) {
                return None;
            }
            let taints: Vec<Taint> = serde_json::from_value(Value::Array(raw.clone())).ok()?;
            let no_execute: Vec<Taint> = taints.into_iter().filter(|t| t.effect == "NoExecute").collect();
            (!no_execute.is_empty()).then(|| (n.key.name.clone(), no_execute))
        })
        .collect();
    if tainted.is_empty() {
        return Ok(());
    }
    let views = node_views(cache);
    let nodes: BTreeMap<&str, &NodeView> = views.iter().map(|n| (n.name.as_str(), n)).collect();
    let mut ops = Vec::new();
    let mut rec = Recorder::new(events::CONTROLLER);
    for pod in cache.of_kind("v1", "Pod") {
        let Some(taints) = pods::node_of(&pod.object).and_then(|n| tainted.get(n)) else { continue };
        if pods::deleting(&pod.object) || !pods::phase_of(&pod.object).is_live() {
            continue;
        }
        if !due(&tolerations(&pod.object), taints, now) {
            continue;
        }
        if let Some(op) = delete_pod_once(pod, &nodes, now) {
            let message = format!("Marking for deletion Pod {}/{}", pod.key.namespace, pod.key.name);
            rec.occurred(&pod.object, EventType::Normal, "TaintManagerEviction", message, Some(&pod.key));
            ops.push(op);
        }
    }
    events::write(store, cache, ops, rec, now)
}

fn tolerations(pod: &Value) -> Vec<Toleration> {
    pod.pointer("/spec/tolerations").and_then(|t| serde_json::from_value(t.clone()).ok()).unwrap_or_default()
}

/// Whether a pod with `tolerations` must leave a node with these
/// `NoExecute` taints at `now`: some taint it does not tolerate, or one it
/// tolerates only for a time that has run out (the shortest of the
/// tolerations that match it counts, from the taint's `timeAdded`).
pub fn due(tolerations: &[Toleration], taints: &[Taint], now: f64) -> bool {
    taints.iter().any(|taint| {
        let matching: Vec<&Toleration> = tolerations.iter().filter(|t| tolerates_one(t, taint)).collect();
        if matching.is_empty() {
            return true;
        }
        if matching.iter().any(|t| t.toleration_seconds.is_none()) {
            return false;
        }
        let seconds = matching.iter().filter_map(|t| t.toleration_seconds).min().unwrap_or(0).max(0);
        let added = taint.time_added.as_ref().and_then(|t| parse_rfc3339(&t.0.to_string())).unwrap_or(now);
        now >= added + seconds as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn taint(key: &str, added: &str) -> Taint {
        serde_json::from_value(json!({"key": key, "effect": "NoExecute", "timeAdded": added})).unwrap_or_default()
    }

    fn tol(v: Value) -> Toleration {
        serde_json::from_value(v).unwrap_or_default()
    }

    #[test]
    fn untolerated_now_tolerated_for_a_while_or_for_good() {
        let added = "2026-11-28T10:00:00Z";
        let at = parse_rfc3339(added).unwrap_or_default();
        let taints = [taint("gpu-broken", added)];
        assert!(due(&[], &taints, at), "not tolerated: at once");
        let other = tol(json!({"key": "other", "operator": "Exists"}));
        assert!(due(&[other], &taints, at));
        let forever = tol(json!({"key": "gpu-broken", "operator": "Exists", "effect": "NoExecute"}));
        assert!(!due(std::slice::from_ref(&forever), &taints, at + 1e6));
        let minute = tol(json!({"key": "gpu-broken", "operator": "Exists", "tolerationSeconds": 60}));
        assert!(!due(std::slice::from_ref(&minute), &taints, at + 59.0));
        assert!(due(std::slice::from_ref(&minute), &taints, at + 60.0));
        // Every taint must be tolerated; an empty key with Exists tolerates all.
        let both = [taint("gpu-broken", added), taint("maintenance", added)];
        assert!(due(std::slice::from_ref(&forever), &both, at));
        let all = tol(json!({"operator": "Exists"}));
        assert!(!due(&[all], &both, at + 1e6));
        // A value must match under Equal.
        let mut valued = taint("gpu-broken", added);
        valued.value = Some("yes".into());
        let equal = tol(json!({"key": "gpu-broken", "value": "no", "effect": "NoExecute"}));
        assert!(due(&[equal], std::slice::from_ref(&valued), at));
    }
}
