//! The `scale` subresource (`autoscaling/v1 Scale`): which kinds serve one
//! and where each keeps the numbers, as their upstream definitions declare
//! them. Deployments and ReplicaSets have Kubernetes' own; of the job
//! kinds only the PyTorchJob's CRD declares one (training-operator's
//! `+kubebuilder:subresource:scale:specpath=.spec.pytorchReplicaSpecs.Worker.replicas,statuspath=.status.replicaStatuses.Active,selectorpath=.status.labelSelector`);
//! TFJob, MPIJob, the Volcano Job and the AscendJob declare none.

use crate::resources::{ResourceType, REPLICA_SETS, RESOURCES};

/// The `apps/v1 Deployment` resource.
pub const DEPLOYMENTS: &ResourceType = &RESOURCES[5];
/// The `kubeflow.org/v1 PyTorchJob` resource.
pub const PYTORCH_JOBS: &ResourceType = &RESOURCES[2];

/// Where the selector of a Scale comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectorAt {
    /// A `metav1.LabelSelector` at this JSON pointer (Deployments, ReplicaSets).
    LabelSelector(&'static str),
    /// A label-selector string at this JSON pointer (a CRD's `selectorpath`).
    Text(&'static str),
}

/// Where a kind keeps what its Scale shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScalePaths {
    /// JSON pointer of the desired replicas (`spec.replicas` of the Scale).
    pub spec: &'static str,
    /// The same as a field path, for errors.
    pub spec_field: &'static str,
    /// JSON pointer of the observed replicas (`status.replicas`).
    pub status: &'static str,
    /// Where `status.selector` comes from.
    pub selector: SelectorAt,
}

/// The scale paths of `rt`, if it serves a `scale` subresource.
pub fn paths(rt: &ResourceType) -> Option<ScalePaths> {
    if rt == DEPLOYMENTS || rt == REPLICA_SETS {
        Some(ScalePaths {
            spec: "/spec/replicas",
            spec_field: "spec.replicas",
            status: "/status/replicas",
            selector: SelectorAt::LabelSelector("/spec/selector"),
        })
    } else if rt == PYTORCH_JOBS {
        Some(ScalePaths {
            spec: "/spec/pytorchReplicaSpecs/Worker/replicas",
            spec_field: "spec.pytorchReplicaSpecs.Worker.replicas",
            status: "/status/replicaStatuses/Active",
            selector: SelectorAt::Text("/status/labelSelector"),
        })
    } else {
        None
    }
}

/// Every resource that serves a `scale` subresource.
pub fn scalable() -> impl Iterator<Item = &'static ResourceType> {
    RESOURCES.iter().filter(|r| paths(r).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployments_replica_sets_and_pytorchjobs_scale() {
        assert_eq!(DEPLOYMENTS.kind, "Deployment");
        assert_eq!(PYTORCH_JOBS.kind, "PyTorchJob");
        let kinds: Vec<&str> = scalable().map(|r| r.kind).collect();
        assert_eq!(kinds, ["PyTorchJob", "Deployment", "ReplicaSet"]);
        assert_eq!(paths(DEPLOYMENTS).map(|p| p.spec_field), Some("spec.replicas"));
    }
}
