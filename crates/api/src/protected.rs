//! The one list of pod fields that belong to the scheduler or to a node's
//! agent, never to whoever writes the pod or its template. The server
//! refuses them on every write path (`ringleader_server`'s `admission::protect`) and the
//! job controller drops them from the templates it makes pods of, so a pod
//! can reach a node and its devices only through the scheduler.

use crate::ascend::{NPU_CORE, POD_DEVICE_ANNOTATION_PREFIX};

/// The field that binds a pod to a node.
pub const NODE_NAME: &str = "nodeName";

/// Pod annotations only the scheduler writes (at binding, or eviction), and
/// every annotation starting with [`POD_DEVICE_ANNOTATION_PREFIX`].
pub const BINDING_ANNOTATIONS: &[&str] = &[
    "ringleader.io/devices",
    "ringleader.io/scheduled-at",
    "predicate-time",
    "ringleader.io/visible-devices",
    "ringleader.io/gpu-milli",
    "ALIYUN_COM_GPU_MEM_IDX",
    "hami.io/vgpu-devices-to-allocate",
    "hami.io/vgpu-devices-allocated",
    "ascend.kubectl.kubernetes.io/ascend-910-configuration",
    NPU_CORE,
    // The rendezvous ports the manager chose: a port edited away would look free to the next job.
    "ringleader.io/ports",
];

/// Pod annotations the node agent writes on the pods bound to its node: the
/// process it started, its log, and its usage samples.
pub const AGENT_ANNOTATIONS: &[&str] = &[
    "ringleader.io/pid",
    "ringleader.io/log-path",
    "ringleader.io/usage-cpu-nanos",
    "ringleader.io/usage-memory-bytes",
    "ringleader.io/usage-at",
    "ringleader.io/usage-prev-cpu-nanos",
    "ringleader.io/usage-prev-at",
];

/// Who alone may write a protected field of a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The scheduler, which binds.
    Scheduler,
    /// The agent of the node the pod is bound to.
    Agent,
}

impl Owner {
    /// Who may set it, as an error message says.
    pub fn described(self) -> &'static str {
        match self {
            Owner::Scheduler => "only the scheduler binds pods to nodes and devices",
            Owner::Agent => "only the node agent of the pod's node writes it",
        }
    }
}

/// Who owns the pod annotation `key`, if anyone.
pub fn annotation_owner(key: &str) -> Option<Owner> {
    if BINDING_ANNOTATIONS.contains(&key) || key.starts_with(POD_DEVICE_ANNOTATION_PREFIX) {
        Some(Owner::Scheduler)
    } else if AGENT_ANNOTATIONS.contains(&key) {
        Some(Owner::Agent)
    } else {
        None
    }
}

/// Whether a pod spec's `nodeName` binds it (absent, null and "" do not).
pub fn binds(node_name: Option<&serde_json::Value>) -> bool {
    node_name.is_some_and(|v| !v.is_null() && v.as_str() != Some(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners() {
        assert_eq!(annotation_owner("ringleader.io/devices"), Some(Owner::Scheduler));
        assert_eq!(annotation_owner("huawei.com/Ascend910"), Some(Owner::Scheduler));
        assert_eq!(annotation_owner("ringleader.io/pid"), Some(Owner::Agent));
        assert_eq!(annotation_owner("ringleader.io/usage-at"), Some(Owner::Agent));
        assert_eq!(annotation_owner("example.com/mine"), None);
        assert!(binds(Some(&serde_json::json!("n1"))));
        assert!(!binds(Some(&serde_json::json!(""))) && !binds(Some(&serde_json::Value::Null)) && !binds(None));
    }
}
