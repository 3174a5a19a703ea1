//! Which ports the live pods hold on each address, the input of the
//! controller's port choice ([`ringleader_controller::ports`]).
//!
//! A released pod (start mark set) that has not ended holds, on its node's
//! address, the ports the controller gave it (annotation
//! [`ANNOTATION`]) and the container ports it declares, except those
//! named for a job's rendezvous (`tfjob-port` …): the annotation says where
//! such a pod really listens. A pod without the annotation holds every
//! port it declares. A pod that ended holds nothing, so its ports are free
//! for the next job.

use crate::cache::{annotation, at, Cache};
use crate::node_view::NodeView;
use crate::pods;
use ringleader_controller::ports::{parse_annotation, PortsInUse, RENDEZVOUS_PORT_NAMES};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

pub use ringleader_controller::ports::ANNOTATION;

/// Ports a pod holds while it lives (see the module doc).
pub fn held_by(pod: &Value) -> BTreeSet<u16> {
    let given = annotation(pod, ANNOTATION);
    let mut ports: BTreeSet<u16> = given.map(parse_annotation).unwrap_or_default().into_iter().collect();
    let containers = at(pod, &["spec", "containers"]).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    for c in containers {
        for p in c.get("ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
            let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
            if given.is_some() && RENDEZVOUS_PORT_NAMES.contains(&name) {
                continue;
            }
            if let Some(port) = p.get("containerPort").and_then(Value::as_u64).and_then(|n| u16::try_from(n).ok()) {
                ports.extend(Some(port).filter(|p| *p != 0));
            }
        }
    }
    ports
}

/// Ports held on `addresses` by released, live pods (one walk of the pods).
pub fn in_use(cache: &Cache, nodes: &BTreeMap<&str, &NodeView>, addresses: &BTreeSet<&str>) -> PortsInUse {
    let mut used = PortsInUse::new();
    for p in cache.of_kind("v1", "Pod") {
        let Some(node) = pods::node_of(&p.object).and_then(|n| nodes.get(n)) else { continue };
        if !addresses.contains(node.address.as_str())
            || !pods::started(&p.object)
            || !pods::phase_of(&p.object).is_live()
        {
            continue;
        }
        let held = held_by(&p.object);
        if !held.is_empty() {
            used.entry(node.address.clone()).or_default().extend(held);
        }
    }
    used
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_annotation_replaces_declared_rendezvous_ports_but_not_others() {
        let ports = json!([{"name": "tfjob-port", "containerPort": 2222}, {"name": "board", "containerPort": 6006}]);
        let given = json!({"metadata": {"annotations": {ANNOTATION: "28000"}},
                           "spec": {"containers": [{"name": "c", "ports": ports}]}});
        assert_eq!(held_by(&given), BTreeSet::from([6006, 28000]));
        let bare = json!({"metadata": {}, "spec": {"containers": [{"name": "c", "ports": ports}]}});
        assert_eq!(held_by(&bare), BTreeSet::from([2222, 6006]));
    }
}
