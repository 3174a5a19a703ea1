//! The table of resource types the server serves: every kind `ringleader-api`
//! parses plus `v1 Pod` and `v1 Event`, with the names `kubectl` users type
//! for them, and the URL paths of each.

/// One resource type: its `apiVersion`/`kind` and the names that reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResourceType {
    /// `kind`, e.g. `PyTorchJob`.
    pub kind: &'static str,
    /// API group, `""` for the core group.
    pub group: &'static str,
    /// Version, e.g. `v1`.
    pub version: &'static str,
    /// `apiVersion` as written in objects, e.g. `kubeflow.org/v1`.
    pub api_version: &'static str,
    /// Plural name used in paths, e.g. `pytorchjobs`.
    pub plural: &'static str,
    /// Singular name, e.g. `pytorchjob`.
    pub singular: &'static str,
    /// Short names, e.g. `["po"]`.
    pub short_names: &'static [&'static str],
    /// Whether objects live in a namespace (`false`: cluster-scoped, namespace `""`).
    pub namespaced: bool,
    /// Whether it is a job kind (the `jobs` group of the CLI).
    pub job: bool,
}

// Positional so the table below reads as one row per type.
#[allow(clippy::too_many_arguments)]
const fn rt(
    kind: &'static str,
    group: &'static str,
    version: &'static str,
    api_version: &'static str,
    plural: &'static str,
    singular: &'static str,
    short_names: &'static [&'static str],
    namespaced: bool,
    job: bool,
) -> ResourceType {
    ResourceType { kind, group, version, api_version, plural, singular, short_names, namespaced, job }
}

/// Every resource type, job kinds first in the order `ringleader-api` lists them.
pub const RESOURCES: &[ResourceType] = &[
    rt(
        "AscendJob",
        "mindxdl.gitee.com",
        "v1",
        "mindxdl.gitee.com/v1",
        "ascendjobs",
        "ascendjob",
        &["acjob"],
        true,
        true,
    ),
    rt("Job", "batch.volcano.sh", "v1alpha1", "batch.volcano.sh/v1alpha1", "jobs", "job", &["vcjob", "vj"], true, true),
    rt(
        "PyTorchJob",
        "kubeflow.org",
        "v1",
        "kubeflow.org/v1",
        "pytorchjobs",
        "pytorchjob",
        &["ptjob", "pj"],
        true,
        true,
    ),
    rt("TFJob", "kubeflow.org", "v1", "kubeflow.org/v1", "tfjobs", "tfjob", &[], true, true),
    rt("MPIJob", "kubeflow.org", "v2beta1", "kubeflow.org/v2beta1", "mpijobs", "mpijob", &[], true, true),
    rt("Deployment", "apps", "v1", "apps/v1", "deployments", "deployment", &["deploy"], true, true),
    rt("Job", "batch", "v1", "batch/v1", "jobs", "job", &[], true, true),
    rt("ConfigMap", "", "v1", "v1", "configmaps", "configmap", &["cm"], true, false),
    rt(
        "Queue",
        "scheduling.volcano.sh",
        "v1beta1",
        "scheduling.volcano.sh/v1beta1",
        "queues",
        "queue",
        &["q"],
        false,
        false,
    ),
    rt(
        "PodGroup",
        "scheduling.volcano.sh",
        "v1beta1",
        "scheduling.volcano.sh/v1beta1",
        "podgroups",
        "podgroup",
        &["pg"],
        true,
        false,
    ),
    rt("Node", "ringleader.io", "v1alpha1", "ringleader.io/v1alpha1", "nodes", "node", &["no"], false, false),
    rt(
        "Workload",
        "ringleader.io",
        "v1alpha1",
        "ringleader.io/v1alpha1",
        "workloads",
        "workload",
        &["wl"],
        true,
        false,
    ),
    rt(
        "PriorityClass",
        "scheduling.k8s.io",
        "v1",
        "scheduling.k8s.io/v1",
        "priorityclasses",
        "priorityclass",
        &["pc"],
        false,
        false,
    ),
    rt("Pod", "", "v1", "v1", "pods", "pod", &["po"], true, false),
    rt("Event", "", "v1", "v1", "events", "event", &["ev"], true, false),
    rt("Role", RBAC, "v1", RBAC_V1, "roles", "role", &[], true, false),
    rt("ClusterRole", RBAC, "v1", RBAC_V1, "clusterroles", "clusterrole", &[], false, false),
    rt("RoleBinding", RBAC, "v1", RBAC_V1, "rolebindings", "rolebinding", &[], true, false),
    rt("ClusterRoleBinding", RBAC, "v1", RBAC_V1, "clusterrolebindings", "clusterrolebinding", &[], false, false),
    rt("ResourceGroup", PLATFORM, "v1alpha1", PLATFORM_V1, "resourcegroups", "resourcegroup", &["rg"], false, false),
    rt("Workspace", PLATFORM, "v1alpha1", PLATFORM_V1, "workspaces", "workspace", &["ws"], false, false),
    rt("TrainingJob", PLATFORM, "v1alpha1", PLATFORM_V1, "trainingjobs", "trainingjob", &["tj"], true, false),
    rt("Run", PLATFORM, "v1alpha1", PLATFORM_V1, "runs", "run", &[], true, false),
    rt("Dataset", PLATFORM, "v1alpha1", PLATFORM_V1, "datasets", "dataset", &["ds"], true, false),
    rt("Image", PLATFORM, "v1alpha1", PLATFORM_V1, "images", "image", &["img"], true, false),
    rt("StorageMount", PLATFORM, "v1alpha1", PLATFORM_V1, "storagemounts", "storagemount", &["sm"], false, false),
    rt("Script", PLATFORM, "v1alpha1", PLATFORM_V1, "scripts", "script", &[], false, false),
    rt("ScriptRun", PLATFORM, "v1alpha1", PLATFORM_V1, "scriptruns", "scriptrun", &["sr"], false, false),
    rt("AuditRecord", PLATFORM, "v1alpha1", PLATFORM_V1, "auditrecords", "auditrecord", &["audit"], false, false),
    rt("CheckRun", RINGLEADER, "v1alpha1", RINGLEADER_V1, "checkruns", "checkrun", &["chk"], false, false),
    // Last: the constants below name entries by their index.
    rt("Secret", "", "v1", "v1", "secrets", "secret", &[], true, false),
    rt("Namespace", "", "v1", "v1", "namespaces", "namespace", &["ns"], false, false),
    rt(
        "PodDisruptionBudget",
        "policy",
        "v1",
        "policy/v1",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        &["pdb"],
        true,
        false,
    ),
    rt("ReplicaSet", "apps", "v1", "apps/v1", "replicasets", "replicaset", &["rs"], true, false),
    rt("Service", "", "v1", "v1", "services", "service", &["svc"], true, false),
    rt("Endpoints", "", "v1", "v1", "endpoints", "endpoints", &["ep"], true, false),
    rt(
        "EndpointSlice",
        "discovery.k8s.io",
        "v1",
        "discovery.k8s.io/v1",
        "endpointslices",
        "endpointslice",
        &[],
        true,
        false,
    ),
    rt("ServiceAccount", "", "v1", "v1", "serviceaccounts", "serviceaccount", &["sa"], true, false),
    rt("PlatformNode", PLATFORM, "v1alpha1", PLATFORM_V1, "platformnodes", "platformnode", &["pnode"], false, false),
];

const RBAC: &str = "rbac.authorization.k8s.io";
const RINGLEADER: &str = "ringleader.io";
const RINGLEADER_V1: &str = ringleader_api::kinds::check::API_VERSION;
const RBAC_V1: &str = "rbac.authorization.k8s.io/v1";
const PLATFORM: &str = ringleader_api::kinds::platform::GROUP;
const PLATFORM_V1: &str = ringleader_api::kinds::platform::API_VERSION;

/// The `v1 Pod` resource.
pub const PODS: &ResourceType = &RESOURCES[13];
/// The `ringleader.io/v1alpha1 Node` resource.
pub const NODES: &ResourceType = &RESOURCES[10];
/// The `v1 Event` resource.
pub const EVENTS: &ResourceType = &RESOURCES[14];
/// The platform's `ResourceGroup` resource.
pub const RESOURCE_GROUPS: &ResourceType = &RESOURCES[19];
/// The platform's `StorageMount` resource.
pub const STORAGE_MOUNTS: &ResourceType = &RESOURCES[25];
/// The platform's `AuditRecord` resource: read-only through the API (the
/// server writes it beside each write it records, `ringleader_server::audit`).
pub const AUDIT_RECORDS: &ResourceType = &RESOURCES[28];

/// The core `v1 Namespace` resource.
pub const NAMESPACES: &ResourceType = &RESOURCES[31];
/// The `policy/v1 PodDisruptionBudget` resource.
pub const POD_DISRUPTION_BUDGETS: &ResourceType = &RESOURCES[32];
/// The `apps/v1 ReplicaSet` resource (kept by the deployment controller).
pub const REPLICA_SETS: &ResourceType = &RESOURCES[33];
/// The core `v1 Service` resource.
pub const SERVICES: &ResourceType = &RESOURCES[34];
/// The core `v1 Endpoints` resource.
pub const ENDPOINTS: &ResourceType = &RESOURCES[35];
/// The `discovery.k8s.io/v1 EndpointSlice` resource.
pub const ENDPOINT_SLICES: &ResourceType = &RESOURCES[36];
/// The core `v1 ServiceAccount` resource.
pub const SERVICE_ACCOUNTS: &ResourceType = &RESOURCES[37];
/// The platform's `PlatformNode` resource: a node's source and binding.
pub const PLATFORM_NODES: &ResourceType = &RESOURCES[38];

/// The core v1 Node: the read-only view of the ringleader.io Nodes that
/// [`crate::node_view`] serves at `/api/v1/nodes`. It is not in
/// [`RESOURCES`]: nothing stores it, and the CLI's `nodes` means the
/// ringleader.io kind; discovery and the OpenAPI documents list it so stock
/// `kubectl get nodes` finds it.
pub const CORE_NODES: &ResourceType = &rt("Node", "", "v1", "v1", "nodes", "node", &["no"], false, false);

/// `SelfSubjectAccessReview`, which `kubectl auth can-i` creates: answered
/// (`ringleader_server::authz`), never stored, so not in [`RESOURCES`]; discovery
/// lists it.
pub const SELF_SUBJECT_ACCESS_REVIEWS: &ResourceType = &rt(
    "SelfSubjectAccessReview",
    "authorization.k8s.io",
    "v1",
    "authorization.k8s.io/v1",
    "selfsubjectaccessreviews",
    "selfsubjectaccessreview",
    &[],
    false,
    false,
);

/// `SelfSubjectRulesReview` (`kubectl auth can-i --list`) and
/// `SelfSubjectReview` (`kubectl auth whoami`): answered
/// (`ringleader_server::reviews`), never stored; discovery lists them.
pub const SELF_REVIEWS: [&ResourceType; 2] = [
    &rt(
        "SelfSubjectRulesReview",
        "authorization.k8s.io",
        "v1",
        "authorization.k8s.io/v1",
        "selfsubjectrulesreviews",
        "selfsubjectrulesreview",
        &[],
        false,
        false,
    ),
    &rt(
        "SelfSubjectReview",
        "authentication.k8s.io",
        "v1",
        "authentication.k8s.io/v1",
        "selfsubjectreviews",
        "selfsubjectreview",
        &[],
        false,
        false,
    ),
];

/// Verbs of [`SELF_SUBJECT_ACCESS_REVIEWS`].
const CREATE_ONLY_VERBS: &[&str] = &["create"];

/// Verbs of every type in [`RESOURCES`]: collections take GET (list, watch)
/// and POST, objects GET, PUT, PATCH and DELETE; a DELETE of a whole
/// collection is not served, so `deletecollection` is not claimed.
const READ_WRITE_VERBS: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];
/// Verbs of [`CORE_NODES`], a view that refuses writes.
const READ_ONLY_VERBS: &[&str] = &["get", "list", "watch"];

/// Every type discovery and the OpenAPI documents list: [`RESOURCES`],
/// [`CORE_NODES`] and [`SELF_SUBJECT_ACCESS_REVIEWS`].
pub fn discoverable() -> impl Iterator<Item = &'static ResourceType> {
    RESOURCES.iter().chain([CORE_NODES, SELF_SUBJECT_ACCESS_REVIEWS])
}

/// The name of the group of every job kind (`ringleader get jobs`).
pub const JOBS_GROUP: &str = "jobs";

impl ResourceType {
    /// Whether its objects have a `status` subresource, as on Kubernetes:
    /// every stored kind but the plain data and policy ones (not the
    /// create-only reviews, nor the records only the API server writes).
    pub fn has_status(&self) -> bool {
        let plain = matches!(
            self.kind,
            "ConfigMap"
                | "Secret"
                | "ServiceAccount"
                | "Event"
                | "Role"
                | "ClusterRole"
                | "RoleBinding"
                | "ClusterRoleBinding"
                | "Endpoints"
                | "EndpointSlice"
        );
        !plain && self.verbs().contains(&"update")
    }

    /// `plural.group` (`jobs.batch.volcano.sh`), or the plural alone for the core group.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The path prefix of the group/version: `/api/v1` or `/apis/<group>/<version>`.
    pub fn prefix(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// The collection path: in `namespace` (ignored for cluster-scoped types),
    /// or across all namespaces when `None`.
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("{}/namespaces/{ns}/{}", self.prefix(), self.plural),
            _ => format!("{}/{}", self.prefix(), self.plural),
        }
    }

    /// The path of one object (`namespace` ignored for cluster-scoped types).
    pub fn object_path(&self, namespace: &str, name: &str) -> String {
        let ns = if self.namespaced { Some(if namespace.is_empty() { "default" } else { namespace }) } else { None };
        format!("{}/{name}", self.collection_path(ns))
    }

    /// The verbs the server serves on it, as discovery lists them.
    pub fn verbs(&self) -> &'static [&'static str] {
        if self == CORE_NODES {
            // The view takes writes of what it shares with the ringleader.io Node.
            &["get", "list", "watch", "patch", "update"]
        } else if self == AUDIT_RECORDS {
            READ_ONLY_VERBS
        } else if self == REPLICA_SETS {
            // Only the deployment controller creates them.
            &["delete", "get", "list", "patch", "update", "watch"]
        } else if self == SELF_SUBJECT_ACCESS_REVIEWS || SELF_REVIEWS.contains(&self) {
            CREATE_ONLY_VERBS
        } else {
            READ_WRITE_VERBS
        }
    }

    /// Whether it takes writes (all but the core Node view and the audit records).
    pub fn writable(&self) -> bool {
        self != CORE_NODES && self != AUDIT_RECORDS
    }

    /// Whether it is a `platform.ringleader.io` kind.
    pub fn platform(&self) -> bool {
        self.group == PLATFORM
    }

    /// Discovery categories: pods, ReplicaSets, Services and the job kinds are in
    /// `all`, so `kubectl get all` lists them.
    pub fn categories(&self) -> &'static [&'static str] {
        if self.job || self == PODS || self == REPLICA_SETS || self == SERVICES {
            &["all"]
        } else {
            &[]
        }
    }

    /// Whether `name` (case-insensitive) names this type: kind, plural,
    /// singular, short name, or `plural.group`.
    pub fn is_named(&self, name: &str) -> bool {
        let n = name.to_ascii_lowercase();
        n == self.kind.to_ascii_lowercase()
            || n == self.plural
            || n == self.singular
            || self.short_names.contains(&n.as_str())
            || n == self.qualified()
            || (!self.group.is_empty() && n == format!("{}.{}", self.singular, self.group))
    }
}

/// The one type a name denotes (kind, plural, singular, short name or
/// `plural.group`, case-insensitive). `job`/`jobs` alone mean `batch/v1 Job`
/// as in `kubectl`; use [`resolve`] for the CLI's group of all job kinds.
pub fn find(name: &str) -> Option<&'static ResourceType> {
    RESOURCES.iter().rev().find(|r| r.is_named(name))
}

/// The types a name on the command line covers: `jobs` (or `job`) is every
/// job kind, anything else what [`find`] returns.
pub fn resolve(name: &str) -> Option<Vec<&'static ResourceType>> {
    let n = name.to_ascii_lowercase();
    if n == JOBS_GROUP || n == "job" {
        return Some(job_types().collect());
    }
    find(name).map(|r| vec![r])
}

/// Every job kind.
pub fn job_types() -> impl Iterator<Item = &'static ResourceType> {
    RESOURCES.iter().filter(|r| r.job)
}

/// The type of an object's `apiVersion` and `kind`.
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
    RESOURCES.iter().find(|r| r.api_version == api_version && r.kind == kind)
}

/// The type a path names (`group` `""` for `/api/v1`).
pub fn by_path(group: &str, version: &str, plural: &str) -> Option<&'static ResourceType> {
    RESOURCES.iter().find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// Where the API server serves the embedded metrics history (series of
/// node, pod and job usage), which `ringleader top` and the console read.
pub const HISTORY_PATH: &str = "/apis/ringleader.io/v1alpha1/history";

/// The API group of the resource metrics `kubectl top` reads (served by the
/// API server, never stored).
pub const METRICS_GROUP: &str = "metrics.k8s.io";
/// The resource name RBAC's attributes carry for [`HISTORY_PATH`].
pub const HISTORY_RESOURCE: &str = "history";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_constants_point_at_their_rows() {
        assert_eq!(PODS.kind, "Pod");
        assert_eq!(NODES.kind, "Node");
        assert_eq!(NODES.api_version, "ringleader.io/v1alpha1");
        assert_eq!(EVENTS.kind, "Event");
        assert_eq!(RESOURCE_GROUPS.kind, "ResourceGroup");
        assert_eq!(STORAGE_MOUNTS.kind, "StorageMount");
        assert_eq!(AUDIT_RECORDS.kind, "AuditRecord");
        assert!(!AUDIT_RECORDS.writable() && AUDIT_RECORDS.verbs() == ["get", "list", "watch"]);
        assert_eq!(find("tj").map(|r| r.plural), Some("trainingjobs"));
        assert_eq!(find("runs").map(|r| (r.kind, r.namespaced)), Some(("Run", true)));
        assert_eq!(find("rg").map(|r| (r.kind, r.namespaced)), Some(("ResourceGroup", false)));
    }

    #[test]
    fn every_api_kind_has_a_row() {
        for (api_version, kind) in ringleader_api::kinds::SUPPORTED {
            assert!(by_kind(api_version, kind).is_some(), "{api_version} {kind}");
        }
        for r in RESOURCES {
            let expected =
                if r.group.is_empty() { r.version.to_string() } else { format!("{}/{}", r.group, r.version) };
            assert_eq!(r.api_version, expected);
        }
    }

    #[test]
    fn names_resolve_case_insensitively() {
        assert_eq!(find("PO").map(|r| r.kind), Some("Pod"));
        assert_eq!(find("acjob").map(|r| r.kind), Some("AscendJob"));
        assert_eq!(find("PyTorchJob").map(|r| r.plural), Some("pytorchjobs"));
        assert_eq!(find("jobs").map(|r| r.api_version), Some("batch/v1"));
        assert_eq!(find("jobs.batch.volcano.sh").map(|r| r.api_version), Some("batch.volcano.sh/v1alpha1"));
        assert_eq!(find("vcjob").map(|r| r.api_version), Some("batch.volcano.sh/v1alpha1"));
        assert!(find("widgets").is_none());
        let jobs = resolve("Jobs").unwrap_or_default();
        assert_eq!(jobs.len(), 7);
        assert_eq!(resolve("nodes").unwrap_or_default(), vec![NODES]);
    }

    #[test]
    fn paths_follow_kubernetes() {
        assert_eq!(PODS.object_path("ns1", "p"), "/api/v1/namespaces/ns1/pods/p");
        assert_eq!(PODS.collection_path(None), "/api/v1/pods");
        assert_eq!(NODES.object_path("ignored", "n1"), "/apis/ringleader.io/v1alpha1/nodes/n1");
        assert_eq!(by_path("kubeflow.org", "v2beta1", "mpijobs").map(|r| r.kind), Some("MPIJob"));
        assert_eq!(CORE_NODES.object_path("", "n1"), "/api/v1/nodes/n1");
        assert_eq!(NAMESPACES.object_path("", "vcjob"), "/api/v1/namespaces/vcjob");
        assert_eq!(find("ns"), Some(NAMESPACES));
        assert!(!NAMESPACES.namespaced && NAMESPACES.has_status());
        assert_eq!(find("pdb"), Some(POD_DISRUPTION_BUDGETS));
        assert_eq!(POD_DISRUPTION_BUDGETS.kind, "PodDisruptionBudget");
        assert_eq!(find("rs"), Some(REPLICA_SETS));
        assert!(REPLICA_SETS.has_status() && REPLICA_SETS.kind == "ReplicaSet");
        assert_eq!(REPLICA_SETS.categories(), &["all"]);
        assert!(!REPLICA_SETS.verbs().contains(&"create"), "only the deployment controller creates them");
        assert_eq!(find("svc"), Some(SERVICES));
        assert_eq!(find("ep"), Some(ENDPOINTS));
        assert_eq!(find("endpointslices"), Some(ENDPOINT_SLICES));
        assert!(SERVICES.has_status() && !ENDPOINTS.has_status() && !ENDPOINT_SLICES.has_status());
        assert_eq!(ENDPOINT_SLICES.object_path("a", "b"), "/apis/discovery.k8s.io/v1/namespaces/a/endpointslices/b");
        assert_eq!(find("sa"), Some(SERVICE_ACCOUNTS));
        assert!(SERVICE_ACCOUNTS.namespaced && !SERVICE_ACCOUNTS.has_status());
    }

    #[test]
    fn status_subresources_are_those_of_stored_writable_kinds_with_a_status() {
        assert!(PODS.has_status() && NODES.has_status() && CORE_NODES.has_status());
        assert!(find("pj").is_some_and(ResourceType::has_status));
        assert!(!find("cm").is_some_and(ResourceType::has_status), "a ConfigMap has none");
        assert!(!AUDIT_RECORDS.has_status(), "only the API server writes audit records");
        assert!(!SELF_SUBJECT_ACCESS_REVIEWS.has_status() && SELF_REVIEWS.iter().all(|r| !r.has_status()));
    }

    #[test]
    fn the_core_node_view_takes_only_patches_and_updates_and_is_apart_from_the_table() {
        // No create or delete: a write changes what the view shares with the real Node.
        assert_eq!(CORE_NODES.verbs(), &["get", "list", "watch", "patch", "update"]);
        assert!(!CORE_NODES.writable() && NODES.writable(), "not through the generic write path");
        assert!(by_path("", "v1", "nodes").is_none());
        assert_eq!(discoverable().count(), RESOURCES.len() + 2);
        assert_eq!(find("pj").map(|r| r.kind), Some("PyTorchJob"));
        assert_eq!(PODS.categories(), &["all"]);
        assert!(NODES.categories().is_empty());
    }
}
