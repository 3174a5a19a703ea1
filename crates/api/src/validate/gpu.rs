//! ACK GPU topology-aware scheduling rules (seed 002): `gpu-topology` jobs
//! are gangs whose pods all ask for the same GPUs.

use super::errors::Errors;
use crate::devices;
use crate::error::FieldError;
use crate::kinds::Resource;
use crate::path;

/// Pod label naming the topology gang.
pub const GPU_TOPOLOGY: &str = "gpu-topology";
/// Pod label with the gang's total replicas.
pub const GPU_TOPOLOGY_REPLICA: &str = "gpu-topology-replica";

/// Largest memory one GPU of the built-in cards has, GiB (H100/A800/A100 80GB).
const MAX_GPU_GIB: u32 = 80;

/// Checks GPU memory requests as ACK gpushare and HAMi users write them:
/// whole positive numbers, HAMi memory only beside `nvidia.com/gpu`, cores a
/// percentage, no mixing of the two plugins in one container. Whether the
/// memory fits a node's card is the scheduler's to say.
pub fn check_memory(resource: &Resource, errs: &mut Errors) {
    for role in resource.roles() {
        let containers = role.template.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
        let cfield = path::key(&path::key(&path::key(&role.field, "template"), "spec"), "containers");
        for (i, c) in containers.iter().enumerate() {
            let Some(res) = &c.resources else { continue };
            let (section, map) = match (&res.limits, &res.requests) {
                (Some(l), _) if !l.is_empty() => ("limits", l),
                (_, Some(r)) => ("requests", r),
                _ => continue,
            };
            let field = |k: &str| path::key(&path::key(&path::key(&path::index(&cfield, i), "resources"), section), k);
            let number = |k: &str, allowed: std::ops::RangeInclusive<u32>, unit: &str, errs: &mut Errors| {
                let q = map.get(k)?;
                match devices::whole_count(q).filter(|n| allowed.contains(n)) {
                    Some(n) => Some(n),
                    None => {
                        errs.push(FieldError::new(
                            field(k),
                            &q.0,
                            format!("a whole number of {unit} from {} to {}", allowed.start(), allowed.end()),
                        ));
                        None
                    }
                }
            };
            let gpus = map.get("nvidia.com/gpu").and_then(devices::whole_count);
            number(devices::ACK_GPU_MEM, 1..=MAX_GPU_GIB, "GiB per GPU", errs);
            number(devices::ACK_GPU_COUNT, 1..=16, "GPUs", errs);
            let hami_mem = number(devices::HAMI_GPU_MEM, 1..=MAX_GPU_GIB * 1024, "MiB per GPU", errs);
            number(devices::HAMI_GPU_CORES, 1..=100, "percent of a GPU", errs);
            if map.contains_key(devices::ACK_GPU_COUNT) && !map.contains_key(devices::ACK_GPU_MEM) {
                errs.push(FieldError::missing(
                    field(devices::ACK_GPU_MEM),
                    format!("{} needs {} (GiB per GPU)", devices::ACK_GPU_COUNT, devices::ACK_GPU_MEM),
                ));
            }
            if hami_mem.is_some() && gpus.is_none_or(|n| n == 0) {
                errs.push(FieldError::missing(
                    field("nvidia.com/gpu"),
                    format!("{} (HAMi) needs nvidia.com/gpu: the number of vGPUs, at least 1", devices::HAMI_GPU_MEM),
                ));
            }
            if map.contains_key(devices::ACK_GPU_MEM) {
                for other in ["nvidia.com/gpu", "aliyun.com/gpu", devices::HAMI_GPU_MEM] {
                    if map.contains_key(other) {
                        errs.push(FieldError::new(
                            field(other),
                            &map[other].0,
                            format!(
                                "not allowed beside {} (ACK gpushare): ask for memory or whole GPUs, not both",
                                devices::ACK_GPU_MEM
                            ),
                        ));
                    }
                }
            }
        }
    }
}

/// Checks the `gpu-topology` labels of every role.
pub fn check(resource: &Resource, errs: &mut Errors) {
    let roles = resource.roles();
    let total: i64 = roles.iter().map(|r| i64::from(r.replicas.unwrap_or(1).max(0))).sum();
    let mut first_request: Option<(String, Option<devices::DeviceRequest>)> = None;
    for role in &roles {
        let labels = role.template.metadata.as_ref().and_then(|m| m.labels.as_ref());
        let Some(labels) = labels.filter(|l| l.contains_key(GPU_TOPOLOGY)) else { continue };
        let base = format!("{}.template.metadata.labels", role.field);
        match labels.get(GPU_TOPOLOGY_REPLICA) {
            None => errs.push(FieldError::missing(
                path::key(&base, GPU_TOPOLOGY_REPLICA),
                format!("gpu-topology pods need gpu-topology-replica: the job's total replicas ({total})"),
            )),
            Some(v) if v.parse::<i64>().ok() != Some(total) => errs.push(FieldError::new(
                path::key(&base, GPU_TOPOLOGY_REPLICA),
                v,
                format!("must equal the job's total replicas ({total})"),
            )),
            Some(_) => {}
        }
        let request = devices::pod_request(role.template);
        match &first_request {
            None => first_request = Some((role.name.to_string(), request)),
            Some((first, req)) if *req != request => errs.push(FieldError::new(
                format!("{}.template.spec.containers", role.field),
                request.map(|r| format!("{}: {}", r.resource, r.count)).unwrap_or_else(|| "no GPU".into()),
                format!("all pods of a gpu-topology job must request the same GPUs as {first}"),
            )),
            Some(_) => {}
        }
    }
}
