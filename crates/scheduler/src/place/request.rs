//! What a placement reads and writes: a job's device request as the
//! allocator takes it, the placement of one pod and the annotations it is
//! bound with, why a job stays pending, and the gate that lets nodes through.

use crate::cluster::Node;
use crate::predicates::Filtered;
use ringleader_api::ascend as keys;
use ringleader_api::{DeviceKind, Job};
use ringleader_topology::{
    Allocation, CardStrategy, DeviceRequest as TopoRequest, MemRequest, ShareRequest, Vendor, VnpuDvpp, VnpuLevel,
    VnpuRequest, WholeRequest,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// Pod annotation: when the scheduler chose the devices (comparable, not human time).
pub const PREDICATE_TIME: &str = "predicate-time";
/// Pod annotation on GPU pods: the allocated GPU IDs, as `CUDA_VISIBLE_DEVICES` takes them.
pub const VISIBLE_DEVICES: &str = "ringleader.io/visible-devices";
/// Pod annotation on shared-GPU pods: thousandths of the GPU.
pub const GPU_MILLI: &str = "ringleader.io/gpu-milli";
/// Job annotation the manager sets on the part of a gang still to place:
/// how many device pods the whole gang has. A pod replaced alone
/// (`huawei.com/recover_policy_path: pod`) is one pod of a distributed job,
/// so it must not get a chip whose network is down — counted from the part
/// alone it would, and land straight back on the faulty node.
pub const GANG_DEVICE_PODS: &str = "ringleader.io/gang-device-pods";

/// One pod bound to a node and devices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PodPlacement {
    /// `namespace/name` of the job.
    pub job: String,
    /// Pod name.
    pub pod: String,
    /// Node name.
    pub node: String,
    /// Physical device IDs.
    pub devices: Vec<u32>,
    /// Pod annotations the runtime reads (formats of `spec/ascend.md`).
    pub annotations: BTreeMap<String, String>,
}

/// A job that could not be placed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pending {
    /// `namespace/name` of the job.
    pub job: String,
    /// Explanation.
    pub reason: String,
}

/// Maps the job model's request to the allocator's, reading the job's labels
/// for multi-pod, `npu-310-strategy`, `vnpu-dvpp` and `vnpu-level`.
pub fn topology_request(job: &Job, req: &ringleader_api::DeviceRequest) -> TopoRequest {
    let label = |k: &str| job.labels.get(k).map(String::as_str);
    let part: u32 = job.roles.iter().filter(|r| r.device.is_some()).map(|r| r.replicas).sum();
    let gang = job.annotations.get(GANG_DEVICE_PODS).and_then(|v| v.parse::<u32>().ok()).unwrap_or(0);
    let device_pods = part.max(gang);
    match &req.kind {
        DeviceKind::Whole => TopoRequest::Whole(WholeRequest {
            count: req.count,
            multi_pod: device_pods > 1,
            card_strategy: if label(keys::NPU_310_STRATEGY) == Some("card") {
                CardStrategy::Card
            } else {
                CardStrategy::Chip
            },
        }),
        DeviceKind::StaticVnpu { template } => TopoRequest::Vnpu(VnpuRequest::Static { template: template.clone() }),
        DeviceKind::DynamicVnpu => TopoRequest::Vnpu(VnpuRequest::Dynamic {
            cores: req.count,
            dvpp: match label(keys::VNPU_DVPP) {
                Some("yes") => VnpuDvpp::Yes,
                Some("no") => VnpuDvpp::No,
                _ => VnpuDvpp::Null,
            },
            level: if label(keys::VNPU_LEVEL) == Some("high") { VnpuLevel::High } else { VnpuLevel::Low },
        }),
        DeviceKind::GpuShare { milli } => TopoRequest::Share(ShareRequest { milli: *milli }),
        DeviceKind::GpuMem { mib, cores, .. } => {
            TopoRequest::Memory(MemRequest { gpus: req.count, mib: *mib, milli: cores.saturating_mul(10) })
        }
    }
}

/// The pod annotations for an allocation on a node (`spec/ascend.md`):
/// `huawei.com/Ascend910: Ascend910-0,Ascend910-1` and `predicate-time` for
/// Ascend whole chips, with the device plugin's handshake fields of
/// [`handshake`]; `huawei.com/npu-core: <chip>-<template>` for dynamic
/// vNPU; `huawei.com/Ascend310P-2c: Ascend310P-2c-<vNPU ID>-<chip>` for a
/// static vNPU ([`super::vnpu::static_name`]); the visible-device list for GPUs, with ACK's or HAMi's fields for
/// GPU memory. `rank` is the pod's rank in its job.
pub fn annotations(
    node: &Node,
    alloc: &Allocation,
    req: &ringleader_api::DeviceRequest,
    predicate_time: u64,
    rank: u64,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let ids = || alloc.ids.iter().map(u32::to_string).collect::<Vec<_>>();
    match node.profile.vendor {
        Vendor::Huawei => {
            let short = node.profile.resource_name.trim_start_matches("huawei.com/");
            match (&req.kind, &alloc.vnpu) {
                (DeviceKind::DynamicVnpu, Some(v)) => {
                    let chip = node.profile.devices.get(v.chip).map(|d| d.id).unwrap_or_default();
                    out.insert(keys::NPU_CORE.to_string(), format!("{chip}-{}", v.template));
                }
                (DeviceKind::StaticVnpu { .. }, Some(v)) => {
                    let chip = node.profile.devices.get(v.chip).map(|d| d.id).unwrap_or_default();
                    out.insert(req.resource.clone(), super::vnpu::static_name(&req.resource, chip, v.slot));
                }
                (DeviceKind::StaticVnpu { .. }, None) => {}
                _ => {
                    let chips = alloc.ids.iter().map(|id| format!("{short}-{id}")).collect::<Vec<_>>().join(",");
                    super::handshake::ascend(node, alloc, &chips, rank, &mut out);
                    out.insert(node.profile.resource_name.clone(), chips);
                }
            }
            out.insert(PREDICATE_TIME.to_string(), predicate_time.to_string());
        }
        Vendor::Nvidia => {
            out.insert(VISIBLE_DEVICES.to_string(), ids().join(","));
            match req.kind {
                DeviceKind::GpuShare { milli } => {
                    out.insert(GPU_MILLI.to_string(), milli.to_string());
                }
                DeviceKind::GpuMem { plugin, mib, cores } => {
                    super::handshake::gpu_memory(node, alloc, plugin, mib, cores, predicate_time, &mut out)
                }
                _ => {}
            }
        }
    }
    out
}

/// Decides, before anything else, whether a job may use node `i` at all
/// (reservations, VIP node lists). `Err` carries the reason counted in explanations.
pub type Gate<'a> = &'a dyn Fn(usize) -> Result<(), Filtered>;
