//! Runs of TrainingJobs. A Run without `status.job` instantiates its
//! TrainingJob as a framework job (see [`super::framework`]) and records
//! it; from then on its state follows that job (creating, created, queued,
//! running, succeeded, failed, abnormal), with its pods and a timeline of
//! every state change. `spec.stop: true` deletes the framework job (its
//! pods go, their devices are freed) and keeps the Run, `stopping` until
//! the last pod is gone, then `stopped`. A TrainingJob's status counts its
//! Runs and names the last one.

use super::api::{GROUP_LABEL, RUN_LABEL};
use super::framework::{self, Context, Mount};
use super::object::{compact, key_of, label, name, namespace, status_op};
use super::quota::{group_resource, NPU};
use crate::cache::{annotation, at, str_at, Cache};
use crate::pods::{self, PlanRef, PLAN};
use ringleader_api::time::{parse_rfc3339, rfc3339};
use ringleader_controller::lifecycle::status::run_state;
use ringleader_controller::lifecycle::{JobStatus, PodPhase};
use ringleader_store::{ObjectKey, Op};
use serde_json::{json, Value};
use std::collections::HashMap;

/// Annotation with the agent's path of a pod's log.
pub const LOG_PATH: &str = "ringleader.io/log-path";

/// The kinds a Run's framework job can be.
const FRAMEWORK_KINDS: &[(&str, &str)] = &[
    ("kubeflow.org/v1", "PyTorchJob"),
    ("kubeflow.org/v1", "TFJob"),
    ("kubeflow.org/v2beta1", "MPIJob"),
    ("mindxdl.gitee.com/v1", "AscendJob"),
];

/// States a Run never leaves on its own.
const FINAL: &[&str] = &["succeeded", "failed", "stopped"];

/// Everything a Run's decision reads besides the Run, its job and pods.
pub struct World<'a> {
    /// TrainingJobs.
    pub training_jobs: &'a [Value],
    /// Volcano Queues.
    pub queues: &'a [Value],
    /// ResourceGroups.
    pub groups: &'a [Value],
    /// Nodes.
    pub nodes: &'a [Value],
    /// Datasets.
    pub datasets: &'a [Value],
    /// StorageMounts.
    pub storage: &'a [Value],
}

fn find<'a>(list: &'a [Value], ns: &str, n: &str) -> Option<&'a Value> {
    list.iter().find(|o| name(o) == n && namespace(o) == ns)
}

/// `ring-controller.atlas` for NPU jobs of a group, from its nodes' chips.
pub fn ring_controller(group: Option<&str>, nodes: &[Value]) -> String {
    let profile = nodes
        .iter()
        .filter(|n| group.is_some() && label(n, GROUP_LABEL) == group)
        .find_map(|n| ringleader_topology::profiles::builtin(str_at(n, &["spec", "profile"])?));
    let Some(p) = profile else { return "ascend-910b".to_string() };
    let accel = p.accelerator_type.as_deref().unwrap_or_default();
    let value = if p.resource_name == "huawei.com/npu" {
        "ascend-npu"
    } else if p.resource_name.contains("310P") {
        "ascend-310P"
    } else if p.resource_name.contains("310") {
        "ascend-310"
    } else if p.chip == "Ascend 910" && !accel.contains("910b") {
        "ascend-910"
    } else {
        "ascend-910b"
    };
    value.to_string()
}

/// The framework job of `run` and where it runs, or why it cannot be made.
fn instantiate(run: &Value, w: &World<'_>) -> Result<(Value, String), String> {
    let ns = namespace(run);
    let tj_name = str_at(run, &["spec", "trainingJob"]).unwrap_or_default();
    let tj = find(w.training_jobs, ns, tj_name).ok_or_else(|| format!("trainingjob {tj_name} not found"))?;
    let q_name = str_at(tj, &["spec", "queue"]).unwrap_or_default();
    let queue = w.queues.iter().find(|q| name(q) == q_name).ok_or_else(|| format!("queue {q_name} not found"))?;
    if let Some(other) = str_at(queue, &["spec", "workspace"]).filter(|o| *o != ns) {
        return Err(format!("queue {q_name} belongs to workspace {other}, not {ns}"));
    }
    let group_name = str_at(queue, &["spec", "resourceGroup"]);
    let group = match group_name {
        Some(g) => Some(w.groups.iter().find(|x| name(x) == g).ok_or_else(|| format!("resource group {g} not found"))?),
        None => None,
    };
    let mut mounts = Vec::new();
    for (i, m) in at(tj, &["spec", "mounts"]).and_then(Value::as_array).into_iter().flatten().enumerate() {
        let path = m.get("path").and_then(Value::as_str);
        if let Some(d) = m.get("dataset").and_then(Value::as_str) {
            let ds = find(w.datasets, ns, d).ok_or_else(|| format!("dataset {d} not found"))?;
            let host = str_at(ds, &["spec", "source", "path"])
                .ok_or_else(|| format!("dataset {d}: spec.source.path: required (a node directory)"))?;
            let mut env = vec![super::framework::env_name("DATASET", d)];
            if !mounts.iter().any(|m: &Mount| m.env.iter().any(|e| e == "DATA_PATH")) {
                env.insert(0, "DATA_PATH".to_string());
            }
            mounts.push(Mount { host_path: host.to_string(), mount_path: path.unwrap_or("/data").to_string(), env });
        } else if let Some(s) = m.get("storage").and_then(Value::as_str) {
            let sm = w.storage.iter().find(|x| name(x) == s).ok_or_else(|| format!("storage {s} not found"))?;
            let host = str_at(sm, &["spec", "nodeDirectory"])
                .ok_or_else(|| format!("storage {s}: spec.nodeDirectory: required"))?;
            let path = path.ok_or_else(|| format!("spec.mounts[{i}].path: required for a storage mount"))?;
            let env = vec![super::framework::env_name("STORAGE", s)];
            mounts.push(Mount { host_path: host.to_string(), mount_path: path.to_string(), env });
        } else {
            return Err(format!("spec.mounts[{i}]: {m}: names neither a dataset nor a storage"));
        }
    }
    let ctx = Context {
        queue: q_name.to_string(),
        group: group_name.map(str::to_string),
        gang: group.is_none_or(|g| {
            at(g, &["spec", "policies"]).and_then(Value::as_array).is_none_or(|p| p.iter().any(|x| x == "Gang"))
        }),
        topology_affinity: group
            .is_some_and(|g| at(g, &["spec", "topologyAffinity"]).and_then(Value::as_bool) == Some(true)),
        npu_resource: group_resource(group, w.nodes).filter(|r| r.starts_with("huawei.com/")).unwrap_or(NPU.into()),
        ring_controller: ring_controller(group_name, w.nodes),
        mounts,
    };
    let job = framework::build(tj, run, &ctx)?;
    // The manager writes the job to the store itself, past the API server's
    // admission: it must pass the same validation (pod counts, device
    // counts …), or a TrainingJob asking for ten million workers would
    // become ten million pods.
    let typed = ringleader_api::Resource::from_value(&job).map_err(|e| format!("the {} it makes: {e}", job["kind"]))?;
    let errors = ringleader_api::validate(&typed);
    if let Some(first) = errors.first() {
        let more = if errors.len() > 1 { format!(" (and {} more)", errors.len() - 1) } else { String::new() };
        return Err(format!("the {} it makes is invalid: {first}{more}", job["kind"].as_str().unwrap_or("job")));
    }
    Ok((job, q_name.to_string()))
}

/// What a Run shows of one pod of its job.
pub fn pod_summary(pod: &Value) -> Value {
    let plan: Option<PlanRef> = annotation(pod, PLAN).and_then(|p| serde_json::from_str(p).ok());
    let n = name(pod);
    let ns = namespace(pod);
    let start = str_at(pod, &["status", "startTime"]);
    let phase = pods::phase_of(pod);
    // Only an ended pod's duration is written: a running one's would change
    // every second, each change a write. Readers count from `startTime`.
    let duration = match (phase, start.and_then(parse_rfc3339)) {
        (PodPhase::Succeeded | PodPhase::Failed, Some(s)) => Some(((pods::phase_since(pod) - s).max(0.0)) as u64),
        _ => None,
    };
    // SSH access (AI Hub): the login the run shows for the pod.
    let ssh_port = at(pod, &["spec", "containers"]).and_then(Value::as_array).and_then(|cs| {
        cs.iter().flat_map(|c| c.get("ports").and_then(Value::as_array).into_iter().flatten()).find_map(|p| {
            (p.get("name").and_then(Value::as_str) == Some("ssh"))
                .then(|| p.get("containerPort").and_then(Value::as_u64))?
        })
    });
    let ssh = match (ssh_port, str_at(pod, &["status", "podIP"])) {
        (Some(port), Some(ip)) => Some(format!("ssh -p {port} root@{ip}")),
        _ => None,
    };
    let role = plan
        .as_ref()
        .map(|p| p.role.clone())
        .or_else(|| label(pod, "training.kubeflow.org/replica-type").map(str::to_string));
    compact(json!({
        "role": role,
        "name": n,
        "phase": str_at(pod, &["status", "phase"]).unwrap_or("Pending"),
        "restarts": plan.map_or(0, |p| p.generation),
        "podIP": str_at(pod, &["status", "podIP"]),
        "hostIP": str_at(pod, &["status", "hostIP"]),
        // Where its log stays once the pod is gone (a stopped run's).
        "node": str_at(pod, &["spec", "nodeName"]),
        "ssh": ssh,
        "startTime": start,
        "duration": duration,
        "log": annotation(pod, LOG_PATH).map(str::to_string)
            .unwrap_or_else(|| format!("/api/v1/namespaces/{ns}/pods/{n}/log")),
    }))
}

fn queue_closed(queue: Option<&Value>) -> bool {
    queue.and_then(|q| str_at(q, &["status", "state"])).is_some_and(|s| s == "Closed" || s == "Closing")
}

fn stamp(secs: Option<u64>) -> Value {
    secs.map_or(Value::Null, |s| json!(rfc3339(s as f64)))
}

/// The writes for one Run: its framework job created or deleted, and its
/// status. `job` is the framework job of the Run's name, if stored; `pods`
/// the pods labelled with the Run.
pub fn decide(run: &Value, w: &World<'_>, job: Option<&Value>, pods: &[&Value], now: f64) -> Vec<Op> {
    let current = str_at(run, &["status", "state"]).unwrap_or_default();
    let recorded = at(run, &["status", "job"]).filter(|j| j.is_object());
    let run_uid = str_at(run, &["metadata", "uid"]);
    // Only a job this Run owns is its job; another of its name blocks it.
    let foreign = job.filter(|j| crate::pods::owner_uid(j) != run_uid);
    let job = job.filter(|j| crate::pods::owner_uid(j) == run_uid);
    let mut ops = Vec::new();
    let mut status = serde_json::Map::new();
    let (state, message): (String, String);
    let stop = at(run, &["spec", "stop"]).and_then(Value::as_bool) == Some(true);
    if stop {
        if let Some(j) = job {
            ops.push(Op::Delete { key: key_of(j), expected: None });
        }
        let live = job.is_some() || !pods.is_empty();
        if FINAL.contains(&current) && current != "stopped" {
            // An ended run keeps its outcome; stopping only frees what it held.
            (state, message) = (current.to_string(), str_at(run, &["status", "message"]).unwrap_or_default().into());
        } else if live {
            let what =
                job.map_or("its pods".to_string(), |j| format!("{} {}", j["kind"].as_str().unwrap_or("job"), name(j)));
            (state, message) = ("stopping".into(), format!("stopping: deleting {what}"));
        } else {
            (state, message) = ("stopped".into(), "stopped; the record is kept".into());
            // The record keeps its pods, shown as gone.
            let gone: Vec<Value> = at(run, &["status", "pods"])
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                // The status is writable through the API: entries that are
                // not objects are dropped, not indexed into.
                .filter_map(|p| {
                    let mut p = p.as_object()?.clone();
                    if !matches!(p.get("phase").and_then(Value::as_str), Some("Succeeded" | "Failed")) {
                        p.insert("phase".into(), json!("Deleted"));
                    }
                    Some(Value::Object(p))
                })
                .collect();
            status.insert("pods".into(), json!(gone));
            if at(run, &["status", "completionTime"]).is_none_or(Value::is_null) {
                status.insert("completionTime".into(), json!(rfc3339(now)));
            }
        }
    } else if recorded.is_none() {
        if FINAL.contains(&current) {
            return ops;
        }
        match instantiate(run, w) {
            Ok(_) if foreign.is_some() => {
                let f = foreign.map(|f| (f["kind"].as_str().unwrap_or("job"), name(f))).unwrap_or_default();
                (state, message) = ("failed".into(), format!("{} {} already exists and is not this run's", f.0, f.1));
            }
            Ok((built, queue)) => {
                let kind = built["kind"].as_str().unwrap_or_default().to_string();
                let job_ref = json!({"apiVersion": built["apiVersion"], "kind": kind, "name": name(&built)});
                if job.is_none() {
                    ops.push(Op::Create(built));
                }
                status.insert("job".into(), job_ref);
                (state, message) = ("creating".into(), format!("{kind} {} created in queue {queue}", name(run)));
            }
            Err(why) => (state, message) = ("failed".into(), why),
        }
    } else if let Some(j) = job {
        let st: JobStatus =
            at(j, &["status", "ringleader"]).and_then(|s| serde_json::from_value(s.clone()).ok()).unwrap_or_default();
        let followed =
            serde_json::to_value(run_state(&st)).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        // The job's counts lag its pods by one reconcile: pods that exist and wait are queued.
        state = if followed == "created" && !pods.is_empty() { "queued".into() } else { followed };
        let q_name = str_at(j, &["spec", "runPolicy", "schedulingPolicy", "queue"]).unwrap_or_default();
        let queue = w.queues.iter().find(|q| name(q) == q_name);
        message = if matches!(state.as_str(), "created" | "queued") && queue_closed(queue) {
            format!("queue {q_name} is locked: no new job is scheduled from it")
        } else {
            st.message.clone()
        };
        let mut listed: Vec<Value> = pods.iter().map(|p| pod_summary(p)).collect();
        listed.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        status.insert("pods".into(), json!(listed));
        status.insert("startTime".into(), stamp(st.start_time));
        status.insert("completionTime".into(), stamp(st.completion_time));
    } else if FINAL.contains(&current) {
        return ops;
    } else {
        let what =
            recorded.map(|r| format!("{} {}", r["kind"].as_str().unwrap_or("job"), r["name"].as_str().unwrap_or("")));
        (state, message) = ("failed".into(), format!("{} was deleted", what.unwrap_or_default()));
    }
    let mut timeline: Vec<Value> =
        at(run, &["status", "timeline"]).and_then(Value::as_array).cloned().unwrap_or_default();
    if timeline.last().and_then(|t| t.get("state")).and_then(Value::as_str) != Some(state.as_str()) {
        timeline.push(json!({"state": state, "time": rfc3339(now), "message": message}));
    }
    status.insert("state".into(), json!(state));
    status.insert("message".into(), json!(message));
    status.insert("timeline".into(), json!(timeline));
    ops.extend(status_op(run, Value::Object(status)));
    ops
}

/// Who killed a run, once a VIP job did: an `Evicted` event of one of its
/// pods ("… killed by VIP job <ns>/<name>") names the VIP job (a run's
/// framework job has the run's name), and that run's `run` audit record
/// names the user who started it.
pub fn killed_by(run: &Value, events: &[&Value], audit: &[&Value]) -> Option<Value> {
    const MARK: &str = "killed by VIP job ";
    let prefix = format!("{}-", name(run));
    let event = events.iter().find(|e| {
        str_at(e, &["reason"]) == Some("Evicted")
            && str_at(e, &["involvedObject", "namespace"]).unwrap_or_default() == namespace(run)
            && str_at(e, &["involvedObject", "name"]).is_some_and(|n| n.starts_with(&prefix))
            && str_at(e, &["message"]).is_some_and(|m| m.contains(MARK))
    })?;
    let message = str_at(event, &["message"]).unwrap_or_default();
    let job = message.split(MARK).nth(1)?.split_whitespace().next()?.to_string();
    let (job_ns, job_name) = job.split_once('/').unwrap_or(("", job.as_str()));
    let user = audit
        .iter()
        .find(|r| {
            str_at(r, &["spec", "verb"]) == Some("run")
                && str_at(r, &["spec", "name"]) == Some(job_name)
                && str_at(r, &["spec", "namespace"]).unwrap_or_default() == job_ns
        })
        .and_then(|r| str_at(r, &["spec", "user"]));
    let time = str_at(event, &["lastTimestamp"]).or_else(|| str_at(event, &["firstTimestamp"]));
    Some(json!({"job": job, "user": user, "time": time, "message": message}))
}

/// A TrainingJob's status: how many Runs it has and the newest one.
pub fn training_job_status(tj: &Value, runs: &[Value]) -> Option<Op> {
    let mine: Vec<&Value> = runs
        .iter()
        .filter(|r| namespace(r) == namespace(tj) && str_at(r, &["spec", "trainingJob"]) == Some(name(tj)))
        .collect();
    // `<job>-r<N>`: the highest N is the last; other names by creation.
    let number = |r: &Value| name(r).rsplit_once("-r").and_then(|(_, n)| n.parse::<u64>().ok()).unwrap_or(0);
    let created = |r: &Value| str_at(r, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339).unwrap_or(0.0);
    let last = mine
        .iter()
        .max_by(|a, b| {
            (number(a), created(a), name(a))
                .partial_cmp(&(number(b), created(b), name(b)))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .map(|r| name(r));
    status_op(tj, json!({"runs": mine.len(), "lastRun": last}))
}

/// The writes of every Run and TrainingJob in the cache.
pub fn pass_ops(cache: &Cache, now: f64) -> Vec<Op> {
    use super::api::{API, NODE_API, QUEUE_API};
    use super::object::objects;
    let runs = objects(cache, API, "Run");
    let training_jobs = objects(cache, API, "TrainingJob");
    if runs.is_empty() && training_jobs.is_empty() {
        return Vec::new();
    }
    let (queues, groups, nodes) =
        (objects(cache, QUEUE_API, "Queue"), objects(cache, API, "ResourceGroup"), objects(cache, NODE_API, "Node"));
    let (datasets, storage) = (objects(cache, API, "Dataset"), objects(cache, API, "StorageMount"));
    let w = World {
        training_jobs: &training_jobs,
        queues: &queues,
        groups: &groups,
        nodes: &nodes,
        datasets: &datasets,
        storage: &storage,
    };
    let mut by_run: HashMap<(&str, &str), Vec<&Value>> = HashMap::new();
    for p in cache.of_kind("v1", "Pod") {
        if let Some(r) = label(&p.object, RUN_LABEL) {
            by_run.entry((namespace(&p.object), r)).or_default().push(&p.object);
        }
    }
    let events: Vec<&Value> =
        cache.of_kind("v1", "Event").map(|e| &e.object).filter(|e| str_at(e, &["reason"]) == Some("Evicted")).collect();
    let audit: Vec<&Value> = cache.of_kind(API, "AuditRecord").map(|r| &r.object).collect();
    let mut ops = Vec::new();
    for run in &runs {
        let job = FRAMEWORK_KINDS
            .iter()
            .find_map(|(api, kind)| cache.get(&ObjectKey::new(api, kind, namespace(run), name(run))))
            .map(|s| &s.object);
        let pods = by_run.get(&(namespace(run), name(run))).map(Vec::as_slice).unwrap_or_default();
        ops.extend(decide(run, &w, job, pods, now));
        if at(run, &["status", "killedBy"]).is_none_or(Value::is_null) {
            if let Some(k) = killed_by(run, &events, &audit) {
                ops.extend(status_op(run, json!({"killedBy": k})));
            }
        }
    }
    for tj in &training_jobs {
        ops.extend(training_job_status(tj, &runs));
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::super::API;
    use super::*;

    fn run(status: Value) -> Value {
        json!({"apiVersion": API, "kind": "Run",
               "metadata": {"name": "train-r1", "namespace": "team-a", "uid": "run-uid"},
               "spec": {"trainingJob": "train"}, "status": status})
    }

    fn world_parts() -> (Vec<Value>, Vec<Value>, Vec<Value>, Vec<Value>) {
        let tj = json!({"apiVersion": API, "kind": "TrainingJob", "metadata": {"name": "train", "namespace": "team-a"},
                        "spec": {"queue": "q1", "image": "img", "framework": "PyTorchDDP", "command": "python t.py",
                                 "roles": [{"name": "Worker", "count": 2, "resources": {"gpu": 1}}],
                                 "mounts": [{"dataset": "mnist"}]}});
        let queue = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q1"},
                           "spec": {"resourceGroup": "g1", "workspace": "team-a"}});
        let group = json!({"apiVersion": API, "kind": "ResourceGroup", "metadata": {"name": "g1"},
                           "spec": {"accelerator": "NVIDIA"}});
        let ds = json!({"apiVersion": API, "kind": "Dataset", "metadata": {"name": "mnist", "namespace": "team-a"},
                        "spec": {"source": {"path": "/srv/mnist"}}});
        (vec![tj], vec![queue], vec![group], vec![ds])
    }

    fn status_of(ops: &[Op]) -> Value {
        ops.iter()
            .find_map(|o| match o {
                Op::Patch { key, patch, .. } if key.kind == "Run" => Some(patch["status"].clone()),
                _ => None,
            })
            .unwrap_or(Value::Null)
    }

    #[test]
    fn a_new_run_creates_its_job_and_records_it() {
        let (tjs, queues, groups, ds) = world_parts();
        let w =
            World { training_jobs: &tjs, queues: &queues, groups: &groups, nodes: &[], datasets: &ds, storage: &[] };
        let ops = decide(&run(json!({})), &w, None, &[], 100.0);
        let created = ops.iter().find_map(|o| if let Op::Create(v) = o { Some(v) } else { None }).expect("job");
        assert_eq!(created["kind"], "PyTorchJob");
        assert_eq!(
            created["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"][GROUP_LABEL],
            "g1"
        );
        let st = status_of(&ops);
        assert_eq!(st["state"], "creating");
        assert_eq!(st["job"], json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "train-r1"}));
        assert_eq!(
            st["timeline"][0],
            json!({"state": "creating", "time": "1970-01-01T00:01:40Z",
                                             "message": "PyTorchJob train-r1 created in queue q1"})
        );
    }

    #[test]
    fn a_run_that_cannot_start_fails_naming_why() {
        let (tjs, _, groups, ds) = world_parts();
        let w = World { training_jobs: &tjs, queues: &[], groups: &groups, nodes: &[], datasets: &ds, storage: &[] };
        let ops = decide(&run(json!({})), &w, None, &[], 100.0);
        assert!(!ops.iter().any(|o| matches!(o, Op::Create(_))));
        let st = status_of(&ops);
        assert_eq!((st["state"].as_str(), st["message"].as_str()), (Some("failed"), Some("queue q1 not found")));
        // Failed stays failed: nothing more is written.
        let failed = run(st);
        assert!(decide(&failed, &w, None, &[], 200.0).is_empty());

        let (tjs, queues, groups, _) = world_parts();
        let w =
            World { training_jobs: &tjs, queues: &queues, groups: &groups, nodes: &[], datasets: &[], storage: &[] };
        assert_eq!(status_of(&decide(&run(json!({})), &w, None, &[], 1.0))["message"], "dataset mnist not found");
        let w = World { training_jobs: &[], queues: &queues, groups: &groups, nodes: &[], datasets: &[], storage: &[] };
        assert_eq!(status_of(&decide(&run(json!({})), &w, None, &[], 1.0))["message"], "trainingjob train not found");
    }

    fn job(phase: &str, pods: u32, times: Option<(u64, u64)>) -> Value {
        let mut st = JobStatus { created_at: Some(100), ..JobStatus::default() };
        st.phase = serde_json::from_value(json!(phase)).expect("phase");
        st.replica_statuses.insert(
            "Worker".into(),
            serde_json::from_value(json!({"pending": pods, "running": 0,
            "succeeded": 0, "failed": 0}))
            .expect("replicas"),
        );
        if let Some((start, end)) = times {
            (st.start_time, st.completion_time) = (Some(start), Some(end));
        }
        let st = serde_json::to_value(&st).expect("json");
        json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
               "metadata": {"name": "train-r1", "namespace": "team-a",
                            "ownerReferences": [{"uid": "run-uid", "controller": true}]},
               "spec": {"runPolicy": {"schedulingPolicy": {"queue": "q1"}}},
               "status": {"ringleader": st}})
    }

    #[test]
    fn the_state_follows_the_job_with_pods_and_timeline() {
        let (tjs, mut queues, groups, ds) = world_parts();
        let recorded = json!({"job": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "train-r1"},
                              "state": "creating", "timeline": [{"state": "creating", "time": "t0", "message": ""}]});
        let w =
            World { training_jobs: &tjs, queues: &queues, groups: &groups, nodes: &[], datasets: &ds, storage: &[] };
        let st = status_of(&decide(&run(recorded.clone()), &w, Some(&job("Pending", 2, None)), &[], 200.0));
        assert_eq!(st["state"], "queued");
        assert_eq!(st["timeline"].as_array().map(Vec::len), Some(2));

        queues[0]["status"] = json!({"state": "Closed"});
        let w =
            World { training_jobs: &tjs, queues: &queues, groups: &groups, nodes: &[], datasets: &ds, storage: &[] };
        let st = status_of(&decide(&run(recorded.clone()), &w, Some(&job("Pending", 2, None)), &[], 200.0));
        assert_eq!(st["message"], "queue q1 is locked: no new job is scheduled from it");

        let pod = json!({"metadata": {"name": "train-r1-worker-0", "namespace": "team-a",
                                      "annotations": {PLAN: r#"{"slot":"s","role":"Worker","index":0,"generation":1,"jobVersion":0}"#,
                                                      LOG_PATH: "/d/log"}},
                         "status": {"phase": "Succeeded", "podIP": "127.0.0.2", "hostIP": "127.0.0.2",
                                    "startTime": "2026-01-01T00:00:00Z",
                                    "containerStatuses": [{"state": {"terminated": {"exitCode": 0, "finishedAt": "2026-01-01T00:01:30Z"}}}]}});
        let done = job("Completed", 2, Some((150, 250)));
        let st = status_of(&decide(&run(recorded), &w, Some(&done), &[&pod], 300.0));
        assert_eq!(st["state"], "succeeded");
        assert_eq!(st["completionTime"], "1970-01-01T00:04:10Z");
        assert_eq!(
            st["pods"][0],
            json!({"role": "Worker", "name": "train-r1-worker-0", "phase": "Succeeded",
            "restarts": 1, "podIP": "127.0.0.2", "hostIP": "127.0.0.2", "startTime": "2026-01-01T00:00:00Z",
            "duration": 90, "log": "/d/log"})
        );
    }

    #[test]
    fn stop_deletes_the_job_then_the_run_is_stopped() {
        let (tjs, queues, groups, ds) = world_parts();
        let w =
            World { training_jobs: &tjs, queues: &queues, groups: &groups, nodes: &[], datasets: &ds, storage: &[] };
        let mut r = run(json!({"job": {"kind": "PyTorchJob", "name": "train-r1"}, "state": "running",
                               "timeline": [{"state": "running"}]}));
        r["spec"]["stop"] = json!(true);
        let j = job("Running", 2, None);
        let ops = decide(&r, &w, Some(&j), &[], 10.0);
        assert!(ops
            .iter()
            .any(|o| matches!(o, Op::Delete { key, .. } if key.kind == "PyTorchJob" && key.name == "train-r1")));
        assert_eq!(status_of(&ops)["state"], "stopping");
        let pod = json!({"metadata": {"name": "p", "namespace": "team-a"}, "status": {"phase": "Running"}});
        assert_eq!(status_of(&decide(&r, &w, None, &[&pod], 11.0))["state"], "stopping", "a pod still stops");
        let st = status_of(&decide(&r, &w, None, &[], 12.0));
        assert_eq!(st["state"], "stopped");
        assert_eq!(st["completionTime"], "1970-01-01T00:00:12Z");
        assert_eq!(st["timeline"].as_array().map(Vec::len), Some(2));
        // The record keeps its pods as gone; junk a user wrote there is dropped.
        r["status"]["pods"] =
            json!([{"name": "p", "phase": "Running"}, {"name": "q", "phase": "Succeeded"}, "junk", 7]);
        let st = status_of(&decide(&r, &w, None, &[], 13.0));
        assert_eq!(st["pods"], json!([{"name": "p", "phase": "Deleted"}, {"name": "q", "phase": "Succeeded"}]));
    }

    #[test]
    fn a_run_whose_job_would_be_invalid_fails_instead_of_making_it() {
        let (mut tjs, queues, groups, ds) = world_parts();
        tjs[0]["spec"]["roles"] = json!([{"name": "Worker", "count": 10_000_000, "resources": {"gpu": 1}}]);
        let w =
            World { training_jobs: &tjs, queues: &queues, groups: &groups, nodes: &[], datasets: &ds, storage: &[] };
        let ops = decide(&run(json!({})), &w, None, &[], 1.0);
        assert!(!ops.iter().any(|o| matches!(o, Op::Create(_))), "no job is made");
        let st = status_of(&ops);
        assert_eq!(st["state"], "failed");
        assert!(st["message"].as_str().is_some_and(|m| m.contains("invalid") && m.contains("10000000")), "{st}");
    }

    #[test]
    fn a_job_of_someone_else_is_not_taken() {
        let (tjs, queues, groups, ds) = world_parts();
        let w =
            World { training_jobs: &tjs, queues: &queues, groups: &groups, nodes: &[], datasets: &ds, storage: &[] };
        let mut foreign = job("Running", 1, None);
        foreign["metadata"]["ownerReferences"] = json!([]);
        let mut r = run(json!({"job": {"kind": "PyTorchJob", "name": "train-r1"}, "state": "running"}));
        r["spec"]["stop"] = json!(true);
        assert!(!decide(&r, &w, Some(&foreign), &[], 1.0).iter().any(|o| matches!(o, Op::Delete { .. })));
    }

    #[test]
    fn a_run_a_vip_job_killed_records_the_job_and_who_ran_it() {
        let ev = |pod: &str, reason: &str, message: &str| {
            json!({"reason": reason, "message": message, "lastTimestamp": "2026-11-25T10:00:00Z",
                   "involvedObject": {"kind": "Pod", "namespace": "team-a", "name": pod}})
        };
        let audit = json!({"spec": {"verb": "run", "user": "carol", "namespace": "team-a", "name": "urgent-r1"}});
        let other = ev("train-r10-worker-0", "Evicted", "Evicted from node g1: killed by VIP job team-a/x-r1");
        let mine = ev("train-r1-worker-0", "Evicted", "Evicted from node g1: killed by VIP job team-a/urgent-r1");
        let preempted = ev("train-r1-worker-1", "Preempted", "Evicted from node g2: preempted by team-a/y");
        let r = run(json!({}));
        assert_eq!(killed_by(&r, &[&other, &preempted], &[&audit]), None, "another run's pod, a preemption");
        let k = killed_by(&r, &[&other, &mine], &[&audit]).expect("killed");
        assert_eq!((k["job"].as_str(), k["user"].as_str()), (Some("team-a/urgent-r1"), Some("carol")));
        assert_eq!(k["time"], "2026-11-25T10:00:00Z");
    }

    #[test]
    fn training_jobs_count_their_runs() {
        let tj =
            json!({"apiVersion": API, "kind": "TrainingJob", "metadata": {"name": "train", "namespace": "team-a"}});
        let r = |n: &str, ns: &str| json!({"metadata": {"name": n, "namespace": ns}, "spec": {"trainingJob": "train"}});
        let runs = [r("train-r2", "team-a"), r("train-r10", "team-a"), r("train-r3", "team-b")];
        let Some(Op::Patch { patch, .. }) = training_job_status(&tj, &runs) else { panic!("a patch") };
        assert_eq!(patch["status"], json!({"runs": 2, "lastRun": "train-r10"}));
    }
}
