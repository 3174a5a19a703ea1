//! The cluster the scheduler places onto: nodes with their hardware profile,
//! labels, network position and device state, built from cluster-file
//! `ringleader.io/v1alpha1` Node objects.

use k8s_openapi::api::core::v1::Taint;
use ringleader_api::kinds::cluster::{Node as NodeObject, NodeNetwork};
use ringleader_api::FieldError;
use ringleader_topology::parse::{npu_smi, nvidia_smi};
use ringleader_topology::{builtin, builtin_names, DeviceSet, DeviceState, LinkSpeeds, Profile, Vendor};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One schedulable node.
#[derive(Debug, Clone)]
pub struct Node {
    /// Node name.
    pub name: String,
    /// Labels: the profile's defaults (`accelerator-type`, `accelerator`) overlaid by the node's own.
    pub labels: BTreeMap<String, String>,
    /// Hardware.
    pub profile: Arc<Profile>,
    /// What is in use or broken, by device index.
    pub state: DeviceState,
    /// ToR / spine / SuperPoD.
    pub network: NodeNetwork,
    /// Address pods on this node are reached at.
    pub address: Option<String>,
    /// Taints pods must tolerate to be placed here (see [`crate::predicates::tolerates`]).
    pub taints: Vec<Taint>,
}

impl Node {
    /// Builds a node from its cluster-file object; errors name the field.
    pub fn from_object(obj: &NodeObject) -> Result<Node, Vec<FieldError>> {
        let name = obj.metadata.name.clone().unwrap_or_default();
        let mut errs = Vec::new();
        let mut unhealthy_from_tool = DeviceSet::default();
        let profile: Option<Arc<Profile>> = match (&obj.spec.profile, &obj.spec.topology_text, &obj.spec.npu_smi_text) {
            (Some(p), None, None) => match builtin(p) {
                Some(profile) => Some(Arc::new(profile.clone())),
                None => {
                    errs.push(FieldError::new(
                        "spec.profile",
                        p,
                        format!("unknown profile; built-in profiles: {}", builtin_names().join(", ")),
                    ));
                    None
                }
            },
            (None, Some(text), None) => {
                match nvidia_smi::profile_from_topo(&name, text, LinkSpeeds::default(), "NVIDIA GPU") {
                    Ok(p) => Some(Arc::new(p)),
                    Err(e) => {
                        errs.push(FieldError::new("spec.topologyText", format!("line {}", e.line), e.to_string()));
                        None
                    }
                }
            }
            (None, None, Some(text)) => {
                match npu_smi::parse_info(text).and_then(|info| npu_smi::profile_from_info(&info)) {
                    Ok((p, bad)) => {
                        unhealthy_from_tool = bad;
                        Some(Arc::new(p))
                    }
                    Err(e) => {
                        errs.push(FieldError::new("spec.npuSmiText", format!("line {}", e.line), e.to_string()));
                        None
                    }
                }
            }
            _ => {
                errs.push(FieldError::missing(
                    "spec.profile",
                    "a Node needs exactly one of spec.profile, spec.topologyText or spec.npuSmiText",
                ));
                None
            }
        };
        let Some(profile) = profile else { return Err(errs) };
        let sets = [
            ("status.allocatedDevices", &obj.status.allocated_devices),
            ("status.unhealthyDevices", &obj.status.unhealthy_devices),
            ("status.networkUnhealthyDevices", &obj.status.network_unhealthy_devices),
        ]
        .map(|(field, ids)| ids_to_set(&profile, ids, field).map_err(|e| errs.push(e)).unwrap_or_default());
        if !errs.is_empty() {
            return Err(errs);
        }
        let state = DeviceState::new()
            .with_allocated(sets[0])
            .with_unhealthy(sets[1].or(unhealthy_from_tool))
            .with_network_unhealthy(sets[2]);
        let mut labels = default_labels(&profile);
        // Every Kubernetes node carries its name as this well-known label
        // (what pins a pod to one node through a nodeSelector).
        labels.insert("kubernetes.io/hostname".to_string(), name.clone());
        labels.extend(obj.metadata.labels.clone().unwrap_or_default());
        Ok(Node {
            name,
            labels,
            profile,
            state,
            network: obj.spec.network.clone(),
            address: obj.spec.address.clone(),
            taints: obj.spec.taints.clone(),
        })
    }

    /// Physical device IDs of a set of device indices.
    pub fn device_ids(&self, set: DeviceSet) -> Vec<u32> {
        set.iter().filter_map(|i| self.profile.devices.get(i).map(|d| d.id)).collect()
    }
}

/// Labels a node of this profile carries unless it says otherwise.
pub(crate) fn default_labels(profile: &Profile) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    if let Some(a) = &profile.accelerator_type {
        labels.insert("accelerator-type".to_string(), a.clone());
    }
    if profile.vendor == Vendor::Huawei {
        let short = profile.resource_name.trim_start_matches("huawei.com/");
        labels.insert("accelerator".to_string(), format!("huawei-{short}"));
    } else {
        labels.insert("accelerator".to_string(), "nvidia-gpu".to_string());
    }
    labels
}

/// Turns device IDs into profile indices; an unknown ID names its field.
fn ids_to_set(profile: &Profile, ids: &[u32], field: &str) -> Result<DeviceSet, FieldError> {
    let mut set = DeviceSet::default();
    for (k, id) in ids.iter().enumerate() {
        match profile.devices.iter().position(|d| d.id == *id) {
            Some(i) => set.insert(i),
            None => {
                let known: Vec<String> = profile.devices.iter().map(|d| d.id.to_string()).collect();
                return Err(FieldError::new(
                    format!("{field}[{k}]"),
                    id,
                    format!("no such device on profile {}; device IDs: {}", profile.name, known.join(", ")),
                ));
            }
        }
    }
    Ok(set)
}

/// A set of nodes.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// Nodes in the order the cluster file lists them.
    pub nodes: Vec<Node>,
}

impl Cluster {
    /// The node of this name.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }
}

impl Cluster {
    /// Builds a cluster from the `ringleader.io/v1alpha1` Node documents of a
    /// cluster file (other kinds are skipped). Every problem comes back as
    /// one line naming the source, document, object, field and value.
    pub fn from_documents(docs: &[ringleader_api::Document]) -> Result<Cluster, Vec<String>> {
        let mut cluster = Cluster::default();
        let mut errors = Vec::new();
        for r in ringleader_api::check_documents(docs) {
            for e in &r.errors {
                errors.push(format!("{}[{}] {}: {e}", r.path, r.index, r.object()));
            }
            if let Some(ringleader_api::Resource::Node(obj)) = &r.resource {
                match Node::from_object(obj) {
                    Ok(node) => cluster.nodes.push(node),
                    Err(errs) => {
                        errors.extend(errs.iter().map(|e| format!("{}[{}] {}: {e}", r.path, r.index, r.object())))
                    }
                }
            }
        }
        match (errors.is_empty(), cluster.nodes.is_empty()) {
            (false, _) => Err(errors),
            (true, true) => Err(vec!["the cluster file has no ringleader.io/v1alpha1 Node documents".to_string()]),
            (true, false) => Ok(cluster),
        }
    }

    /// Devices allocated whole, over all nodes.
    pub fn allocated_devices(&self) -> u64 {
        self.nodes.iter().map(|n| u64::from(n.state.allocated.len())).sum()
    }

    /// Devices of all nodes.
    pub fn total_devices(&self) -> u64 {
        self.nodes.iter().map(|n| n.profile.devices.len() as u64).sum()
    }

    /// Frees whole devices (by physical ID) a finished pod held on a node.
    pub fn release(&mut self, node: &str, ids: &[u32]) {
        if let Some(n) = self.nodes.iter_mut().find(|n| n.name == node) {
            let set = ringleader_topology::DeviceSet::from_indices(
                n.profile.devices.iter().enumerate().filter(|(_, d)| ids.contains(&d.id)).map(|(i, _)| i),
            );
            n.state.allocated = n.state.allocated.minus(set);
        }
    }
}
