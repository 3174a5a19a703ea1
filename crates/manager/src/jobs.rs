//! The job controller loop body: for each job object, the pure
//! [`ringleader_controller::reconcile`] over what the cache observes, its
//! actions carried out as store writes, and — once a gang is bound — the
//! placement-dependent env, files and rank table written into the pods with
//! the start mark the node agent waits for.

use crate::cache::{annotation, str_at, Cache};
use crate::events::{self, Recorder};
pub use crate::job_object::JobObject;
pub use crate::node_view::{node_views, NodeView};
pub use crate::placement::placement_of;
use crate::pods::{self, CONFIG_FILES, FILES, START};
use crate::ports;
pub use crate::writes::write;
use crate::{ManagerConfig, ManagerError};
use ringleader_api::kinds::{namespace, JOB_KINDS};
use ringleader_api::model::JobKind;
use ringleader_api::time::rfc3339;
use ringleader_api::{Job, Resource};
use ringleader_controller::fault::NodeLossConfig;
use ringleader_controller::lifecycle::{status, DeleteMode, JobStatus, ObservedNode, PodPhase};
use ringleader_controller::placement::Placement;
use ringleader_controller::ports as chosen;
use ringleader_controller::ranktable::hccl;
use ringleader_controller::ssh;
use ringleader_controller::{env, reconcile, Action, JobState, Observed};
use ringleader_store::{Backend, ObjectKey, Op, Stored};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// Every job in the cache, parsed; objects that do not parse are skipped
/// (the API server validated them, so this only happens to hand-made stores).
/// A job is parsed once per version: the passes call this several times
/// each, and parsing every job every time was most of what a pass over
/// many small jobs cost.
pub fn jobs(cache: &Cache, config: &ManagerConfig) -> Vec<JobObject> {
    let mut controller = config.controller.clone();
    controller.node_loss = NodeLossConfig {
        heartbeat_timeout_secs: config.heartbeat_timeout.as_secs_f64().ceil() as u64,
        toleration_secs: config.node_lost_toleration.as_secs_f64().ceil() as u64,
    };
    let mut parsed = cache.parsed_jobs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut kept = HashMap::with_capacity(parsed.len());
    // Only the job kinds' ranges of the cache are read: trying every other
    // object as a job (Secrets, Leases, RoleBindings…) cost a parse error,
    // message and all, for each of them on every pass. Sorted, the kinds
    // give the jobs in key order, as the whole cache did.
    let mut kinds = JOB_KINDS.to_vec();
    kinds.sort_unstable();
    let out = kinds
        .into_iter()
        .flat_map(|(api_version, kind)| cache.of_kind_shared(api_version, kind))
        .filter_map(|o| {
            let known = parsed
                .remove(&o.key)
                .filter(|(version, state)| *version == o.resource_version && state.config == controller);
            let state = match known {
                Some((_, state)) => state,
                None => Arc::new(parse(&o.object, &controller)?),
            };
            kept.insert(o.key.clone(), (o.resource_version, state.clone()));
            Some(JobObject { stored: o.clone(), state })
        })
        .collect();
    *parsed = kept;
    out
}

/// A job object as controller state, with the manager's settings.
fn parse(object: &Value, controller: &ringleader_controller::lifecycle::ControllerConfig) -> Option<JobState> {
    let resource = Resource::from_value(object).ok()?;
    let mut state = JobState::from_resource(&resource)?;
    state.config = controller.clone();
    if let Some(st) = object.get("status").and_then(|s| s.get("ringleader")) {
        state.status = serde_json::from_value::<JobStatus>(st.clone()).unwrap_or_default();
    }
    Some(state)
}

/// Pods by owner uid.
pub fn pods_by_owner(cache: &Cache) -> HashMap<String, Vec<Arc<Stored>>> {
    let mut by: HashMap<String, Vec<Arc<Stored>>> = HashMap::new();
    for p in cache.of_kind_shared("v1", "Pod") {
        if let Some(uid) = pods::owner_uid(&p.object) {
            by.entry(uid.to_string()).or_default().push(p.clone());
        }
    }
    by
}

/// One job's reconcile, decided and not yet written.
struct Decided {
    /// The writes its actions come to.
    ops: Vec<Op>,
    /// The Events they come with.
    recorded: Recorder,
    /// When to reconcile it again, if it asked.
    requeue: Option<f64>,
    /// The job's state once its actions are applied.
    state: JobState,
}

/// Reconciles jobs and carries out their actions: their writes in one
/// transaction (one commit, not one per job: a hundred one-pod jobs
/// submitted together made a hundred), then their releases of bound pods in
/// another. Per job, in order, its requeue time, or why it was skipped
/// (nothing of it is written); only a failing store ends it all.
pub fn reconcile_jobs(
    store: &dyn Backend,
    cache: &mut Cache,
    jobs: &[(&JobObject, &[Arc<Stored>])],
    nodes: &[NodeView],
    held: &Held,
    now: f64,
) -> Result<Vec<Result<Option<f64>, String>>, ManagerError> {
    let by_name: BTreeMap<&str, &NodeView> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let mut ops = Vec::new();
    let mut recorders = Vec::new();
    let mut decided = Vec::with_capacity(jobs.len());
    for (job, pods) in jobs {
        match decide(cache, job, pods, nodes, &by_name, held, now) {
            Ok(d) => {
                ops.extend(d.ops);
                recorders.push(d.recorded);
                decided.push(Ok((d.state, d.requeue)));
            }
            Err(ManagerError::Store(e)) => return Err(ManagerError::Store(e)),
            // Anything else is about this job alone: nothing of it is written.
            Err(ManagerError::Internal(why)) => decided.push(Err(why)),
        }
    }
    events::write_all(store, cache, ops, recorders, now)?;
    let mut results = Vec::with_capacity(jobs.len());
    let mut releases = Gathered::default();
    for ((job, pods), d) in jobs.iter().zip(decided) {
        results.push(match d {
            Ok((state, requeue)) => {
                if !state.status.phase.is_finished() {
                    launch(store, cache, job, pods, &state, &by_name, now, &mut releases)?;
                }
                Ok(requeue)
            }
            Err(why) => Err(why),
        });
    }
    releases.write(store, cache, now)?;
    Ok(results)
}

/// The actions of one reconcile of a job, as store writes and Events.
fn decide(
    cache: &Cache,
    job: &JobObject,
    pods: &[Arc<Stored>],
    nodes: &[NodeView],
    by_name: &BTreeMap<&str, &NodeView>,
    held: &Held,
    now: f64,
) -> Result<Decided, ManagerError> {
    let observed = observe(job, pods, nodes, by_name, held);
    let actions = reconcile(&job.state, &observed, now as u64);
    let mut state = JobState::clone(&job.state);
    state.apply(&actions);
    let mut requeue = None;
    let mut ops = Vec::new();
    let mut recorded = Recorder::new(events::CONTROLLER);
    let mut services = BTreeSet::new();
    events::transitions(&mut recorded, job, &actions);
    for action in actions {
        match action {
            Action::ApplyPodGroup(pg) => {
                let mut v = serde_json::to_value(&*pg).map_err(|e| ManagerError::Internal(e.to_string()))?;
                owned(&mut v, &job.stored.object);
                ops.push(Op::Apply(v));
            }
            Action::CreatePod(plan) => {
                // Its operator's headless Service first, once.
                if let Some(mut svc) = crate::job_services::for_pod(&job.state, &plan) {
                    let key = ObjectKey::of(&svc).map_err(|e| ManagerError::Internal(e.to_string()))?;
                    if cache.get(&key).is_none() && services.insert(key) {
                        owned(&mut svc, &job.stored.object);
                        ops.push(Op::Create(svc));
                    }
                }
                let v = pods::pod_object(&plan, &job.state.job.namespace, &job.stored.object, state.status.version);
                // As the API would refuse it: a Warning on the job, and a
                // try again later, rather than a pod that can never start.
                if let Some(why) = crate::service_accounts::missing_account(cache, &v) {
                    events::failed_create(&mut recorded, job, &why);
                    requeue = Some(now + crate::service_accounts::RETRY_SECONDS);
                    continue;
                }
                events::pod_created(&mut recorded, job, &plan.name);
                ops.push(Op::Create(v));
            }
            Action::DeletePod { name, mode, reason } => {
                let key = ObjectKey::new("v1", "Pod", &job.state.job.namespace, &name);
                if let Some(pod) = cache.get(&key) {
                    ops.push(delete_pod_op(pod, mode == DeleteMode::Force, by_name, now));
                    events::pod_deleted(&mut recorded, job, &key, &reason);
                }
            }
            Action::WriteStatus(st) => {
                let mut s = status::for_kind(&job.state.job, &st);
                if let Some(obj) = s.as_object_mut() {
                    obj.insert("ringleader".into(), serde_json::to_value(&*st).unwrap_or(Value::Null));
                }
                ops.push(Op::Patch { key: job.stored.key.clone(), patch: json!({ "status": s }), expected: None });
            }
            Action::WriteConfigMap(cm) => {
                let mut v = serde_json::to_value(&*cm).map_err(|e| ManagerError::Internal(e.to_string()))?;
                if v.get("apiVersion").is_none() {
                    v["apiVersion"] = json!("v1");
                    v["kind"] = json!("ConfigMap");
                }
                owned(&mut v, &job.stored.object);
                ops.push(Op::Apply(v));
            }
            Action::DeleteJob => {
                ops.push(Op::Delete { key: job.stored.key.clone(), expected: None });
            }
            Action::RequeueAfter(secs) => requeue = Some(now + secs as f64),
            Action::BackOff { pod, delay, restarts, .. } => {
                let key = ObjectKey::new("v1", "Pod", &job.state.job.namespace, &pod);
                if let Some(pod) = cache.get(&key) {
                    let shown = pods::crash_loop_back_off(&pod.object, delay, restarts);
                    let patch = shown.patch.clone();
                    ops.push(Op::Patch { key: key.clone(), patch, expected: Some(pod.resource_version) });
                    events::back_off(&mut recorded, pod, &shown);
                }
            }
            Action::MarkPodLost { pod, node } => {
                let key = ObjectKey::new("v1", "Pod", &job.state.job.namespace, &pod);
                if let Some(pod) = cache.get(&key) {
                    let (patch, message) = pods::node_lost(&pod.object, &node, now);
                    // An agent back in time to report the pod wins: the conflict skips the mark.
                    ops.push(Op::Patch { key: key.clone(), patch, expected: Some(pod.resource_version) });
                    events::node_lost(&mut recorded, pod, &message);
                }
            }
        }
    }
    Ok(Decided { ops, recorded, requeue, state })
}

/// Marks a ringleader-made object as owned by the job (garbage collection
/// follows owner uids).
fn owned(v: &mut Value, owner: &Value) {
    let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    meta.insert(
        "ownerReferences".into(),
        json!([{
            "apiVersion": owner.get("apiVersion"),
            "kind": owner.get("kind"),
            "name": str_at(owner, &["metadata", "name"]),
            "uid": str_at(owner, &["metadata", "uid"]),
            "controller": true,
        }]),
    );
}

/// What a delete of a pod means in the store: a started pod on a live node
/// is handed to its agent (deletionTimestamp); anything else goes at once.
pub fn delete_pod_op(pod: &Stored, force: bool, nodes: &BTreeMap<&str, &NodeView>, now: f64) -> Op {
    let v = &pod.object;
    let on_live_node = pods::node_of(v).and_then(|n| nodes.get(n)).is_some_and(|n| n.ready);
    let running = matches!(pods::phase_of(v), PodPhase::Pending | PodPhase::Running);
    if pods::started(v) && on_live_node && running {
        if pods::deleting(v) && !force {
            // Already being deleted: a no-op patch keeps the batch simple.
            return Op::Patch { key: pod.key.clone(), patch: json!({}), expected: None };
        }
        let grace = if force {
            0
        } else {
            v.get("spec").and_then(|s| s.get("terminationGracePeriodSeconds")).and_then(Value::as_u64).unwrap_or(30)
        };
        return Op::Patch {
            key: pod.key.clone(),
            patch: json!({"metadata": {"deletionTimestamp": rfc3339(now), "deletionGracePeriodSeconds": grace}}),
            expected: None,
        };
    }
    Op::Delete { key: pod.key.clone(), expected: None }
}

/// [`delete_pod_op`], or nothing when the pod's agent is already stopping
/// it (a delete again would be a write each pass until it is done).
pub fn delete_pod_once(pod: &Stored, nodes: &BTreeMap<&str, &NodeView>, now: f64) -> Option<Op> {
    match delete_pod_op(pod, false, nodes, now) {
        Op::Patch { patch, .. } if patch.as_object().is_some_and(|p| p.is_empty()) => None,
        op => Some(op),
    }
}

/// Devices held by live pods: node → device → owner uid.
pub type Held = HashMap<String, BTreeMap<u32, String>>;

/// Who holds which device, once per pass.
pub fn held_devices(cache: &Cache) -> Held {
    let mut held: Held = HashMap::new();
    for p in cache.of_kind("v1", "Pod") {
        if !pods::phase_of(&p.object).is_live() {
            continue;
        }
        let Some(n) = pods::node_of(&p.object) else { continue };
        // A pod no job owns (made by hand, or orphaned) holds its devices all the same.
        let uid = pods::owner_uid(&p.object).unwrap_or_default();
        let entry = held.entry(n.to_string()).or_default();
        for d in pods::devices_of(&p.object) {
            entry.insert(d, uid.to_string());
        }
    }
    held
}

fn observe(
    job: &JobObject,
    pods: &[Arc<Stored>],
    nodes: &[NodeView],
    by_name: &BTreeMap<&str, &NodeView>,
    held: &Held,
) -> Observed {
    let uid = job.uid();
    let observed_pods = pods
        .iter()
        .filter_map(|p| {
            let mut o = pods::observe(&p.object)?;
            o.placement = placement_of(&p.object, by_name);
            Some(o)
        })
        .collect();
    // What the job could really get: the scheduler gives a multi-pod job no
    // chip with a broken network, nor any job a chip it isolated, nor a chip
    // another job's pod holds, bound and waiting for its release or running.
    let multi_pod = job.state.job.total_replicas() > 1;
    let isolated = &job.state.status.isolated;
    let observed_nodes = nodes
        .iter()
        .map(|n| {
            let busy = held.get(n.name.as_str());
            let usable = n
                .devices
                .iter()
                .filter(|d| !n.unhealthy.contains(d))
                .filter(|d| !multi_pod || !n.network_unhealthy.contains(d))
                .filter(|d| !isolated.iter().any(|i| i.node == n.name && i.device == **d))
                .filter(|d| busy.and_then(|b| b.get(d)).is_none_or(|o| o == uid))
                .count() as u32;
            ObservedNode {
                name: n.name.clone(),
                ready: n.ready,
                unhealthy_devices: n.unhealthy.clone(),
                network_unhealthy_devices: n.network_unhealthy.clone(),
                usable_devices: usable,
                last_heartbeat: n.last_heartbeat.map(|t| t as u64),
            }
        })
        .collect();
    Observed { pods: observed_pods, nodes: observed_nodes }
}

/// Largest rank table copied into a pod's `ringleader.io/files` annotation
/// when the ConfigMap cannot be used (Kubernetes caps all of a pod's
/// annotations at 256 KiB).
pub const COPIED_TABLE_MAX: usize = 128 * 1024;

/// Whether a `rings-config-<job>` object holds `table` (plain or packed).
fn shared_holds(config_map: &Value, table: &str) -> bool {
    match ringleader_api::configmap_file::read(config_map, hccl::CONFIG_MAP_KEY) {
        Ok(held) => held.as_deref() == Some(table),
        Err(e) => {
            tracing::warn!(error = %e, "reading the rank-table ConfigMap failed");
            false
        }
    }
}

fn is_npu_job(job: &Job) -> bool {
    ringleader_controller::ranktable::gets_rank_table(job)
}

/// Releases bound pods to their agents once the whole current gang is
/// bound (pods of Deployments and batch Jobs are independent: each goes as
/// soon as it is bound), with the env and files that depend on placement.
///
/// The writes are added to `out` for the caller to make, with other jobs'
/// in one transaction; `out` is written first when this job's ports are
/// chosen, as the choice reads the ports the pods before it hold.
#[allow(clippy::too_many_arguments)]
fn launch(
    store: &dyn Backend,
    cache: &mut Cache,
    job: &JobObject,
    seen: &[Arc<Stored>],
    state: &JobState,
    nodes: &BTreeMap<&str, &NodeView>,
    now: f64,
    out: &mut Gathered,
) -> Result<(), ManagerError> {
    let uid = job.uid();
    // The pods as they are after this reconcile's own writes.
    let pods: Vec<Arc<Stored>> = seen
        .iter()
        .filter_map(|p| cache.get_shared(&p.key))
        .filter(|p| pods::owner_uid(&p.object) == Some(uid) && !pods::deleting(&p.object))
        .filter(|p| pods::phase_of(&p.object).is_live())
        .collect();
    let waiting: Vec<&Stored> =
        pods.iter().filter(|p| !pods::started(&p.object) && pods::node_of(&p.object).is_some()).map(|p| &**p).collect();
    if waiting.is_empty() {
        return Ok(());
    }
    let effective = state.effective_job();
    if crate::mindie::table_missing(cache, &effective) {
        return Ok(());
    }
    // A gang goes once its minimum is bound, as Volcano binds a job whose
    // `minAvailable` is met and the kubelets start those pods: a job told
    // `huawei.com/schedule_minAvailable: 1` runs with what fits. An elastic
    // job is resized whole instead, so it waits for every pod it keeps.
    let bound = pods.iter().filter(|p| pods::node_of(&p.object).is_some()).count();
    let needed =
        if effective.fault.elastic.is_some() { pods.len() } else { effective.scheduling.min_available as usize };
    if !effective.kind.independent_replicas() && bound < needed.min(pods.len()).max(1) {
        return Ok(());
    }
    let exp = state.expansion();
    let mut placement = Placement {
        pods: pods
            .iter()
            .filter_map(|p| {
                Some((str_at(&p.object, &["metadata", "name"])?.to_string(), placement_of(&p.object, nodes)?))
            })
            .collect(),
    };
    let mut opts = state.config.env.clone();
    if let Some(seed) = state.config.ssh_seed.as_ref().filter(|_| ssh::needed(&effective, &state.extras)) {
        opts.ssh.get_or_insert_with(|| ssh::job_keys(seed, &effective, &state.extras));
    }
    let opts = &opts;
    let listeners = chosen::listeners(&effective, &state.extras, &exp.pods, opts);
    if listeners.as_ref().is_ok_and(|l| !l.is_empty()) {
        // The ports other pods hold are read from the cache: what was
        // gathered so far goes in first.
        out.write(store, cache, now)?;
    }
    let assigned = listeners.and_then(|l| {
        if l.is_empty() {
            return Ok(false);
        }
        // Only jobs that listen pay for the walk over the pods.
        let addresses: BTreeSet<&str> = placement.pods.values().map(|p| p.pod_ip.as_str()).collect();
        let in_use = ports::in_use(cache, nodes, &addresses);
        chosen::assign(&l, &mut placement, &in_use).map(|()| true)
    });
    let names_ports = match assigned {
        Ok(n) => n,
        Err(e) => {
            // Not released: the pods wait until a port frees up (or the job is fixed).
            let mut rec = Recorder::new(events::CONTROLLER);
            rec.observed(&job.stored.object, events::EventType::Warning, "FailedPortAssignment", e.to_string());
            out.recorded.push(rec);
            return Ok(());
        }
    };
    let placed = env::placed_env(&effective, &state.extras, &exp.pods, &placement, opts);
    let full = env::pod_env(&effective, &state.extras, &exp.pods, &placement, opts);
    let rank_table = is_npu_job(&effective).then(|| {
        let version = hccl::HcclVersion::for_job(&effective);
        hccl::render(hccl::table(&effective, &exp.pods, &placement, version).as_ref())
    });
    // The pods read the rank table from the ConfigMap the controller keeps,
    // when that holds this very table (it is written earlier in the same
    // reconcile; a large one gzip-packed); otherwise each pod gets its own
    // copy, as a fallback — only of a table small enough for an annotation:
    // N copies of a large one would take N times its size here, and the
    // API server refuses them anyway.
    let table_map = hccl::config_map_name(&effective.name);
    let shared_table = rank_table.as_ref().is_some_and(|table| {
        let key = ObjectKey::new("v1", "ConfigMap", &effective.namespace, &table_map);
        cache.get(&key).is_some_and(|cm| shared_holds(&cm.object, table))
    });
    if let Some(table) = rank_table.as_ref().filter(|t| !shared_table && t.len() > COPIED_TABLE_MAX) {
        let mut rec = Recorder::new(events::CONTROLLER);
        let message = format!(
            "not started: ConfigMap {table_map} does not hold the current hccl.json ({} bytes), and a table \
             over {COPIED_TABLE_MAX} bytes is not copied into each pod; waiting for the ConfigMap",
            table.len()
        );
        rec.observed(&job.stored.object, events::EventType::Warning, "RankTableNotShared", message);
        out.recorded.push(rec);
        return Ok(());
    }
    let mut ops = Vec::new();
    for pod in waiting {
        let name = str_at(&pod.object, &["metadata", "name"]).unwrap_or_default();
        let mut vars: Vec<(String, String)> = placed
            .get(name)
            .map(|e| e.env.iter().map(|v| (v.name.clone(), v.value.clone())).collect())
            .unwrap_or_default();
        let mut files: BTreeMap<String, String> = full.get(name).map(|e| e.files.clone()).unwrap_or_default();
        let mut annotations = serde_json::Map::new();
        if let Some(table) = &rank_table {
            if shared_table {
                let from = BTreeMap::from([(hccl::POD_PATH, format!("{table_map}/hccl.json"))]);
                annotations.insert(CONFIG_FILES.into(), json!(serde_json::to_string(&from).unwrap_or_default()));
            } else {
                files.insert(hccl::POD_PATH.to_string(), table.clone());
            }
            vars.push(("RANK_TABLE_FILE".to_string(), hccl::POD_PATH.to_string()));
        }
        crate::mindie::release(&effective, &pod.object, &mut annotations, &mut vars);
        let containers = with_env(&pod.object, &vars, effective.kind == JobKind::AscendJob);
        annotations.insert(FILES.into(), json!(serde_json::to_string(&files).unwrap_or_default()));
        if names_ports {
            annotations.insert(ports::ANNOTATION.into(), json!(chosen::annotation_value(&placement, name)));
        }
        annotations.insert(START.into(), json!("true"));
        ops.push(Op::Patch {
            key: pod.key.clone(),
            patch: json!({"metadata": {"annotations": annotations}, "spec": {"containers": containers}}),
            expected: Some(pod.resource_version),
        });
    }
    out.ops.extend(ops);
    Ok(())
}

/// Writes gathered over several jobs' releases, made in one transaction.
#[derive(Default)]
struct Gathered {
    ops: Vec<Op>,
    recorded: Vec<Recorder>,
}

impl Gathered {
    /// Makes the gathered writes now.
    fn write(&mut self, store: &dyn Backend, cache: &mut Cache, now: f64) -> Result<(), ManagerError> {
        let ops = std::mem::take(&mut self.ops);
        let recorded = std::mem::take(&mut self.recorded);
        events::write_all(store, cache, ops, recorded, now)
    }
}

/// The pod's containers with `vars` set (replacing same-named values); for
/// an AscendJob only the container named `ascend` when there is one, as the
/// operator injects. `RANK_TABLE_FILE` is only added where absent.
fn with_env(pod: &Value, vars: &[(String, String)], ascend_job: bool) -> Value {
    let mut containers = pod.get("spec").and_then(|s| s.get("containers")).cloned().unwrap_or(json!([]));
    let Some(list) = containers.as_array_mut() else { return containers };
    let only_ascend = ascend_job && list.iter().any(|c| c.get("name").and_then(Value::as_str) == Some("ascend"));
    for c in list.iter_mut() {
        if only_ascend && c.get("name").and_then(Value::as_str) != Some("ascend") {
            continue;
        }
        let Some(obj) = c.as_object_mut() else { continue };
        let env = obj.entry("env").or_insert_with(|| json!([]));
        let Some(env) = env.as_array_mut() else { continue };
        for (name, value) in vars {
            match env.iter_mut().find(|e| e.get("name").and_then(Value::as_str) == Some(name)) {
                Some(_) if name == "RANK_TABLE_FILE" => {}
                Some(e) => *e = json!({"name": name, "value": value}),
                None => env.push(json!({"name": name, "value": value})),
            }
        }
    }
    containers
}

/// Deletes what jobs no longer in the store owned (pods, PodGroups, ConfigMaps).
pub fn collect_garbage(
    store: &dyn Backend,
    cache: &mut Cache,
    live_uids: &BTreeSet<String>,
    now: f64,
) -> Result<(), ManagerError> {
    let nodes = node_views(cache);
    let by_name: BTreeMap<&str, &NodeView> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let mut ops = Vec::new();
    for o in cache.all() {
        let Some(uid) = pods::owner_uid(&o.object) else { continue };
        if live_uids.contains(uid) || annotation(&o.object, "ringleader.io/keep").is_some() {
            continue;
        }
        if o.key.kind == "Pod" {
            if !pods::deleting(&o.object) || !pods::started(&o.object) {
                ops.push(delete_pod_op(o, false, &by_name, now));
            }
        } else if o.key.api_version == namespace::API_VERSION && o.key.kind == namespace::KIND {
            // A namespace (a workspace's) is emptied before it goes.
            if !namespace::terminating(&o.object) {
                let patch = namespace::terminate_patch(&rfc3339(now));
                ops.push(Op::Patch { key: o.key.clone(), patch, expected: None });
            }
        } else {
            ops.push(Op::Delete { key: o.key.clone(), expected: None });
        }
    }
    write(store, cache, ops)
}
