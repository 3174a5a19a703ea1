//! `metadata.generation`, as kube-apiserver keeps it for kinds with a
//! status subresource: 1 at creation, one more on every write that changes
//! anything but `metadata` and `status` (so a controller's
//! `status.observedGeneration` says which spec it has acted on, and
//! `kubectl rollout status` knows when a Deployment's change was seen).
//! Here for the workload kinds (the job kinds, Deployments among them, and
//! ReplicaSets) and PodDisruptionBudgets. Every write through the API
//! passes [`stamp`] (from [`crate::audit::write`]); the manager's own status
//! patches do not, and leave it as it is.

use ringleader_registry::resources::{by_kind, POD_DISRUPTION_BUDGETS, REPLICA_SETS};
use ringleader_store::{ObjectKey, Op, Store, StoreError};
use serde_json::{json, Value};

/// Whether objects of this `apiVersion`/`kind` carry a generation.
fn tracked(object: &Value) -> bool {
    let s = |f: &str| object.get(f).and_then(Value::as_str).unwrap_or_default();
    by_kind(s("apiVersion"), s("kind")).is_some_and(|rt| rt.job || rt == REPLICA_SETS || rt == POD_DISRUPTION_BUDGETS)
}

/// Everything of an object but `metadata` and `status`.
fn spec_part(object: &Value) -> Value {
    let mut o = object.clone();
    if let Some(map) = o.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    o
}

/// The generation a write of `next` over `current` (none: a create) leaves.
pub(crate) fn next(current: Option<&Value>, next: &Value) -> u64 {
    let Some(current) = current else { return 1 };
    let had = current.pointer("/metadata/generation").and_then(Value::as_u64).unwrap_or(1);
    had + u64::from(spec_part(current) != spec_part(next))
}

/// Sets the generation of the object a create, update or apply writes.
pub(crate) fn stamp(store: &Store, op: &mut Op) -> Result<(), StoreError> {
    let (object, create) = match op {
        Op::Create(o) => (o, true),
        Op::Update(o) | Op::Apply(o) => (o, false),
        _ => return Ok(()),
    };
    if !tracked(object) {
        return Ok(());
    }
    let current = match (create, ObjectKey::of(object)) {
        (false, Ok(key)) => store.get(&key)?,
        _ => None,
    };
    let generation = next(current.as_ref().map(|c| &c.object), object);
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("generation".into(), json!(generation));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_change_bumps_the_generation_and_a_status_or_label_change_does_not() {
        let d =
            json!({"metadata": {"name": "web", "generation": 3}, "spec": {"replicas": 1}, "status": {"replicas": 1}});
        assert_eq!(next(None, &d), 1);
        let mut labelled = d.clone();
        labelled["metadata"]["labels"] = json!({"a": "b"});
        labelled["status"]["replicas"] = json!(2);
        assert_eq!(next(Some(&d), &labelled), 3);
        let mut scaled = d.clone();
        scaled["spec"]["replicas"] = json!(2);
        assert_eq!(next(Some(&d), &scaled), 4);
        assert!(tracked(&json!({"apiVersion": "apps/v1", "kind": "Deployment"})));
        assert!(!tracked(&json!({"apiVersion": "v1", "kind": "ConfigMap"})));
    }
}
