//! Where a bound pod sits: its node, address, devices and port as the
//! controller's placement (env and rank tables are built from it).

use crate::cache::annotation;
use crate::node_view::NodeView;
use crate::{pods, ports};
use ringleader_controller::placement::{PlacedDevice, PodPlacement};
use ringleader_controller::ports::parse_annotation;
use ringleader_scheduler::place::handshake::device_ip;
use serde_json::Value;
use std::collections::BTreeMap;

/// The placement of a bound pod. On a node with a pod network a pod (not on
/// `hostNetwork`) has the address its sandbox got, empty until the agent
/// reports it: peers then go by name, and the rank table waits for it.
pub fn placement_of(pod: &Value, nodes: &BTreeMap<&str, &NodeView>) -> Option<PodPlacement> {
    let node = nodes.get(pods::node_of(pod)?)?;
    let host_network = pod.pointer("/spec/hostNetwork").and_then(Value::as_bool) == Some(true);
    let pod_ip = if node.pod_network && !host_network {
        // Until its sandbox has one, a pod's status may show its node's address.
        pod.pointer("/status/podIP").and_then(Value::as_str).filter(|ip| *ip != node.address).unwrap_or_default()
    } else {
        &node.address
    };
    Some(PodPlacement {
        node: node.name.clone(),
        host_ip: node.address.clone(),
        pod_ip: pod_ip.to_string(),
        devices: pods::devices_of(pod)
            .into_iter()
            .map(|id| PlacedDevice { id, device_ip: Some(device_ip(&node.address, id)), super_device_id: None })
            .collect(),
        super_pod_id: node.super_pod.clone(),
        // Only a released pod's port is settled; a waiting one's is chosen at its release.
        port: pods::started(pod)
            .then(|| annotation(pod, ports::ANNOTATION).and_then(|v| parse_annotation(v).first().copied()))
            .flatten(),
    })
}
