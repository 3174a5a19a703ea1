//! The API versions, labels and namespace under which the platform
//! controller finds the objects it reads and writes the objects it makes.

/// API version of the platform kinds.
pub const API: &str = "platform.ringleader.io/v1alpha1";
/// Node label naming the resource group a node belongs to; also the
/// nodeSelector key that confines a queue's pods to its group.
pub const GROUP_LABEL: &str = "platform.ringleader.io/resource-group";
/// Label of a framework job and its pods: the TrainingJob it runs.
pub const TRAINING_JOB_LABEL: &str = "platform.ringleader.io/training-job";
/// Label of a framework job and its pods: the Run it belongs to.
pub const RUN_LABEL: &str = "platform.ringleader.io/run";
/// Volcano queues.
pub const QUEUE_API: &str = "scheduling.volcano.sh/v1beta1";
/// ringleader nodes.
pub const NODE_API: &str = "ringleader.io/v1alpha1";
/// RBAC objects.
pub const RBAC_API: &str = "rbac.authorization.k8s.io/v1";
/// Namespace of the objects made for cluster-scoped kinds (ScriptRun jobs).
pub const SYSTEM_NAMESPACE: &str = "platform-system";

/// The node label every node has (the scheduler adds it): its name.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
