//! The MindIE Service global rank table under `up`, where ClusterD would
//! build it (seed 001): the jobs labelled `app: mindie-ms-*` that share a
//! `jobID` merge into one table, kept in a ConfigMap and rewritten whenever
//! a member pod is bound, replaced or gone. The ms_controller (and the
//! ms_coordinator when it names `GLOBAL_RANK_TABLE_FILE_PATH`) take the file
//! from that ConfigMap; the agent rewrites it in their sandboxes on every
//! change, which stands in for ClusterD's gRPC subscription.

use crate::cache::{str_at, Cache};
use crate::job_object::JobObject;
use crate::node_view::NodeView;
use crate::placement::placement_of;
use crate::pods;
use crate::writes;
use crate::ManagerError;
use ringleader_controller::placement::Placement;
use ringleader_controller::ranktable::mindie::{self, MindieMember, MindieRole};
use ringleader_store::{Backend, ObjectKey, Op, Stored};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Key of the table in its ConfigMap (the file name MindIE's examples read).
pub const KEY: &str = "global_ranktable.json";
/// Where the pods read it when their container does not say: the path of
/// MindIE's own examples (a ConfigMap mount's `..data` directory).
pub const DEFAULT_PATH: &str = "/user/serverid/devindex/config/..data/global_ranktable.json";
/// The env variable MindIE reads the path from.
pub const PATH_ENV: &str = "GLOBAL_RANK_TABLE_FILE_PATH";

/// The ConfigMap of a `jobID`: a label value may hold `_` and capitals,
/// which an object name may not.
pub fn config_map_name(job_id: &str) -> String {
    let clean: String = job_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' { c.to_ascii_lowercase() } else { '-' })
        .collect();
    format!("mindie-global-ranktable-{}", clean.trim_matches(|c: char| !c.is_ascii_alphanumeric()))
}

/// The `jobID` and role of a MindIE job.
pub fn member(job: &ringleader_api::Job) -> Option<(&str, MindieRole)> {
    Some((job.labels.get("jobID")?.as_str(), MindieRole::of(job)?))
}

/// Where a released pod of this job reads the table, when it reads it: the
/// controller always (with the default path when its container names
/// none), the coordinator when its container names a path.
pub fn pod_path(job: &ringleader_api::Job, pod: &Value) -> Option<String> {
    let (_, role) = member(job)?;
    let named = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("env").and_then(Value::as_array))
        .flatten()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(PATH_ENV))
        .and_then(|e| e.get("value").and_then(Value::as_str))
        .filter(|v| v.starts_with('/'))
        .map(str::to_string);
    match role {
        MindieRole::Controller => Some(named.unwrap_or_else(|| DEFAULT_PATH.to_string())),
        MindieRole::Coordinator => named,
        MindieRole::Server => None,
    }
}

/// Whether this job's pods read a global table not written yet: they wait
/// (the agent would fail a pod whose ConfigMap is missing).
pub fn table_missing(cache: &Cache, job: &ringleader_api::Job) -> bool {
    match member(job) {
        Some((id, role)) if role != MindieRole::Server => {
            cache.get(&ObjectKey::new("v1", "ConfigMap", &job.namespace, &config_map_name(id))).is_none()
        }
        _ => false,
    }
}

/// Points a released pod that reads the global table at its ConfigMap
/// (merged into `ringleader.io/config-files`) and sets its path variable.
pub fn release(
    job: &ringleader_api::Job,
    pod: &Value,
    annotations: &mut serde_json::Map<String, Value>,
    vars: &mut Vec<(String, String)>,
) {
    let (Some((id, _)), Some(path)) = (member(job), pod_path(job, pod)) else { return };
    let mut from: BTreeMap<String, String> = annotations
        .get(pods::CONFIG_FILES)
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    from.insert(path.clone(), format!("{}/{KEY}", config_map_name(id)));
    annotations.insert(pods::CONFIG_FILES.into(), json!(serde_json::to_string(&from).unwrap_or_default()));
    vars.push((PATH_ENV.to_string(), path));
}

/// Rewrites the global table of every `jobID` that has a live controller or
/// coordinator job, when it changed; the ConfigMap's `version` counts the
/// changes (as ClusterD numbers what it pushes to subscribers).
pub fn publish(
    store: &dyn Backend,
    cache: &mut Cache,
    all: &[JobObject],
    by_owner: &HashMap<String, Vec<Arc<Stored>>>,
    nodes: &[NodeView],
) -> Result<(), ManagerError> {
    let mut groups: BTreeMap<(&str, &str), Vec<&JobObject>> = BTreeMap::new();
    for j in all {
        if let Some((id, _)) = member(&j.state.job) {
            groups.entry((j.state.job.namespace.as_str(), id)).or_default().push(j);
        }
    }
    if groups.is_empty() {
        return Ok(());
    }
    let by_name: BTreeMap<&str, &NodeView> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let mut ops = Vec::new();
    for ((namespace, job_id), members) in groups {
        // The owner: garbage collection takes the table with its subscriber.
        let owner = members
            .iter()
            .filter(|j| !j.state.status.phase.is_finished())
            .filter_map(|j| member(&j.state.job).map(|(_, r)| (r, *j)))
            .filter(|(r, _)| *r != MindieRole::Server)
            .min_by_key(|(r, _)| *r)
            .map(|(_, j)| j);
        let Some(owner) = owner else { continue };
        let parts: Vec<(ringleader_api::Job, Vec<ringleader_controller::PodPlan>, Placement)> = members
            .iter()
            .filter(|j| !j.state.status.phase.is_finished())
            .map(|j| {
                let live = by_owner.get(j.uid()).map(Vec::as_slice).unwrap_or_default();
                let placement = Placement {
                    pods: live
                        .iter()
                        .filter_map(|p| cache.get_shared(&p.key))
                        .filter(|p| !pods::deleting(&p.object) && pods::phase_of(&p.object).is_live())
                        .filter_map(|p| {
                            let name = str_at(&p.object, &["metadata", "name"])?.to_string();
                            Some((name, placement_of(&p.object, &by_name)?))
                        })
                        .collect(),
                };
                (j.state.effective_job(), j.state.expansion().pods, placement)
            })
            .collect();
        let views: Vec<MindieMember<'_>> =
            parts.iter().map(|(job, pods, placement)| MindieMember { job, pods, placement }).collect();
        let table = mindie::global_table(job_id, &views);
        let content = serde_json::to_string(&table).map_err(|e| ManagerError::Internal(e.to_string()))?;
        let name = config_map_name(job_id);
        let key = ObjectKey::new("v1", "ConfigMap", namespace, &name);
        let existing = cache.get(&key).map(|cm| cm.object.clone());
        let current = existing.as_ref().and_then(|cm| str_at(cm, &["data", KEY]));
        if current == Some(content.as_str()) {
            continue;
        }
        let version = existing
            .as_ref()
            .and_then(|cm| str_at(cm, &["data", "version"]))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(1, |v| v + 1);
        let o = &owner.stored.object;
        ops.push(Op::Apply(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"jobID": job_id, "app": "mindie-global-ranktable"},
                "ownerReferences": [{
                    "apiVersion": o.get("apiVersion"),
                    "kind": o.get("kind"),
                    "name": str_at(o, &["metadata", "name"]),
                    "uid": str_at(o, &["metadata", "uid"]),
                    "controller": true,
                }],
            },
            "data": {KEY: content, "version": version.to_string()},
        })));
    }
    writes::write(store, cache, ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_map_names_are_object_names() {
        assert_eq!(config_map_name("mindie-ms-test"), "mindie-global-ranktable-mindie-ms-test");
        assert_eq!(config_map_name("My_Job.1_"), "mindie-global-ranktable-my-job.1");
    }
}
