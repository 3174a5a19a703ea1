//! Nodes as the job controller and the scheduler see them, read from the cache.

use crate::cache::Cache;
use std::collections::BTreeSet;
use std::sync::Arc;

pub use crate::node_model::NodeView;

/// Nodes from the cache.
pub fn node_views(cache: &Cache) -> Vec<NodeView> {
    let mut memo = match cache.node_views.lock() {
        Ok(m) => m,
        // A pass that panicked mid-update left at worst a stale entry per
        // node, each checked against its version below.
        Err(poisoned) => poisoned.into_inner(),
    };
    let mut seen = 0;
    let views: Vec<NodeView> = cache
        .of_kind("ringleader.io/v1alpha1", "Node")
        .filter_map(|n| {
            seen += 1;
            if let Some((rv, view)) = memo.get(&n.key.name) {
                if *rv == n.resource_version {
                    return Some((**view).clone());
                }
            }
            let view = read(&n.object)?;
            memo.insert(n.key.name.clone(), (n.resource_version, Arc::new(view.clone())));
            Some(view)
        })
        .collect();
    // Deleted nodes leave the memo once it holds more than the cache does.
    if memo.len() > seen {
        let live: BTreeSet<&str> = views.iter().map(|v| v.name.as_str()).collect();
        memo.retain(|name, _| live.contains(name.as_str()));
    }
    views
}

/// One Node's view; `None` for a Node that does not decode.
fn read(object: &serde_json::Value) -> Option<NodeView> {
    let node: ringleader_api::kinds::cluster::Node = serde_json::from_value(object.clone()).ok()?;
    let name = node.metadata.name.clone()?;
    let profile = node.spec.profile.as_deref().and_then(ringleader_topology::profiles::builtin);
    Some(NodeView {
        address: node.spec.address.clone().unwrap_or_else(|| "127.0.0.1".to_string()),
        pod_network: node.status.pod_network == Some(true),
        super_pod: node.spec.network.super_pod.clone(),
        ready: node.status.ready != Some(false) && !node.spec.stopped,
        unschedulable: node.spec.unschedulable,
        devices: profile.map(|p| p.devices.iter().map(|d| d.id).collect()).unwrap_or_default(),
        unhealthy: node.status.unhealthy_devices.iter().copied().collect(),
        network_unhealthy: node.status.network_unhealthy_devices.iter().copied().collect(),
        last_heartbeat: node.status.last_heartbeat.filter(|t| t.is_finite() && *t >= 0.0),
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_store::{ObjectKey, Stored};
    use serde_json::json;

    fn node(rv: u64, unschedulable: bool) -> Stored {
        let object = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n1"},
                            "spec": {"profile": "atlas-800-910", "unschedulable": unschedulable}});
        Stored { key: ObjectKey::of(&object).unwrap_or_else(|e| panic!("{e}")), resource_version: rv, object }
    }

    #[test]
    fn a_node_is_read_again_once_its_version_moves_and_forgotten_once_deleted() {
        let mut cache = Cache::default();
        cache.put(node(1, false));
        let first = node_views(&cache);
        assert_eq!((first.len(), first[0].unschedulable, first[0].devices.len()), (1, false, 8));
        cache.put(node(2, true));
        assert!(node_views(&cache)[0].unschedulable, "the newer version is read");
        let key = node(2, true).key;
        cache.remove(&key, 3);
        assert!(node_views(&cache).is_empty());
        assert!(cache.node_views.lock().map(|m| m.is_empty()).unwrap_or(false), "the memo let the node go");
    }
}
