//! The scheduler loop body: a session over the cache (ready nodes, queues,
//! priority classes, running gangs, pending gangs), whose bindings are
//! written to the pods in one store batch, evictions handed to the agents,
//! and PodGroup phases and "why pending" explanations written back.

use crate::cache::{str_at, Cache};
use crate::events::{self, Recorder};
use crate::invalid::Findings;
use crate::job_object::JobObject;
use crate::jobs;
use crate::node_view::NodeView;
use crate::pods::{self, DEVICES, EVICTED};
pub use crate::schedule_pass::Pass;
use crate::ManagerError;
use ringleader_api::time::{parse_rfc3339, rfc3339};
use ringleader_api::{Job, Resource};
use ringleader_controller::lifecycle::PodPhase;
use ringleader_scheduler::conf::SchedulerConf;
use ringleader_scheduler::place::vnpu::held_use;
use ringleader_scheduler::place::GANG_DEVICE_PODS;
use ringleader_scheduler::session::{self, PodGroupPhase, Snapshot};
use ringleader_scheduler::workload::{Running, RunningPod};
use ringleader_store::{Backend, ObjectKey, Op, Stored};
use ringleader_topology::DeviceSet;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// One job's pods waiting for a node, per role, in index order.
struct Waiting<'a> {
    /// `None`: a pod no job owns, placed as a gang of one.
    job: Option<&'a JobObject>,
    /// The gang's key in the session (`namespace/name` of its job model).
    key: String,
    /// Each role's name and pod prefix: the scheduler names pod `i` of a
    /// role `<prefix>-<i>`.
    roles: Vec<(String, String)>,
    by_role: BTreeMap<String, Vec<&'a Stored>>,
}

/// Runs one scheduling session and writes its decisions. Objects in
/// `skip` (those the pass found it cannot model) are left out.
#[allow(clippy::too_many_arguments)]
pub fn schedule(
    store: &dyn Backend,
    cache: &mut Cache,
    all_jobs: &[JobObject],
    pods_by_owner: &HashMap<String, Vec<Arc<Stored>>>,
    nodes: &[NodeView],
    conf: &SchedulerConf,
    now: f64,
    skip: &Findings,
) -> Result<Pass, ManagerError> {
    let mut waiting: Vec<Waiting<'_>> = Vec::new();
    let mut pending_jobs: Vec<(f64, String, Job)> = Vec::new();
    for job in all_jobs.iter().filter(|j| !j.state.status.phase.is_finished()) {
        let pods = pods_by_owner.get(job.uid()).map(Vec::as_slice).unwrap_or_default();
        let live = |p: &&Arc<Stored>| !pods::deleting(&p.object) && pods::phase_of(&p.object).is_live();
        let unbound: Vec<&Stored> =
            pods.iter().filter(live).filter(|p| pods::node_of(&p.object).is_none()).map(|p| &**p).collect();
        if unbound.is_empty() {
            continue;
        }
        let any_bound = pods.iter().filter(live).any(|p| pods::node_of(&p.object).is_some());
        // Each pod's plan read once: reading it in the sort's comparisons
        // parsed a 5,000-pod gang's annotations some 100,000 times a pass.
        let mut indexed: BTreeMap<String, Vec<(u32, &Stored)>> = BTreeMap::new();
        for p in unbound {
            let Some(o) = pods::observe(&p.object) else { continue };
            indexed.entry(o.role).or_default().push((o.index, p));
        }
        let by_role: BTreeMap<String, Vec<&Stored>> = indexed
            .into_iter()
            .map(|(role, mut list)| {
                list.sort_by_key(|(index, _)| *index);
                (role, list.into_iter().map(|(_, p)| p).collect())
            })
            .collect();
        let mut model = job.state.effective_job();
        // The gang at its full size: a pod replaced alone, or an elastic job
        // shrunk to one pod, is still part of a distributed job (the shrunk
        // one grows back), so neither may take a chip whose network is down.
        let full = &job.state.job;
        let gang_device_pods: u32 = full.roles.iter().filter(|r| r.device.is_some()).map(|r| r.replicas).sum();
        model.annotations.insert(GANG_DEVICE_PODS.to_string(), gang_device_pods.to_string());
        model.roles.retain(|r| by_role.contains_key(&r.name));
        let mut total = 0;
        for r in &mut model.roles {
            r.replicas = by_role.get(&r.name).map_or(0, |l| l.len() as u32);
            r.min_available = r.min_available.map(|m| m.min(r.replicas));
            total += r.replicas;
        }
        // An elastic job's pods are released only as a whole gang at its
        // current size: a part bound alone would hold chips without running,
        // so all of them are placed or none (the controller shrinks it
        // instead, to what fits).
        let whole = any_bound || job.state.job.fault.elastic.is_some();
        model.scheduling.min_available =
            if whole { total } else { model.scheduling.min_available.min(total).max(1.min(total)) };
        let created = str_at(&job.stored.object, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339);
        let roles = job.state.job.roles.iter().map(|r| (r.name.clone(), r.pod_prefix.clone())).collect();
        waiting.push(Waiting { job: Some(job), key: model.key(), roles, by_role });
        pending_jobs.push((created.unwrap_or(0.0), model.key(), model));
    }
    let mut recorded = Recorder::new(events::SCHEDULER);
    let mut ops = Vec::new();
    for (pod, model) in bare_pods(cache, all_jobs) {
        let model = match model {
            Ok(model) => model,
            Err(why) => {
                if let Some(op) = unschedulable_op(pod, &why, now) {
                    rec_failed(&mut recorded, pod, &why);
                    ops.push(op);
                }
                continue;
            }
        };
        let roles: Vec<(String, String)> = model.roles.iter().map(|r| (r.name.clone(), r.pod_prefix.clone())).collect();
        let by_role = roles.iter().map(|(name, _)| (name.clone(), vec![pod])).collect();
        let created = str_at(&pod.object, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339);
        waiting.push(Waiting { job: None, key: model.key(), roles, by_role });
        pending_jobs.push((created.unwrap_or(0.0), model.key(), model));
    }
    if waiting.is_empty() {
        if !ops.is_empty() {
            events::write(store, cache, ops, recorded, now)?;
        }
        return Ok(Pass::default());
    }
    pending_jobs.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));

    let mut snapshot = snapshot(cache, nodes, pending_jobs.into_iter().map(|(_, _, j)| j).collect(), skip)?;
    snapshot.running = running(all_jobs, pods_by_owner, &snapshot);
    held_outside_jobs(cache, all_jobs, &mut snapshot);
    let outcome = session::run(snapshot, conf, now as u64);

    let by_key: HashMap<&str, &Waiting<'_>> = waiting.iter().map(|w| (w.key.as_str(), w)).collect();
    let mut pass = Pass { sessions: 1, ..Pass::default() };
    // A job's first bindings get a `Scheduled` Event each, as kube-scheduler
    // writes them; the rest of a big gang one Event on the job: an Event per
    // pod would be as many writes again as the bindings themselves.
    let mut per_job: HashMap<&str, (usize, BTreeSet<&str>)> = HashMap::new();
    for b in &outcome.bindings {
        let Some(w) = by_key.get(b.job.as_str()) else { continue };
        let Some(pod) = pod_for(w, &b.pod) else { continue };
        let mut annotations: serde_json::Map<String, Value> =
            b.annotations.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        let ids: Vec<String> = b.devices.iter().map(u32::to_string).collect();
        annotations.insert(DEVICES.into(), json!(ids.join(",")));
        annotations.insert("ringleader.io/scheduled-at".into(), json!(rfc3339(now)));
        if w.job.is_none() {
            // A gang of one is whole once bound: nothing else to wait for.
            annotations.insert(pods::START.into(), json!("true"));
        }
        let seen = per_job.entry(b.job.as_str()).or_default();
        if w.job.is_none() || seen.0 < events::MAX_SIMILAR {
            events::scheduled(&mut recorded, pod, &b.node, &ids);
        } else {
            seen.1.insert(b.node.as_str());
        }
        seen.0 += 1;
        ops.push(Op::Patch {
            key: pod.key.clone(),
            patch: json!({
                "spec": {"nodeName": b.node},
                "metadata": {"annotations": annotations},
                "status": {"conditions": [pod_scheduled(true, None, now)]},
            }),
            expected: Some(pod.resource_version),
        });
        if let Some(created) = str_at(&pod.object, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339) {
            pass.latencies.push((now - created).max(0.0));
        }
        pass.bound += 1;
        if let Some(job) = w.job {
            pass.jobs.insert(job.uid().to_string());
        }
    }
    for (key, (bound, nodes)) in &per_job {
        let Some(job) = by_key.get(key).and_then(|w| w.job) else { continue };
        if *bound > events::MAX_SIMILAR {
            events::scheduled_gang(&mut recorded, job, bound - events::MAX_SIMILAR, nodes.len());
        }
    }
    let by_name: BTreeMap<&str, &NodeView> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    for e in &outcome.evictions {
        let ns = e.job.split_once('/').map_or("default", |(ns, _)| ns);
        let key = ObjectKey::new("v1", "Pod", ns, &e.pod);
        let Some(pod) = cache.get(&key) else { continue };
        let op = match jobs::delete_pod_op(pod, false, &by_name, now) {
            Op::Patch { key, mut patch, expected } => {
                patch["metadata"]["annotations"] = json!({ EVICTED: "true" });
                Op::Patch { key, patch, expected }
            }
            other => other,
        };
        if let Some(uid) = pods::owner_uid(&pod.object) {
            pass.jobs.insert(uid.to_string());
        }
        events::evicted(&mut recorded, pod, e);
        ops.push(op);
        pass.evicted += 1;
    }
    let reasons: HashMap<&str, &str> = outcome.pending.iter().map(|p| (p.job.as_str(), p.reason.as_str())).collect();
    pass.pending = outcome.pending.len();
    for w in &waiting {
        let phase = match outcome.phases.get(&w.key) {
            Some(PodGroupPhase::Running) => "Running",
            Some(PodGroupPhase::Inqueue) => "Inqueue",
            Some(PodGroupPhase::Unknown) => "Unknown",
            _ => "Pending",
        };
        let why = reasons.get(w.key.as_str()).copied();
        if let Some(op) = w.job.and_then(|job| podgroup_status(cache, &job.state.job, phase, why, now)) {
            ops.push(op);
        }
        if let Some(why) = why {
            pass.unschedulable += w.by_role.values().map(Vec::len).sum::<usize>();
            match w.job {
                Some(job) => events::unschedulable(&mut recorded, cache, job, why),
                None => {
                    for p in w.by_role.values().flatten().filter(|p| unschedulable_op(p, why, now).is_some()) {
                        rec_failed(&mut recorded, p, why);
                    }
                }
            }
            ops.extend(w.by_role.values().flatten().filter_map(|p| unschedulable_op(p, why, now)));
        }
    }
    events::write(store, cache, ops, recorded, now)?;
    Ok(pass)
}

/// A pod's `PodScheduled` condition, as kube-scheduler writes it.
fn pod_scheduled(bound: bool, why: Option<&str>, now: f64) -> Value {
    let mut c = json!({"type": "PodScheduled", "status": if bound { "True" } else { "False" },
                       "lastProbeTime": null, "lastTransitionTime": rfc3339(now)});
    if let Some(why) = why {
        c["reason"] = json!("Unschedulable");
        c["message"] = json!(why);
    }
    c
}

/// Marks a waiting pod unschedulable with the scheduler's explanation, when
/// that is news (the same message is not written again).
fn unschedulable_op(pod: &Stored, why: &str, now: f64) -> Option<Op> {
    if str_at(&pod.object, &["spec", "nodeName"]).is_some_and(|n| !n.is_empty()) {
        return None;
    }
    let current = pod
        .object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled")))
        .and_then(|c| c.get("message"))
        .and_then(Value::as_str);
    if current == Some(why) {
        return None;
    }
    Some(Op::Patch {
        key: pod.key.clone(),
        patch: json!({"status": {"conditions": [pod_scheduled(false, Some(why), now)]}}),
        // A binding racing this write wins.
        expected: Some(pod.resource_version),
    })
}

/// The pod object a scheduler pod name (`<prefix>-<i>`) stands for: the
/// i-th waiting pod of that role.
fn pod_for<'a>(w: &Waiting<'a>, name: &str) -> Option<&'a Stored> {
    w.roles.iter().find_map(|(role, prefix)| {
        let rest = name.strip_prefix(prefix.as_str())?.strip_prefix('-')?;
        let i: usize = rest.parse().ok()?;
        w.by_role.get(role)?.get(i).copied()
    })
}

fn snapshot(cache: &Cache, nodes: &[NodeView], pending: Vec<Job>, skip: &Findings) -> Result<Snapshot, ManagerError> {
    // A cordoned node takes no new pod: it is not offered to the scheduler.
    let ready: BTreeSet<&str> = nodes.iter().filter(|n| n.ready && !n.unschedulable).map(|n| n.name.as_str()).collect();
    let mut objects = Vec::new();
    for o in cache.of_kind("ringleader.io/v1alpha1", "Node") {
        if !ready.contains(o.key.name.as_str()) || skip.is_invalid(&o.key) {
            continue;
        }
        let mut v = o.object.clone();
        // Device use comes from the pods themselves, not from a cluster file.
        if let Some(st) = v.get_mut("status").and_then(Value::as_object_mut) {
            st.remove("allocatedDevices");
        }
        if let Ok(r) = Resource::from_value(&v) {
            objects.push(r);
        }
    }
    for (api, kind) in [("scheduling.volcano.sh/v1beta1", "Queue"), ("scheduling.k8s.io/v1", "PriorityClass")] {
        objects.extend(cache.of_kind(api, kind).filter_map(|o| Resource::from_value(&o.object).ok()));
    }
    // An object the scheduler cannot model is left out, never the whole
    // snapshot. The pass's `invalid` check found (and marks) those already;
    // should the scheduler still refuse one, it is dropped too. Each round
    // drops at least one object, so this ends.
    for _ in 0..=objects.len() {
        let errs = match Snapshot::from_resources(&objects, Vec::new()) {
            Ok(mut snapshot) => {
                snapshot.pending = pending;
                return Ok(snapshot);
            }
            Err(errs) => errs,
        };
        let bad: BTreeSet<usize> = errs.iter().map(|(i, _)| *i).collect();
        for (i, e) in &errs {
            let name = objects.get(*i).map(Resource::name).unwrap_or_default();
            tracing::warn!(object = name, problem = %e, "left out of the scheduling snapshot");
        }
        if bad.is_empty() {
            break;
        }
        let mut index = 0;
        objects.retain(|_| {
            index += 1;
            !bad.contains(&(index - 1))
        });
    }
    Err(ManagerError::Internal("cluster snapshot: the scheduler refused every subset of the cluster".to_string()))
}

/// Gangs holding devices: every live pod bound to a ready node, grouped by job.
fn running(
    all_jobs: &[JobObject],
    pods_by_owner: &HashMap<String, Vec<Arc<Stored>>>,
    snapshot: &Snapshot,
) -> Vec<Running> {
    let index: HashMap<&str, usize> =
        snapshot.cluster.nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i)).collect();
    let mut out = Vec::new();
    for job in all_jobs {
        let pods = pods_by_owner.get(job.uid()).map(Vec::as_slice).unwrap_or_default();
        let running_pods: Vec<RunningPod> = pods
            .iter()
            .filter(|p| pods::phase_of(&p.object).is_live())
            .filter_map(|p| {
                let n = *index.get(pods::node_of(&p.object)?)?;
                let profile = &snapshot.cluster.nodes[n].profile;
                let ids = pods::devices_of(&p.object);
                let devices = DeviceSet::from_indices(
                    ids.iter().filter_map(|id| profile.devices.iter().position(|d| d.id == *id)),
                );
                // A vNPU pod takes only its template's share of its chip, so a
                // later pass packs the chip as one pass placing both would.
                Some(RunningPod {
                    name: str_at(&p.object, &["metadata", "name"])?.to_string(),
                    node: n,
                    devices,
                    share: held_use(profile, &annotations_of(&p.object)),
                    vnpu: ringleader_scheduler::place::vnpu::mode_of(&annotations_of(&p.object)),
                })
            })
            .collect();
        if running_pods.is_empty() {
            continue;
        }
        let model = &job.state.job;
        out.push(Running {
            namespace: model.namespace.clone(),
            name: model.name.clone(),
            queue: model.scheduling.queue.clone(),
            priority_class: model.scheduling.priority_class.clone(),
            priority: None,
            vip: model.annotations.contains_key(ringleader_scheduler::vip::VIP),
            pods: running_pods,
        });
    }
    out
}

/// A pod's string annotations, as the scheduler's placements carry them.
fn annotations_of(pod: &Value) -> BTreeMap<String, String> {
    pod.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .map(|a| a.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
        .unwrap_or_default()
}

/// The pods no job owns that wait for a node (`kubectl run`, a bare
/// manifest), each with the job model the scheduler places it as: a
/// batch/v1 Job of one built from the pod (its queue, priority, resources,
/// affinity, tolerations and annotations), or why it cannot be one.
fn bare_pods<'c>(cache: &'c Cache, all_jobs: &[JobObject]) -> Vec<(&'c Stored, Result<Job, String>)> {
    let jobs: std::collections::HashSet<&str> = all_jobs.iter().map(JobObject::uid).collect();
    let mut out = Vec::new();
    for p in cache.of_kind("v1", "Pod") {
        // Bound pods (nearly all, in a busy cluster) are passed over first.
        let waiting = pods::node_of(&p.object).is_none()
            && !pods::deleting(&p.object)
            && pods::phase_of(&p.object) == PodPhase::Pending;
        // A pod of a job the manager cannot model (or not yet) is its job's.
        if !waiting
            || pods::owner_uid(&p.object).is_some_and(|uid| jobs.contains(uid))
            || pods::observe(&p.object).is_some()
        {
            continue;
        }
        out.push((p, bare_model(&p.object)));
    }
    out
}

/// A pod as a batch/v1 Job of one: its metadata and spec as the template.
/// The model's name is `pod:<name>`, which no job can have, so the gang's
/// key is the pod's alone; its one pod is `<name>-0` to the scheduler.
fn bare_model(pod: &Value) -> Result<Job, String> {
    let meta = pod.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let pick = |field: &str| meta.get(field).cloned().unwrap_or_else(|| json!({}));
    let mut spec = pod.get("spec").cloned().unwrap_or_else(|| json!({}));
    // A Job's template must not restart forever; placing it does not care.
    spec["restartPolicy"] = json!("Never");
    let object = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"),
                     "labels": pick("labels"), "annotations": pick("annotations")},
        "spec": {"template": {"metadata": {"labels": pick("labels"), "annotations": pick("annotations")}, "spec": spec}},
    });
    let resource = Resource::from_value(&object).map_err(|e| format!("the pod cannot be placed: {e}"))?;
    let mut model = Job::from_resource(&resource).ok_or_else(|| "the pod cannot be placed".to_string())?;
    model.name = format!("pod:{}", model.name);
    Ok(model)
}

/// A `FailedScheduling` Event on a pod no job owns.
fn rec_failed(rec: &mut Recorder, pod: &Stored, why: &str) {
    rec.observed(&pod.object, events::EventType::Warning, "FailedScheduling", why.to_string());
}

/// Marks allocated the devices of live bound pods no modelled job owns — a
/// job skipped because it does not parse, an orphan still terminating, a
/// pod made by hand — so no binding lands on a device one of them holds.
fn held_outside_jobs(cache: &Cache, all_jobs: &[JobObject], snapshot: &mut Snapshot) {
    let jobs: std::collections::HashSet<&str> = all_jobs.iter().map(JobObject::uid).collect();
    let index: HashMap<String, usize> =
        snapshot.cluster.nodes.iter().enumerate().map(|(i, n)| (n.name.clone(), i)).collect();
    for p in cache.of_kind("v1", "Pod") {
        if pods::owner_uid(&p.object).is_some_and(|uid| jobs.contains(uid)) || !pods::phase_of(&p.object).is_live() {
            continue;
        }
        let Some(&n) = pods::node_of(&p.object).and_then(|name| index.get(name)) else { continue };
        let node = &snapshot.cluster.nodes[n];
        let ids = pods::devices_of(&p.object);
        let held =
            DeviceSet::from_indices(ids.iter().filter_map(|id| node.profile.devices.iter().position(|d| d.id == *id)));
        let annotations = annotations_of(&p.object);
        let share = held_use(&node.profile, &annotations);
        let vnpu = ringleader_scheduler::place::vnpu::mode_of(&annotations);
        RunningPod { name: String::new(), node: n, devices: held, share, vnpu }.occupy(&mut snapshot.cluster);
    }
}

/// A PodGroup status patch when phase or explanation changed.
fn podgroup_status(cache: &Cache, job: &Job, phase: &str, reason: Option<&str>, now: f64) -> Option<Op> {
    let key = ObjectKey::new("scheduling.volcano.sh/v1beta1", "PodGroup", &job.namespace, &job.name);
    let pg = cache.get(&key)?;
    let status = pg.object.get("status");
    let old_phase = status.and_then(|s| s.get("phase")).and_then(Value::as_str);
    let old_reason = status
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Unschedulable")))
        .and_then(|c| c.get("message"))
        .and_then(Value::as_str);
    if old_phase == Some(phase) && old_reason == reason {
        return None;
    }
    let conditions = match reason {
        Some(r) => json!([{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                           "message": r, "lastTransitionTime": rfc3339(now)}]),
        None => json!([]),
    };
    Some(Op::Patch { key, patch: json!({"status": {"phase": phase, "conditions": conditions}}), expected: None })
}
