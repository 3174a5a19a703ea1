//! Randomised clusters and job variations shared by the node-group
//! equivalence tests (`plan_index.rs`, `session_index.rs`).

use k8s_openapi::api::core::v1::PodSpec;
use rand::rngs::StdRng;
use rand::Rng;
use ringleader_api::ascend as keys;
use ringleader_api::model::Job;
use ringleader_api::{DeviceKind, DeviceRequest};
use ringleader_scheduler::cluster::Cluster;
use ringleader_scheduler::scenarios::mixed_cluster;
use ringleader_topology::DeviceSet;
use std::sync::Arc;

/// Random bits of a device set of `len` devices.
fn some_devices(rng: &mut StdRng, len: usize) -> DeviceSet {
    let mask = if len >= 64 { u64::MAX } else { (1u64 << len) - 1 };
    DeviceSet(rng.gen::<u64>() & rng.gen::<u64>() & mask)
}

/// A mixed cluster roughed up: devices in use or broken, nodes without a
/// ToR, on odd ToRs or under spines, extra labels, profiles equal in content
/// but not shared.
pub fn rough_cluster(rng: &mut StdRng, n: usize) -> Cluster {
    let mut cluster = mixed_cluster(n);
    for node in &mut cluster.nodes {
        let len = node.profile.devices.len();
        if rng.gen_bool(0.3) {
            node.state.allocated = some_devices(rng, len);
        }
        if rng.gen_bool(0.05) {
            node.state.unhealthy = some_devices(rng, len);
        }
        if rng.gen_bool(0.05) {
            node.state.network_unhealthy = some_devices(rng, len);
        }
        match rng.gen_range(0..10) {
            0 => node.network.tor = None,
            1 => node.network.tor = Some(format!("odd-{}", rng.gen_range(0..3))),
            _ => {}
        }
        if rng.gen_bool(0.5) {
            node.network.spine = Some(format!("spine-{}", rng.gen_range(0..3)));
        }
        if rng.gen_bool(0.3) {
            let zone = if rng.gen_bool(0.5) { "a" } else { "b" };
            node.labels.insert("zone".to_string(), zone.to_string());
        }
        if rng.gen_bool(0.1) {
            node.profile = Arc::new((*node.profile).clone());
        }
    }
    cluster
}

/// Sometimes a minAvailable below the job's size.
pub fn rough_min_available(rng: &mut StdRng, job: &mut Job) {
    let replicas = job.total_replicas();
    if rng.gen_bool(0.3) {
        job.scheduling.min_available = rng.gen_range(0..=replicas);
    }
}

/// Varies what placement reads of the first role: device count and kind
/// (whole, shared GPU, dynamic vNPU), with odds `no_device` no device at
/// all, and a node selector.
pub fn rough_role(rng: &mut StdRng, job: &mut Job, no_device: f64) {
    let Some(role) = job.roles.first_mut() else { return };
    if let Some(dev) = role.device.as_mut() {
        match rng.gen_range(0..20) {
            0..=2 => dev.count = rng.gen_range(1..=8),
            3 if dev.resource == "nvidia.com/gpu" => {
                dev.kind = DeviceKind::GpuShare { milli: rng.gen_range(100..=1000) }
            }
            4 if dev.resource != "nvidia.com/gpu" => {
                *dev = DeviceRequest {
                    resource: "huawei.com/npu-core".to_string(),
                    count: rng.gen_range(1..=8),
                    kind: DeviceKind::DynamicVnpu,
                }
            }
            _ => {}
        }
    }
    if no_device > 0.0 && rng.gen_bool(no_device) {
        role.device = None;
    }
    if rng.gen_bool(0.2) {
        let zone = if rng.gen_bool(0.5) { "a" } else { "b" };
        let selector = [("zone".to_string(), zone.to_string())].into();
        role.template.spec = Some(PodSpec { node_selector: Some(selector), ..Default::default() });
    }
}

/// For `roll` 0–3, one of the job settings that send placement down its
/// reference path (schedule policy, the two tor-affinity schemas, a second
/// role); returns false for any other roll.
pub fn rough_policy(job: &mut Job, roll: u32) -> bool {
    match roll {
        0 => {
            job.annotations.insert(keys::SCHEDULE_POLICY.to_string(), "chip4-node8".to_string());
        }
        1 => {
            job.labels.insert(keys::TOR_AFFINITY.to_string(), "large-model-schema".to_string());
        }
        2 => {
            job.labels.insert(keys::TOR_AFFINITY.to_string(), "normal-schema".to_string());
        }
        3 => {
            if let Some(mut second) = job.roles.first().cloned() {
                second.name = "extra".to_string();
                second.pod_prefix = format!("{}-extra", job.name);
                job.roles.push(second);
            }
        }
        _ => return false,
    }
    true
}
