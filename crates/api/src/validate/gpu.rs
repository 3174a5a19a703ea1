//! ACK GPU topology-aware scheduling rules (seed 002): `gpu-topology` jobs
//! are gangs whose pods all ask for the same GPUs.

use super::Errors;
use crate::devices;
use crate::error::FieldError;
use crate::kinds::Resource;
use crate::path;

/// Pod label naming the topology gang.
pub const GPU_TOPOLOGY: &str = "gpu-topology";
/// Pod label with the gang's total replicas.
pub const GPU_TOPOLOGY_REPLICA: &str = "gpu-topology-replica";

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
