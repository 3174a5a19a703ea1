//! Pod annotations that device plugins read at allocation, written when the
//! scheduler binds: ACK gpushare's `ALIYUN_COM_GPU_MEM_*`, HAMi's
//! `hami.io/vgpu-*`, and MindCluster's Ascend handshake (seed 000:
//! `huawei.com/AscendReal`, `huawei.com/kltDev`,
//! `ascend.kubectl.kubernetes.io/ascend-910-configuration`).
//!
//! In MindCluster the Ascend device plugin writes the handshake fields
//! after kubelet's Allocate call: `kltDev` holds the IDs kubelet proposed,
//! `AscendReal` the chips really mounted (the scheduler's choice). Under
//! ringleader the node agent mounts exactly the chips chosen, so at binding
//! both equal the scheduler's list; they are written then so tools that read
//! them (and `kubectl describe`, as in the seed) see the settled state.
//! `predicate-time` keeps the scheduler's value: it orders pods waiting for
//! allocation, which ringleader's agent does not need to break ties.

use crate::cluster::Node;
use ringleader_api::devices::GpuMemPlugin;
use ringleader_topology::alloc::share::gpu_memory_mib;
use ringleader_topology::Allocation;
use serde_json::json;
use std::collections::BTreeMap;

/// Chips really mounted (MindCluster device plugin).
pub const ASCEND_REAL: &str = "huawei.com/AscendReal";
/// Chip IDs kubelet proposed at Allocate (MindCluster device plugin).
pub const KLT_DEV: &str = "huawei.com/kltDev";
/// Per-pod device configuration JSON (MindCluster device plugin).
pub const ASCEND_910_CONFIGURATION: &str = "ascend.kubectl.kubernetes.io/ascend-910-configuration";

/// ACK gpushare: GPU indices the memory is taken on.
pub const ACK_MEM_IDX: &str = "ALIYUN_COM_GPU_MEM_IDX";
/// ACK gpushare: GiB the pod asked for (per GPU).
pub const ACK_MEM_POD: &str = "ALIYUN_COM_GPU_MEM_POD";
/// ACK gpushare: GiB of one GPU of the node.
pub const ACK_MEM_DEV: &str = "ALIYUN_COM_GPU_MEM_DEV";
/// ACK gpushare: whether the device plugin has allocated it (`false` until then).
pub const ACK_MEM_ASSIGNED: &str = "ALIYUN_COM_GPU_MEM_ASSIGNED";
/// ACK gpushare: when the scheduler assumed the pod (comparable; the plugin takes the oldest first).
pub const ACK_MEM_ASSUME_TIME: &str = "ALIYUN_COM_GPU_MEM_ASSUME_TIME";

/// HAMi: devices the device plugin is to allocate.
pub const HAMI_TO_ALLOCATE: &str = "hami.io/vgpu-devices-to-allocate";
/// HAMi: devices allocated to the pod.
pub const HAMI_ALLOCATED: &str = "hami.io/vgpu-devices-allocated";
/// HAMi: the node the pod was scheduled to.
pub const HAMI_NODE: &str = "hami.io/vgpu-node";
/// HAMi: when the scheduler chose the devices.
pub const HAMI_TIME: &str = "hami.io/vgpu-time";
/// HAMi: binding phase (`allocating` until the device plugin answers).
pub const HAMI_BIND_PHASE: &str = "hami.io/bind-phase";

/// The Ascend handshake annotations for whole chips `chips`
/// (`Ascend910-0,Ascend910-1`) of the pod with rank `rank` on `node`.
/// `server_id` is the node's address (its name when it has none); each
/// device's `device_ip` is the one the rank table gives it.
pub fn ascend(node: &Node, alloc: &Allocation, chips: &str, rank: u64, out: &mut BTreeMap<String, String>) {
    out.insert(ASCEND_REAL.to_string(), chips.to_string());
    out.insert(KLT_DEV.to_string(), chips.to_string());
    let address = node.address.as_deref().unwrap_or("127.0.0.1");
    let devices: Vec<_> = alloc
        .ids
        .iter()
        .map(|id| json!({ "device_id": id.to_string(), "device_ip": device_ip(address, *id) }))
        .collect();
    let config = json!({
        "pod_name": rank.to_string(),
        "server_id": node.address.clone().unwrap_or_else(|| node.name.clone()),
        "devices": devices,
    });
    out.insert(ASCEND_910_CONFIGURATION.to_string(), config.to_string());
}

/// A stable per-chip RoCE address for virtual nodes, which report none:
/// `10.<node octets>.<chip>` style addresses do not exist on loopback, so one
/// is derived from the node's address. The rank table uses the same.
pub fn device_ip(address: &str, id: u32) -> String {
    let last = address.rsplit('.').next().unwrap_or("1");
    format!("192.168.{last}.{}", 100 + id)
}

/// The GPU memory annotations of `plugin` for `mib` (and `cores` percent) on each chosen GPU.
pub fn gpu_memory(
    node: &Node,
    alloc: &Allocation,
    plugin: GpuMemPlugin,
    mib: u32,
    cores: u32,
    time: u64,
    out: &mut BTreeMap<String, String>,
) {
    let ids: Vec<String> = alloc.ids.iter().map(u32::to_string).collect();
    match plugin {
        GpuMemPlugin::Ack => {
            let card_gib = gpu_memory_mib(&node.profile).map_or(0, |m| m / 1024);
            out.insert(ACK_MEM_IDX.to_string(), ids.join(","));
            out.insert(ACK_MEM_POD.to_string(), (mib / 1024).to_string());
            out.insert(ACK_MEM_DEV.to_string(), card_gib.to_string());
            out.insert(ACK_MEM_ASSIGNED.to_string(), "false".to_string());
            out.insert(ACK_MEM_ASSUME_TIME.to_string(), time.to_string());
        }
        GpuMemPlugin::Hami => {
            // One container's devices: `UUID,NVIDIA,<MiB>,<cores>:` each, then `;`.
            // The device name stands in for the NVML UUID, which ringleader's
            // inventories do not carry.
            let devices: String = alloc
                .devices
                .iter()
                .filter_map(|i| node.profile.devices.get(i))
                .map(|d| format!("{},NVIDIA,{mib},{cores}:", d.name))
                .collect();
            let value = format!("{devices};");
            out.insert(HAMI_TO_ALLOCATE.to_string(), value.clone());
            out.insert(HAMI_ALLOCATED.to_string(), value);
            out.insert(HAMI_NODE.to_string(), node.name.clone());
            out.insert(HAMI_TIME.to_string(), time.to_string());
            out.insert(HAMI_BIND_PHASE.to_string(), "allocating".to_string());
        }
    }
}
