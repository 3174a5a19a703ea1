//! Objects the manager cannot turn into its model — a Node with an unknown
//! profile or no spec, a job that does not parse, a pod whose controller
//! annotations do not — are left out of the pass while the rest of the
//! cluster goes on, and say why on themselves: a `Valid` condition False in
//! their status and a Warning `FailedValidation` Event, both written only
//! when that is news (a poison object costs one write, not one per pass;
//! the Event's count goes up if it breaks again the same way). Such objects
//! come from older versions or direct store writes: the API server refuses
//! them on write. Once an object is modelled again its condition turns True.
//! A Node no ringleader agent registered (a kubelet's, in Kubernetes mode)
//! is never marked: it is left out of placement when it offers no device
//! the scheduler models, with one summary log line for all of them.

use crate::cache::{annotation, at, Cache};
use crate::events::{self, EventType, Recorder};
use crate::job_object::JobObject;
use crate::pods::{PlanRef, DEVICES, PLAN};
use crate::ManagerError;
use ringleader_api::time::rfc3339;
use ringleader_api::Resource;
use ringleader_scheduler::k8s_node::{is_kubelet_node, HARDWARE_PROBLEM_ANNOTATION};
use ringleader_store::{Backend, ObjectKey, Op, Stored};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Condition type the manager keeps on objects it has checked.
pub const CONDITION: &str = "Valid";
/// Reason of the condition (False) and of the Warning Event.
pub const REASON: &str = "FailedValidation";
/// Reason of the condition once the object is modelled again.
const VALID_REASON: &str = "Validated";

/// Cluster objects the scheduler reads besides Nodes.
const SCHEDULING_KINDS: &[(&str, &str)] =
    &[("scheduling.volcano.sh/v1beta1", "Queue"), ("scheduling.k8s.io/v1", "PriorityClass")];

/// What one pass found: objects it skipped (and why), and objects it
/// checked and could model (whose old False condition, if any, is lifted).
#[derive(Debug, Default)]
pub struct Findings {
    /// Skipped objects: key → what is wrong, naming field, value and rule.
    pub invalid: BTreeMap<ObjectKey, String>,
    /// Checked and modelled.
    valid: BTreeSet<ObjectKey>,
    /// Of the skipped, Nodes another component keeps (a kubelet's): left
    /// out of scheduling like the others, but never written nor warned
    /// about one by one — a kubelet Node without accelerators is normal.
    foreign: BTreeSet<ObjectKey>,
}

impl Findings {
    /// Records an object skipped for `why`.
    pub fn skip(&mut self, key: &ObjectKey, why: impl Into<String>) {
        self.invalid.insert(key.clone(), why.into());
    }

    fn checked(&mut self, key: &ObjectKey) {
        self.valid.insert(key.clone());
    }

    /// Whether `key` was skipped.
    pub fn is_invalid(&self, key: &ObjectKey) -> bool {
        self.invalid.contains_key(key)
    }
}

/// Why a stored Node cannot be a scheduler node, if it cannot.
pub fn node_problem(object: &Value) -> Option<String> {
    let mut node = match Resource::from_value(object) {
        Ok(Resource::Node(n)) => n,
        Ok(other) => return Some(format!("kind: {}: not a Node", other.kind())),
        Err(e) => return Some(e.to_string()),
    };
    // As the scheduler's snapshot: device use comes from the pods, not from here.
    node.status.allocated_devices.clear();
    ringleader_scheduler::cluster::Node::from_object(&node).err().map(|errs| join(&errs))
}

fn join(errs: &[ringleader_api::FieldError]) -> String {
    errs.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// How many kubelet Nodes offered no device the scheduler models when it
/// was last said: the summary is logged when that number changes, not on
/// every pass nor once per Node.
static UNMODELLED_SAID: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Checks every Node, Queue and PriorityClass (there are few of them).
pub fn check_cluster(cache: &Cache, findings: &mut Findings) {
    let (mut unmodelled, mut example) = (0, None);
    let mut memo = match cache.node_problems.lock() {
        Ok(m) => m,
        // Each entry is checked against its Node's version: a stale one is redone.
        Err(poisoned) => poisoned.into_inner(),
    };
    let mut seen = 0;
    for n in cache.of_kind("ringleader.io/v1alpha1", "Node") {
        seen += 1;
        let problem = match memo.get(&n.key.name) {
            Some((rv, problem)) if *rv == n.resource_version => problem.clone(),
            _ => {
                let problem = node_problem(&n.object);
                memo.insert(n.key.name.clone(), (n.resource_version, problem.clone()));
                problem
            }
        };
        match problem {
            Some(why) if is_kubelet_node(&n.object) => {
                unmodelled += 1;
                let published = annotation(&n.object, HARDWARE_PROBLEM_ANNOTATION).unwrap_or(&why);
                example.get_or_insert_with(|| format!("{}: {published}", n.key.name));
                findings.skip(&n.key, why);
                findings.foreign.insert(n.key.clone());
            }
            Some(why) => findings.skip(&n.key, why),
            None => findings.checked(&n.key),
        }
    }
    if memo.len() > seen {
        let live: HashSet<&str> =
            cache.of_kind("ringleader.io/v1alpha1", "Node").map(|n| n.key.name.as_str()).collect();
        memo.retain(|name, _| live.contains(name.as_str()));
    }
    drop(memo);
    if UNMODELLED_SAID.swap(unmodelled, Ordering::Relaxed) != unmodelled && unmodelled > 0 {
        tracing::info!(
            nodes = unmodelled,
            example = example.unwrap_or_default(),
            "Nodes without a ringleader agent offer no device the scheduler models; they are left out of placement"
        );
    }
    for (api, kind) in SCHEDULING_KINDS {
        for o in cache.of_kind(api, kind) {
            match Resource::from_value(&o.object) {
                Ok(_) => findings.checked(&o.key),
                Err(e) => findings.skip(&o.key, e.to_string()),
            }
        }
    }
}

/// Job objects the job controller could not parse: those of a job kind that
/// are not among `parsed`. Parsed jobs that are `dirty` count as checked.
pub fn check_jobs(cache: &Cache, parsed: &[JobObject], dirty: &crate::Dirty, findings: &mut Findings) {
    let known: HashSet<&ObjectKey> = parsed.iter().map(|j| &j.stored.key).collect();
    for (api, kind) in ringleader_api::kinds::JOB_KINDS {
        for o in cache.of_kind(api, kind) {
            if known.contains(&o.key) {
                continue;
            }
            let why = match Resource::from_value(&o.object) {
                Err(e) => e.to_string(),
                Ok(_) => format!("{kind}: the job controller cannot model this object"),
            };
            findings.skip(&o.key, why);
        }
    }
    for job in parsed.iter().filter(|j| dirty.contains(j.uid())) {
        findings.checked(&job.stored.key);
    }
}

/// The uids of the skipped objects (a skipped job still owns its pods:
/// they must not be collected as orphans while it is broken).
pub fn invalid_uids(cache: &Cache, findings: &Findings) -> Vec<String> {
    findings
        .invalid
        .keys()
        .filter_map(|k| cache.get(k))
        .filter_map(|o| at(&o.object, &["metadata", "uid"]).and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// Why a job's pod cannot be observed, if it cannot: its controller
/// identity or its bound devices do not parse.
pub fn pod_problem(pod: &Value) -> Option<String> {
    if let Some(text) = annotation(pod, PLAN) {
        if let Err(e) = serde_json::from_str::<PlanRef>(text) {
            return Some(format!(
                "metadata.annotations[{PLAN}]: {}: not the job controller's pod identity \
                 (JSON with slot, role, index, generation, jobVersion): {e}",
                json!(text)
            ));
        }
    }
    if let Some(text) = annotation(pod, DEVICES) {
        if text.split(',').map(str::trim).filter(|d| !d.is_empty()).any(|d| d.parse::<u32>().is_err()) {
            return Some(format!(
                "metadata.annotations[{DEVICES}]: {}: device IDs are comma-separated non-negative integers",
                json!(text)
            ));
        }
    }
    None
}

/// Checks the pods of `jobs` (by owner uid).
pub fn check_pods<'a>(pods: impl Iterator<Item = &'a Arc<Stored>>, findings: &mut Findings) {
    for p in pods {
        match pod_problem(&p.object) {
            Some(why) => findings.skip(&p.key, why),
            None => findings.checked(&p.key),
        }
    }
}

/// The object's condition of type [`CONDITION`]: (status, message).
fn current(object: &Value) -> Option<(&str, &str)> {
    let c = at(object, &["status", "conditions"])?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(CONDITION))?;
    Some((c.get("status")?.as_str()?, c.get("message").and_then(Value::as_str).unwrap_or_default()))
}

/// The object's conditions with `condition` in place of any of its type.
fn with_condition(object: &Value, condition: Value) -> Value {
    let mut list: Vec<Value> = at(object, &["status", "conditions"])
        .and_then(Value::as_array)
        .map(|l| l.iter().filter(|c| c.get("type").and_then(Value::as_str) != Some(CONDITION)).cloned().collect())
        .unwrap_or_default();
    list.push(condition);
    Value::Array(list)
}

fn condition_op(o: &Stored, condition: Value) -> Op {
    Op::Patch {
        key: o.key.clone(),
        patch: json!({"status": {"conditions": with_condition(&o.object, condition)}}),
        // Pods' conditions are also the agent's: a write racing it is
        // retried on the pass its change brings. Nobody else writes the
        // conditions of the other kinds.
        expected: (o.key.kind == "Pod").then_some(o.resource_version),
    }
}

/// Writes the findings: a False condition and a Warning Event on each
/// skipped object whose condition does not already say the same, a True
/// condition on each checked object that had a False one.
pub fn write(store: &dyn Backend, cache: &mut Cache, findings: &Findings, now: f64) -> Result<(), ManagerError> {
    let stamp = rfc3339(now);
    let mut ops = Vec::new();
    let mut recorded = Recorder::new(events::CONTROLLER);
    for (key, why) in findings.invalid.iter().filter(|(k, _)| !findings.foreign.contains(*k)) {
        let Some(o) = cache.get(key) else { continue };
        if current(&o.object) == Some(("False", why.as_str())) {
            continue;
        }
        tracing::warn!(object = %key, problem = %why, "skipping an object the manager cannot model");
        let message = format!("{why} (the manager skips this object until it is fixed)");
        recorded.occurred(&o.object, EventType::Warning, REASON, message, Some(key));
        let condition = json!({"type": CONDITION, "status": "False", "reason": REASON, "message": why,
                               "lastTransitionTime": stamp});
        ops.push(condition_op(o, condition));
    }
    for key in findings.valid.iter().filter(|k| !findings.is_invalid(k)) {
        let Some(o) = cache.get(key) else { continue };
        // Only an object marked invalid before needs a write; that test
        // first, as this runs over every Node on every pass.
        if current(&o.object).is_none_or(|(status, _)| status != "False") || is_kubelet_node(&o.object) {
            continue;
        }
        let condition = json!({"type": CONDITION, "status": "True", "reason": VALID_REASON,
                               "message": "the manager models this object again", "lastTransitionTime": stamp});
        ops.push(condition_op(o, condition));
    }
    if ops.is_empty() {
        return Ok(());
    }
    events::write(store, cache, ops, recorded, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(spec: Value) -> Value {
        json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n"}, "spec": spec})
    }

    #[test]
    fn nodes_the_scheduler_cannot_model_are_named_with_field_and_value() {
        assert_eq!(node_problem(&node(json!({"profile": "hgx-h100-8"}))), None);
        let unknown = node_problem(&node(json!({"profile": "no-such-profile"}))).unwrap_or_default();
        assert!(
            unknown.starts_with("spec.profile: no-such-profile: unknown profile; built-in profiles: "),
            "{unknown}"
        );
        let none = node_problem(&json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
                                        "metadata": {"name": "n"}}))
        .unwrap_or_default();
        assert!(none.contains("spec.profile") && none.contains("exactly one of"), "{none}");
        let mut broken = node(json!({"profile": "hgx-h100-8"}));
        broken["status"] = json!({"unhealthyDevices": [99]});
        let range = node_problem(&broken).unwrap_or_default();
        assert!(range.starts_with("status.unhealthyDevices"), "{range}");
        let typed = node_problem(&node(json!("oops"))).unwrap_or_default();
        assert!(typed.starts_with("spec"), "{typed}");
    }

    #[test]
    fn a_kubelet_node_without_devices_is_left_out_but_never_marked() {
        use ringleader_scheduler::k8s_node::KUBELET_NODE_ANNOTATION;
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ringleader_store::Store::open(dir.path()).expect("open");
        let mut kubelet = node(json!({}));
        kubelet["metadata"]["annotations"] = json!({KUBELET_NODE_ANNOTATION: "true"});
        let mut ours = node(json!({}));
        ours["metadata"]["name"] = json!("ours");
        for o in [kubelet, ours] {
            store.create(o).expect("create");
        }
        let mut cache = Cache::default();
        cache.load(store.list(&ringleader_store::Selector::all()).expect("list").0);
        let mut findings = Findings::default();
        check_cluster(&cache, &mut findings);
        let key = |name: &str| ObjectKey::new("ringleader.io/v1alpha1", "Node", "", name);
        assert!(findings.is_invalid(&key("n")) && findings.is_invalid(&key("ours")), "both left out of placement");
        let before = store.get(&key("n")).expect("get").map(|s| s.resource_version);
        write(&store, &mut cache, &findings, 1000.0).expect("write");
        assert_eq!(store.get(&key("n")).expect("get").map(|s| s.resource_version), before, "never written");
        let ours = store.get(&key("ours")).expect("get").map(|s| s.object).unwrap_or_default();
        assert_eq!(current(&ours).map(|(status, _)| status), Some("False"), "ours is marked: {ours}");
    }

    #[test]
    fn pod_annotations_that_do_not_parse_are_named() {
        let pod = |annotations: Value| json!({"metadata": {"name": "p", "annotations": annotations}});
        assert_eq!(pod_problem(&pod(json!({}))), None);
        assert_eq!(pod_problem(&pod(json!({DEVICES: "0, 3"}))), None);
        let plan = pod_problem(&pod(json!({PLAN: "{not json"}))).unwrap_or_default();
        assert!(plan.starts_with("metadata.annotations[ringleader.io/plan]: \"{not json\": "), "{plan}");
        let devices = pod_problem(&pod(json!({DEVICES: "0,x"}))).unwrap_or_default();
        assert!(devices.contains("\"0,x\"") && devices.contains("non-negative integers"), "{devices}");
    }

    #[test]
    fn a_condition_replaces_its_own_type_and_keeps_the_others() {
        let object = json!({"status": {"conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": CONDITION, "status": "True"}]}});
        let merged = with_condition(&object, json!({"type": CONDITION, "status": "False", "message": "m"}));
        assert_eq!(merged.as_array().map(Vec::len), Some(2));
        assert_eq!(merged[0]["type"], "PodScheduled");
        assert_eq!(merged[1]["status"], "False");
        let mut updated = object.clone();
        updated["status"]["conditions"] = merged;
        assert_eq!(current(&updated), Some(("False", "m")));
        assert_eq!(current(&json!({"status": "weird"})), None);
    }
}
