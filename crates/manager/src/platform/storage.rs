//! StorageMounts: per node of the spec, `mounted` while the mount is wanted
//! (`spec.mounted`) and the node exists and is Ready, else `unmounted`. The
//! directory itself is the node's: a pod that names the storage gets it as
//! a hostPath volume, which the agent's sandbox binds.

use super::object::{name, status_op};
use crate::cache::at;
use serde_json::{json, Value};

use ringleader_store::Op;

/// Whether a Node object is Ready (heartbeating and not stopped).
pub fn node_ready(node: &Value) -> bool {
    at(node, &["status", "ready"]).and_then(Value::as_bool) == Some(true)
        && at(node, &["spec", "stopped"]).and_then(Value::as_bool) != Some(true)
}

/// The status writes of the StorageMounts whose per-node state changed.
pub fn decide(mounts: &[Value], nodes: &[Value]) -> Vec<Op> {
    let mut ops = Vec::new();
    for m in mounts {
        let wanted = at(m, &["spec", "mounted"]).and_then(Value::as_bool).unwrap_or(false);
        let per_node: Vec<Value> = at(m, &["spec", "nodes"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|n| {
                let up = nodes.iter().find(|x| name(x) == n).is_some_and(node_ready);
                json!({"node": n, "state": if wanted && up { "mounted" } else { "unmounted" }})
            })
            .collect();
        ops.extend(status_op(m, json!({ "nodes": per_node })));
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounted_only_where_wanted_and_the_node_is_ready() {
        let nodes = vec![
            json!({"metadata": {"name": "a"}, "status": {"ready": true}}),
            json!({"metadata": {"name": "b"}, "status": {"ready": false}}),
        ];
        let m = json!({"apiVersion": super::super::API, "kind": "StorageMount", "metadata": {"name": "s"},
                       "spec": {"nodeDirectory": "/mnt/s", "nodes": ["a", "b", "ghost"], "mounted": true}});
        let ops = decide(std::slice::from_ref(&m), &nodes);
        let Some(Op::Patch { patch, .. }) = ops.first() else { panic!("{ops:?}") };
        assert_eq!(
            patch["status"]["nodes"],
            json!([{"node": "a", "state": "mounted"}, {"node": "b", "state": "unmounted"},
                   {"node": "ghost", "state": "unmounted"}])
        );
        let mut off = m;
        off["spec"]["mounted"] = json!(false);
        off["status"] = json!({"nodes": [{"node": "a", "state": "unmounted"}, {"node": "b", "state": "unmounted"},
                                         {"node": "ghost", "state": "unmounted"}]});
        assert!(decide(&[off], &nodes).is_empty());
    }
}
