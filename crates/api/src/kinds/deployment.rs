//! Deployments as kube-controller-manager's deployment controller keeps
//! them: the `pod-template-hash` of a template, the revision each of its
//! ReplicaSets carries, the ReplicaSet of a revision, and the Deployment's
//! `status` (counters and the `Available` / `Progressing` conditions) as a
//! function of its pods and of the time. The manager writes what these
//! return (`crates/manager/src/deployments.rs`); `kubectl rollout` reads it.

use crate::time::{parse_rfc3339, rfc3339};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::{json, Value};

/// `apiVersion` of Deployments and ReplicaSets.
pub const API_VERSION: &str = "apps/v1";
/// `kind` of a Deployment.
pub const KIND: &str = "Deployment";
/// `kind` of a ReplicaSet.
pub const REPLICA_SET: &str = "ReplicaSet";
/// Label on a ReplicaSet, in its selector and on its pods: the template's hash.
pub const TEMPLATE_HASH: &str = "pod-template-hash";
/// Annotation: the revision of a ReplicaSet, and the Deployment's current one.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// Annotation on a ReplicaSet: the Deployment's `spec.replicas`.
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
/// Annotation on a ReplicaSet: `spec.replicas` plus the surge allowed.
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// `revisionHistoryLimit` when unset.
pub const DEFAULT_HISTORY_LIMIT: usize = 10;
/// `progressDeadlineSeconds` when unset.
pub const DEFAULT_PROGRESS_DEADLINE: u64 = 600;

/// `rand.SafeEncodeString`'s alphabet: no vowels, no look-alikes, so a
/// hash never spells a word and is always a valid label value.
const SAFE: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// 32-bit FNV-1a, the hash Kubernetes' `ComputeHash` uses.
fn fnv32a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193))
}

/// The `pod-template-hash` of a template: FNV-1a over its canonical JSON,
/// its decimal digits spelled in [`SAFE`] as Kubernetes spells them. Not
/// bit-identical to Kubernetes' (which hashes Go's dump of the struct), but
/// stable for the same template: the typed struct serialises its fields in
/// one order and its maps sorted.
pub fn template_hash(template: &PodTemplateSpec) -> String {
    let text = serde_json::to_string(template).unwrap_or_default();
    fnv32a(text.as_bytes()).to_string().bytes().map(|d| SAFE[usize::from(d) % SAFE.len()] as char).collect()
}

/// The revision annotation of an object (0 when it has none or it is not a number).
pub fn revision_of(object: &Value) -> u64 {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(REVISION))
        .and_then(Value::as_str)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// The revision the ReplicaSet of the current template carries: its own
/// while it is the newest, else one past the newest of the others (a
/// template rolled back to gets a new revision, as upstream).
pub fn next_revision(current: Option<u64>, others: &[u64]) -> u64 {
    let newest = others.iter().copied().max().unwrap_or(0);
    match current {
        Some(r) if r > newest => r,
        _ => newest + 1,
    }
}

/// An old ReplicaSet as the history limit judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OldSet {
    /// Its name.
    pub name: String,
    /// Its revision.
    pub revision: u64,
    /// Pods it still has.
    pub pods: u64,
}

/// The old ReplicaSets beyond `limit`, oldest first: only those with no
/// pod left go, as upstream's cleanup spares a set still scaling down.
pub fn beyond_history(old: &[OldSet], limit: usize) -> Vec<String> {
    let mut sorted: Vec<&OldSet> = old.iter().collect();
    sorted.sort_by_key(|s| s.revision);
    let excess = sorted.len().saturating_sub(limit);
    sorted.into_iter().take(excess).filter(|s| s.pods == 0).map(|s| s.name.clone()).collect()
}

/// An int-or-percent of `total`, rounded up or down.
fn scaled(v: Option<&Value>, total: u64, default_percent: u64, up: bool) -> u64 {
    let percent = |p: u64| if up { (total * p).div_ceil(100) } else { total * p / 100 };
    match v {
        Some(Value::Number(n)) => n.as_u64().unwrap_or(0),
        Some(Value::String(s)) => match s.strip_suffix('%') {
            Some(p) => p.parse().map(percent).unwrap_or(0),
            None => s.parse().unwrap_or(0),
        },
        _ => percent(default_percent),
    }
}

/// `spec.replicas` (default 1).
pub fn replicas(deployment: &Value) -> u64 {
    deployment.pointer("/spec/replicas").and_then(Value::as_u64).unwrap_or(1)
}

/// Whether the strategy is a rolling update (the default).
fn rolling(deployment: &Value) -> bool {
    deployment.pointer("/spec/strategy/type").and_then(Value::as_str).is_none_or(|t| t == "RollingUpdate")
}

/// Pods that may be unavailable with the Deployment still `Available`:
/// `maxUnavailable` (default 25%, rounded down); none for `Recreate`.
pub fn max_unavailable(deployment: &Value) -> u64 {
    let n = replicas(deployment);
    if !rolling(deployment) || n == 0 {
        return 0;
    }
    scaled(deployment.pointer("/spec/strategy/rollingUpdate/maxUnavailable"), n, 25, false).min(n)
}

/// `spec.replicas` plus `maxSurge` (default 25%, rounded up): the
/// `max-replicas` annotation.
pub fn max_replicas(deployment: &Value) -> u64 {
    let n = replicas(deployment);
    let surge = if rolling(deployment) {
        scaled(deployment.pointer("/spec/strategy/rollingUpdate/maxSurge"), n, 25, true)
    } else {
        0
    };
    n + surge
}

/// Pods counted the ways a Deployment's and a ReplicaSet's status count them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Pods not finished and not being deleted.
    pub replicas: u64,
    /// Of those, pods of the current template.
    pub updated: u64,
    /// Of those, pods Ready.
    pub ready: u64,
    /// Of those, pods Ready for `minReadySeconds`.
    pub available: u64,
}

/// When a pod became Ready, if it is.
fn ready_since(pod: &Value) -> Option<f64> {
    if pod.pointer("/status/phase").and_then(Value::as_str) != Some("Running") {
        return None;
    }
    let conditions = pod.pointer("/status/conditions").and_then(Value::as_array);
    let ready = conditions.into_iter().flatten().find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
    match ready {
        // A pod a process runtime runs may have no Ready condition: running is ready.
        None => Some(0.0),
        Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => {
            Some(c.get("lastTransitionTime").and_then(Value::as_str).and_then(parse_rfc3339).unwrap_or(0.0))
        }
        Some(_) => None,
    }
}

/// Whether a pod counts at all: not finished, not being deleted.
pub fn active(pod: &Value) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    let deleting = pod.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    !deleting && !matches!(phase, Some("Succeeded" | "Failed"))
}

/// The template hash label of a pod or ReplicaSet.
pub fn hash_of(object: &Value) -> Option<&str> {
    object.pointer("/metadata/labels").and_then(|l| l.get(TEMPLATE_HASH)).and_then(Value::as_str)
}

/// Counts `pods` at `now`: those of template `current` are the updated
/// ones; a pod is available once Ready for `min_ready_seconds`.
pub fn count(pods: &[&Value], current: &str, min_ready_seconds: u64, now: f64) -> Counts {
    let mut c = Counts::default();
    for p in pods.iter().filter(|p| active(p)) {
        c.replicas += 1;
        c.updated += u64::from(hash_of(p) == Some(current));
        if let Some(since) = ready_since(p) {
            c.ready += 1;
            c.available += u64::from(now - since >= min_ready_seconds as f64);
        }
    }
    c
}

/// How this pass came to the ReplicaSet of the current template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewSet {
    /// It was created now.
    Created,
    /// It existed as an old revision and is the new one again (a rollback).
    Found,
    /// It was already the newest.
    Kept,
}

/// What the status of one Deployment is worked out from.
#[derive(Debug, Clone)]
pub struct Rollout<'a> {
    /// The Deployment object as stored.
    pub deployment: &'a Value,
    /// Name of the ReplicaSet of the current template.
    pub new_set: &'a str,
    /// How this pass came to it.
    pub how: NewSet,
    /// Its pods, counted.
    pub counts: Counts,
    /// Now (Unix seconds).
    pub now: f64,
}

fn condition(kind: &str, status: &str, reason: &str, message: String) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": message})
}

/// `conditions` with `next` in place of the one of its type; the times
/// are kept while status, reason and message stay (so an unchanged status
/// is no write), `lastTransitionTime` while the status stays.
fn set_condition(conditions: &mut Vec<Value>, mut next: Value, now: f64, touch: bool) {
    let kind = next.get("type").cloned();
    let stamp = json!(rfc3339(now));
    let old = conditions.iter().position(|c| c.get("type") == kind.as_ref());
    let same = |c: &Value, f: &str| c.get(f) == next.get(f);
    match old.map(|i| conditions[i].clone()) {
        Some(c) if same(&c, "status") && same(&c, "reason") && same(&c, "message") && !touch => {
            next["lastUpdateTime"] = c.get("lastUpdateTime").cloned().unwrap_or(stamp.clone());
            next["lastTransitionTime"] = c.get("lastTransitionTime").cloned().unwrap_or(stamp);
        }
        Some(c) if same(&c, "status") => {
            next["lastUpdateTime"] = stamp.clone();
            next["lastTransitionTime"] = c.get("lastTransitionTime").cloned().unwrap_or(stamp);
        }
        _ => {
            next["lastUpdateTime"] = stamp.clone();
            next["lastTransitionTime"] = stamp;
        }
    }
    match old {
        Some(i) => conditions[i] = next,
        None => conditions.push(next),
    }
}

/// The Deployment's `status` as kube-controller-manager writes it:
/// counters, `observedGeneration`, and the conditions `Available`
/// (MinimumReplicasAvailable / MinimumReplicasUnavailable) and
/// `Progressing` (NewReplicaSetCreated, FoundNewReplicaSet,
/// ReplicaSetUpdated, NewReplicaSetAvailable, ProgressDeadlineExceeded once
/// `progressDeadlineSeconds` passed without progress, DeploymentPaused).
pub fn status(r: &Rollout<'_>) -> Value {
    let d = r.deployment;
    let want = replicas(d);
    let c = r.counts;
    let old = d.get("status").cloned().unwrap_or(Value::Null);
    let was = |f: &str| old.get(f).and_then(Value::as_u64).unwrap_or(0);
    let mut conditions: Vec<Value> = old.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let available = c.available >= want.saturating_sub(max_unavailable(d));
    let avail = if available {
        condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.".into())
    } else {
        condition(
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.".into(),
        )
    };
    set_condition(&mut conditions, avail, r.now, false);

    let name = r.new_set;
    let paused = d.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
    let complete = c.updated == want && c.replicas == want && c.available == want;
    let progressed = c.updated > was("updatedReplicas")
        || c.ready > was("readyReplicas")
        || c.available > was("availableReplicas")
        || c.replicas < was("replicas");
    let previous = conditions.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Progressing")).cloned();
    let reason_was = previous.as_ref().and_then(|p| p.get("reason")).and_then(Value::as_str).unwrap_or_default();
    let deadline =
        d.pointer("/spec/progressDeadlineSeconds").and_then(Value::as_u64).unwrap_or(DEFAULT_PROGRESS_DEADLINE);
    let since = previous
        .as_ref()
        .and_then(|p| p.get("lastUpdateTime"))
        .and_then(Value::as_str)
        .and_then(parse_rfc3339)
        .unwrap_or(r.now);
    let (next, touch) = if paused {
        (condition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused".into()), false)
    } else if r.how == NewSet::Created {
        (condition("Progressing", "True", "NewReplicaSetCreated", format!("Created new replica set \"{name}\"")), true)
    } else if r.how == NewSet::Found {
        (condition("Progressing", "True", "FoundNewReplicaSet", format!("Found new replica set \"{name}\"")), true)
    } else if complete {
        let msg = format!("ReplicaSet \"{name}\" has successfully progressed.");
        (condition("Progressing", "True", "NewReplicaSetAvailable", msg), false)
    } else if progressed || reason_was == "DeploymentPaused" || previous.is_none() {
        (condition("Progressing", "True", "ReplicaSetUpdated", format!("ReplicaSet \"{name}\" is progressing.")), true)
    } else if r.now >= since + deadline as f64 || reason_was == "ProgressDeadlineExceeded" {
        let msg = format!("ReplicaSet \"{name}\" has timed out progressing.");
        (condition("Progressing", "False", "ProgressDeadlineExceeded", msg), false)
    } else {
        (previous.clone().unwrap_or(Value::Null), false)
    };
    if !next.is_null() {
        set_condition(&mut conditions, next, r.now, touch);
    }
    // Available first, as upstream lists them.
    conditions.sort_by_key(|c| c.get("type").and_then(Value::as_str) != Some("Available"));
    let mut s = json!({
        "replicas": c.replicas,
        "updatedReplicas": c.updated,
        "readyReplicas": c.ready,
        "availableReplicas": c.available,
        "unavailableReplicas": want.saturating_sub(c.available),
        "conditions": conditions,
    });
    if let Some(g) = d.pointer("/metadata/generation").filter(|g| g.is_number()) {
        s["observedGeneration"] = g.clone();
    }
    s
}

/// When the status written now would next change with time alone: the
/// progress deadline of a rollout that is not complete.
pub fn deadline_at(deployment: &Value, status: &Value) -> Option<f64> {
    let conditions = status.get("conditions").and_then(Value::as_array)?;
    let p = conditions.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Progressing"))?;
    let reason = p.get("reason").and_then(Value::as_str)?;
    if !matches!(reason, "NewReplicaSetCreated" | "FoundNewReplicaSet" | "ReplicaSetUpdated") {
        return None;
    }
    let since = parse_rfc3339(p.get("lastUpdateTime")?.as_str()?)?;
    let deadline = deployment
        .pointer("/spec/progressDeadlineSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_PROGRESS_DEADLINE);
    Some(since + deadline as f64)
}

/// The ReplicaSet of revision `revision` of `deployment` (template hash
/// `hash`, `replicas` wanted of it): labels, selector and template carry
/// the hash; it is controlled by the Deployment.
pub fn replica_set(deployment: &Value, hash: &str, revision: u64, wanted: u64) -> Value {
    let name = deployment.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let mut template = deployment.pointer("/spec/template").cloned().unwrap_or(json!({}));
    template["metadata"]["labels"][TEMPLATE_HASH] = json!(hash);
    let mut selector = deployment.pointer("/spec/selector").cloned().unwrap_or(json!({}));
    selector["matchLabels"][TEMPLATE_HASH] = json!(hash);
    let mut labels = template.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
    labels[TEMPLATE_HASH] = json!(hash);
    json!({
        "apiVersion": API_VERSION,
        "kind": REPLICA_SET,
        "metadata": {
            "name": format!("{name}-{hash}"),
            "namespace": deployment.pointer("/metadata/namespace"),
            "labels": labels,
            "annotations": {
                REVISION: revision.to_string(),
                DESIRED_REPLICAS: replicas(deployment).to_string(),
                MAX_REPLICAS: max_replicas(deployment).to_string(),
            },
            "ownerReferences": [{
                "apiVersion": API_VERSION,
                "kind": KIND,
                "name": name,
                "uid": deployment.pointer("/metadata/uid"),
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "replicas": wanted,
            "minReadySeconds": deployment.pointer("/spec/minReadySeconds").cloned().unwrap_or(json!(0)),
            "selector": selector,
            "template": template,
        },
    })
}

/// A ReplicaSet's `status` over its pods at `now`.
pub fn replica_set_status(rs: &Value, pods: &[&Value], now: f64) -> Value {
    let hash = hash_of(rs).unwrap_or_default();
    let min_ready = rs.pointer("/spec/minReadySeconds").and_then(Value::as_u64).unwrap_or(0);
    let c = count(pods, hash, min_ready, now);
    let mut s = json!({
        "replicas": c.replicas,
        "fullyLabeledReplicas": c.replicas,
        "readyReplicas": c.ready,
        "availableReplicas": c.available,
    });
    if let Some(g) = rs.pointer("/metadata/generation").filter(|g| g.is_number()) {
        s["observedGeneration"] = g.clone();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(image: &str) -> PodTemplateSpec {
        serde_json::from_value(json!({"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": image}]}}))
        .unwrap_or_default()
    }

    #[test]
    fn a_template_hash_is_stable_and_a_valid_label_value() {
        let a = template("busybox");
        assert_eq!(template_hash(&a), template_hash(&a.clone()));
        assert_ne!(template_hash(&a), template_hash(&template("nginx")));
        let h = template_hash(&a);
        assert!(!h.is_empty() && h.len() <= 10, "{h}");
        assert!(h.bytes().all(|b| SAFE.contains(&b)), "{h}");
        // FNV-1a's published vectors.
        assert_eq!(fnv32a(b""), 0x811c_9dc5);
        assert_eq!(fnv32a(b"a"), 0xe40c_292c);
    }

    #[test]
    fn revisions_grow_and_a_rolled_back_template_gets_a_new_one() {
        assert_eq!(next_revision(None, &[]), 1);
        assert_eq!(next_revision(None, &[1, 2]), 3);
        assert_eq!(next_revision(Some(3), &[1, 2]), 3, "the newest keeps its revision");
        assert_eq!(next_revision(Some(1), &[2]), 3, "an old template back gets the next revision");
        let set = |n: &str, revision, pods| OldSet { name: n.into(), revision, pods };
        let old = [set("d-c", 3, 0), set("d-a", 1, 0), set("d-b", 2, 1)];
        assert_eq!(beyond_history(&old, 1), vec!["d-a".to_string()], "d-b still has a pod");
        assert!(beyond_history(&old, 3).is_empty());
        assert_eq!(beyond_history(&old, 0), vec!["d-a".to_string(), "d-c".to_string()]);
    }

    fn pod(hash: &str, phase: &str, ready_at: Option<&str>) -> Value {
        let mut p = json!({"metadata": {"labels": {TEMPLATE_HASH: hash}}, "status": {"phase": phase}});
        if let Some(t) = ready_at {
            p["status"]["conditions"] = json!([{"type": "Ready", "status": "True", "lastTransitionTime": t}]);
        }
        p
    }

    fn deploy(replicas: u64, status: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default", "generation": 2},
               "spec": {"replicas": replicas, "minReadySeconds": 0}, "status": status})
    }

    fn cond<'a>(s: &'a Value, kind: &str) -> (&'a str, &'a str) {
        let c = s["conditions"].as_array().and_then(|c| c.iter().find(|c| c["type"] == kind));
        let f = |f: &str| c.and_then(|c| c[f].as_str()).unwrap_or_default();
        (f("status"), f("reason"))
    }

    #[test]
    fn status_follows_the_pods_and_the_progress_deadline() {
        let t0 = 1_700_000_000.0;
        let ready = rfc3339(t0 - 5.0);
        let pods =
            [pod("new", "Running", Some(&ready)), pod("new", "Pending", None), pod("old", "Running", Some(&ready))];
        let refs: Vec<&Value> = pods.iter().collect();
        let c = count(&refs, "new", 0, t0);
        assert_eq!(c, Counts { replicas: 3, updated: 2, ready: 2, available: 2 });
        assert_eq!(count(&refs, "new", 60, t0).available, 0, "not ready for minReadySeconds yet");

        let d = deploy(2, json!({}));
        let s = status(&Rollout { deployment: &d, new_set: "web-abc", how: NewSet::Created, counts: c, now: t0 });
        assert_eq!(s["observedGeneration"], 2);
        assert_eq!((s["replicas"].as_u64(), s["unavailableReplicas"].as_u64()), (Some(3), Some(0)));
        assert_eq!(cond(&s, "Available"), ("True", "MinimumReplicasAvailable"));
        assert_eq!(cond(&s, "Progressing"), ("True", "NewReplicaSetCreated"));
        assert_eq!(s["conditions"][0]["type"], "Available");

        // Nothing moves for longer than the deadline: the rollout timed out.
        let d = deploy(2, s.clone());
        let stuck = Rollout { deployment: &d, new_set: "web-abc", how: NewSet::Kept, counts: c, now: t0 + 10.0 };
        let s2 = status(&stuck);
        assert_eq!(s2, s, "no change, nothing to write");
        assert_eq!(deadline_at(&d, &s), Some(t0 + 600.0));
        let late = status(&Rollout { now: t0 + 601.0, ..stuck.clone() });
        assert_eq!(cond(&late, "Progressing"), ("False", "ProgressDeadlineExceeded"));

        // All pods of the new template available: complete.
        let done = Counts { replicas: 2, updated: 2, ready: 2, available: 2 };
        let s3 = status(&Rollout { counts: done, ..stuck.clone() });
        assert_eq!(cond(&s3, "Progressing"), ("True", "NewReplicaSetAvailable"));
        // None available out of 4 with 25% allowed unavailable: not Available.
        let d4 = deploy(4, json!({}));
        let none = Counts { replicas: 4, updated: 4, ready: 0, available: 0 };
        let s4 = status(&Rollout { deployment: &d4, new_set: "web-abc", how: NewSet::Found, counts: none, now: t0 });
        assert_eq!(cond(&s4, "Available"), ("False", "MinimumReplicasUnavailable"));
        assert_eq!(cond(&s4, "Progressing"), ("True", "FoundNewReplicaSet"));
        assert_eq!(s4["unavailableReplicas"], 4);
        let mut paused = d4.clone();
        paused["spec"]["paused"] = json!(true);
        let s5 = status(&Rollout { deployment: &paused, new_set: "web-abc", how: NewSet::Kept, counts: none, now: t0 });
        assert_eq!(cond(&s5, "Progressing"), ("Unknown", "DeploymentPaused"));
    }

    #[test]
    fn a_replica_set_carries_the_hash_revision_and_owner() {
        let d = json!({"metadata": {"name": "web", "namespace": "ns", "uid": "u1"},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}}}});
        let rs = replica_set(&d, "abc", 3, 4);
        assert_eq!(rs["metadata"]["name"], "web-abc");
        assert_eq!(rs["metadata"]["annotations"][REVISION], "3");
        assert_eq!(rs["metadata"]["annotations"][MAX_REPLICAS], "5", "25% surge of 4, rounded up");
        assert_eq!(rs["spec"]["selector"]["matchLabels"], json!({"app": "web", TEMPLATE_HASH: "abc"}));
        assert_eq!(rs["spec"]["template"]["metadata"]["labels"][TEMPLATE_HASH], "abc");
        assert_eq!(rs["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(max_unavailable(&d), 1);
        let pods = [pod("abc", "Running", None), pod("abc", "Failed", None)];
        let s = replica_set_status(&rs, &pods.iter().collect::<Vec<_>>(), 0.0);
        assert_eq!((s["replicas"].as_u64(), s["readyReplicas"].as_u64()), (Some(1), Some(1)));
    }
}
