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
}

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
/// A GPU share is `nvidia.com/gpu: 1` together with `nvidia.com/gpucores: <percent>`.
pub fn pod_request(template: &PodTemplateSpec) -> Option<DeviceRequest> {
    let containers = template.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
    let mut found: Option<DeviceRequest> = None;
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
        let cores = c.resources.as_ref().and_then(|r| r.limits.as_ref()).and_then(|l| l.get("nvidia.com/gpucores"));
        if let (Some(req), Some(cores)) = (&mut found, cores.and_then(whole_count)) {
            if req.resource == "nvidia.com/gpu" && req.count == 1 && cores < 100 {
                req.kind = DeviceKind::GpuShare { milli: cores * 10 }; // cores < 100 here
            }
        }
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
}
