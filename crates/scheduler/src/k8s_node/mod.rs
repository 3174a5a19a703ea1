//! A core v1 Node's accelerator hardware, read from what clusters already
//! publish, for the Kubernetes-mode manager (which sees v1 Nodes, not
//! ringleader's own `ringleader.io/v1alpha1 Node`s).
//!
//! Sources, first usable wins for the hardware profile:
//!
//! 1. **ringleader annotations** on the Node: [`NVIDIA_SMI_TOPO_ANNOTATION`]
//!    (`ringleader.io/nvidia-smi-topo`) holding `nvidia-smi topo -m` output, or
//!    [`NPU_SMI_INFO_ANNOTATION`] (`ringleader.io/npu-smi-info`) holding
//!    `npu-smi info` output; parsed as the cluster file's `spec.topologyText` /
//!    `spec.npuSmiText` are.
//! 2. **MindCluster's device-info ConfigMap** `kube-system/mindx-dl-deviceinfo-<node>`
//!    (key `DeviceInfoCfg`): the chip kind; the count is the Node's capacity of
//!    that resource; the model comes from the labels as in 4.
//! 3. **ACK topology-aware GPU nodes** (label `ack.node.gpu.schedule=topology`):
//!    count from capacity `aliyun.com/gpu` (else label `aliyun.accelerator/nvidia_count`),
//!    links from the `GPU_TOPOLOGY` annotation where present, else the model
//!    label `aliyun.accelerator/nvidia_name` as in 4.
//! 4. **Capacity alone**: `status.capacity` of `huawei.com/Ascend910`,
//!    `huawei.com/Ascend310P`, `huawei.com/Ascend310`, `huawei.com/npu` or
//!    `nvidia.com/gpu`. The built-in profile with that resource and count is
//!    chosen by model label: Ascend by `accelerator-type` (MindCluster's
//!    values, e.g. `module-910b-8`), else `node.kubernetes.io/npu.chip.name`
//!    (`910B3`), else the first built-in of that count; NVIDIA by
//!    `nvidia.com/gpu.product` (GPU Feature Discovery) or
//!    `aliyun.accelerator/nvidia_name` containing the model's words (`H100`
//!    and `SXM`/`HBM3`, `A100` and `SXM`, …). With no built-in of that count
//!    and model, a generic profile of that many devices whose every pair is
//!    linked at the SYS level: correct counts, no invented topology.
//!
//! Unhealthy devices are the union over every source present: `npu-smi`
//! health, the ConfigMap's `huawei.com/<chip>-Unhealthy` and
//! `ManuallySeparateNPU`, and the annotation [`UNHEALTHY_DEVICES_ANNOTATION`];
//! network-unhealthy ones are the ConfigMap's `-NetworkUnhealthy` and
//! [`NETWORK_UNHEALTHY_DEVICES_ANNOTATION`]. A present but malformed source
//! is an error even when a higher one decided the profile: silently
//! dropping a broken health report would place pods on broken chips.

mod ack;
mod capacity;
mod check_code;
mod device_info;
mod invalid;

pub use ack::{ACK_COUNT_LABEL, ACK_SCHEDULE_LABEL, ACK_TOPOLOGY_ANNOTATION, ACK_TOPOLOGY_VALUE};
pub use device_info::{
    device_info_config_map_name, DEVICE_INFO_KEY, DEVICE_INFO_NAMESPACE, DEVICE_INFO_PREFIX, MANUALLY_SEPARATE_KEY,
};

use crate::cluster::{default_labels, Node as ClusterNode};
pub(crate) use invalid::Invalid;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use ringleader_api::kinds::cluster::NodeNetwork;
use ringleader_topology::parse::{npu_smi, nvidia_smi};
use ringleader_topology::{DeviceSet, DeviceState, LinkSpeeds, Profile, SchedulePolicy, Vendor};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Node annotation holding `nvidia-smi topo -m` output.
pub const NVIDIA_SMI_TOPO_ANNOTATION: &str = "ringleader.io/nvidia-smi-topo";
/// Node annotation holding `npu-smi info` output.
pub const NPU_SMI_INFO_ANNOTATION: &str = "ringleader.io/npu-smi-info";
/// Node annotation: comma-separated physical device IDs that are unhealthy.
pub const UNHEALTHY_DEVICES_ANNOTATION: &str = "ringleader.io/unhealthy-devices";
/// Node annotation: comma-separated physical device IDs whose network is unhealthy.
pub const NETWORK_UNHEALTHY_DEVICES_ANNOTATION: &str = "ringleader.io/network-unhealthy-devices";
/// Annotation the Kubernetes-mode manager's view of a Node carries when no
/// ringleader agent registered it (it has a kubelet, or nothing we know):
/// only set when reading, never written to the API. Such a Node belongs to
/// its kubelet and the node lifecycle controller; ringleader reads it and
/// writes nothing to it (see [`is_kubelet_node`]).
pub const KUBELET_NODE_ANNOTATION: &str = "ringleader.io/kubelet-node";

/// Annotation of the same view: why the Node's hardware could not be read
/// from what the cluster publishes (a node without accelerators, or a
/// malformed source), so the manager can say it once for all such Nodes.
pub const HARDWARE_PROBLEM_ANNOTATION: &str = "ringleader.io/hardware-problem";

/// Whether a ringleader-shaped Node (the manager's view) is another
/// component's: its readiness is its own `Ready` condition, not a heartbeat
/// ringleader judges, and the manager never writes it. The one predicate
/// every write path to a Node asks.
pub fn is_kubelet_node(node: &serde_json::Value) -> bool {
    node.pointer("/metadata/annotations")
        .and_then(|a| a.get(KUBELET_NODE_ANNOTATION))
        .and_then(serde_json::Value::as_str)
        == Some("true")
}

/// Which source gave the hardware profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HardwareSource {
    /// A ringleader annotation (its name).
    Annotation(&'static str),
    /// MindCluster's `mindx-dl-deviceinfo-<node>` ConfigMap with the Node's capacity.
    MindClusterDeviceInfo,
    /// ACK's topology-aware GPU scheduling labels (and `GPU_TOPOLOGY` annotation).
    AckGpuTopology,
    /// `status.capacity` and model labels only.
    Capacity,
}

impl fmt::Display for HardwareSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HardwareSource::Annotation(a) => write!(f, "annotation {a}"),
            HardwareSource::MindClusterDeviceInfo => {
                write!(f, "ConfigMap {DEVICE_INFO_NAMESPACE}/{DEVICE_INFO_PREFIX}<node>")
            }
            HardwareSource::AckGpuTopology => write!(f, "ACK labels {ACK_SCHEDULE_LABEL}={ACK_TOPOLOGY_VALUE}"),
            HardwareSource::Capacity => f.write_str("status.capacity"),
        }
    }
}

/// A v1 Node's hardware as ringleader models it.
#[derive(Debug, Clone)]
pub struct NodeHardware {
    /// Node name.
    pub name: String,
    /// Hardware profile.
    pub profile: Arc<Profile>,
    /// Where the profile came from.
    pub source: HardwareSource,
    /// How the profile was chosen, one line (for `explain` and logs).
    pub choice: String,
    /// Unhealthy physical device IDs, sorted.
    pub unhealthy: Vec<u32>,
    /// Network-unhealthy physical device IDs, sorted (unusable for multi-pod jobs).
    pub network_unhealthy: Vec<u32>,
    /// The Node's `InternalIP`, when it has one.
    pub address: Option<String>,
    /// The profile's default labels overlaid by the Node's own.
    pub labels: BTreeMap<String, String>,
    /// `SuperPodID` from MindCluster's device-info ConfigMap, as written.
    pub super_pod_id: Option<i64>,
}

impl NodeHardware {
    /// The scheduler's node: nothing allocated, broken devices marked. The
    /// SuperPoD is set from `super_pod_id` on SuperPoD profiles only.
    pub fn to_cluster_node(&self) -> ClusterNode {
        let set = |ids: &[u32]| {
            DeviceSet::from_indices(
                self.profile.devices.iter().enumerate().filter(|(_, d)| ids.contains(&d.id)).map(|(i, _)| i),
            )
        };
        let super_pod = self
            .super_pod_id
            .filter(|id| *id >= 0 && self.profile.schedule_policy == Some(SchedulePolicy::Chip2Node16Sp))
            .map(|id| id.to_string());
        ClusterNode {
            name: self.name.clone(),
            labels: self.labels.clone(),
            profile: self.profile.clone(),
            state: DeviceState::new()
                .with_unhealthy(set(&self.unhealthy))
                .with_network_unhealthy(set(&self.network_unhealthy)),
            network: NodeNetwork { super_pod, ..NodeNetwork::default() },
            address: self.address.clone(),
            taints: Vec::new(),
        }
    }
}

/// Why a Node's hardware could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeHardwareError {
    /// No source describes an accelerator (a CPU-only node, or a device plugin not yet registered).
    #[error("node {node}: no accelerator found; looked for {}", looked_for.join("; "))]
    NoAccelerator {
        /// Node name.
        node: String,
        /// Every source and field that was checked.
        looked_for: Vec<String>,
    },
    /// A source is present but malformed or contradicts another.
    #[error("node {node}: {object} {field}{}: {message}", if value.is_empty() { String::new() } else { format!(" = {value:?}") })]
    Invalid {
        /// Node name.
        node: String,
        /// The object read: `Node <name>` or `ConfigMap <namespace>/<name>`.
        object: String,
        /// Field path in that object.
        field: String,
        /// The offending value (shortened), empty when the field is missing.
        value: String,
        /// What is wrong and what is allowed.
        message: String,
    },
}

/// The error naming the node a malformed source belongs to.
fn into_error(invalid: Invalid, node: &str) -> NodeHardwareError {
    NodeHardwareError::Invalid {
        node: node.to_string(),
        object: invalid.object.unwrap_or_else(|| format!("Node {node}")),
        field: invalid.field,
        value: invalid.value,
        message: invalid.message,
    }
}

enum Fail {
    Invalid(Invalid),
    Nothing(Vec<String>),
}

impl From<Invalid> for Fail {
    fn from(e: Invalid) -> Fail {
        Fail::Invalid(e)
    }
}

/// Reads a v1 Node's hardware. `config_maps` may hold any ConfigMaps; the
/// one named `mindx-dl-deviceinfo-<node>` in `kube-system` is used.
pub fn node_hardware(node: &Node, config_maps: &[ConfigMap]) -> Result<NodeHardware, NodeHardwareError> {
    let name = node.metadata.name.clone().unwrap_or_default();
    if name.is_empty() {
        return Err(into_error(Invalid::node("metadata.name", "", "a Node needs a name"), "<unnamed>"));
    }
    read(&name, node, config_maps).map_err(|f| match f {
        Fail::Invalid(e) => into_error(e, &name),
        Fail::Nothing(looked_for) => NodeHardwareError::NoAccelerator { node: name.clone(), looked_for },
    })
}

fn read(name: &str, node: &Node, config_maps: &[ConfigMap]) -> Result<NodeHardware, Fail> {
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let annotations = node.metadata.annotations.as_ref().unwrap_or(&empty);
    let capacity: BTreeMap<String, String> = node
        .status
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .map(|c| c.iter().map(|(k, q)| (k.clone(), q.0.clone())).collect())
        .unwrap_or_default();

    let cm_name = device_info_config_map_name(name);
    let cm_object = format!("ConfigMap {DEVICE_INFO_NAMESPACE}/{cm_name}");
    let device_info = match config_maps.iter().find(|cm| {
        cm.metadata.name.as_deref() == Some(cm_name.as_str())
            && cm.metadata.namespace.as_deref().is_none_or(|ns| ns == DEVICE_INFO_NAMESPACE)
    }) {
        Some(cm) => Some(device_info::parse(&cm_object, cm.data.as_ref().unwrap_or(&empty))?),
        None => None,
    };

    let mut tool_unhealthy = Vec::new();
    let topo = annotations.get(NVIDIA_SMI_TOPO_ANNOTATION);
    let npu = annotations.get(NPU_SMI_INFO_ANNOTATION);
    let (profile, source, choice) = match (topo, npu) {
        (Some(_), Some(_)) => {
            return Err(Invalid::node(
                format!("metadata.annotations[{NVIDIA_SMI_TOPO_ANNOTATION:?}]"),
                "",
                format!("set together with {NPU_SMI_INFO_ANNOTATION}; a node has one device kind, keep one"),
            )
            .into())
        }
        (Some(text), None) => {
            let field = format!("metadata.annotations[{NVIDIA_SMI_TOPO_ANNOTATION:?}]");
            let chip = capacity::gpu_model(labels).map_or("NVIDIA GPU", |(_, v)| v);
            let mut p = nvidia_smi::profile_from_topo(name, text, LinkSpeeds::default(), chip)
                .map_err(|e| Invalid::node(field.clone(), format!("line {}", e.line), e.to_string()))?;
            if let Some(r) = [capacity::ALIYUN_GPU, capacity::NVIDIA_GPU]
                .into_iter()
                .find(|r| capacity::count(&capacity, r).ok().flatten().is_some())
            {
                p.resource_name = r.to_string();
            }
            check_count(&capacity, &p, &field)?;
            let choice = format!("parsed {} GPUs from {NVIDIA_SMI_TOPO_ANNOTATION}", p.len());
            (p, HardwareSource::Annotation(NVIDIA_SMI_TOPO_ANNOTATION), choice)
        }
        (None, Some(text)) => {
            let field = format!("metadata.annotations[{NPU_SMI_INFO_ANNOTATION:?}]");
            let (p, bad) = npu_smi::parse_info(text)
                .and_then(|info| npu_smi::profile_from_info(&info))
                .map_err(|e| Invalid::node(field.clone(), format!("line {}", e.line), e.to_string()))?;
            tool_unhealthy =
                p.devices.iter().enumerate().filter(|(i, _)| bad.contains(*i)).map(|(_, d)| d.id).collect();
            check_count(&capacity, &p, &field)?;
            let choice = format!("built-in {} matched from {NPU_SMI_INFO_ANNOTATION}", p.name);
            (p, HardwareSource::Annotation(NPU_SMI_INFO_ANNOTATION), choice)
        }
        (None, None) => from_published(name, labels, annotations, &capacity, device_info.as_ref(), &cm_object)?,
    };

    let mut unhealthy = tool_unhealthy;
    let mut network_unhealthy = Vec::new();
    if let Some(info) = &device_info {
        if profile.vendor != Vendor::Huawei || profile.resource_name != info.resource {
            return Err(Invalid::new(
                &cm_object,
                format!("data[{DEVICE_INFO_KEY:?}]"),
                info.resource,
                format!(
                    "lists {} chips, but the node's hardware from {source} is {} ({})",
                    info.resource, profile.chip, profile.resource_name
                ),
            )
            .into());
        }
        let list_field =
            |suffix: &str| format!("data[{DEVICE_INFO_KEY:?}].DeviceInfo.DeviceList[\"{}{suffix}\"]", info.resource);
        check_ids(&profile, &info.free, &cm_object, &list_field(""))?;
        check_ids(&profile, &info.unhealthy, &cm_object, &list_field("-Unhealthy"))?;
        check_ids(&profile, &info.network_unhealthy, &cm_object, &list_field("-NetworkUnhealthy"))?;
        check_ids(&profile, &info.separated, &cm_object, &format!("data[{MANUALLY_SEPARATE_KEY:?}]"))?;
        unhealthy.extend(&info.unhealthy);
        unhealthy.extend(&info.separated);
        network_unhealthy.extend(&info.network_unhealthy);
    }
    let node_object = format!("Node {name}");
    for (annotation, into) in
        [(UNHEALTHY_DEVICES_ANNOTATION, &mut unhealthy), (NETWORK_UNHEALTHY_DEVICES_ANNOTATION, &mut network_unhealthy)]
    {
        if let Some(v) = annotations.get(annotation) {
            let field = format!("metadata.annotations[{annotation:?}]");
            let ids = id_list(v).map_err(|m| Invalid::node(field.clone(), v, m))?;
            check_ids(&profile, &ids, &node_object, &field)?;
            into.extend(ids);
        }
    }
    unhealthy.sort_unstable();
    unhealthy.dedup();
    network_unhealthy.sort_unstable();
    network_unhealthy.dedup();

    let address = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.as_ref())
        .and_then(|a| a.iter().find(|a| a.type_ == "InternalIP"))
        .map(|a| a.address.clone());
    let mut all_labels = default_labels(&profile);
    all_labels.extend(labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(NodeHardware {
        name: name.to_string(),
        profile: Arc::new(profile),
        source,
        choice,
        unhealthy,
        network_unhealthy,
        address,
        labels: all_labels,
        super_pod_id: device_info.and_then(|i| i.super_pod_id),
    })
}

/// Sources 2–4 (see the module doc).
fn from_published(
    name: &str,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    capacity_map: &BTreeMap<String, String>,
    device_info: Option<&device_info::DeviceInfo>,
    cm_object: &str,
) -> Result<(Profile, HardwareSource, String), Fail> {
    if let Some(info) = device_info {
        let count = capacity::count(capacity_map, info.resource)?.ok_or_else(|| {
            Invalid::node(
                format!("status.capacity[{:?}]", info.resource),
                "",
                format!(
                    "absent or zero, but {cm_object} lists {} chips; the capacity gives the chip count",
                    info.resource
                ),
            )
        })?;
        let c = capacity::ascend(info.resource, count, labels)?;
        return Ok((c.profile, HardwareSource::MindClusterDeviceInfo, c.choice));
    }
    if ack::opted_in(labels) {
        let resource = [capacity::ALIYUN_GPU, capacity::NVIDIA_GPU]
            .into_iter()
            .find(|r| capacity_map.contains_key(*r))
            .unwrap_or(capacity::ALIYUN_GPU);
        let count = match capacity::count(capacity_map, resource)? {
            Some(n) => n,
            None => ack::count_label(labels)?.ok_or_else(|| {
                Invalid::node(
                    format!("status.capacity[{:?}]", capacity::ALIYUN_GPU),
                    "",
                    format!(
                        "absent or zero and no {ACK_COUNT_LABEL} label, but the node is labelled {ACK_SCHEDULE_LABEL}={ACK_TOPOLOGY_VALUE}"
                    ),
                )
            })?,
        };
        if let Some(text) = annotations.get(ACK_TOPOLOGY_ANNOTATION) {
            let kinds = ack::links(text, count as usize)?;
            let chip = capacity::gpu_model(labels).map_or("NVIDIA GPU", |(_, v)| v);
            let profile = capacity::gpu_from_links(resource, chip, &kinds)
                .map_err(|m| Invalid::node(format!("metadata.annotations[{ACK_TOPOLOGY_ANNOTATION:?}]"), "", m))?;
            let choice = format!("{count} × {resource}, links from annotation {ACK_TOPOLOGY_ANNOTATION}");
            return Ok((profile, HardwareSource::AckGpuTopology, choice));
        }
        let c = capacity::gpu(resource, count, labels)?;
        return Ok((c.profile, HardwareSource::AckGpuTopology, c.choice));
    }
    match capacity::accelerator(capacity_map)? {
        Some((r, n)) if r == capacity::NVIDIA_GPU || r == capacity::ALIYUN_GPU => {
            let c = capacity::gpu(r, n, labels)?;
            Ok((c.profile, HardwareSource::Capacity, c.choice))
        }
        Some((r, n)) => {
            let c = capacity::ascend(r, n, labels)?;
            Ok((c.profile, HardwareSource::Capacity, c.choice))
        }
        None => Err(Fail::Nothing(vec![
            format!("annotations {NVIDIA_SMI_TOPO_ANNOTATION}, {NPU_SMI_INFO_ANNOTATION}"),
            format!("ConfigMap {DEVICE_INFO_NAMESPACE}/{} (key {DEVICE_INFO_KEY})", device_info_config_map_name(name)),
            format!("label {ACK_SCHEDULE_LABEL}={ACK_TOPOLOGY_VALUE}"),
            format!(
                "status.capacity of {}",
                capacity::ASCEND_RESOURCES
                    .iter()
                    .map(|(r, _)| *r)
                    .chain([capacity::NVIDIA_GPU, capacity::ALIYUN_GPU])
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ])),
    }
}

/// A tool's device count must agree with the capacity the device plugin reports, where it reports one.
fn check_count(capacity_map: &BTreeMap<String, String>, p: &Profile, field: &str) -> Result<(), Invalid> {
    if let Some((r, n)) = capacity::accelerator(capacity_map)? {
        if n as usize != p.len() {
            return Err(Invalid::node(
                field,
                format!("{} devices", p.len()),
                format!("disagrees with status.capacity[{r:?}] = {n}; the annotation may be stale"),
            ));
        }
    }
    Ok(())
}

/// Every ID must be a device of the profile.
fn check_ids(profile: &Profile, ids: &[u32], object: &str, field: &str) -> Result<(), Invalid> {
    if let Some(id) = ids.iter().find(|id| !profile.devices.iter().any(|d| d.id == **id)) {
        let known: Vec<String> = profile.devices.iter().map(|d| d.id.to_string()).collect();
        return Err(Invalid::new(
            object,
            field,
            id,
            format!("no such device on profile {}; device IDs: {}", profile.name, known.join(", ")),
        ));
    }
    Ok(())
}

/// `0, 3,5` → `[0, 3, 5]`.
fn id_list(v: &str) -> Result<Vec<u32>, String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u32>().map_err(|_| format!("{s:?} is not a device ID; write physical IDs like 0,3,5")))
        .collect()
}
