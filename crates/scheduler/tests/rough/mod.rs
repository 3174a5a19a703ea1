//! Randomised clusters shared by the node-group equivalence tests
//! (`plan_index.rs`, `session_index.rs`).

use rand::rngs::StdRng;
use rand::Rng;
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
