//! The kinds the manager and the agents follow in Kubernetes mode, and the
//! URLs kube-apiserver serves them at. ringleader's own
//! `ringleader.io/v1alpha1 Node` is the core `v1 Node` there.

use ringleader_registry::resources::{self, ResourceType};
use ringleader_store::StoreError;

/// ringleader's Node kind, which Kubernetes mode keeps as a core v1 Node.
pub const RINGLEADER_NODE: (&str, &str) = ("ringleader.io/v1alpha1", "Node");

/// One kind as kube-apiserver serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// `apiVersion` of ringleader's objects of this kind.
    pub api_version: &'static str,
    /// `kind`.
    pub kind: &'static str,
    /// `apiVersion` in Kubernetes (differs for Nodes only).
    pub kube_api_version: &'static str,
    /// Plural in URLs.
    pub plural: &'static str,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Whether `status` is written through the `/status` subresource.
    pub status_subresource: bool,
}

/// Every kind the manager lists and watches, in the order they are listed
/// (ConfigMaps first: MindCluster's device info describes nodes; nodes and
/// queues before the jobs that need them).
pub const MANAGED: &[(&str, &str)] = &[
    ("v1", "ConfigMap"),
    RINGLEADER_NODE,
    ("scheduling.volcano.sh/v1beta1", "Queue"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("mindxdl.gitee.com/v1", "AscendJob"),
    ("kubeflow.org/v1", "PyTorchJob"),
    ("kubeflow.org/v1", "TFJob"),
    ("kubeflow.org/v2beta1", "MPIJob"),
    ("batch.volcano.sh/v1alpha1", "Job"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"),
    ("v1", "Pod"),
    ("v1", "Event"),
];

/// The kind of `api_version`/`kind`, as Kubernetes serves it.
pub fn kind(api_version: &str, kind: &str) -> Result<Kind, StoreError> {
    if (api_version, kind) == RINGLEADER_NODE || (api_version, kind) == ("v1", "Node") {
        return Ok(Kind {
            api_version: RINGLEADER_NODE.0,
            kind: "Node",
            kube_api_version: "v1",
            plural: "nodes",
            namespaced: false,
            status_subresource: true,
        });
    }
    let rt: &ResourceType = resources::by_kind(api_version, kind).ok_or_else(|| {
        StoreError::Invalid(format!("{api_version} {kind}: not a kind ringleader follows in Kubernetes mode"))
    })?;
    Ok(Kind {
        api_version: rt.api_version,
        kind: rt.kind,
        kube_api_version: rt.api_version,
        plural: rt.plural,
        namespaced: rt.namespaced,
        // Volcano's PodGroup status is written with plain updates; Events and
        // ConfigMaps have no status; every other kind serves `/status`.
        status_subresource: !matches!(kind, "PodGroup" | "Event" | "ConfigMap" | "Queue" | "PriorityClass"),
    })
}

impl Kind {
    /// Whether this is ringleader's Node (a core Node in Kubernetes).
    pub fn is_node(&self) -> bool {
        self.kind == "Node"
    }

    /// Built-in kinds whose status schema drops fields it does not know:
    /// the job controller's own state is kept in an annotation there.
    pub fn typed_status(&self) -> bool {
        matches!((self.api_version, self.kind), ("apps/v1", "Deployment") | ("batch/v1", "Job"))
    }

    fn prefix(&self) -> String {
        match self.kube_api_version.split_once('/') {
            Some((group, version)) => format!("/apis/{group}/{version}"),
            None => format!("/api/{}", self.kube_api_version),
        }
    }

    /// The collection: in `namespace`, or across all of them when `None`.
    pub fn collection(&self, namespace: Option<&str>) -> String {
        match namespace.filter(|n| self.namespaced && !n.is_empty()) {
            Some(ns) => format!("{}/namespaces/{ns}/{}", self.prefix(), self.plural),
            None => format!("{}/{}", self.prefix(), self.plural),
        }
    }

    /// One object, or its `subresource` when given.
    pub fn object(&self, namespace: &str, name: &str, subresource: Option<&str>) -> String {
        let base = format!("{}/{name}", self.collection(Some(namespace)));
        match subresource {
            Some(sub) => format!("{base}/{sub}"),
            None => base,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_kube_apiserver_s() {
        let pod = kind("v1", "Pod").expect("pod");
        assert_eq!(pod.object("team-a", "p-0", Some("binding")), "/api/v1/namespaces/team-a/pods/p-0/binding");
        assert_eq!(pod.collection(None), "/api/v1/pods");
        let node = kind("ringleader.io/v1alpha1", "Node").expect("node");
        assert_eq!(node.object("", "n1", Some("status")), "/api/v1/nodes/n1/status");
        assert!(node.is_node());
        let pt = kind("kubeflow.org/v1", "PyTorchJob").expect("pytorchjob");
        assert_eq!(pt.collection(Some("a")), "/apis/kubeflow.org/v1/namespaces/a/pytorchjobs");
        let q = kind("scheduling.volcano.sh/v1beta1", "Queue").expect("queue");
        assert_eq!(q.collection(Some("ignored")), "/apis/scheduling.volcano.sh/v1beta1/queues");
        assert!(kind("apps/v1", "Deployment").expect("deployment").typed_status());
        assert!(!kind("scheduling.volcano.sh/v1beta1", "PodGroup").expect("pg").status_subresource);
        assert!(kind("v9", "Nope").is_err_and(|e| e.to_string().contains("v9 Nope")));
        for (v, k) in MANAGED {
            assert!(kind(v, k).is_ok(), "{v} {k}");
        }
    }
}
