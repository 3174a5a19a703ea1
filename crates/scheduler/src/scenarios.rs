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
            taints: Vec::new(),
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
        device: Some(DeviceRequest {
            resource: "huawei.com/Ascend910".to_string(),
            count: chips,
            kind: DeviceKind::Whole,
        }),
        pod_prefix: format!("{name}-worker"),
        template: Default::default(),
        partitions: None,
    };
    Job {
        kind: JobKind::VolcanoJob,
        namespace: "default".to_string(),
        name: name.to_string(),
        labels: BTreeMap::new(),
        annotations: BTreeMap::new(),
        framework: None,
        roles: vec![role],
        scheduling: SchedulingPolicy {
            queue: "default".to_string(),
            min_available: pods,
            priority_class: None,
            scheduler_name: None,
        },
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

/// `n` nodes of mixed hardware (Atlas 800T A2, Atlas 800 and HGX H100 in
/// turn), all free, 32 to a ToR.
pub fn mixed_cluster(n: usize) -> Cluster {
    let profiles: Vec<(Arc<ringleader_topology::Profile>, &str)> = ["atlas-800t-a2", "atlas-800-910", "hgx-h100-8"]
        .iter()
        .filter_map(|name| builtin(name).map(|p| (Arc::new(p.clone()), *name)))
        .collect();
    if profiles.is_empty() {
        return Cluster::default();
    }
    let nodes = (0..n)
        .map(|i| {
            let (profile, _) = &profiles[i % profiles.len()];
            let mut labels = BTreeMap::new();
            if let Some(a) = &profile.accelerator_type {
                labels.insert("accelerator-type".to_string(), a.clone());
            }
            Node {
                name: format!("node-{i:05}"),
                labels,
                profile: Arc::clone(profile),
                state: DeviceState::new(),
                network: NodeNetwork {
                    tor: Some(format!("tor-{:04}", i / NODES_PER_TOR)),
                    spine: None,
                    super_pod: None,
                },
                address: None,
                taints: Vec::new(),
            }
        })
        .collect();
    Cluster { nodes }
}

/// A PyTorchJob-style job of `pods` pods with `gpus` NVIDIA GPUs each.
pub fn gpu_job(name: &str, pods: u32, gpus: u32) -> Job {
    let mut job = npu_job(name, pods, gpus);
    job.kind = JobKind::PyTorchJob;
    for role in &mut job.roles {
        role.device =
            Some(DeviceRequest { resource: "nvidia.com/gpu".to_string(), count: gpus, kind: DeviceKind::Whole });
    }
    job
}

/// Jobs of mixed shapes adding up to `total_pods` pods: single-pod jobs of
/// 1, 2 or 4 chips or GPUs, and gangs of 4, 8 and 16 pods, in a fixed
/// rotation so every run sees the same load.
pub fn mixed_jobs(total_pods: u32) -> Vec<Job> {
    // (pods, devices per pod, GPU?)
    const SHAPES: [(u32, u32, bool); 8] = [
        (1, 1, false),
        (1, 2, true),
        (4, 1, false),
        (1, 4, false),
        (8, 1, true),
        (1, 1, true),
        (16, 1, false),
        (2, 4, true),
    ];
    let mut jobs = Vec::new();
    let mut pods = 0;
    let mut k = 0usize;
    while pods < total_pods {
        let (n, d, gpu) = SHAPES[k % SHAPES.len()];
        let n = n.min(total_pods - pods);
        let name = format!("mixed-{k:06}");
        jobs.push(if gpu { gpu_job(&name, n, d) } else { npu_job(&name, n, d) });
        pods += n;
        k += 1;
    }
    jobs
}
