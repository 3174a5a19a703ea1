//! Kubernetes `v1 Event`s for what the manager decides: bindings, evictions
//! and "why pending" from the scheduler loop; pods created and deleted,
//! phase transitions and restarts from the job controller; NotReady nodes.
//!
//! Events ride in the same store batch as the writes they describe (a gang
//! of 5,000 pods is bound in one transaction, with its 5,000 `Scheduled`
//! events). They are aggregated as client-go's correlator does: one object
//! per (involved object, source, type, reason, message) whose name is
//! `<involved-name>.<hash of that identity>`, so a repeat is found with one
//! cache lookup and bumps `count` and `lastTimestamp` instead of adding an
//! object. Conditions the manager re-observes on every pass (a job still
//! unschedulable for the same reason) are bumped at most once per
//! [`REPEAT_AFTER`]: a quiet cluster writes nothing. Events older than the
//! TTL are deleted by [`expire`].

use crate::cache::{str_at, Cache};
use crate::job_object::JobObject;
use crate::writes;
use crate::ManagerError;
use ringleader_api::model::JobKind;
use ringleader_api::time::{parse_rfc3339, rfc3339};
use ringleader_controller::lifecycle::{JobStatus, Phase};
use ringleader_controller::Action;
use ringleader_scheduler::session::Eviction;
use ringleader_store::{Backend, Failed, ObjectKey, Op, StoreError, Stored};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};

/// `source.component` of the scheduler loop's events.
pub const SCHEDULER: &str = "ringleader-scheduler";
/// `source.component` of the job controller's and node lifecycle's events.
pub const CONTROLLER: &str = "ringleader-controller";

/// Seconds before a re-observed, unchanged condition counts again.
pub const REPEAT_AFTER: f64 = 60.0;

/// Seconds between two TTL sweeps.
pub const EXPIRY_INTERVAL: f64 = 60.0;

/// Distinct messages of one (object, type, reason) a batch writes as events
/// of their own; further ones are counted in one combined event, as
/// client-go's aggregator does (its default is 10 as well). A gang's 5,000
/// `SuccessfulCreatePod` make 11 events, not 5,000.
pub const MAX_SIMILAR: usize = 10;

/// Prefix of a combined event's message (client-go's wording).
const COMBINED: &str = "(combined from similar events): ";

/// `type` of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something the user may need to act upon.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

struct Pending {
    key: ObjectKey,
    involved: Value,
    kind: EventType,
    reason: String,
    message: String,
    occurrences: u64,
    /// A level-triggered condition: rate-limited by [`REPEAT_AFTER`].
    repeat: bool,
    /// Stands for similar events: its message follows the latest of them.
    combined: bool,
    /// The write the event describes; when the batch has to be retried op
    /// by op, the event goes only if that write took effect.
    subject: Option<ObjectKey>,
}

/// Events of one component waiting for the batch they belong to.
pub struct Recorder {
    component: &'static str,
    pending: Vec<Pending>,
    index: HashMap<ObjectKey, usize>,
    /// Distinct messages so far per (object, type, reason) hash.
    similar: HashMap<u64, usize>,
}

impl Recorder {
    /// An empty recorder for events from `component`.
    pub fn new(component: &'static str) -> Recorder {
        Recorder { component, pending: Vec::new(), index: HashMap::new(), similar: HashMap::new() }
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Something that happened once (each call counts).
    pub fn occurred(
        &mut self,
        object: &Value,
        kind: EventType,
        reason: &str,
        message: String,
        subject: Option<&ObjectKey>,
    ) {
        self.add(object, kind, reason, message, false, subject);
    }

    /// A state seen again on each pass (counts at most once per [`REPEAT_AFTER`]).
    pub fn observed(&mut self, object: &Value, kind: EventType, reason: &str, message: String) {
        self.add(object, kind, reason, message, true, None);
    }

    fn add(
        &mut self,
        object: &Value,
        kind: EventType,
        reason: &str,
        message: String,
        repeat: bool,
        subject: Option<&ObjectKey>,
    ) {
        let Some(name) = str_at(object, &["metadata", "name"]) else { return };
        let namespace = str_at(object, &["metadata", "namespace"]).unwrap_or_default();
        let uid = str_at(object, &["metadata", "uid"]).unwrap_or_default();
        let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        let object_kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
        let similar =
            fnv1a(FNV_START, &[api_version, object_kind, namespace, name, uid, self.component, kind.as_str(), reason]);
        let id = fnv1a(similar, &[&message]);
        // Cluster-scoped objects' events live in `default`, as Kubernetes files node events.
        let event_ns = if namespace.is_empty() { "default" } else { namespace };
        let key = ObjectKey::new("v1", "Event", event_ns, &format!("{name}.{id:016x}"));
        if let Some(&i) = self.index.get(&key) {
            self.pending[i].occurrences += 1;
            return;
        }
        let (key, message, combined, subject) = match self.similar.get(&similar) {
            Some(&n) if n >= MAX_SIMILAR && !repeat => {
                // The hash without a message never equals one with: its own object.
                let key = ObjectKey::new("v1", "Event", event_ns, &format!("{name}.{similar:016x}"));
                let message = format!("{COMBINED}{message}");
                if let Some(&i) = self.index.get(&key) {
                    let p = &mut self.pending[i];
                    p.occurrences += 1;
                    p.message = message;
                    return;
                }
                (key, message, true, None)
            }
            _ => {
                *self.similar.entry(similar).or_insert(0) += 1;
                (key, message, false, subject)
            }
        };
        let mut involved = json!({"apiVersion": api_version, "kind": object_kind, "name": name, "uid": uid});
        if !namespace.is_empty() {
            involved["namespace"] = json!(namespace);
        }
        self.index.insert(key.clone(), self.pending.len());
        self.pending.push(Pending {
            key,
            involved,
            kind,
            reason: reason.to_string(),
            message,
            occurrences: 1,
            repeat,
            combined,
            subject: subject.cloned(),
        });
    }

    /// The writes: a create for a new event, a count bump for a repeat, and
    /// nothing for a condition bumped less than [`REPEAT_AFTER`] ago.
    fn into_ops(self, cache: &Cache, now: f64) -> Vec<(Op, Option<ObjectKey>)> {
        let stamp = rfc3339(now);
        let component = self.component;
        let mut out = Vec::with_capacity(self.pending.len());
        for p in self.pending {
            let op = match cache.get(&p.key) {
                Some(old) => {
                    let last = str_at(&old.object, &["lastTimestamp"]).and_then(parse_rfc3339).unwrap_or(0.0);
                    if p.repeat && now - last < REPEAT_AFTER {
                        continue;
                    }
                    let count = old.object.get("count").and_then(Value::as_u64).unwrap_or(1);
                    let add = if p.repeat { 1 } else { p.occurrences };
                    let mut patch = json!({"count": count + add, "lastTimestamp": stamp});
                    if p.combined {
                        patch["message"] = json!(p.message);
                    }
                    Op::Patch { key: p.key, patch, expected: None }
                }
                None => Op::Create(json!({
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": {"name": p.key.name, "namespace": p.key.namespace},
                    "involvedObject": p.involved,
                    "reason": p.reason,
                    "message": p.message,
                    "type": p.kind.as_str(),
                    "count": p.occurrences,
                    "firstTimestamp": stamp,
                    "lastTimestamp": stamp,
                    "source": {"component": component},
                    "reportingComponent": component,
                    "reportingInstance": component,
                })),
            };
            out.push((op, p.subject));
        }
        out
    }
}

const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// 64-bit FNV-1a over the parts, continuing from `h` (a separator between
/// them keeps `ab|c` and `a|bc` apart): a stable name suffix without a
/// hashing dependency.
fn fnv1a(mut h: u64, parts: &[&str]) -> u64 {
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// [`writes::write`] of `ops` with the recorder's events in the same batch.
/// When the batch fails because the cache lagged, the decisions are retried
/// as `writes::write` does, and an event tied to a write goes only if that
/// write took effect.
pub fn write(
    store: &dyn Backend,
    cache: &mut Cache,
    ops: Vec<Op>,
    events: Recorder,
    now: f64,
) -> Result<(), ManagerError> {
    write_all(store, cache, ops, vec![events], now)
}

/// [`write`] of several recorders' events (each about its own objects,
/// such as one job's each) with `ops`, all in one batch.
pub fn write_all(
    store: &dyn Backend,
    cache: &mut Cache,
    ops: Vec<Op>,
    recorders: Vec<Recorder>,
    now: f64,
) -> Result<(), ManagerError> {
    if recorders.iter().all(Recorder::is_empty) {
        return writes::write(store, cache, ops);
    }
    let events: Vec<(Op, Option<ObjectKey>)> = recorders.into_iter().flat_map(|r| r.into_ops(cache, now)).collect();
    if events.is_empty() {
        return writes::write(store, cache, ops);
    }
    let decisions = ops.len();
    let mut all = ops;
    let mut subjects = Vec::with_capacity(events.len());
    for (op, subject) in events {
        all.push(op);
        subjects.push(subject);
    }
    match writes::batch_or_back(store, cache, all).map_err(|failed| *failed) {
        Ok(()) => Ok(()),
        Err(Failed { error: StoreError::Io(e), .. }) => Err(ManagerError::Store(StoreError::Io(e))),
        Err(Failed { ops: mut all, .. }) => {
            let event_ops = all.split_off(decisions);
            let gone: BTreeSet<ObjectKey> = all
                .iter()
                .filter_map(|o| match o {
                    Op::Delete { key, .. } => Some(key.clone()),
                    _ => None,
                })
                .collect();
            let before = store.version();
            writes::write(store, cache, all)?;
            let took_effect = |key: &ObjectKey| {
                if gone.contains(key) {
                    cache.get(key).is_none()
                } else {
                    cache.get(key).is_some_and(|o| o.resource_version > before)
                }
            };
            let kept: Vec<Op> = event_ops
                .into_iter()
                .zip(subjects)
                .filter(|(_, s)| s.as_ref().is_none_or(took_effect))
                .map(|(op, _)| op)
                .collect();
            writes::write(store, cache, kept)
        }
    }
}

/// Deletes, in one batch, the events whose `lastTimestamp` (or, lacking
/// one, creation) is more than `ttl` seconds before `now`. Returns how many.
pub fn expire(store: &dyn Backend, cache: &mut Cache, ttl: f64, now: f64) -> Result<usize, ManagerError> {
    let ops: Vec<Op> = cache
        .of_kind("v1", "Event")
        .filter(|e| {
            let o = &e.object;
            let last = str_at(o, &["lastTimestamp"])
                .or_else(|| str_at(o, &["eventTime"]))
                .or_else(|| str_at(o, &["metadata", "creationTimestamp"]))
                .and_then(parse_rfc3339);
            last.is_some_and(|t| now - t > ttl)
        })
        .map(|e| Op::Delete { key: e.key.clone(), expected: None })
        .collect();
    let n = ops.len();
    writes::write(store, cache, ops)?;
    Ok(n)
}

/// `Scheduled` on a pod the scheduler bound.
pub fn scheduled(rec: &mut Recorder, pod: &Stored, node: &str, devices: &[String]) {
    let mut message = format!("Successfully assigned {}/{} to {node}", pod.key.namespace, pod.key.name);
    if !devices.is_empty() {
        message.push_str(&format!(" (devices {})", devices.join(",")));
    }
    rec.occurred(&pod.object, EventType::Normal, "Scheduled", message, Some(&pod.key));
}

/// `Scheduled` on a job for the pods of its gang bound beyond the first
/// [`MAX_SIMILAR`] (which have one each) in one scheduling decision.
pub fn scheduled_gang(rec: &mut Recorder, job: &JobObject, more: usize, nodes: usize) {
    let model = &job.state.job;
    let message = format!(
        "Successfully assigned {more} more pods of {}/{} to {nodes} nodes (the first {MAX_SIMILAR} have an Event each)",
        model.namespace, model.name
    );
    rec.occurred(&job.stored.object, EventType::Normal, "Scheduled", message, None);
}

/// `Preempted` (priority) or `Evicted` (queue reclaim, VIP) on a pod the
/// scheduler evicted, naming the job it made room for.
pub fn evicted(rec: &mut Recorder, pod: &Stored, e: &Eviction) {
    let reason = if e.reason.starts_with("preempted") { "Preempted" } else { "Evicted" };
    let message = if e.reason.contains(&e.preempted_by) {
        format!("Evicted from node {}: {}", e.node, e.reason)
    } else {
        format!("Evicted from node {}: {} {}", e.node, e.reason, e.preempted_by)
    };
    rec.occurred(&pod.object, EventType::Warning, reason, message, Some(&pod.key));
}

/// `FailedScheduling` on a job the scheduler could not place, and Volcano's
/// `Unschedulable` on its PodGroup, with the scheduler's explanation.
pub fn unschedulable(rec: &mut Recorder, cache: &Cache, job: &JobObject, why: &str) {
    rec.observed(&job.stored.object, EventType::Warning, "FailedScheduling", why.to_string());
    let model = &job.state.job;
    let key = ObjectKey::new("scheduling.volcano.sh/v1beta1", "PodGroup", &model.namespace, &model.name);
    if let Some(pg) = cache.get(&key) {
        rec.observed(&pg.object, EventType::Warning, "Unschedulable", why.to_string());
    }
}

fn kubeflow_style(job: &JobObject) -> bool {
    matches!(job.state.job.kind, JobKind::PyTorchJob | JobKind::TfJob | JobKind::MpiJob | JobKind::AscendJob)
}

/// `SuccessfulCreatePod` (training operators, Volcano) or `SuccessfulCreate`
/// (Deployments' ReplicaSets, batch Jobs) on the job.
pub fn pod_created(rec: &mut Recorder, job: &JobObject, pod: &str) {
    let key = ObjectKey::new("v1", "Pod", &job.state.job.namespace, pod);
    let reason = if job.state.job.kind.independent_replicas() { "SuccessfulCreate" } else { "SuccessfulCreatePod" };
    rec.occurred(&job.stored.object, EventType::Normal, reason, format!("Created pod: {pod}"), Some(&key));
}

/// `FailedCreatePod` / `FailedCreate` on the job: a pod it cannot make, and why
/// (seen again each pass, so counted at most once a while).
pub fn failed_create(rec: &mut Recorder, job: &JobObject, why: &str) {
    let reason = if job.state.job.kind.independent_replicas() { "FailedCreate" } else { "FailedCreatePod" };
    rec.observed(&job.stored.object, EventType::Warning, reason, format!("Error creating: {why}"));
}

/// `SuccessfulDeletePod` / `SuccessfulDelete` on the job, with why.
pub fn pod_deleted(rec: &mut Recorder, job: &JobObject, pod: &ObjectKey, why: &str) {
    let reason = if job.state.job.kind.independent_replicas() { "SuccessfulDelete" } else { "SuccessfulDeletePod" };
    let message = if why.is_empty() {
        format!("Deleted pod: {}", pod.name)
    } else {
        format!("Deleted pod: {} ({why})", pod.name)
    };
    rec.occurred(&job.stored.object, EventType::Normal, reason, message, Some(pod));
}

/// The phase transition among a reconcile's actions, if any (see
/// [`transition`]). Recorded before the actions' own events: the job is
/// created before its pods, restarts before they are deleted.
pub fn transitions(rec: &mut Recorder, job: &JobObject, actions: &[Action]) {
    for a in actions {
        if let Action::WriteStatus(st) = a {
            transition(rec, job, st);
        }
    }
}

/// A phase transition of the job (or a new reason within a phase: a pod
/// rescheduled, a restart) as the reference operators report it: the
/// training operators' `<Kind>Created|Running|Restarting|Succeeded|Failed`
/// (the controller's own reason goes into the message), the controller's
/// reason (Volcano actions, `BackoffLimitExceeded` …) for the other kinds.
pub fn transition(rec: &mut Recorder, job: &JobObject, new: &JobStatus) {
    let old = &job.state.status;
    if old.phase == new.phase && old.reason == new.reason {
        return;
    }
    let condition = match new.phase {
        Phase::Pending if new.reason == "Created" => Some("Created"),
        // Pods restarted in place: Kubeflow reports the job as restarting.
        Phase::Running if matches!(new.reason.as_str(), "RestartPod" | "RestartTask" | "PodRescheduling") => {
            Some("Restarting")
        }
        Phase::Running => Some("Running"),
        Phase::Restarting => Some("Restarting"),
        Phase::Completed => Some("Succeeded"),
        Phase::Failed | Phase::Aborted | Phase::Terminated => Some("Failed"),
        _ => None,
    };
    let warning =
        matches!(new.phase, Phase::Failed | Phase::Aborting | Phase::Aborted | Phase::Terminating | Phase::Terminated)
            || (new.phase == Phase::Restarting && new.reason != "ElasticScaleUp")
            || matches!(new.reason.as_str(), "PodRescheduling" | "RestartPod" | "RestartTask");
    let plain = if new.reason.is_empty() { new.phase.as_str() } else { new.reason.as_str() };
    let (reason, prefixed) = match condition {
        Some(c) if kubeflow_style(job) => (format!("{}{c}", job.stored.key.kind), plain != c),
        _ => (plain.to_string(), false),
    };
    let body = if new.message.is_empty() {
        format!("{} {} is {}", job.stored.key.kind, job.stored.key.name, new.phase.as_str())
    } else {
        new.message.clone()
    };
    let message = if prefixed { format!("{plain}: {body}") } else { body };
    let kind = if warning { EventType::Warning } else { EventType::Normal };
    rec.occurred(&job.stored.object, kind, &reason, message, Some(&job.stored.key));
}

/// `BackOff` (Warning) on a failed pod whose restart waits, in the kubelet's
/// words: `Back-off restarting failed container <c> in pod <name>_<ns>(<uid>)`.
pub fn back_off(rec: &mut Recorder, pod: &Stored, shown: &crate::pods::BackOffShown) {
    let message = format!("Back-off restarting failed container {} in pod {}", shown.container, shown.pod);
    rec.occurred(&pod.object, EventType::Warning, "BackOff", message, Some(&pod.key));
}

/// `NodeLost` (Warning) on a pod marked Failed because its node stayed
/// NotReady beyond the toleration.
pub fn node_lost(rec: &mut Recorder, pod: &Stored, message: &str) {
    rec.occurred(&pod.object, EventType::Warning, "NodeLost", message.to_string(), Some(&pod.key));
}

/// `NodeNotReady` on a node whose agent stopped heartbeating for longer
/// than `timeout` seconds (the message stays the same from one outage to the
/// next, so they add up in one event's count).
pub fn node_not_ready(rec: &mut Recorder, node: &Stored, timeout: f64) {
    let message = format!(
        "Node {} status is now: NodeNotReady (no heartbeat for more than {} s)",
        node.key.name,
        timeout.max(0.0).round() as u64
    );
    rec.occurred(&node.object, EventType::Normal, "NodeNotReady", message, Some(&node.key));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, uid: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "default", "uid": uid}})
    }

    impl Recorder {
        fn ops_for_test(self, cache: &Cache, now: f64) -> Vec<Op> {
            self.into_ops(cache, now).into_iter().map(|(o, _)| o).collect()
        }
    }

    fn op_object(op: &Op) -> &Value {
        match op {
            Op::Create(v) => v,
            other => panic!("expected a create, got {other:?}"),
        }
    }

    #[test]
    fn an_event_has_the_kubernetes_shape_and_a_stable_name() {
        let mut rec = Recorder::new(SCHEDULER);
        rec.occurred(&pod("p-0", "u1"), EventType::Normal, "Scheduled", "to n1".into(), None);
        let ops = rec.into_ops(&Cache::default(), 1_795_428_000.0);
        assert_eq!(ops.len(), 1);
        let e = op_object(&ops[0].0);
        let name = e["metadata"]["name"].as_str().expect("name");
        let (base, suffix) = name.split_once('.').expect("dot");
        assert_eq!(base, "p-0");
        assert_eq!(suffix.len(), 16);
        assert!(suffix.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(e["metadata"]["namespace"], "default");
        assert_eq!(
            e["involvedObject"],
            json!({"apiVersion": "v1", "kind": "Pod", "name": "p-0", "namespace": "default", "uid": "u1"})
        );
        assert_eq!(
            (e["type"].as_str(), e["reason"].as_str(), e["count"].as_u64()),
            (Some("Normal"), Some("Scheduled"), Some(1))
        );
        assert_eq!(e["firstTimestamp"], "2026-11-23T10:00:00Z");
        assert_eq!(e["lastTimestamp"], e["firstTimestamp"]);
        assert_eq!(e["source"]["component"], SCHEDULER);
        assert_eq!(e["reportingComponent"], SCHEDULER);

        // Same identity: same name; another uid (a recreated pod): another event.
        let mut again = Recorder::new(SCHEDULER);
        again.occurred(&pod("p-0", "u1"), EventType::Normal, "Scheduled", "to n1".into(), None);
        again.occurred(&pod("p-0", "u2"), EventType::Normal, "Scheduled", "to n1".into(), None);
        let ops2 = again.into_ops(&Cache::default(), 0.0);
        assert_eq!(op_object(&ops2[0].0)["metadata"]["name"], name);
        assert_ne!(op_object(&ops2[1].0)["metadata"]["name"], name);
    }

    #[test]
    fn repeats_in_one_batch_are_one_event_with_a_count() {
        let mut rec = Recorder::new(CONTROLLER);
        for _ in 0..3 {
            rec.occurred(&pod("j", "u"), EventType::Normal, "SuccessfulDeletePod", "Deleted pod: j-0".into(), None);
        }
        let ops = rec.into_ops(&Cache::default(), 0.0);
        assert_eq!(ops.len(), 1);
        assert_eq!(op_object(&ops[0].0)["count"], 3);
    }

    #[test]
    fn similar_events_beyond_ten_are_combined_into_one() {
        let record = |from: usize, to: usize| {
            let mut rec = Recorder::new(CONTROLLER);
            for i in from..to {
                let message = format!("Created pod: j-worker-{i}");
                rec.occurred(&pod("j", "u"), EventType::Normal, "SuccessfulCreatePod", message, None);
            }
            rec
        };
        let ops = record(0, 25).ops_for_test(&Cache::default(), 0.0);
        assert_eq!(ops.len(), MAX_SIMILAR + 1);
        let combined = op_object(&ops[MAX_SIMILAR]);
        assert_eq!(combined["message"], "(combined from similar events): Created pod: j-worker-24");
        assert_eq!(combined["count"], 15);
        assert_eq!(op_object(&ops[9])["message"], "Created pod: j-worker-9");
        assert_eq!(op_object(&ops[9])["count"], 1);

        // A later batch of the same kind bumps the combined event and takes its message.
        let mut cache = Cache::default();
        let object = combined.clone();
        cache.put(Stored { key: ObjectKey::of(&object).expect("key"), resource_version: 1, object });
        let ops = record(100, 112).ops_for_test(&cache, 5.0);
        assert_eq!(ops.len(), MAX_SIMILAR + 1);
        match &ops[MAX_SIMILAR] {
            Op::Patch { key, patch, .. } => {
                assert_eq!(key.name, combined["metadata"]["name"].as_str().expect("name"));
                assert_eq!(patch["count"], 17);
                assert_eq!(patch["message"], "(combined from similar events): Created pod: j-worker-111");
            }
            other => panic!("expected a patch, got {other:?}"),
        }
        // Conditions are never combined: each explanation is worth reading.
        let mut rec = Recorder::new(SCHEDULER);
        for i in 0..20 {
            rec.observed(&pod("j", "u"), EventType::Warning, "FailedScheduling", format!("reason {i}"));
        }
        assert_eq!(rec.ops_for_test(&Cache::default(), 0.0).len(), 20);
    }

    #[test]
    fn a_known_event_is_bumped_and_a_recent_condition_is_left_alone() {
        let now = 1_795_428_000.0;
        let mut rec = Recorder::new(SCHEDULER);
        rec.observed(&pod("j", "u"), EventType::Warning, "FailedScheduling", "no room".into());
        let (op, _) = rec.into_ops(&Cache::default(), now).pop().expect("one");
        let mut cache = Cache::default();
        let object = op_object(&op).clone();
        cache.put(Stored { key: ObjectKey::of(&object).expect("key"), resource_version: 1, object });

        let condition = |at: f64| {
            let mut rec = Recorder::new(SCHEDULER);
            rec.observed(&pod("j", "u"), EventType::Warning, "FailedScheduling", "no room".into());
            rec.into_ops(&cache, at)
        };
        assert!(condition(now + REPEAT_AFTER - 1.0).is_empty(), "seen again too soon: no write");
        match &condition(now + REPEAT_AFTER).first().expect("bump").0 {
            Op::Patch { patch, .. } => {
                assert_eq!(patch["count"], 2);
                assert_eq!(patch["lastTimestamp"], rfc3339(now + REPEAT_AFTER));
            }
            other => panic!("expected a patch, got {other:?}"),
        }
        // The same identity as an occurrence counts at once.
        let mut rec = Recorder::new(SCHEDULER);
        rec.occurred(&pod("j", "u"), EventType::Warning, "FailedScheduling", "no room".into(), None);
        assert!(matches!(rec.into_ops(&cache, now + 1.0).first(), Some((Op::Patch { .. }, _))));
    }

    #[test]
    fn an_event_goes_only_with_the_write_it_describes_when_the_batch_is_retried() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ringleader_store::Store::open(dir.path()).expect("open");
        let a = store.create(pod("a", "")).expect("pod");
        let b = store.create(pod("b", "")).expect("pod");
        let mut cache = Cache::default();
        cache.load(vec![a.clone(), b.clone()]);
        // `a` changes behind the cache's back: its binding conflicts.
        store.patch(&a.key, &json!({"metadata": {"labels": {"x": "y"}}}), None).expect("patch");
        let bind = |p: &Stored| Op::Patch {
            key: p.key.clone(),
            patch: json!({"spec": {"nodeName": "n1"}}),
            expected: Some(p.resource_version),
        };
        let mut rec = Recorder::new(SCHEDULER);
        scheduled(&mut rec, &a, "n1", &[]);
        scheduled(&mut rec, &b, "n1", &[]);
        rec.occurred(&pod("c", "u"), EventType::Normal, "Other", "untied".into(), None);
        write(&store, &mut cache, vec![bind(&a), bind(&b)], rec, 0.0).expect("write");

        let (events, _) = store.list(&ringleader_store::Selector::kind("v1", "Event")).expect("list");
        let mut about: Vec<&str> =
            events.iter().filter_map(|e| str_at(&e.object, &["involvedObject", "name"])).collect();
        about.sort_unstable();
        assert_eq!(about, ["b", "c"], "no Scheduled event for the binding that failed");
        assert!(store.get(&b.key).expect("get").is_some_and(|p| p.object["spec"]["nodeName"] == "n1"));
        assert!(cache.get(&events[0].key).is_some(), "the cache saw the events");
    }

    #[test]
    fn event_changes_never_call_for_a_pass() {
        let event = json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "j.1", "namespace": "default", "uid": "e1"},
            "involvedObject": {"kind": "PyTorchJob", "name": "j", "uid": "job-uid"}});
        let stored = Stored { key: ObjectKey::of(&event).expect("key"), resource_version: 7, object: event };
        let mut cache = Cache::default();
        let mut dirty = crate::Dirty::Some(BTreeSet::new());
        let watched = ringleader_store::Event {
            kind: ringleader_store::EventType::Added,
            object: std::sync::Arc::new(stored.clone()),
        };
        assert!(!crate::dirty::note(&mut cache, &mut dirty, &watched), "no pass for an event");
        assert!(matches!(&dirty, crate::Dirty::Some(s) if s.is_empty()), "{dirty:?}");
        assert!(cache.get(&stored.key).is_some(), "but the cache knows it (for aggregation)");
    }

    #[test]
    fn node_events_go_to_the_default_namespace() {
        let node =
            json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n1", "uid": "x"}});
        let mut rec = Recorder::new(CONTROLLER);
        rec.occurred(&node, EventType::Normal, "NodeNotReady", "gone".into(), None);
        let ops = rec.into_ops(&Cache::default(), 0.0);
        let e = op_object(&ops[0].0);
        assert_eq!(e["metadata"]["namespace"], "default");
        assert!(e["involvedObject"].get("namespace").is_none());
    }
}
