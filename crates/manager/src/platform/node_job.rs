//! One-pod Jobs pinned to a node in the system namespace, as CheckRuns and
//! ScriptRuns make them, and how their Jobs, pods and logs are found again.

use super::api::{HOSTNAME_LABEL, SYSTEM_NAMESPACE};
use super::object::{name, owner_ref};
use crate::cache::{str_at, Cache};
use crate::pods;
use serde_json::{json, Value};
use std::collections::HashMap;

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
                    "nodeSelector": {HOSTNAME_LABEL: node},
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
    cache: &'a Cache,
    owner_uid: Option<&str>,
) -> (HashMap<String, &'a Value>, HashMap<String, &'a Value>) {
    let Some(owner_uid) = owner_uid else { return (HashMap::new(), HashMap::new()) };
    let jobs: HashMap<String, &Value> = cache
        .of_kind("batch/v1", "Job")
        .filter(|j| j.key.namespace == SYSTEM_NAMESPACE && pods::owner_uid(&j.object) == Some(owner_uid))
        .map(|j| (j.key.name.clone(), &j.object))
        .collect();
    let job_uids: Vec<&str> = jobs.values().filter_map(|j| str_at(j, &["metadata", "uid"])).collect();
    let mut pods: HashMap<String, &Value> = HashMap::new();
    for p in cache.of_kind("v1", "Pod").filter(|p| p.key.namespace == SYSTEM_NAMESPACE) {
        if let Some(owner) = pods::owner_uid(&p.object).filter(|o| job_uids.contains(o)) {
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
