//! The deployment controller: the `apps/v1` ReplicaSets of each
//! Deployment (one per revision of its pod template, `<deploy>-<hash>`) and
//! the Deployment's `status`, kept as kube-controller-manager keeps them, so
//! `kubectl rollout status|history|undo`, `kubectl describe deploy` and
//! `kubectl wait --for=condition=Available` work.
//!
//! The job controller still makes the pods (it rolls a new template out,
//! `ringleader_controller::lifecycle`); this one records what it did: the
//! ReplicaSet of the template rolled out is the new one (`spec.replicas` the
//! Deployment's), the others are old (0). Pods carry their template's
//! `pod-template-hash` label and are adopted by the ReplicaSet of it: their
//! controller reference names the ReplicaSet, as on Kubernetes, with a
//! second, non-controller reference to the Deployment by which the job
//! controller keeps finding them ([`crate::pods::owner_uid`]).

use crate::cache::Cache;
use crate::pods;
use crate::writes::write;
use crate::ManagerError;
use ringleader_api::kinds::deployment::{self as d, NewSet, OldSet};
use ringleader_store::{Backend, Op, Stored};
use serde_json::{json, Value};
use std::collections::HashMap;

/// One pass: the writes [`decide`] wants, and the time a progress deadline
/// next falls due per Deployment uid (merged into `timers`).
pub fn pass(
    store: &dyn Backend,
    cache: &mut Cache,
    timers: &mut HashMap<String, f64>,
    now: f64,
) -> Result<(), ManagerError> {
    let (ops, wake) = decide(cache, now);
    for (uid, at) in wake {
        timers.entry(uid).and_modify(|t| *t = t.min(at)).or_insert(at);
    }
    write(store, cache, ops)
}

fn uid(v: &Value) -> &str {
    v.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default()
}

fn name(v: &Value) -> &str {
    v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default()
}

/// The template hash the job controller rolled out for `deployment`
/// (`None` before its first reconcile).
fn rolled_out(deployment: &Value) -> Option<&str> {
    deployment.pointer("/status/ringleader/template_hash").and_then(Value::as_str)
}

/// The writes that bring every Deployment's ReplicaSets, pods' owners and
/// status in line, and when each next needs a look for its deadline.
pub fn decide(cache: &Cache, now: f64) -> (Vec<Op>, Vec<(String, f64)>) {
    let deployments: Vec<&Stored> = cache.of_kind(d::API_VERSION, d::KIND).collect();
    let mut ops = Vec::new();
    let mut wake = Vec::new();
    if deployments.is_empty() {
        return (ops, wake);
    }
    let mut sets_of: HashMap<&str, Vec<&Stored>> = HashMap::new();
    for rs in cache.of_kind(d::API_VERSION, d::REPLICA_SET) {
        if let Some(owner) = pods::controller_uid(&rs.object) {
            sets_of.entry(owner).or_default().push(rs);
        }
    }
    let mut pods_of: HashMap<&str, Vec<&Stored>> = HashMap::new();
    for p in cache.of_kind("v1", "Pod") {
        if let Some(owner) = pods::owner_uid(&p.object) {
            pods_of.entry(owner).or_default().push(p);
        }
    }
    for dep in deployments {
        let o = &dep.object;
        if o.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) {
            continue;
        }
        let Some(hash) = rolled_out(o) else { continue };
        let sets = sets_of.get(uid(o)).cloned().unwrap_or_default();
        let pods = pods_of.get(uid(o)).cloned().unwrap_or_default();
        let one = one_deployment(dep, hash, &sets, &pods, now);
        ops.extend(one.0);
        if let Some(at) = one.1 {
            wake.push((uid(o).to_string(), at));
        }
    }
    (ops, wake)
}

/// The writes for one Deployment whose template `hash` is rolled out.
fn one_deployment(dep: &Stored, hash: &str, sets: &[&Stored], pods: &[&Stored], now: f64) -> (Vec<Op>, Option<f64>) {
    let o = &dep.object;
    let mut ops = Vec::new();
    let new_name = format!("{}-{hash}", name(o));
    let (new, old): (Vec<&Stored>, Vec<&Stored>) = sets.iter().partition(|s| name(&s.object) == new_name);
    let old_revisions: Vec<u64> = old.iter().map(|s| d::revision_of(&s.object)).collect();
    let existing = new.first().copied();
    let revision = d::next_revision(existing.map(|s| d::revision_of(&s.object)), &old_revisions);
    let how = match existing {
        None => NewSet::Created,
        Some(s) if d::revision_of(&s.object) != revision => NewSet::Found,
        Some(_) => NewSet::Kept,
    };
    let pod_values: Vec<&Value> = pods.iter().map(|p| &p.object).collect();
    let of_hash = |h: &str| -> Vec<&Value> {
        pod_values.iter().copied().filter(|p| d::hash_of(p) == Some(h)).collect::<Vec<_>>()
    };

    // The new set: created, or brought to the revision and size wanted.
    let want_new = d::replica_set(o, hash, revision, d::replicas(o));
    match existing {
        None => {
            let mut rs = want_new.clone();
            rs["status"] = d::replica_set_status(&rs, &of_hash(hash), now);
            ops.push(Op::Create(rs));
        }
        Some(s) => ops.extend(keep_set(s, &want_new, &of_hash(hash), now)),
    }
    // Old sets: scaled to nothing, their status kept, the oldest beyond
    // the history limit (with no pod left) deleted.
    let limit = o
        .pointer("/spec/revisionHistoryLimit")
        .and_then(Value::as_u64)
        .map_or(d::DEFAULT_HISTORY_LIMIT, |l| l as usize);
    let mut judged = Vec::new();
    for s in &old {
        let h = d::hash_of(&s.object).unwrap_or_default().to_string();
        let mine = of_hash(&h);
        judged.push(OldSet {
            name: name(&s.object).to_string(),
            revision: d::revision_of(&s.object),
            pods: mine.iter().filter(|p| d::active(p)).count() as u64,
        });
        let mut want = s.object.clone();
        want["spec"]["replicas"] = json!(0);
        ops.extend(keep_set(s, &want, &mine, now));
    }
    let gone = d::beyond_history(&judged, limit);
    ops.retain(|op| !matches!(op, Op::Patch { key, .. } if key.kind == d::REPLICA_SET && gone.contains(&key.name)));
    for s in old.iter().filter(|s| gone.iter().any(|g| g == name(&s.object))) {
        ops.push(Op::Delete { key: s.key.clone(), expected: None });
    }

    // Pods adopted by the set of their template.
    for p in pods {
        let Some(h) = d::hash_of(&p.object) else { continue };
        let Some(set) = sets.iter().find(|s| d::hash_of(&s.object) == Some(h)) else { continue };
        if pods::controller_uid(&p.object) == Some(uid(&set.object)) {
            continue;
        }
        let refs = json!([
            {"apiVersion": d::API_VERSION, "kind": d::REPLICA_SET, "name": name(&set.object),
             "uid": uid(&set.object), "controller": true, "blockOwnerDeletion": true},
            {"apiVersion": d::API_VERSION, "kind": d::KIND, "name": name(o), "uid": uid(o), "controller": false},
        ]);
        let patch = json!({"metadata": {"ownerReferences": refs}});
        ops.push(Op::Patch { key: p.key.clone(), patch, expected: None });
    }

    // The Deployment: its revision annotation and its status.
    let ann = o.pointer("/metadata/annotations").and_then(|a| a.get(d::REVISION)).and_then(Value::as_str);
    if ann != Some(revision.to_string().as_str()) {
        let patch = json!({"metadata": {"annotations": {d::REVISION: revision.to_string()}}});
        ops.push(Op::Patch { key: dep.key.clone(), patch, expected: None });
    }
    let min_ready = o.pointer("/spec/minReadySeconds").and_then(Value::as_u64).unwrap_or(0);
    let counts = d::count(&pod_values, hash, min_ready, now);
    let status = d::status(&d::Rollout { deployment: o, new_set: &new_name, how, counts, now });
    let have = o.get("status").cloned().unwrap_or(Value::Null);
    let same = status.as_object().is_some_and(|w| w.iter().all(|(k, v)| have.get(k) == Some(v)));
    if !same {
        ops.push(Op::Patch { key: dep.key.clone(), patch: json!({"status": status}), expected: None });
    }
    (ops, d::deadline_at(o, &status))
}

/// The patch that makes set `s` what `want` says (revision, annotations,
/// size, selector and template) with the status its `pods` give it, if
/// anything differs.
fn keep_set(s: &Stored, want: &Value, pods: &[&Value], now: f64) -> Option<Op> {
    let status = d::replica_set_status(&s.object, pods, now);
    let mut patch = json!({});
    let ann_want = want.pointer("/metadata/annotations").cloned().unwrap_or(json!({}));
    let ann_have = s.object.pointer("/metadata/annotations").cloned().unwrap_or(json!({}));
    let differs = |w: &Value, h: &Value| w.as_object().is_some_and(|w| w.iter().any(|(k, v)| h.get(k) != Some(v)));
    if differs(&ann_want, &ann_have) {
        patch["metadata"] = json!({"annotations": ann_want});
    }
    let spec_want = want.get("spec").cloned().unwrap_or(json!({}));
    let spec_have = s.object.get("spec").cloned().unwrap_or(json!({}));
    if differs(&spec_want, &spec_have) {
        patch["spec"] = json!({"replicas": spec_want.get("replicas")});
    }
    if differs(&status, &s.object.get("status").cloned().unwrap_or(Value::Null)) {
        patch["status"] = status;
    }
    let empty = patch.as_object().is_some_and(|m| m.is_empty());
    (!empty).then(|| Op::Patch { key: s.key.clone(), patch, expected: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_api::time::rfc3339;
    use ringleader_store::ObjectKey;

    fn put(cache: &mut Cache, object: Value) {
        let key = ObjectKey::of(&object).unwrap_or_else(|e| panic!("{e}"));
        let resource_version = cache.get(&key).map_or(1, |s| s.resource_version + 1);
        cache.put(Stored { key, resource_version, object });
    }

    /// A JSON merge patch (RFC 7386), as the store applies `Op::Patch`.
    fn merge(target: &mut Value, patch: &Value) {
        match (target.as_object_mut(), patch.as_object()) {
            (Some(t), Some(p)) => {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        merge(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
            _ => *target = patch.clone(),
        }
    }

    fn deployment(hash: &str, status_extra: Value) -> Value {
        let mut status = json!({"ringleader": {"template_hash": hash}});
        if let (Some(s), Some(extra)) = (status.as_object_mut(), status_extra.as_object()) {
            s.extend(extra.clone());
        }
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "dep-uid", "generation": 1},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}},
            "status": status})
    }

    fn pod(name: &str, hash: &str, owner: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": format!("{name}-uid"),
                         "labels": {"app": "web", d::TEMPLATE_HASH: hash}, "ownerReferences": [owner]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                       "lastTransitionTime": rfc3339(0.0)}]}})
    }

    fn apply(cache: &mut Cache, ops: Vec<Op>) {
        for op in ops {
            match op {
                Op::Create(mut v) => {
                    let n = name(&v).to_string();
                    v["metadata"]["uid"] = json!(format!("{n}-uid"));
                    put(cache, v);
                }
                Op::Patch { key, patch, .. } => {
                    let mut v = cache.get(&key).map(|s| s.object.clone()).unwrap_or_default();
                    merge(&mut v, &patch);
                    put(cache, v);
                }
                Op::Delete { key, .. } => {
                    cache.remove(&key, u64::MAX);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_revision_per_template_pods_adopted_and_a_rollback_gets_a_new_revision() {
        let mut cache = Cache::default();
        put(&mut cache, deployment("aaa", json!({})));
        let dep_ref =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "dep-uid", "controller": true});
        put(&mut cache, pod("web-0", "aaa", dep_ref.clone()));
        let (ops, _) = decide(&cache, 100.0);
        apply(&mut cache, ops);
        let rs = |c: &Cache, n: &str| {
            c.get(&ObjectKey::new("apps/v1", "ReplicaSet", "default", n)).map(|s| s.object.clone())
        };
        let first = rs(&cache, "web-aaa").unwrap_or_default();
        assert_eq!(d::revision_of(&first), 1);
        assert_eq!(first["spec"]["replicas"], 1);
        assert_eq!(first["status"]["replicas"], 1);
        // Next pass: the pod is adopted, the Deployment says revision 1.
        let (ops, _) = decide(&cache, 100.0);
        apply(&mut cache, ops);
        let p =
            cache.get(&ObjectKey::new("v1", "Pod", "default", "web-0")).map(|s| s.object.clone()).unwrap_or_default();
        assert_eq!(pods::controller_uid(&p), Some("web-aaa-uid"));
        assert_eq!(pods::owner_uid(&p), Some("dep-uid"), "the job controller still finds it");
        let dep = |c: &Cache| {
            c.get(&ObjectKey::new("apps/v1", "Deployment", "default", "web"))
                .map(|s| s.object.clone())
                .unwrap_or_default()
        };
        assert_eq!(d::revision_of(&dep(&cache)), 1);
        assert_eq!(dep(&cache)["status"]["conditions"][0]["reason"], "MinimumReplicasAvailable");
        let (ops, _) = decide(&cache, 100.0);
        assert!(ops.is_empty(), "settled: {ops:?}");

        // A new template rolled out: revision 2, the old set scaled to 0.
        let mut next = dep(&cache);
        next["status"]["ringleader"]["template_hash"] = json!("bbb");
        put(&mut cache, next);
        let (ops, _) = decide(&cache, 200.0);
        apply(&mut cache, ops);
        assert_eq!(rs(&cache, "web-bbb").map(|r| d::revision_of(&r)), Some(2));
        assert_eq!(rs(&cache, "web-aaa").map(|r| r["spec"]["replicas"].clone()), Some(json!(0)));
        assert_eq!(dep(&cache)["status"]["conditions"][1]["reason"], "NewReplicaSetCreated");

        // Rolled back to the first template: its set again, as revision 3.
        cache.remove(&ObjectKey::new("v1", "Pod", "default", "web-0"), u64::MAX);
        let mut back = dep(&cache);
        back["status"]["ringleader"]["template_hash"] = json!("aaa");
        put(&mut cache, back);
        let (ops, _) = decide(&cache, 300.0);
        apply(&mut cache, ops);
        assert_eq!(rs(&cache, "web-aaa").map(|r| d::revision_of(&r)), Some(3));
        assert_eq!(d::revision_of(&dep(&cache)), 3);
        assert_eq!(dep(&cache)["status"]["conditions"][1]["reason"], "FoundNewReplicaSet");

        // A history limit of 0 deletes the old set once it has no pod.
        let mut limited = dep(&cache);
        limited["spec"]["revisionHistoryLimit"] = json!(0);
        put(&mut cache, limited);
        let (ops, _) = decide(&cache, 400.0);
        apply(&mut cache, ops);
        assert!(rs(&cache, "web-bbb").is_none() && rs(&cache, "web-aaa").is_some());
    }
}
