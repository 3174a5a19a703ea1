//! Role-based access control in the `rbac.authorization.k8s.io/v1` shape:
//! Roles, ClusterRoles, RoleBindings and ClusterRoleBindings are ordinary
//! stored objects, read on each decision, so a binding takes effect on the
//! next request. The rule semantics are Kubernetes' (`*` wildcards,
//! `*/subresource`, `resourceNames`, `nonResourceURLs` with a trailing `*`),
//! and so are the built-in roles ([`builtin_objects`]), adapted to the
//! resources served here. They are created at start when absent and are
//! the user's to edit after.

use crate::attributes::Attributes;
use crate::identity::{Identity, APISERVER_USER, AUTHENTICATED_GROUP, MASTERS_GROUP, NODES_GROUP, SCHEDULER_USER};
use ringleader_registry::resources::{self, ResourceType, RESOURCES};
use ringleader_store::{ObjectKey, Selector, Store, StoreError};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};

/// The RBAC group.
pub const GROUP: &str = "rbac.authorization.k8s.io";
/// `apiVersion` of RBAC objects.
pub const API_VERSION: &str = "rbac.authorization.k8s.io/v1";
/// Read verbs.
const READ: &[&str] = &["get", "list", "watch"];
/// Write verbs.
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

/// One rule of a role, as stored (missing lists are empty).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

fn strings(v: &Value, field: &str) -> Vec<String> {
    v.get(field)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

impl Rule {
    /// A rule from its JSON (fields of the wrong type read as empty).
    pub fn of(v: &Value) -> Rule {
        Rule {
            verbs: strings(v, "verbs"),
            api_groups: strings(v, "apiGroups"),
            resources: strings(v, "resources"),
            resource_names: strings(v, "resourceNames"),
            non_resource_urls: strings(v, "nonResourceURLs"),
        }
    }

    /// Whether the rule allows the request.
    pub fn allows(&self, a: &Attributes) -> bool {
        let verb = self.verbs.iter().any(|v| v == "*" || *v == a.verb);
        if !verb {
            return false;
        }
        if !a.resource_request {
            return self.non_resource_urls.iter().any(|u| {
                u == "*" || *u == a.path || u.strip_suffix('*').is_some_and(|prefix| a.path.starts_with(prefix))
            });
        }
        let group = self.api_groups.iter().any(|g| g == "*" || *g == a.api_group);
        let combined =
            if a.subresource.is_empty() { a.resource.clone() } else { format!("{}/{}", a.resource, a.subresource) };
        let resource = self.resources.iter().any(|r| {
            r == "*"
                || *r == combined
                || (!a.subresource.is_empty() && r.strip_prefix("*/").is_some_and(|s| s == a.subresource))
        });
        let name = self.resource_names.is_empty() || (!a.name.is_empty() && self.resource_names.contains(&a.name));
        group && resource && name
    }
}

/// The rules of a stored role.
pub fn rules_of(role: &Value) -> Vec<Rule> {
    role.get("rules").and_then(Value::as_array).map(|r| r.iter().map(Rule::of).collect()).unwrap_or_default()
}

/// Whether a binding's subject is `id` (User, Group, or ServiceAccount as
/// `system:serviceaccount:<ns>:<name>`; `binding_ns` is the default namespace
/// of a ServiceAccount subject).
fn subject_is(subject: &Value, id: &Identity, binding_ns: &str) -> bool {
    let s = |f: &str| subject.get(f).and_then(Value::as_str).unwrap_or_default();
    match s("kind") {
        "User" => s("name") == id.user,
        "Group" => id.in_group(s("name")),
        "ServiceAccount" => {
            let ns = if s("namespace").is_empty() { binding_ns } else { s("namespace") };
            id.user == format!("system:serviceaccount:{ns}:{}", s("name"))
        }
        _ => false,
    }
}

fn binds(binding: &Value, id: &Identity, ns: &str) -> bool {
    binding
        .get("subjects")
        .and_then(Value::as_array)
        .is_some_and(|subjects| subjects.iter().any(|s| subject_is(s, id, ns)))
}

/// An authorization decision and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// What allowed it (empty when denied).
    pub reason: String,
}

fn key(kind: &str, ns: &str, name: &str) -> ObjectKey {
    ObjectKey::new(API_VERSION, kind, ns, name)
}

/// Decides a request: members of [`MASTERS_GROUP`] may do anything (as in
/// Kubernetes, whatever the bindings say); anyone else needs a rule of a
/// role bound to them, cluster-wide or in the request's namespace.
pub fn authorize(store: &Store, id: &Identity, a: &Attributes) -> Result<Decision, StoreError> {
    if id.in_group(MASTERS_GROUP) {
        return Ok(Decision { allowed: true, reason: format!("group {MASTERS_GROUP:?}") });
    }
    let mut cluster_roles: HashMap<String, Vec<Rule>> = HashMap::new();
    let mut cluster_role = |name: &str| -> Result<Vec<Rule>, StoreError> {
        if let Some(r) = cluster_roles.get(name) {
            return Ok(r.clone());
        }
        let rules = store.get(&key("ClusterRole", "", name))?.map(|s| rules_of(&s.object)).unwrap_or_default();
        cluster_roles.insert(name.to_string(), rules.clone());
        Ok(rules)
    };
    let (bindings, _) = store.list(&Selector::kind(API_VERSION, "ClusterRoleBinding"))?;
    for b in &bindings {
        if !binds(&b.object, id, "") || role_ref(&b.object).0 != "ClusterRole" {
            continue;
        }
        let name = role_ref(&b.object).1;
        if cluster_role(name)?.iter().any(|r| r.allows(a)) {
            return Ok(Decision {
                allowed: true,
                reason: format!("RBAC: allowed by ClusterRoleBinding {:?} of ClusterRole {name:?}", b.key.name),
            });
        }
    }
    if a.namespace.is_empty() {
        return Ok(Decision { allowed: false, reason: String::new() });
    }
    let (bindings, _) = store.list(&Selector::kind(API_VERSION, "RoleBinding").in_namespace(&a.namespace))?;
    for b in &bindings {
        if !binds(&b.object, id, &a.namespace) {
            continue;
        }
        let (kind, name) = role_ref(&b.object);
        let rules = match kind {
            "ClusterRole" => cluster_role(name)?,
            "Role" => store.get(&key("Role", &a.namespace, name))?.map(|s| rules_of(&s.object)).unwrap_or_default(),
            _ => continue,
        };
        if rules.iter().any(|r| r.allows(a)) {
            return Ok(Decision {
                allowed: true,
                reason: format!(
                    "RBAC: allowed by RoleBinding {:?} of {kind} {name:?} in namespace {:?}",
                    b.key.name, a.namespace
                ),
            });
        }
    }
    Ok(Decision { allowed: false, reason: String::new() })
}

/// Every rule that applies to `id` cluster-wide and, when `namespace` is
/// not empty, in that namespace: what SelfSubjectRulesReview lists. Members
/// of [`MASTERS_GROUP`] get the all-allowing rules whatever is bound.
pub fn rules_for(store: &Store, id: &Identity, namespace: &str) -> Result<Vec<Rule>, StoreError> {
    let mut out = Vec::new();
    if id.in_group(MASTERS_GROUP) {
        out.push(Rule::of(&rule(&["*"], &["*"], &["*"])));
        out.push(Rule::of(&json!({"nonResourceURLs": ["*"], "verbs": ["*"]})));
    }
    let cluster_role = |name: &str| -> Result<Vec<Rule>, StoreError> {
        Ok(store.get(&key("ClusterRole", "", name))?.map(|s| rules_of(&s.object)).unwrap_or_default())
    };
    let (bindings, _) = store.list(&Selector::kind(API_VERSION, "ClusterRoleBinding"))?;
    for b in bindings.iter().filter(|b| binds(&b.object, id, "")) {
        if let ("ClusterRole", name) = role_ref(&b.object) {
            out.extend(cluster_role(name)?);
        }
    }
    if !namespace.is_empty() {
        let (bindings, _) = store.list(&Selector::kind(API_VERSION, "RoleBinding").in_namespace(namespace))?;
        for b in bindings.iter().filter(|b| binds(&b.object, id, namespace)) {
            match role_ref(&b.object) {
                ("ClusterRole", name) => out.extend(cluster_role(name)?),
                ("Role", name) => out
                    .extend(store.get(&key("Role", namespace, name))?.map(|s| rules_of(&s.object)).unwrap_or_default()),
                _ => {}
            }
        }
    }
    let mut seen = Vec::new();
    out.retain(|r| {
        let new = !seen.contains(r);
        if new {
            seen.push(r.clone());
        }
        new
    });
    Ok(out)
}

/// `roleRef.kind` and `roleRef.name` of a binding.
pub fn role_ref(binding: &Value) -> (&str, &str) {
    let s = |f: &str| binding.pointer(&format!("/roleRef/{f}")).and_then(Value::as_str).unwrap_or_default();
    (s("kind"), s("name"))
}

/// The namespaced resources users' workloads are made of: every namespaced
/// type but Events and RBAC's own, grouped by API group.
fn workload_resources() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    let wanted = |r: &&ResourceType| r.namespaced && *r != resources::EVENTS && r.group != GROUP;
    for r in RESOURCES.iter().filter(wanted) {
        match out.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, list)) => list.push(r.plural),
            None => out.push((r.group, vec![r.plural])),
        }
    }
    out
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

fn cluster_role(name: &str, rules: Vec<Value>) -> Value {
    json!({
        "apiVersion": API_VERSION, "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
        "rules": rules,
    })
}

fn cluster_binding(name: &str, role: &str, subject_kind: &str, subject: &str) -> Value {
    json!({
        "apiVersion": API_VERSION, "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": GROUP, "kind": subject_kind, "name": subject}],
    })
}

/// The built-in ClusterRoles and ClusterRoleBindings:
///
/// - `cluster-admin` (everything), bound to group `system:masters`;
/// - `admin`, `edit`, `view` as Kubernetes defines them for a namespace
///   (bind them with a RoleBinding): `view` reads workloads, pods, their
///   logs, ConfigMaps and Events; `edit` also writes workloads, pods and
///   ConfigMaps; `admin` also manages Roles and RoleBindings;
/// - `system:discovery` (discovery, OpenAPI, version) and
///   `system:basic-user` (SelfSubjectAccessReviews, SelfSubjectRulesReviews,
///   SelfSubjectReviews, the caller's own access keys), bound to every
///   authenticated user; `system:monitoring` (`/metrics`, the probes'
///   details), bound to group
///   `system:monitoring`;
/// - `system:node` for agents (group `system:nodes`; which node's objects
///   each may touch is narrowed in `ringleader_server::authz`) and
///   `system:ringleader:scheduler` for the manager (every resource but
///   RBAC's).
pub fn builtin_objects() -> Vec<Value> {
    let workloads = workload_resources();
    let mut view = Vec::new();
    let mut edit = Vec::new();
    for (group, list) in &workloads {
        // As Kubernetes' `view`: Secrets are not for every reader.
        let mut readable: Vec<&str> = list.iter().copied().filter(|r| *r != "secrets").collect();
        if group.is_empty() {
            readable.extend(["pods/log", "events"]);
            edit.push(rule(&[group], &["secrets"], READ));
        }
        // As Kubernetes' `view`: the status of whatever it reads.
        let statuses: Vec<String> = RESOURCES
            .iter()
            .filter(|r| r.group == *group && list.contains(&r.plural) && r.has_status())
            .map(|r| format!("{}/status", r.plural))
            .collect();
        readable.extend(statuses.iter().map(String::as_str));
        view.push(rule(&[group], &readable, READ));
        edit.push(rule(&[group], list, WRITE));
    }
    // As Kubernetes' `edit`: who may change pods may also run commands in them.
    edit.push(rule(&[""], &["pods/exec", "pods/attach", "pods/portforward"], &["get", "create"]));
    // As Kubernetes' `edit`: who may delete pods may evict them (`kubectl drain`).
    edit.push(rule(&[""], &["pods/eviction"], &["create"]));
    // As Kubernetes' `view` and `edit`: the scale of what they read or write
    // (`kubectl scale`).
    for r in ringleader_registry::scale::scalable() {
        let sub = format!("{}/scale", r.plural);
        view.push(rule(&[r.group], &[sub.as_str()], READ));
        edit.push(rule(&[r.group], &[sub.as_str()], &["get", "patch", "update"]));
    }
    // As Kubernetes' `edit`: who may run pods as an account may get its token.
    edit.push(rule(&[""], &["serviceaccounts/token"], &["create"]));
    // As Kubernetes' `view`: bound in a namespace, it reads that namespace.
    view.push(rule(&[""], &["namespaces"], READ));
    // As metrics-server's aggregated-metrics-reader: whoever reads pods reads their usage.
    view.push(rule(&[ringleader_registry::resources::METRICS_GROUP], &["pods"], READ));
    let edit_all: Vec<Value> = view.iter().chain(&edit).cloned().collect();
    let mut admin = edit_all.clone();
    admin.push(rule(&[GROUP], &["roles", "rolebindings"], &[READ, WRITE].concat()));
    let groups: BTreeSet<&str> = RESOURCES.iter().map(|r| r.group).filter(|g| *g != GROUP).collect();
    let groups: Vec<&str> = groups.into_iter().collect();
    let discovery_urls = ["/api", "/api/*", "/apis", "/apis/*", "/version", "/version/", "/openapi", "/openapi/*"];
    vec![
        cluster_role(
            "cluster-admin",
            vec![rule(&["*"], &["*"], &["*"]), json!({"nonResourceURLs": ["*"], "verbs": ["*"]})],
        ),
        cluster_role("admin", admin),
        cluster_role("edit", edit_all),
        cluster_role("view", view),
        cluster_role("system:discovery", vec![json!({"nonResourceURLs": discovery_urls, "verbs": ["get"]})]),
        cluster_role(
            "system:basic-user",
            vec![
                rule(&["authorization.k8s.io"], &["selfsubjectaccessreviews", "selfsubjectrulesreviews"], &["create"]),
                rule(&["authentication.k8s.io"], &["selfsubjectreviews"], &["create"]),
                // A user's own access keys (the server narrows these to the caller's).
                rule(&["ringleader.io"], &["accesskeys"], &["create", "list", "patch", "delete"]),
            ],
        ),
        // The probes answer `ok` to anyone; their details (which checks, how
        // many nodes heartbeat) are for monitoring, as kube-apiserver's role.
        cluster_role(
            "system:monitoring",
            vec![json!({"nonResourceURLs": ["/metrics", "/healthz", "/livez", "/readyz"], "verbs": ["get"]})],
        ),
        cluster_role(
            "system:node",
            vec![
                rule(&["ringleader.io"], &["nodes"], &["get", "list", "watch", "create", "update", "patch"]),
                // Status goes through `/status`, as kubelet writes it.
                rule(&["ringleader.io"], &["nodes/status"], &["update", "patch"]),
                rule(&[""], &["pods"], &["update", "patch", "delete"]),
                rule(&[""], &["pods/status"], &["update", "patch"]),
                rule(&[""], &["events"], &["create", "update", "patch"]),
                // Its pods' tokens (only for pods bound to it: ringleader_server::sa_tokens).
                rule(&[""], &["serviceaccounts/token"], &["create"]),
                rule(&["*"], &["*"], READ),
            ],
        ),
        cluster_role(SCHEDULER_USER, vec![rule(&groups, &["*"], &["*"])]),
        cluster_role(
            APISERVER_USER,
            vec![
                rule(&[""], &["pods/log"], &["get"]),
                rule(&[""], &["pods/exec", "pods/attach", "pods/portforward"], &["create"]),
            ],
        ),
        cluster_binding("cluster-admin", "cluster-admin", "Group", MASTERS_GROUP),
        cluster_binding("system:discovery", "system:discovery", "Group", AUTHENTICATED_GROUP),
        cluster_binding("system:basic-user", "system:basic-user", "Group", AUTHENTICATED_GROUP),
        cluster_binding("system:monitoring", "system:monitoring", "Group", "system:monitoring"),
        cluster_binding("system:node", "system:node", "Group", NODES_GROUP),
        cluster_binding(SCHEDULER_USER, SCHEDULER_USER, "User", SCHEDULER_USER),
        cluster_binding(APISERVER_USER, APISERVER_USER, "User", APISERVER_USER),
        // spec/platform.md: preset images are for every workspace to pick.
        json!({
            "apiVersion": API_VERSION, "kind": "Role",
            "metadata": {"name": PRESET_IMAGE_READER, "namespace": PRESET_NAMESPACE,
                "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
            "rules": [rule(&["platform.ringleader.io"], &["images"], READ)],
        }),
        json!({
            "apiVersion": API_VERSION, "kind": "RoleBinding",
            "metadata": {"name": PRESET_IMAGE_READER, "namespace": PRESET_NAMESPACE,
                "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
            "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": PRESET_IMAGE_READER},
            "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": AUTHENTICATED_GROUP}],
        }),
    ]
}

/// The Role (and RoleBinding) letting every signed-in user read the preset images.
pub const PRESET_IMAGE_READER: &str = "platform:preset-images";
/// Where preset images live (ringleader_api's `PRESET_NAMESPACE`).
const PRESET_NAMESPACE: &str = ringleader_api::kinds::platform::PRESET_NAMESPACE;

/// Creates every built-in object that is absent (ones present, edited or
/// not, are left alone).
pub fn ensure_builtins(store: &Store) -> Result<usize, StoreError> {
    let mut created = 0;
    for object in builtin_objects() {
        let key = ObjectKey::of(&object)?;
        if let Some(stored) = store.get(&key)? {
            if let Some(rules) = missing_rules(&stored.object, &object) {
                match store.patch(&key, &json!({"rules": rules}), Some(stored.resource_version)) {
                    // Another server on the same store reconciled it first.
                    Ok(_) | Err(StoreError::Conflict { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            continue;
        }
        match store.create(object) {
            Ok(_) => created += 1,
            // Another server on the same store made it first.
            Err(StoreError::AlreadyExists(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(created)
}

/// The rules of a stored built-in role once the built-in rules it lacks
/// are added (`None`: it lacks none, or its
/// `rbac.authorization.kubernetes.io/autoupdate` is not "true"). As
/// kube-apiserver reconciles its bootstrap roles at start: a store made by
/// an older server gains new permissions (a node's `serviceaccounts/token`),
/// nothing is taken away, and a role its admin marked is left alone.
fn missing_rules(stored: &Value, builtin: &Value) -> Option<Vec<Value>> {
    let auto = stored.pointer("/metadata/annotations/rbac.authorization.kubernetes.io~1autoupdate");
    if auto.and_then(Value::as_str) != Some("true") {
        return None;
    }
    let mut rules = stored.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
    let wanted = builtin.get("rules").and_then(Value::as_array)?;
    let missing: Vec<Value> = wanted.iter().filter(|r| !rules.contains(r)).cloned().collect();
    if missing.is_empty() {
        return None;
    }
    rules.extend(missing);
    Some(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_in_role_of_an_older_store_gains_new_rules_unless_its_admin_kept_it() -> Result<(), StoreError> {
        let dir = tempfile::tempdir().map_err(|e| StoreError::Io(e.to_string()))?;
        let store = Store::open(dir.path())?;
        ensure_builtins(&store)?;
        let key = ObjectKey::new(API_VERSION, "ClusterRole", "", "system:node");
        let token_rule = rule(&[""], &["serviceaccounts/token"], &["create"]);
        let old: Vec<Value> = store.get(&key)?.and_then(|r| r.object["rules"].as_array().cloned()).unwrap_or_default();
        let without: Vec<Value> = old.iter().filter(|r| **r != token_rule).cloned().collect();
        store.patch(&key, &json!({"rules": without}), None)?;
        ensure_builtins(&store)?;
        let rules = store.get(&key)?.map(|r| r.object["rules"].clone()).unwrap_or_default();
        assert!(rules.as_array().is_some_and(|r| r.contains(&token_rule)), "{rules}");
        let kept =
            json!({"metadata": {"annotations": {"rbac.authorization.kubernetes.io/autoupdate": "false"}}, "rules": []});
        assert_eq!(missing_rules(&kept, &json!({"rules": [token_rule]})), None);
        Ok(())
    }

    fn attrs(verb: &str, group: &str, resource: &str, sub: &str, ns: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
            resource_request: true,
            path: String::new(),
        }
    }

    #[test]
    fn rules_match_as_kubernetes_matches_them() {
        let r = Rule::of(&json!({"apiGroups": [""], "resources": ["pods", "*/log"], "verbs": ["get", "list"]}));
        assert!(r.allows(&attrs("get", "", "pods", "", "a", "p")));
        assert!(r.allows(&attrs("get", "", "pods", "log", "a", "p")));
        assert!(!r.allows(&attrs("get", "", "pods", "status", "a", "p")));
        assert!(!r.allows(&attrs("delete", "", "pods", "", "a", "p")));
        assert!(!r.allows(&attrs("get", "apps", "pods", "", "a", "p")));
        let named = Rule::of(&json!({"apiGroups": ["*"], "resources": ["*"], "resourceNames": ["x"], "verbs": ["*"]}));
        assert!(named.allows(&attrs("update", "apps", "deployments", "", "a", "x")));
        assert!(!named.allows(&attrs("list", "apps", "deployments", "", "a", "")));
        let urls = Rule::of(&json!({"nonResourceURLs": ["/apis/*", "/version"], "verbs": ["get"]}));
        let path = |p: &str| Attributes { resource_request: false, path: p.into(), ..attrs("get", "", "", "", "", "") };
        assert!(urls.allows(&path("/apis/apps/v1")) && urls.allows(&path("/version")));
        assert!(!urls.allows(&path("/metrics")));
    }

    #[test]
    fn builtin_roles_cover_what_kubernetes_gives_them() {
        let objects = builtin_objects();
        let rules = |name: &str| -> Vec<Rule> {
            objects
                .iter()
                .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == name)
                .map(rules_of)
                .unwrap_or_default()
        };
        let can = |role: &str, a: Attributes| rules(role).iter().any(|r| r.allows(&a));
        assert!(can("view", attrs("list", "", "pods", "", "x", "")));
        assert!(can("view", attrs("list", "", "services", "", "x", "")));
        assert!(can("view", attrs("watch", "", "endpoints", "", "x", "")));
        assert!(can("view", attrs("get", "discovery.k8s.io", "endpointslices", "", "x", "e")));
        assert!(!can("view", attrs("create", "", "services", "", "x", "")));
        assert!(can("view", attrs("get", "", "pods", "log", "x", "p")));
        assert!(can("view", attrs("watch", "kubeflow.org", "pytorchjobs", "", "x", "")));
        assert!(!can("view", attrs("create", "", "pods", "", "x", "")));
        assert!(!can("view", attrs("get", GROUP, "roles", "", "x", "")));
        assert!(can("edit", attrs("create", "kubeflow.org", "pytorchjobs", "", "x", "")));
        assert!(can("edit", attrs("delete", "", "configmaps", "", "x", "c")));
        assert!(!can("edit", attrs("create", GROUP, "rolebindings", "", "x", "")));
        assert!(can("admin", attrs("create", GROUP, "rolebindings", "", "x", "")));
        assert!(!can("admin", attrs("create", "ringleader.io", "nodes", "", "", "")));
        assert!(can("cluster-admin", attrs("create", "ringleader.io", "nodes", "", "", "")));
        assert!(!can(SCHEDULER_USER, attrs("create", GROUP, "clusterrolebindings", "", "", "")));
        assert!(can(SCHEDULER_USER, attrs("patch", "", "pods", "", "x", "p")));
    }
}
