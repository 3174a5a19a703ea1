//! Hot reset of faulty chips in a running cluster (`up --hot-reset-secs`,
//! MindCluster's `-hotReset`): once no live pod holds a chip of an unhealthy
//! chip's HCCS / UB ring, the controller's [`HotReset`] planner resets the
//! whole ring; the ring's chips are out of service for the reset (added to
//! the node's `spec.injectedFaults.unhealthy`, so nobody is given them) and
//! healthy again after it (removed there, the faulty chip included: the
//! reset repaired it). Resets in progress are kept on the Node, in
//! annotation [`ANNOTATION`], so a restarted manager finishes them.

use crate::cache::{str_at, Cache};
use crate::pods;
use crate::writes::write;
use crate::ManagerError;
use ringleader_controller::fault::DeviceRef;
use ringleader_controller::hotreset::HotReset;
use ringleader_scheduler::k8s_node::is_kubelet_node;
use ringleader_store::{Backend, Op};
use ringleader_topology::profile::GroupKind;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Node annotation: chips being reset → start (seconds since the epoch), as JSON.
pub const ANNOTATION: &str = "ringleader.io/hot-reset";

/// One node as the reset sees it.
struct NodeState {
    key: ringleader_store::ObjectKey,
    version: u64,
    injected: BTreeSet<u32>,
    resetting: BTreeMap<u32, u64>,
}

fn numbers(v: Option<&Value>) -> BTreeSet<u32> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_u64).filter_map(|n| u32::try_from(n).ok()).collect())
        .unwrap_or_default()
}

/// The chips of each ring of a profile, by device ID (none: chips reset alone).
fn rings(profile: Option<&str>) -> Vec<Vec<u32>> {
    let Some(p) = profile.and_then(ringleader_topology::profiles::builtin) else { return Vec::new() };
    if !matches!(p.group_kind, GroupKind::HccsRing | GroupKind::UbRing) {
        return Vec::new();
    }
    p.groups.iter().map(|g| g.iter().filter_map(|i| p.devices.get(i).map(|d| d.id)).collect()).collect()
}

/// One step of the planner over every node; true when a node was written.
pub fn pass(store: &dyn Backend, cache: &mut Cache, reset_secs: u64, now: f64) -> Result<bool, ManagerError> {
    let now = now.max(0.0) as u64;
    let mut nodes: BTreeMap<String, NodeState> = BTreeMap::new();
    let mut faulty = BTreeSet::new();
    let mut ring_map = BTreeMap::new();
    let mut resetting = BTreeMap::new();
    // A kubelet's Node is not ours to reset chips on, nor to annotate.
    for n in cache.of_kind("ringleader.io/v1alpha1", "Node").filter(|n| !is_kubelet_node(&n.object)) {
        let Some(name) = str_at(&n.object, &["metadata", "name"]).map(str::to_string) else { continue };
        let progress: BTreeMap<u32, u64> = n
            .object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(ANNOTATION))
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default();
        // Faulty: unhealthy as reported and as injected. A chip whose reset
        // just removed it from the injected list is reported unhealthy until
        // the next heartbeat and must not be reset again.
        let injected = numbers(n.object.pointer("/spec/injectedFaults/unhealthy"));
        for d in numbers(n.object.pointer("/status/unhealthyDevices")).intersection(&injected) {
            faulty.insert(DeviceRef { node: name.clone(), device: *d });
        }
        for (d, t) in &progress {
            resetting.insert(DeviceRef { node: name.clone(), device: *d }, *t);
        }
        ring_map.insert(name.clone(), rings(str_at(&n.object, &["spec", "profile"])));
        nodes
            .insert(name, NodeState { key: n.key.clone(), version: n.resource_version, injected, resetting: progress });
    }
    if faulty.is_empty() && resetting.is_empty() {
        return Ok(false);
    }
    let mut busy = BTreeSet::new();
    for p in cache.of_kind("v1", "Pod") {
        let Some(node) = pods::node_of(&p.object) else { continue };
        if pods::phase_of(&p.object).is_live() {
            for d in pods::devices_of(&p.object) {
                busy.insert(DeviceRef { node: node.to_string(), device: d });
            }
        }
    }
    let mut planner = HotReset::resume(reset_secs, resetting);
    let step = planner.step(&faulty, &busy, &ring_map, now);
    let mut ops = Vec::new();
    for (name, node) in &nodes {
        let after: BTreeMap<u32, u64> =
            planner.in_progress().iter().filter(|(d, _)| &d.node == name).map(|(d, t)| (d.device, *t)).collect();
        if after == node.resetting {
            continue;
        }
        // Finished resets leave the faulty list; started ones join it.
        let finished = node.resetting.keys().filter(|d| !after.contains_key(d));
        let mut injected = node.injected.clone();
        for d in finished {
            injected.remove(d);
        }
        injected.extend(after.keys().copied());
        for a in step.start.iter().filter(|a| &a.node == name) {
            tracing::info!(node = %name, chips = ?a.chips, "hot reset started");
        }
        let annotation =
            if after.is_empty() { Value::Null } else { json!(serde_json::to_string(&after).unwrap_or_default()) };
        ops.push(Op::Patch {
            key: node.key.clone(),
            patch: json!({
                "metadata": {"annotations": {ANNOTATION: annotation}},
                "spec": {"injectedFaults": {"unhealthy": injected.iter().collect::<Vec<_>>()}},
            }),
            // A concurrent `node fault` wins; the next pass sees it.
            expected: Some(node.version),
        });
    }
    if ops.is_empty() {
        return Ok(false);
    }
    write(store, cache, ops)?;
    Ok(true)
}
