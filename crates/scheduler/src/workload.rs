//! Workloads already running when a session opens: the cluster file's
//! `ringleader.io/v1alpha1` Workload objects, each a gang holding devices on
//! its nodes, which preemption and reclaim may evict whole.

use crate::cluster::Cluster;
use ringleader_api::kinds::Workload;
use ringleader_api::FieldError;
use ringleader_topology::{DeviceSet, DeviceState, DeviceUse};

/// One running pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningPod {
    /// Pod name.
    pub name: String,
    /// Index of its node in the cluster.
    pub node: usize,
    /// Device indices it holds on that node.
    pub devices: DeviceSet,
    /// What it takes from each of those devices when it holds only part of
    /// them (a vNPU); `None`: it holds them whole.
    pub share: Option<DeviceUse>,
    /// `Some(true)`: it holds a static vNPU, `Some(false)`: a dynamic one
    /// (a cluster runs one mode at a time).
    pub vnpu: Option<bool>,
}

/// A running job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Queue it runs in.
    pub queue: String,
    /// PriorityClass name.
    pub priority_class: Option<String>,
    /// Priority value, when given directly.
    pub priority: Option<i32>,
    /// Never preempted.
    pub vip: bool,
    /// Its pods.
    pub pods: Vec<RunningPod>,
}

impl Running {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Reads a Workload against the cluster; an unknown node or device ID is
    /// an error naming its field.
    pub fn from_object(obj: &Workload, cluster: &Cluster) -> Result<Running, Vec<FieldError>> {
        let mut errs = Vec::new();
        let mut pods = Vec::new();
        for (i, pod) in obj.spec.pods.iter().enumerate() {
            let node_name = pod.node.clone().unwrap_or_default();
            let Some(n) = cluster.nodes.iter().position(|n| n.name == node_name) else {
                errs.push(FieldError::new(format!("spec.pods[{i}].node"), &node_name, "no such node in the cluster"));
                continue;
            };
            let profile = &cluster.nodes[n].profile;
            let mut devices = DeviceSet::default();
            for (k, id) in pod.devices.iter().enumerate() {
                match profile.devices.iter().position(|d| d.id == *id) {
                    Some(d) => devices.insert(d),
                    None => errs.push(FieldError::new(
                        format!("spec.pods[{i}].devices[{k}]"),
                        id,
                        format!("no such device on node {node_name} (profile {})", profile.name),
                    )),
                }
            }
            pods.push(RunningPod { name: pod.name.clone(), node: n, devices, share: None, vnpu: None });
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(Running {
            namespace: obj.metadata.namespace.clone().unwrap_or_else(|| "default".to_string()),
            name: obj.metadata.name.clone().unwrap_or_default(),
            queue: obj.spec.queue.clone().unwrap_or_else(|| "default".to_string()),
            priority_class: obj.spec.priority_class_name.clone(),
            priority: obj.spec.priority,
            vip: obj.spec.vip,
            pods,
        })
    }

    /// Marks the workload's devices allocated on the cluster.
    pub fn occupy(&self, cluster: &mut Cluster) {
        self.pods.iter().for_each(|p| p.occupy(cluster));
    }

    /// Frees the workload's devices on the cluster.
    pub fn release(&self, cluster: &mut Cluster) {
        self.pods.iter().for_each(|p| p.release(cluster));
    }
}

impl RunningPod {
    /// Marks the pod's devices allocated on its node, or adds its share to
    /// each of them (a vNPU: the chip's other AI cores stay usable).
    pub fn occupy(&self, cluster: &mut Cluster) {
        if let Some(node) = cluster.nodes.get_mut(self.node) {
            match &self.share {
                Some(u) => share(&mut node.state, self.devices, |d| d.plus(u)),
                None => node.state.allocated = node.state.allocated.or(self.devices),
            }
        }
    }

    /// Frees what [`RunningPod::occupy`] took.
    pub fn release(&self, cluster: &mut Cluster) {
        if let Some(node) = cluster.nodes.get_mut(self.node) {
            match &self.share {
                Some(u) => share(&mut node.state, self.devices, |d| d.minus(u)),
                None => node.state.allocated = node.state.allocated.minus(self.devices),
            }
        }
    }
}

fn share(state: &mut DeviceState, devices: DeviceSet, f: impl Fn(&DeviceUse) -> DeviceUse) {
    for i in devices.iter() {
        if state.partial.len() <= i {
            state.partial.resize(i + 1, DeviceUse::default());
        }
        if let Some(slot) = state.partial.get_mut(i) {
            *slot = f(slot);
        }
    }
}
