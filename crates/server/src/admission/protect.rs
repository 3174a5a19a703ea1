//! Checks on the object a write would leave, by who writes it (the URL
//! alone, which [`crate::authz`] decides on, does not say what changes):
//!
//! - **Protected fields** ([`ringleader_api::protected`], one list for every
//!   path): a Pod's `spec.nodeName` and binding annotations
//!   (`BINDING_ANNOTATIONS` there, any `huawei.com/Ascend…`) only
//!   [`SCHEDULER_USER`] may set or change; the agent's own annotations
//!   (`ringleader.io/pid`, `…/log-path`, the usage samples) only the agent of
//!   the pod's node (or the scheduler). Anyone else, the admin included, gets
//!   403 naming the field: a pod created already bound would run on devices
//!   the scheduler gave another. In the pod templates of any other kind (a
//!   map whose `spec` has `containers`, found by walking the object, so every
//!   workload kind served is covered) none of them may be set at all, by
//!   anyone: the pods made of the template would carry them. Every write
//!   path (create, update, each patch type, apply, bulk apply) comes here.
//! - **Agents write status**: a node identity's writes of Pods and Nodes
//!   may change `status` (and on pods the agent's own annotations), nothing
//!   else; the Node it creates must be its own.
//! - **RBAC objects** are well-formed (rules with verbs, a `roleRef` to a
//!   Role or ClusterRole, subjects of a known kind), a binding's `roleRef`
//!   cannot change, and nobody grants what they do not hold: a role's rules
//!   must all be allowed to the writer (or they hold `escalate`), a
//!   binding's role likewise (or they hold `bind` on it), as Kubernetes'
//!   escalation check.
//! - **Workspaces**: their resource group and queues change only by whom
//!   may create workspaces ([`super::workspace_fields`]).

use super::refusal::{invalid, refuse};
use crate::authz::{self, Attributes};
use crate::ServerState;
use axum::http::StatusCode;
use ringleader_auth::identity::{Identity, MASTERS_GROUP, NODE_USER_PREFIX, SCHEDULER_USER};
use ringleader_auth::rbac::{self, Rule};
use ringleader_registry::resources::{ResourceType, NODES, PODS};
use ringleader_registry::status::ApiError;
use ringleader_store::ObjectKey;
use serde_json::Value;

use ringleader_api::protected::{annotation_owner, binds, Owner, AGENT_ANNOTATIONS, NODE_NAME};

/// What the object was before the write.
pub(crate) enum Before<'a> {
    /// A create: nothing.
    Absent,
    /// Known to the caller (`None`: it does not exist).
    Known(Option<&'a Value>),
    /// To be read from the store (a replace or an apply).
    Lookup,
}

fn annotations(object: Option<&Value>) -> serde_json::Map<String, Value> {
    object.and_then(|o| o.pointer("/metadata/annotations")).and_then(Value::as_object).cloned().unwrap_or_default()
}

/// The protected fields of a pod that `after` sets or changes relative to
/// `before`, with who owns each.
pub(crate) fn protected_changes(before: Option<&Value>, after: &Value) -> Vec<(String, Owner)> {
    let mut fields = Vec::new();
    let node = |o: Option<&Value>| o.and_then(|o| o.pointer("/spec/nodeName")).filter(|v| binds(Some(v))).cloned();
    if node(before) != node(Some(after)) {
        fields.push((format!("spec.{NODE_NAME}"), Owner::Scheduler));
    }
    let (was, now) = (annotations(before), annotations(Some(after)));
    let mut keys: Vec<&String> = was.keys().chain(now.keys()).filter(|k| annotation_owner(k).is_some()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        if let (true, Some(owner)) = (was.get(k) != now.get(k), annotation_owner(k)) {
            fields.push((ringleader_api::path::key("metadata.annotations", k), owner));
        }
    }
    fields
}

/// How deep the walk for pod templates goes (a job's sit at depth 4 or 5).
const MAX_TEMPLATE_DEPTH: usize = 16;

/// The protected fields set in the pod templates anywhere in an object of
/// any kind but Pod (a template is a map whose `spec` has `containers`; a
/// bare pod spec counts too): whatever a template says, the pods made of it
/// would carry, so nobody may put them there.
pub(crate) fn template_fields(object: &Value) -> Vec<(String, Owner)> {
    fn walk(value: &Value, field: &str, depth: usize, out: &mut Vec<(String, Owner)>) {
        if depth > MAX_TEMPLATE_DEPTH {
            return;
        }
        match value {
            Value::Object(map) => {
                if map.get("containers").is_some_and(Value::is_array) && binds(map.get(NODE_NAME)) {
                    out.push((ringleader_api::path::key(field, NODE_NAME), Owner::Scheduler));
                }
                if map.get("spec").and_then(|s| s.get("containers")).is_some_and(Value::is_array) {
                    let at = ringleader_api::path::key(&ringleader_api::path::key(field, "metadata"), "annotations");
                    for k in annotations(Some(value)).keys() {
                        if let Some(owner) = annotation_owner(k) {
                            out.push((ringleader_api::path::key(&at, k), owner));
                        }
                    }
                }
                for (k, v) in map {
                    if depth == 0 && (k == "metadata" || k == "status") {
                        continue;
                    }
                    walk(v, &ringleader_api::path::key(field, k), depth + 1, out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, &ringleader_api::path::index(field, i), depth + 1, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(object, "", 0, &mut out);
    out
}

/// What an agent registers of its Node's spec (its hardware, address and
/// place in the network, as a kubelet registers capacity and labels); the
/// admin's switches (`stopped`, `injectedFaults`) stay out of its reach.
const AGENT_NODE_SPEC: &[&str] = &["profile", "topologyText", "npuSmiText", "network", "address"];

/// Everything of an object but what a node agent may write.
fn beyond_status(rt: &ResourceType, object: Option<&Value>) -> Value {
    let mut o = object.cloned().unwrap_or(Value::Null);
    if let Some(map) = o.as_object_mut() {
        map.remove("status");
        if rt == NODES {
            if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
                for f in AGENT_NODE_SPEC {
                    spec.remove(*f);
                }
            }
            if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("labels");
            }
        }
        if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for f in ["resourceVersion", "generation", "managedFields", "uid", "creationTimestamp"] {
                meta.remove(f);
            }
            if rt == PODS {
                if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
                    for k in AGENT_ANNOTATIONS {
                        ann.remove(*k);
                    }
                    if ann.is_empty() {
                        meta.remove("annotations");
                    }
                }
            }
        }
    }
    o
}

/// 403 naming each protected field and who may set it (`context` says why
/// nobody here may).
fn refuse_fields(
    id: &Identity,
    verb: &str,
    rt: &ResourceType,
    object: &Value,
    fields: &[(String, Owner)],
    context: &str,
) -> ApiError {
    let names: Vec<String> = fields.iter().map(|(f, _)| f.clone()).collect();
    let mut owners: Vec<Owner> = fields.iter().map(|(_, o)| *o).collect();
    owners.dedup();
    let who: Vec<String> = owners.iter().map(|o| owner_text(*o)).collect();
    let why = format!("{context}{}", who.join("; "));
    let mut e = refuse(id, verb, rt, object, &names, &why);
    for (cause, (_, owner)) in e.causes.iter_mut().zip(fields) {
        cause.message = format!("{context}{}", owner_text(*owner));
    }
    e
}

fn owner_text(owner: Owner) -> String {
    match owner {
        Owner::Scheduler => format!("{} ({SCHEDULER_USER})", owner.described()),
        Owner::Agent => format!("{} ({NODE_USER_PREFIX}<node>)", owner.described()),
    }
}

/// A pod's scheduler-owned fields are the scheduler's; its agent-owned
/// annotations the agent's of the node it is bound to (or the scheduler's,
/// which clears them when it evicts).
fn pod_fields(
    id: &Identity,
    verb: &str,
    rt: &ResourceType,
    before: Option<&Value>,
    after: &Value,
) -> Result<(), ApiError> {
    let bound_to = before.unwrap_or(after).pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty());
    let owning_agent = id.node_name().is_some_and(|n| Some(n) == bound_to);
    let refused: Vec<(String, Owner)> = protected_changes(before, after)
        .into_iter()
        .filter(|(_, owner)| match owner {
            Owner::Scheduler => !id.is_scheduler(),
            Owner::Agent => !(id.is_scheduler() || owning_agent),
        })
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    Err(refuse_fields(id, verb, rt, after, &refused, ""))
}

/// Runs every check of this module on a write of `after` by `id`
/// (`verb`: create, update or patch).
pub(crate) async fn admit(
    state: &ServerState,
    id: Option<&Identity>,
    verb: &str,
    rt: &ResourceType,
    after: &Value,
    before: Before<'_>,
) -> Result<(), ApiError> {
    let anonymous = Identity::new("system:anonymous", Vec::<String>::new());
    let id = id.unwrap_or(&anonymous);
    if rt != PODS {
        // Whatever a template says, the pods made of it carry: nobody, the
        // admin included, may put a protected field there.
        let fields = template_fields(after);
        if !fields.is_empty() {
            return Err(refuse_fields(id, verb, rt, after, &fields, "pod templates may not set it: "));
        }
    }
    let training_job = rt.group == "platform.ringleader.io" && rt.kind == "TrainingJob";
    let workspace = rt.group == "platform.ringleader.io" && rt.kind == "Workspace";
    let concerned = rt == PODS
        || rt == NODES
        || rt.group == rbac::GROUP
        || training_job
        || rt == ringleader_registry::resources::RESOURCE_GROUPS
        || workspace
        || super::platform_nodes::concerned(rt);
    if !concerned {
        return Ok(());
    }
    let fetched;
    let before = match before {
        Before::Absent => None,
        Before::Known(b) => b,
        Before::Lookup => {
            let key = ObjectKey::of(after).map_err(ApiError::from)?;
            fetched = state.blocking(move |s| s.get(&key)).await?;
            fetched.as_ref().map(|s| &s.object)
        }
    };
    if rt == PODS {
        pod_fields(id, verb, rt, before, after)?;
    }
    if let Some(node) = id.node_name() {
        if rt == NODES && before.is_none() {
            let name = after.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            if name != node {
                return Err(refuse(id, verb, rt, after, &[], &format!("node {node:?} may create only its own Node")));
            }
        } else if (rt == PODS || rt == NODES) && beyond_status(rt, before) != beyond_status(rt, Some(after)) {
            let why = format!("node {node:?} may write only the status of pods bound to it, and of its Node the status, labels and registered hardware");
            return Err(refuse(id, verb, rt, after, &[], &why));
        }
    }
    if rt.group == rbac::GROUP {
        rbac_object(state, id, verb, rt, after, before).await?;
    }
    super::platform_nodes::admit(state, rt, after, before).await?;
    if workspace {
        super::workspace_fields::admit(state, id, verb, rt, after, before).await?;
    }
    if rt == ringleader_registry::resources::RESOURCE_GROUPS && before.is_none() {
        resource_group_quota(state, rt, after).await?;
    }
    if training_job {
        super::vip::admit(state, rt, after, before).await?;
        // Seed 004: a training job's every field may be edited but its name
        // and framework (its runs were made of that framework); clone it to change it.
        let framework = |o: &Value| o.pointer("/spec/framework").cloned().unwrap_or(Value::Null);
        if let Some(before) = before.filter(|b| framework(b) != framework(after)) {
            let why = format!(
                "Invalid value: {}: field is immutable (was {}); clone the job under a new name to change it",
                framework(after),
                framework(before)
            );
            return invalid(rt, after, vec![("spec.framework".into(), why)]);
        }
    }
    Ok(())
}

/// Resource groups a cluster may hold (spec/platform.md: "10 groups per
/// tenant by default"; a ringleader cluster is one tenant).
pub const RESOURCE_GROUP_QUOTA: usize = 10;

/// Refuses a new ResourceGroup beyond [`RESOURCE_GROUP_QUOTA`], worded as
/// kube-apiserver's ResourceQuota admission.
async fn resource_group_quota(state: &ServerState, rt: &ResourceType, object: &Value) -> Result<(), ApiError> {
    let selector = ringleader_store::Selector::kind(rt.api_version, rt.kind);
    let (groups, _) = state.blocking(move |s| s.list(&selector)).await?;
    if groups.len() < RESOURCE_GROUP_QUOTA {
        return Ok(());
    }
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let message = format!(
        "resourcegroups.{} {name:?} is forbidden: exceeded quota: requested: count/resourcegroups=1, used: count/resourcegroups={}, limited: count/resourcegroups={RESOURCE_GROUP_QUOTA}; delete an empty resource group first",
        rt.group,
        groups.len()
    );
    Err(ApiError::new(StatusCode::FORBIDDEN, "Forbidden", message))
}

/// One document of a bulk apply: authorized as the create or patch it
/// amounts to (the middleware lets the bulk path through), then [`admit`].
pub(crate) async fn admit_applied(
    state: &ServerState,
    id: Option<&Identity>,
    rt: &ResourceType,
    object: &Value,
) -> Result<(), ApiError> {
    let Some(id) = id else {
        return Err(ApiError::unauthorized("no identity"));
    };
    let key = ObjectKey::of(object).map_err(ApiError::from)?;
    let existing = state.blocking(move |s| s.get(&key)).await?;
    let verb = if existing.is_some() { "patch" } else { "create" };
    authz::authorize_write(state, id, verb, rt, object).await?;
    admit(state, Some(id), verb, rt, object, Before::Known(existing.as_ref().map(|e| &e.object))).await
}

/// The shape errors of an RBAC object, as `(field, message)`.
fn rbac_errors(rt: &ResourceType, object: &Value) -> Vec<(String, String)> {
    let mut errs = Vec::new();
    let strings_ok = |v: Option<&Value>| v.is_none_or(|v| v.as_array().is_some_and(|a| a.iter().all(Value::is_string)));
    if rt.kind.ends_with("Role") {
        let rules = object.get("rules");
        if !rules.is_none_or(|r| r.is_array() || r.is_null()) {
            errs.push(("rules".into(), "must be a list".into()));
        }
        for (i, r) in rules.and_then(Value::as_array).into_iter().flatten().enumerate() {
            for f in ["verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"] {
                if !strings_ok(r.get(f)) {
                    errs.push((format!("rules[{i}].{f}"), "must be a list of strings".into()));
                }
            }
            let rule = Rule::of(r);
            if rule.verbs.is_empty() {
                errs.push((
                    format!("rules[{i}].verbs"),
                    "Required value: verbs must contain at least one value".into(),
                ));
            }
            let resource = !rule.resources.is_empty() || !rule.api_groups.is_empty();
            if rule.non_resource_urls.is_empty() && !resource {
                errs.push((
                    format!("rules[{i}].resources"),
                    "Required value: resource rules must supply at least one api group and resource".into(),
                ));
            }
            if !rule.non_resource_urls.is_empty() && (resource || rt.kind == "Role") {
                errs.push((
                    format!("rules[{i}].nonResourceURLs"),
                    "only a ClusterRole may have them, and not in a rule with resources".into(),
                ));
            }
        }
        return errs;
    }
    let (kind, name) = rbac::role_ref(object);
    if !(kind == "ClusterRole" || (kind == "Role" && rt.kind == "RoleBinding")) {
        let allowed = if rt.kind == "RoleBinding" { "Role or ClusterRole" } else { "ClusterRole" };
        errs.push(("roleRef.kind".into(), format!("Unsupported value: {kind:?}: supported values: {allowed}")));
    }
    if name.is_empty() {
        errs.push(("roleRef.name".into(), "Required value".into()));
    }
    let group = object.pointer("/roleRef/apiGroup").and_then(Value::as_str).unwrap_or(rbac::GROUP);
    if group != rbac::GROUP {
        errs.push((
            "roleRef.apiGroup".into(),
            format!("Unsupported value: {group:?}: supported values: {:?}", rbac::GROUP),
        ));
    }
    let subjects = object.get("subjects");
    if !subjects.is_none_or(|s| s.is_array() || s.is_null()) {
        errs.push(("subjects".into(), "must be a list".into()));
    }
    for (i, s) in subjects.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let kind = s.get("kind").and_then(Value::as_str).unwrap_or_default();
        if !matches!(kind, "User" | "Group" | "ServiceAccount") {
            errs.push((
                format!("subjects[{i}].kind"),
                format!("Unsupported value: {kind:?}: supported values: \"User\", \"Group\", \"ServiceAccount\""),
            ));
        }
        if s.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
            errs.push((format!("subjects[{i}].name"), "Required value".into()));
        }
    }
    errs
}

/// Every (verb, group, resource, name) or (verb, URL) a rule grants, as
/// attributes to authorize; `*` stays literal, so only a holder of `*` covers it.
fn expand(rule: &Rule, namespace: &str) -> Vec<Attributes> {
    let mut out = Vec::new();
    for verb in &rule.verbs {
        for url in &rule.non_resource_urls {
            out.push(Attributes { verb: verb.clone(), path: url.clone(), ..Attributes::default() });
        }
        let names: Vec<String> =
            if rule.resource_names.is_empty() { vec![String::new()] } else { rule.resource_names.clone() };
        for group in &rule.api_groups {
            for resource in &rule.resources {
                let (resource, sub) = resource.split_once('/').unwrap_or((resource, ""));
                for name in &names {
                    out.push(Attributes {
                        verb: verb.clone(),
                        api_group: group.clone(),
                        resource: resource.to_string(),
                        subresource: sub.to_string(),
                        namespace: namespace.to_string(),
                        name: name.clone(),
                        resource_request: true,
                        path: String::new(),
                    });
                }
            }
        }
    }
    out
}

/// The first grant of `rules` that `id` does not hold in `namespace`.
async fn first_not_held(
    state: &ServerState,
    id: &Identity,
    rules: &[Rule],
    namespace: &str,
) -> Result<Option<Attributes>, ApiError> {
    for rule in rules {
        for a in expand(rule, namespace) {
            if !authz::decide(state, id, &a).await?.allowed {
                return Ok(Some(a));
            }
        }
    }
    Ok(None)
}

fn describe(a: &Attributes) -> String {
    if !a.resource_request {
        return format!("{} {}", a.verb, a.path);
    }
    let resource =
        if a.subresource.is_empty() { a.resource.clone() } else { format!("{}/{}", a.resource, a.subresource) };
    let name = if a.name.is_empty() { String::new() } else { format!(" {:?}", a.name) };
    format!("{} {resource}{name} in API group {:?}", a.verb, a.api_group)
}

async fn rbac_object(
    state: &ServerState,
    id: &Identity,
    verb: &str,
    rt: &ResourceType,
    after: &Value,
    before: Option<&Value>,
) -> Result<(), ApiError> {
    invalid(rt, after, rbac_errors(rt, after))?;
    let is_binding = rt.kind.ends_with("Binding");
    if let (true, Some(before)) = (is_binding, before) {
        if rbac::role_ref(before) != rbac::role_ref(after) {
            return invalid(rt, after, vec![("roleRef".into(), "Invalid value: cannot change roleRef".into())]);
        }
    }
    if id.in_group(MASTERS_GROUP) {
        return Ok(());
    }
    let namespace = after.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default().to_string();
    let name = after.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    let on = |verb: &str, resource: &str, name: &str| Attributes {
        verb: verb.into(),
        api_group: rbac::GROUP.into(),
        resource: resource.into(),
        namespace: namespace.clone(),
        name: name.into(),
        resource_request: true,
        ..Attributes::default()
    };
    let (rules, waiver) = if is_binding {
        let (kind, role) = rbac::role_ref(after);
        let (kind, role) = (kind.to_string(), role.to_string());
        let key = match kind.as_str() {
            "Role" => ObjectKey::new(rbac::API_VERSION, "Role", &namespace, &role),
            _ => ObjectKey::new(rbac::API_VERSION, "ClusterRole", "", &role),
        };
        let rules = state.blocking(move |s| s.get(&key)).await?.map(|r| rbac::rules_of(&r.object)).unwrap_or_default();
        let plural = if kind == "Role" { "roles" } else { "clusterroles" };
        (rules, on("bind", plural, &role))
    } else {
        (rbac::rules_of(after), on("escalate", rt.plural, &name))
    };
    if authz::decide(state, id, &waiver).await?.allowed {
        return Ok(());
    }
    if let Some(missing) = first_not_held(state, id, &rules, &namespace).await? {
        let why = format!(
            "user {:?} is attempting to grant RBAC permissions not currently held ({})",
            id.user,
            describe(&missing)
        );
        return Err(refuse(id, verb, rt, after, &[], &why));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The scheduler-only fields `after` sets or changes relative to `before`.
    fn binding_changes(before: Option<&Value>, after: &Value) -> Vec<String> {
        protected_changes(before, after).into_iter().filter(|(_, o)| *o == Owner::Scheduler).map(|(f, _)| f).collect()
    }

    #[test]
    fn binding_fields_are_found_whether_set_or_changed() {
        let unbound = json!({"metadata": {"annotations": {"a": "1"}}, "spec": {}});
        let bound = json!({"metadata": {"annotations": {"ringleader.io/devices": "0", "huawei.com/Ascend910": "Ascend910-0"}},
            "spec": {"nodeName": "n1"}});
        assert_eq!(
            binding_changes(None, &bound),
            vec![
                "spec.nodeName".to_string(),
                "metadata.annotations[\"huawei.com/Ascend910\"]".into(),
                "metadata.annotations[\"ringleader.io/devices\"]".into()
            ]
        );
        assert!(binding_changes(Some(&bound), &bound).is_empty());
        assert!(binding_changes(None, &unbound).is_empty());
        let mut relabelled = bound.clone();
        relabelled["metadata"]["labels"] = json!({"x": "y"});
        assert!(binding_changes(Some(&bound), &relabelled).is_empty());
        let mut moved = bound.clone();
        moved["metadata"]["annotations"]["ringleader.io/devices"] = json!("1");
        assert_eq!(binding_changes(Some(&bound), &moved), vec!["metadata.annotations[\"ringleader.io/devices\"]"]);
    }

    #[test]
    fn the_one_list_holds_what_scheduler_and_agent_write() {
        use ringleader_scheduler::place::{handshake, GPU_MILLI, PREDICATE_TIME, VISIBLE_DEVICES};
        let scheduler = [
            ringleader_observability::metrics::DEVICES_ANNOTATION,
            PREDICATE_TIME,
            VISIBLE_DEVICES,
            GPU_MILLI,
            handshake::ACK_MEM_IDX,
            handshake::HAMI_TO_ALLOCATE,
            handshake::HAMI_ALLOCATED,
            handshake::ASCEND_910_CONFIGURATION,
        ];
        for key in scheduler {
            assert_eq!(annotation_owner(key), Some(Owner::Scheduler), "{key}");
        }
        for key in ringleader_observability::resource_metrics::USAGE_ANNOTATIONS
            .iter()
            .chain(&[crate::logs::LOG_PATH_ANNOTATION])
        {
            assert_eq!(annotation_owner(key), Some(Owner::Agent), "{key}");
        }
    }

    #[test]
    fn protected_fields_are_found_in_templates_anywhere() {
        let job = json!({"metadata": {"annotations": {"ringleader.io/devices": "0"}},
            "spec": {"template": {"metadata": {"annotations": {"ringleader.io/pid": "1", "mine": "x"}},
                                  "spec": {"nodeName": "n1", "containers": []}}}});
        let found: Vec<String> = template_fields(&job).into_iter().map(|(f, _)| f).collect();
        assert_eq!(found, ["spec.template.metadata.annotations[\"ringleader.io/pid\"]", "spec.template.spec.nodeName"]);
        let vcjob = json!({"spec": {"tasks": [{"template": {"spec": {"containers": []}}},
            {"template": {"metadata": {"annotations": {"huawei.com/Ascend910": "Ascend910-0"}}, "spec": {"nodeName": "", "containers": []}}}]}});
        let found: Vec<(String, Owner)> = template_fields(&vcjob);
        assert_eq!(
            found,
            [("spec.tasks[1].template.metadata.annotations[\"huawei.com/Ascend910\"]".to_string(), Owner::Scheduler)]
        );
        // A PodTemplate's template sits at the top level.
        let pod_template = json!({"template": {"spec": {"nodeName": "n1", "containers": []}}});
        assert_eq!(template_fields(&pod_template).len(), 1);
        let plain = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}});
        assert!(template_fields(&plain).is_empty());
    }

    #[test]
    fn agent_annotations_are_owned_by_the_agent() {
        let pod = json!({"metadata": {"annotations": {}}, "spec": {"nodeName": "n1"}});
        let mut started = pod.clone();
        started["metadata"]["annotations"]["ringleader.io/pid"] = json!("42");
        assert_eq!(
            protected_changes(Some(&pod), &started),
            [("metadata.annotations[\"ringleader.io/pid\"]".to_string(), Owner::Agent)]
        );
        assert!(binding_changes(Some(&pod), &started).is_empty());
    }

    #[test]
    fn rbac_shapes_are_checked() -> Result<(), String> {
        let roles = ringleader_registry::resources::find("roles").copied();
        let bindings = ringleader_registry::resources::find("rolebindings").copied();
        let (Some(roles), Some(bindings)) = (roles, bindings) else { return Err("rbac rows missing".into()) };
        let bad = json!({"rules": [{"apiGroups": [""], "resources": ["pods"]}, {"verbs": ["get"]}]});
        let errs = rbac_errors(&roles, &bad);
        assert!(errs.iter().any(|(f, _)| f == "rules[0].verbs"), "{errs:?}");
        assert!(errs.iter().any(|(f, _)| f == "rules[1].resources"), "{errs:?}");
        let bad = json!({"roleRef": {"kind": "Widget", "name": "x"}, "subjects": [{"kind": "Robot", "name": "r"}]});
        let errs = rbac_errors(&bindings, &bad);
        assert!(errs.iter().any(|(f, _)| f == "roleRef.kind") && errs.iter().any(|(f, _)| f == "subjects[0].kind"));
        let good = json!({"roleRef": {"apiGroup": rbac::GROUP, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}]});
        assert!(rbac_errors(&bindings, &good).is_empty());
        Ok(())
    }
}
