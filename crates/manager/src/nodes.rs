//! Node lifecycle: a node whose agent stopped heartbeating is marked
//! NotReady, which the job controller's fault handling and the scheduler
//! (which leaves NotReady nodes out) act upon. Only nodes a ringleader
//! agent registered are judged: a kubelet's Node is ready as its own
//! `Ready` condition says.

use crate::cache::{at, Cache};
use crate::events::{self, Recorder};
use crate::ManagerError;
use ringleader_scheduler::k8s_node::is_kubelet_node;
use ringleader_store::{Backend, Op};
use serde_json::{json, Value};

/// Marks NotReady the ready nodes whose last heartbeat is older than
/// `timeout` seconds. Returns whether any was marked.
pub fn mark_not_ready(store: &dyn Backend, cache: &mut Cache, timeout: f64, now: f64) -> Result<bool, ManagerError> {
    let ops: Vec<Op> = cache
        .of_kind("ringleader.io/v1alpha1", "Node")
        // Cheapest test first: this runs on every wake-up over every Node,
        // and a fresh heartbeat ends it for almost all of them.
        .filter(|n| {
            at(&n.object, &["status", "lastHeartbeat"]).and_then(Value::as_f64).is_some_and(|t| now - t > timeout)
        })
        .filter(|n| at(&n.object, &["status", "ready"]).and_then(Value::as_bool) == Some(true))
        // A kubelet's Node is judged by the node lifecycle controller from
        // its Lease: its Ready condition is read, never written here.
        .filter(|n| !is_kubelet_node(&n.object))
        .map(|n| Op::Patch {
            key: n.key.clone(),
            patch: json!({"status": {"ready": false}}),
            // A heartbeat racing this write wins: the conflict skips the mark.
            expected: Some(n.resource_version),
        })
        .collect();
    if ops.is_empty() {
        return Ok(false);
    }
    let mut recorded = Recorder::new(events::CONTROLLER);
    for key in ops.iter().filter_map(|op| if let Op::Patch { key, .. } = op { Some(key) } else { None }) {
        if let Some(n) = cache.get(key) {
            events::node_not_ready(&mut recorded, n, timeout);
        }
    }
    events::write(store, cache, ops, recorded, now)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_scheduler::k8s_node::KUBELET_NODE_ANNOTATION;
    use ringleader_store::Selector;

    fn node(name: &str, annotations: Value) -> Value {
        json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
               "metadata": {"name": name, "annotations": annotations},
               "spec": {"profile": "hgx-h100-8"}, "status": {"ready": true, "lastHeartbeat": 100.0}})
    }

    #[test]
    fn only_nodes_of_ringleader_agents_are_judged_by_their_heartbeat() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ringleader_store::Store::open(dir.path()).expect("open");
        store.create(node("agent", json!({}))).expect("create");
        store.create(node("kubelet", json!({KUBELET_NODE_ANNOTATION: "true"}))).expect("create");
        let mut cache = Cache::default();
        cache.load(store.list(&Selector::all()).expect("list").0);
        assert!(mark_not_ready(&store, &mut cache, 5.0, 1000.0).expect("mark"));
        let ready = |name: &str| {
            let key = ringleader_store::ObjectKey::new("ringleader.io/v1alpha1", "Node", "", name);
            store.get(&key).expect("get").map(|s| s.object["status"]["ready"].clone())
        };
        assert_eq!(ready("agent"), Some(json!(false)));
        assert_eq!(ready("kubelet"), Some(json!(true)), "a kubelet's Node is its own Ready condition");
    }
}
