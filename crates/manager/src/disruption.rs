//! The disruption controller: each PodDisruptionBudget's `status` (pods it
//! selects, how many are healthy, how many may be disrupted now) kept in
//! line with its pods, as Kubernetes' disruption controller keeps it, so
//! `kubectl get pdb` shows what an eviction will find.

use crate::cache::Cache;
use crate::writes::write;
use crate::ManagerError;
use ringleader_api::kinds::disruption;
use ringleader_store::{Backend, Op};
use serde_json::{json, Value};

/// One pass: the status patches [`decide`] wants, written.
pub fn pass(store: &dyn Backend, cache: &mut Cache) -> Result<(), ManagerError> {
    let ops = decide(cache);
    write(store, cache, ops)
}

/// A status patch for each budget whose status is not what its pods make it.
pub fn decide(cache: &Cache) -> Vec<Op> {
    let budgets: Vec<&ringleader_store::Stored> = cache.of_kind(disruption::API_VERSION, disruption::KIND).collect();
    if budgets.is_empty() {
        return Vec::new();
    }
    let pods: Vec<&Value> = cache.of_kind("v1", "Pod").map(|p| &p.object).collect();
    let mut ops = Vec::new();
    for b in budgets {
        let selected: Vec<&Value> = pods.iter().copied().filter(|p| disruption::selects(&b.object, p)).collect();
        let want =
            disruption::status(&disruption::budget(&b.object, &selected), b.object.pointer("/metadata/generation"));
        let have = b.object.get("status").cloned().unwrap_or(Value::Null);
        let same = want.as_object().is_some_and(|w| w.iter().all(|(k, v)| have.get(k) == Some(v)));
        if !same {
            ops.push(Op::Patch { key: b.key.clone(), patch: json!({"status": want}), expected: None });
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_status_follows_its_pods_and_is_written_once() {
        let mut cache = Cache::default();
        cache.put_value(json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}));
        for (name, phase) in [("w-0", "Running"), ("w-1", "Running")] {
            cache.put_value(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}}, "status": {"phase": phase}}),
            );
        }
        let ops = decide(&cache);
        let Some(Op::Patch { patch, .. }) = ops.first() else { panic!("{ops:?}") };
        assert_eq!(
            patch["status"],
            json!({"expectedPods": 2, "currentHealthy": 2, "desiredHealthy": 1, "disruptionsAllowed": 1})
        );
        let mut written =
            cache.of_kind("policy/v1", "PodDisruptionBudget").next().map(|b| b.object.clone()).unwrap_or_default();
        written["status"] = patch["status"].clone();
        let mut fresh = Cache::default();
        fresh.put_value(written);
        for (name, phase) in [("w-0", "Running"), ("w-1", "Running")] {
            fresh.put_value(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}}, "status": {"phase": phase}}),
            );
        }
        assert!(decide(&fresh).is_empty(), "nothing changed: nothing written");
    }
}
