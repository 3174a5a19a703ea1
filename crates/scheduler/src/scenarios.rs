//! Synthetic clusters and jobs for benchmarks, shaped like the seed's
//! scheduling-time table (MindCluster on Atlas 800T A2 servers): nodes with
//! one free chip, single-chip jobs, one job of N pods.

use crate::cluster::{Cluster, Node};
use ringleader_api::kinds::cluster::NodeNetwork;
use ringleader_api::model::{
    CleanPodPolicy, FaultPolicy, Job, JobKind, RestartPolicy, Role, SchedulingPolicy, SuccessPolicy,
    TopologyConstraints,
};
use ringleader_api::{DeviceKind, DeviceRequest};
use ringleader_topology::{builtin, DeviceSet, DeviceState};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Nodes per ToR switch in generated clusters.
pub const NODES_PER_TOR: usize = 32;

/// `n` Atlas 800T A2 nodes with `free` of their 8 chips free (the rest in use),
/// 32 to a ToR.
pub fn a2_cluster(n: usize, free: u32) -> Cluster {
    let profile = builtin("atlas-800t-a2").map(|p| Arc::new(p.clone()));
    let Some(profile) = profile else { return Cluster::default() };
    let used = DeviceSet::range(free as usize, profile.devices.len());
    let labels: BTreeMap<String, String> = [
        ("accelerator-type".to_string(), "module-910b-8".to_string()),
        ("host-arch".to_string(), "huawei-arm".to_string()),
    ]
    .into();
    let nodes = (0..n)
        .map(|i| Node {
            name: format!("node-{i:05}"),
            labels: labels.clone(),
            profile: Arc::clone(&profile),
            state: DeviceState::new().with_allocated(used),
            network: NodeNetwork { tor: Some(format!("tor-{:04}", i / NODES_PER_TOR)), spine: None, super_pod: None },
            address: None,
        })
        .collect();
    Cluster { nodes }
}

/// A Volcano-style job of `pods` pods, each asking for `chips` Ascend 910 chips.
pub fn npu_job(name: &str, pods: u32, chips: u32) -> Job {
    let role = Role {
        name: "worker".to_string(),
        replicas: pods,
        min_available: None,
        restart_policy: RestartPolicy::Never,
        device: Some(DeviceRequest { resource: "huawei.com/Ascend910".to_string(), count: chips, kind: DeviceKind::Whole }),
        pod_prefix: format!("{name}-worker"),
        template: Default::default(),
    };
    Job {
        kind: JobKind::VolcanoJob,
        namespace: "default".to_string(),
        name: name.to_string(),
        labels: BTreeMap::new(),
        annotations: BTreeMap::new(),
        framework: None,
        roles: vec![role],
        scheduling: SchedulingPolicy { queue: "default".to_string(), min_available: pods, priority_class: None, scheduler_name: None },
        fault: FaultPolicy {
            backoff_limit: Some(3),
            fault_scheduling: None,
            pod_level_recovery: false,
            elastic: None,
            active_deadline_seconds: None,
            ttl_seconds_after_finished: None,
            clean_pod_policy: CleanPodPolicy::None,
            policies: Vec::new(),
        },
        topology: TopologyConstraints::default(),
        success: SuccessPolicy::Default,
    }
}
