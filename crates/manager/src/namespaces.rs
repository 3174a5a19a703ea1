//! The namespace controller: a namespace marked for deletion (phase
//! Terminating, by the API server) is emptied — its pods stopped through
//! their agents as any deleted pod (so their devices come free), everything
//! else in it deleted — and once nothing is left in it, the namespace itself
//! goes, as Kubernetes' namespace controller removes its `kubernetes`
//! finalizer.

use crate::cache::Cache;
use crate::jobs::delete_pod_once;
use crate::node_view::{node_views, NodeView};
use crate::writes::write;
use crate::ManagerError;
use ringleader_api::kinds::namespace;
use ringleader_store::{Backend, ObjectKey, Op};
use std::collections::{BTreeMap, BTreeSet};

/// One pass: the writes [`decide`] wants, carried out.
pub fn finalize(store: &dyn Backend, cache: &mut Cache, now: f64) -> Result<(), ManagerError> {
    let ops = decide(cache, now);
    write(store, cache, ops)
}

/// What emptying the terminating namespaces takes now: for each, the
/// deletes of what is in it, or (when nothing is) of the namespace. Pods an
/// agent is already stopping are left to it (a delete again would be a
/// write each pass until it is done).
pub fn decide(cache: &Cache, now: f64) -> Vec<Op> {
    let terminating: BTreeSet<&str> = cache
        .of_kind(namespace::API_VERSION, namespace::KIND)
        .filter(|n| namespace::terminating(&n.object))
        .map(|n| n.key.name.as_str())
        .collect();
    if terminating.is_empty() {
        return Vec::new();
    }
    let views = node_views(cache);
    let nodes: BTreeMap<&str, &NodeView> = views.iter().map(|n| (n.name.as_str(), n)).collect();
    let mut ops = Vec::new();
    let mut holding: BTreeSet<&str> = BTreeSet::new();
    for o in cache.all().filter(|o| terminating.contains(o.key.namespace.as_str())) {
        holding.insert(o.key.namespace.as_str());
        if o.key.api_version == "v1" && o.key.kind == "Pod" {
            ops.extend(delete_pod_once(o, &nodes, now));
        } else {
            ops.push(Op::Delete { key: o.key.clone(), expected: None });
        }
    }
    for ns in terminating.difference(&holding) {
        ops.push(Op::Delete { key: ObjectKey::new(namespace::API_VERSION, namespace::KIND, "", ns), expected: None });
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn node(name: &str) -> Value {
        json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": name},
               "spec": {"profile": "hgx-h100-8", "address": "127.0.0.1"}, "status": {"ready": true}})
    }

    fn pod(ns: &str, name: &str, started: bool, deleting: bool) -> Value {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        if started {
            p["metadata"]["annotations"] = json!({"ringleader.io/start": "true"});
        }
        if deleting {
            p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        p
    }

    fn names(ops: &[Op]) -> Vec<String> {
        ops.iter()
            .map(|op| match op {
                Op::Delete { key, .. } => format!("delete {}/{}", key.kind, key.name),
                Op::Patch { key, .. } => format!("stop {}/{}", key.kind, key.name),
                _ => "other".into(),
            })
            .collect()
    }

    #[test]
    fn a_terminating_namespace_is_emptied_then_deleted() {
        let mut cache = Cache::default();
        cache.put_value(node("n1"));
        let mut going = namespace::object("vcjob");
        going["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        going["status"]["phase"] = json!("Terminating");
        cache.put_value(going);
        cache.put_value(namespace::object("kept"));
        cache.put_value(pod("vcjob", "runs", true, false));
        cache.put_value(pod("vcjob", "stopping", true, true));
        cache.put_value(pod("vcjob", "never-started", false, false));
        cache.put_value(pod("kept", "other", true, false));
        cache.put_value(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "vcjob"}}),
        );
        let ops = decide(&cache, 100.0);
        assert_eq!(
            names(&ops),
            vec!["delete ConfigMap/c", "delete Pod/never-started", "stop Pod/runs"],
            "a running pod is handed to its agent, one already stopping left to it, nothing outside touched"
        );
        // Once only the namespace is left, it goes.
        let mut empty = Cache::default();
        let mut going = namespace::object("vcjob");
        going["status"]["phase"] = json!("Terminating");
        empty.put_value(going);
        assert_eq!(names(&decide(&empty, 100.0)), vec!["delete Namespace/vcjob"]);
        assert!(decide(&Cache::default(), 1.0).is_empty());
    }
}
