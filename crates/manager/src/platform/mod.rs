//! The platform controller (seeds 003 and 004): Workspaces, ResourceGroups,
//! Queue quotas, Runs of TrainingJobs, StorageMounts and ScriptRuns of
//! `platform.ringleader.io/v1alpha1`, turned into the objects the job
//! controller and scheduler already act on (RoleBindings, node labels,
//! queue capabilities, framework jobs, batch Jobs).
//!
//! Each kind has a pure decision (`decide`) over JSON objects and `now`,
//! returning store writes; [`pass`] gathers their inputs from the cache and
//! writes the result. A decision writes only what differs from what is
//! stored, so the echo of its own write calls for nothing more.

pub mod check;
pub mod framework;
pub mod quota;
pub mod resource_group;
pub mod run;
pub mod script;
pub mod storage;
pub mod workspace;

use crate::cache::{str_at, Cache};
use crate::jobs;
use crate::ManagerError;
use ringleader_store::{Backend, ObjectKey, Op};
use serde_json::{json, Value};
use std::collections::HashMap;

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

/// Kinds of the platform group that own what the controller makes.
const OWNER_KINDS: &[&str] = &["Workspace", "ResourceGroup", "TrainingJob", "Run", "ScriptRun", "StorageMount"];

/// One pass of every platform reconciler, in dependency order: groups label
/// nodes before quotas read them, workspaces bind queues before runs check
/// them.
pub fn pass(store: &dyn Backend, cache: &mut Cache, now: f64) -> Result<(), ManagerError> {
    let ops = resource_group::decide(&objects(cache, API, "ResourceGroup"), &objects(cache, NODE_API, "Node"));
    jobs::write(store, cache, ops)?;
    let ops = quota::decide(
        &objects(cache, QUEUE_API, "Queue"),
        &objects(cache, API, "ResourceGroup"),
        &objects(cache, NODE_API, "Node"),
    );
    jobs::write(store, cache, ops)?;
    let bindings = objects(cache, RBAC_API, "RoleBinding");
    let ops = workspace::decide(&objects(cache, API, "Workspace"), &objects(cache, QUEUE_API, "Queue"), &bindings);
    jobs::write(store, cache, ops)?;
    let ops = storage::decide(&objects(cache, API, "StorageMount"), &objects(cache, NODE_API, "Node"));
    jobs::write(store, cache, ops)?;
    let ops = run::pass_ops(cache, now);
    jobs::write(store, cache, ops)?;
    let ops = script::pass_ops(cache, now);
    jobs::write(store, cache, ops)?;
    let ops = check::pass_ops(cache, now);
    jobs::write(store, cache, ops)
}

/// Uids of the platform objects that own others: the garbage collector
/// must not take what they made for orphans.
pub fn owner_uids(cache: &Cache) -> Vec<String> {
    OWNER_KINDS
        .iter()
        .flat_map(|k| cache.of_kind(API, k))
        .filter_map(|o| str_at(&o.object, &["metadata", "uid"]).map(str::to_string))
        .chain(check::owner_uids(cache))
        .collect()
}

/// The objects of one kind, as JSON.
pub(crate) fn objects(cache: &Cache, api: &str, kind: &str) -> Vec<Value> {
    cache.of_kind(api, kind).map(|o| o.object.clone()).collect()
}

/// `metadata.name`.
pub(crate) fn name(v: &Value) -> &str {
    str_at(v, &["metadata", "name"]).unwrap_or_default()
}

/// `metadata.namespace` (`""` for cluster-scoped objects).
pub(crate) fn namespace(v: &Value) -> &str {
    str_at(v, &["metadata", "namespace"]).unwrap_or_default()
}

/// The store key of an object.
pub(crate) fn key_of(v: &Value) -> ObjectKey {
    ObjectKey::new(
        v.get("apiVersion").and_then(Value::as_str).unwrap_or_default(),
        v.get("kind").and_then(Value::as_str).unwrap_or_default(),
        namespace(v),
        name(v),
    )
}

/// A controlling owner reference to `owner`.
pub(crate) fn owner_ref(owner: &Value) -> Value {
    json!([{
        "apiVersion": owner.get("apiVersion"),
        "kind": owner.get("kind"),
        "name": name(owner),
        "uid": str_at(owner, &["metadata", "uid"]),
        "controller": true,
    }])
}

/// A Job of one pod in [`SYSTEM_NAMESPACE`] that runs `container` once on
/// `node`, owned by `owner` (a CheckRun or ScriptRun) and labelled
/// `label: <owner's name>` so its pods are found again.
pub(crate) fn node_job(owner: &Value, job_name: String, label: &str, node: &str, container: Value) -> Value {
    let labels = json!({label: name(owner)});
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job_name, "namespace": SYSTEM_NAMESPACE, "labels": labels,
                     "ownerReferences": owner_ref(owner)},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {script::HOSTNAME_LABEL: node},
                    "containers": [container],
                },
            },
        },
    })
}

/// The Jobs in [`SYSTEM_NAMESPACE`] that `owner_uid` (a CheckRun's or a
/// ScriptRun's uid) controls, by name, and each one's newest pod, by the
/// Job's uid (a failed pod is never replaced: `backoffLimit` is 0).
pub(crate) fn node_jobs_of<'a>(
    cache: &'a crate::cache::Cache,
    owner_uid: Option<&str>,
) -> (HashMap<String, &'a Value>, HashMap<String, &'a Value>) {
    let Some(owner_uid) = owner_uid else { return (HashMap::new(), HashMap::new()) };
    let jobs: HashMap<String, &Value> = cache
        .of_kind("batch/v1", "Job")
        .filter(|j| j.key.namespace == SYSTEM_NAMESPACE && crate::pods::owner_uid(&j.object) == Some(owner_uid))
        .map(|j| (j.key.name.clone(), &j.object))
        .collect();
    let job_uids: Vec<&str> = jobs.values().filter_map(|j| str_at(j, &["metadata", "uid"])).collect();
    let mut pods: HashMap<String, &Value> = HashMap::new();
    for p in cache.of_kind("v1", "Pod").filter(|p| p.key.namespace == SYSTEM_NAMESPACE) {
        if let Some(owner) = crate::pods::owner_uid(&p.object).filter(|o| job_uids.contains(o)) {
            pods.insert(owner.to_string(), &p.object);
        }
    }
    (jobs, pods)
}

/// The last `max` bytes of a file as text, if it can be read (a pod's log:
/// only its end is kept in a status).
pub(crate) fn file_tail(path: &str, max: usize) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let from = bytes.len().saturating_sub(max);
    Some(String::from_utf8_lossy(&bytes[from..]).into_owned())
}

/// A label of an object.
pub(crate) fn label<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get("metadata")?.get("labels")?.get(key)?.as_str()
}

/// A merge patch of `status` with the fields of `wanted` that differ from
/// the object's current status, or nothing when none does.
pub(crate) fn status_op(object: &Value, wanted: Value) -> Option<Op> {
    let current = object.get("status");
    let Value::Object(fields) = wanted else { return None };
    let changed: serde_json::Map<String, Value> = fields
        .into_iter()
        .filter(|(k, v)| {
            current.and_then(|c| c.get(k)) != Some(v) && !(v.is_null() && current.and_then(|c| c.get(k)).is_none())
        })
        .collect();
    if changed.is_empty() {
        return None;
    }
    Some(Op::Patch { key: key_of(object), patch: json!({ "status": changed }), expected: None })
}

/// An object without its null fields (entries of status lists, which a
/// merge patch replaces whole: absent reads better than null).
pub(crate) fn compact(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.into_iter().filter(|(_, v)| !v.is_null()).collect()),
        other => other,
    }
}

/// A DNS-1123 label made of `prefix` and `suffix`, the prefix cut so the
/// whole fits 63 characters (names the controller derives from user names).
pub(crate) fn dns_label(prefix: &str, suffix: &str) -> String {
    let room = 63usize.saturating_sub(suffix.len());
    let mut p: String = prefix.chars().take(room).collect();
    while p.ends_with('-') {
        p.pop();
    }
    format!("{p}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_patch_carries_only_what_changed() {
        let o = json!({"apiVersion": API, "kind": "Workspace", "metadata": {"name": "w"},
                       "status": {"state": "ready", "message": ""}});
        assert!(status_op(&o, json!({"state": "ready", "message": ""})).is_none());
        match status_op(&o, json!({"state": "failed", "message": ""})) {
            Some(Op::Patch { patch, key, .. }) => {
                assert_eq!(patch, json!({"status": {"state": "failed"}}));
                assert_eq!(key, ObjectKey::new(API, "Workspace", "", "w"));
            }
            other => panic!("expected a patch, got {other:?}"),
        }
    }

    #[test]
    fn derived_names_stay_dns_labels() {
        assert_eq!(dns_label("sr", "-0"), "sr-0");
        let long = "a".repeat(70);
        let n = dns_label(&long, "-node-1");
        assert_eq!(n.len(), 63);
        assert!(n.ends_with("-node-1"));
        assert_eq!(dns_label("ab-----", "x"), "abx");
    }
}
