//! Accelerator resource names and the device request a pod makes.

use k8s_openapi::api::core::v1::{Container, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::Serialize;

/// How a pod uses its accelerators.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum DeviceKind {
    /// Whole chips or GPUs.
    Whole,
    /// A static vNPU of a named template (`huawei.com/Ascend910-2c`): count is 1.
    StaticVnpu {
        /// Template suffix, e.g. `2c` or `6c.1cpu.16g`.
        template: String,
    },
    /// Dynamic vNPU (`huawei.com/npu-core`): count is AI cores.
    DynamicVnpu,
    /// A share of one GPU, in thousandths (`nvidia.com/gpucores` percent × 10).
    GpuShare {
        /// Thousandths of one GPU.
        milli: u32,
    },
    /// GPU memory slices on `count` GPUs, as ACK's gpushare
    /// (`aliyun.com/gpu-mem`, GiB) or HAMi (`nvidia.com/gpumem`, MiB) write it.
    GpuMem {
        /// Whose resource names and pod annotations the request follows.
        plugin: GpuMemPlugin,
        /// Memory per GPU, MiB.
        mib: u32,
        /// Percent of each GPU's cores (`nvidia.com/gpucores`); 0 when not limited.
        cores: u32,
    },
}

/// Which device plugin's conventions a GPU memory request follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuMemPlugin {
    /// Alibaba Cloud ACK gpushare / cGPU: `aliyun.com/gpu-mem` in GiB.
    Ack,
    /// HAMi: `nvidia.com/gpu` vGPUs, each with `nvidia.com/gpumem` MiB.
    Hami,
}

/// ACK gpushare: GPU memory per GPU, GiB.
pub const ACK_GPU_MEM: &str = "aliyun.com/gpu-mem";
/// ACK gpushare: how many GPUs the memory is taken on (default 1).
pub const ACK_GPU_COUNT: &str = "aliyun.com/gpu-count";
/// HAMi: memory of each vGPU, MiB.
pub const HAMI_GPU_MEM: &str = "nvidia.com/gpumem";
/// HAMi: percent of each GPU's cores.
pub const HAMI_GPU_CORES: &str = "nvidia.com/gpucores";

/// The accelerators one pod asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRequest {
    /// Resource name as written, e.g. `huawei.com/Ascend910`.
    pub resource: String,
    /// Devices (or AI cores for dynamic vNPU).
    pub count: u32,
    /// Whole, vNPU or shared.
    pub kind: DeviceKind,
}

/// Vendor family of an accelerator resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Huawei Ascend NPU.
    Ascend,
    /// NVIDIA GPU (also `aliyun.com/gpu`).
    Gpu,
}

/// Classifies an extended resource name; `None` for non-accelerator resources.
pub fn classify(resource: &str) -> Option<(Family, DeviceKind)> {
    match resource {
        "nvidia.com/gpu" | "aliyun.com/gpu" => return Some((Family::Gpu, DeviceKind::Whole)),
        // The memory itself is read by `pod_request`, next to `aliyun.com/gpu-count`.
        ACK_GPU_MEM => return Some((Family::Gpu, DeviceKind::GpuMem { plugin: GpuMemPlugin::Ack, mib: 0, cores: 0 })),
        crate::ascend::NPU_CORE => return Some((Family::Ascend, DeviceKind::DynamicVnpu)),
        crate::ascend::NPU => return Some((Family::Ascend, DeviceKind::Whole)),
        _ => {}
    }
    let chip = resource.strip_prefix("huawei.com/Ascend")?;
    for base in ["910", "310P", "310"] {
        if let Some(rest) = chip.strip_prefix(base) {
            return match rest {
                "" => Some((Family::Ascend, DeviceKind::Whole)),
                // 310P mixed mode cards are whole cards of a sub-model.
                "-V" | "-VPro" | "-IPro" if base == "310P" => Some((Family::Ascend, DeviceKind::Whole)),
                // Static vNPU templates start with the AI core count: `-2c`, `-4c.3cpu`, `-6c.1cpu.16g`.
                t if t.starts_with('-') && t[1..].starts_with(|c: char| c.is_ascii_digit()) => {
                    Some((Family::Ascend, DeviceKind::StaticVnpu { template: t[1..].to_string() }))
                }
                _ => None,
            };
        }
    }
    None
}

/// Whether the resource is an extended (vendor-prefixed) resource, which
/// Kubernetes requires to have requests equal to limits.
pub fn is_extended(resource: &str) -> bool {
    resource.contains('/') && !resource.starts_with("kubernetes.io/") && !resource.starts_with("requests.")
}

/// Parses a quantity that must be a whole number of devices.
pub fn whole_count(q: &Quantity) -> Option<u32> {
    q.0.trim().parse::<u32>().ok()
}

/// The accelerator resources a container asks for (limits, else requests), in name order.
pub fn container_requests(container: &Container) -> Vec<(&str, &Quantity)> {
    let Some(res) = &container.resources else { return Vec::new() };
    let source = res.limits.as_ref().filter(|l| !l.is_empty()).or(res.requests.as_ref());
    source
        .map(|m| m.iter().filter(|(k, _)| classify(k).is_some()).map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default()
}

/// The device request of a pod: the first accelerator resource of its
/// containers, counts summed over containers asking for the same one.
/// A GPU share is `nvidia.com/gpu: 1` together with `nvidia.com/gpucores: <percent>`;
/// GPU memory is `aliyun.com/gpu-mem: <GiB>` (on `aliyun.com/gpu-count` GPUs,
/// default 1) or `nvidia.com/gpu: <n>` with `nvidia.com/gpumem: <MiB>` (HAMi).
/// Malformed values give no memory here; [`crate::validate`] names them.
pub fn pod_request(template: &PodTemplateSpec) -> Option<DeviceRequest> {
    let containers = template.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
    let mut found: Option<DeviceRequest> = None;
    let mut ack_gpus: Option<u32> = None;
    for c in containers {
        for (name, q) in container_requests(c) {
            let Some((_, kind)) = classify(name) else { continue };
            let count = whole_count(q).unwrap_or(0);
            match &mut found {
                Some(req) if req.resource == name => req.count = req.count.saturating_add(count),
                Some(_) => {}
                None => found = Some(DeviceRequest { resource: name.to_string(), count, kind }),
            }
        }
        let limit = |k: &str| {
            let res = c.resources.as_ref()?;
            let source = res.limits.as_ref().filter(|l| !l.is_empty()).or(res.requests.as_ref())?;
            source.get(k).and_then(whole_count)
        };
        let cores = limit(HAMI_GPU_CORES);
        ack_gpus = ack_gpus.or(limit(ACK_GPU_COUNT));
        let Some(req) = &mut found else { continue };
        match (req.resource.as_str(), limit(HAMI_GPU_MEM)) {
            ("nvidia.com/gpu", Some(mib)) if req.count > 0 => {
                req.kind = DeviceKind::GpuMem { plugin: GpuMemPlugin::Hami, mib, cores: cores.unwrap_or(0).min(100) }
            }
            ("nvidia.com/gpu", None) => {
                if let Some(cores) = cores.filter(|&p| req.count == 1 && p < 100) {
                    req.kind = DeviceKind::GpuShare { milli: cores * 10 }; // cores < 100 here
                }
            }
            _ => {}
        }
    }
    // ACK's memory is summed over containers in GiB first, then spread per GPU.
    if let Some(req) = found.as_mut().filter(|r| r.resource == ACK_GPU_MEM) {
        let gib = req.count;
        req.count = ack_gpus.unwrap_or(1);
        req.kind = DeviceKind::GpuMem { plugin: GpuMemPlugin::Ack, mib: gib.saturating_mul(1024), cores: 0 };
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_whole_vnpu_and_gpu_resources() {
        assert_eq!(classify("huawei.com/Ascend910"), Some((Family::Ascend, DeviceKind::Whole)));
        assert_eq!(classify("huawei.com/Ascend310P-VPro"), Some((Family::Ascend, DeviceKind::Whole)));
        assert_eq!(classify("huawei.com/npu"), Some((Family::Ascend, DeviceKind::Whole)));
        assert_eq!(
            classify("huawei.com/Ascend910-6c.1cpu.16g"),
            Some((Family::Ascend, DeviceKind::StaticVnpu { template: "6c.1cpu.16g".into() }))
        );
        assert_eq!(classify("huawei.com/npu-core"), Some((Family::Ascend, DeviceKind::DynamicVnpu)));
        assert_eq!(classify("nvidia.com/gpu"), Some((Family::Gpu, DeviceKind::Whole)));
        assert_eq!(classify("huawei.com/Ascend910-NetworkUnhealthy"), None);
        assert_eq!(classify("cpu"), None);
    }

    fn template(resources: &[(&str, &str)]) -> PodTemplateSpec {
        let limits = resources.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect();
        let c = Container {
            name: "c".into(),
            resources: Some(k8s_openapi::api::core::v1::ResourceRequirements {
                limits: Some(limits),
                ..Default::default()
            }),
            ..Default::default()
        };
        PodTemplateSpec {
            spec: Some(k8s_openapi::api::core::v1::PodSpec { containers: vec![c], ..Default::default() }),
            ..Default::default()
        }
    }

    #[test]
    fn reads_ack_and_hami_memory_requests() {
        let ack = pod_request(&template(&[("aliyun.com/gpu-mem", "8")])).unwrap();
        assert_eq!((ack.resource.as_str(), ack.count), ("aliyun.com/gpu-mem", 1));
        assert_eq!(ack.kind, DeviceKind::GpuMem { plugin: GpuMemPlugin::Ack, mib: 8192, cores: 0 });
        let ack2 = pod_request(&template(&[("aliyun.com/gpu-mem", "4"), ("aliyun.com/gpu-count", "2")])).unwrap();
        assert_eq!(ack2.count, 2);
        assert_eq!(ack2.kind, DeviceKind::GpuMem { plugin: GpuMemPlugin::Ack, mib: 4096, cores: 0 });
        let hami = pod_request(&template(&[
            ("nvidia.com/gpu", "2"),
            ("nvidia.com/gpumem", "3000"),
            ("nvidia.com/gpucores", "30"),
        ]))
        .unwrap();
        assert_eq!((hami.resource.as_str(), hami.count), ("nvidia.com/gpu", 2));
        assert_eq!(hami.kind, DeviceKind::GpuMem { plugin: GpuMemPlugin::Hami, mib: 3000, cores: 30 });
        // Cores alone stay a core share, as before.
        let share = pod_request(&template(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpucores", "50")])).unwrap();
        assert_eq!(share.kind, DeviceKind::GpuShare { milli: 500 });
    }
}
