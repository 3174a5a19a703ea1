//! The framework job a Run instantiates from its TrainingJob: PyTorch DDP
//! and DeepSpeed → Kubeflow PyTorchJob, TensorFlow PS → TFJob, MPI →
//! MPIJob (v2beta1), MindSpore → AscendJob. One replica spec per role of
//! the TrainingJob (its resources as requests = limits), the command run
//! by a shell, datasets and storage as hostPath volumes, the pods confined
//! to the queue's resource group, all labelled with the TrainingJob and Run.

use super::api::{GROUP_LABEL, RUN_LABEL, TRAINING_JOB_LABEL};
use super::object::{name, namespace, owner_ref};
use crate::cache::{at, str_at};
use ringleader_api::ascend as keys;
use serde_json::{json, Map, Value};

/// A volume of the job: a node directory mounted in every pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Node directory.
    pub host_path: String,
    /// Where pods see it.
    pub mount_path: String,
    /// Env var naming the path in the pod (`DATA_PATH` for the first
    /// dataset, `DATASET_<NAME>` / `STORAGE_<NAME>`): a node without the
    /// mount path mounts it inside the pod's sandbox, and the agent points
    /// the variable there.
    pub env: Vec<String>,
}

/// The scheduler's VIP annotations (`ringleader_scheduler::vip`).
const VIP_ANNOTATION: &str = "ringleader.io/vip";
const VIP_NODES_ANNOTATION: &str = "ringleader.io/vip-nodes";

/// Annotations of the framework job recording the TrainingJob's AI Hub
/// settings that do not change its pods (seed 003), shown with the job.
pub const CATEGORY_ANNOTATION: &str = "platform.ringleader.io/category";
pub const PROJECT_ANNOTATION: &str = "platform.ringleader.io/project";
pub const ESTIMATED_RUN_TIME_ANNOTATION: &str = "platform.ringleader.io/estimated-run-time-seconds";
/// Where a pod's shared memory is mounted, and the volume's name.
const SHM_PATH: &str = "/dev/shm";
const SHM_VOLUME: &str = "dshm";
/// The port SSH access opens (AI Hub: "do not change sshd's port 22").
pub const SSH_PORT: u64 = 22;

/// `NAME` of an env var from an object name (`mnist-v2` → `MNIST_V2`).
pub fn env_name(prefix: &str, name: &str) -> String {
    let tail: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("{prefix}_{tail}")
}

/// What the job needs besides the TrainingJob and the Run.
#[derive(Debug, Clone)]
pub struct Context {
    /// Queue the job is submitted to.
    pub queue: String,
    /// Resource group of the queue: its pods go only to that group's nodes.
    pub group: Option<String>,
    /// The group schedules gangs (policy `Gang`, the default): all of a
    /// run's pods or none; without it each pod is placed on its own.
    pub gang: bool,
    /// The group's topology affinity: prefer nodes under one switch.
    pub topology_affinity: bool,
    /// Resource name an `npu` count stands for (`huawei.com/Ascend910`).
    pub npu_resource: String,
    /// `ring-controller.atlas` of NPU jobs (`ascend-910b`).
    pub ring_controller: String,
    /// Volumes, in the TrainingJob's order.
    pub mounts: Vec<Mount>,
}

/// How a framework is run: the job kind and its fields.
struct Shape {
    api_version: &'static str,
    kind: &'static str,
    replica_specs: &'static str,
    container: &'static str,
}

fn shape(framework: &str) -> Result<Shape, String> {
    let s = |api_version, kind, replica_specs, container| Shape { api_version, kind, replica_specs, container };
    match framework {
        "PyTorchDDP" | "PyTorchDeepSpeed" => Ok(s("kubeflow.org/v1", "PyTorchJob", "pytorchReplicaSpecs", "pytorch")),
        "TensorFlowPS" => Ok(s("kubeflow.org/v1", "TFJob", "tfReplicaSpecs", "tensorflow")),
        "MPI" => Ok(s("kubeflow.org/v2beta1", "MPIJob", "mpiReplicaSpecs", "mpi")),
        "MindSpore" => Ok(s("mindxdl.gitee.com/v1", "AscendJob", "replicaSpecs", keys::ACJOB_CONTAINER)),
        other => Err(format!(
            "spec.framework: {other:?}: allowed: PyTorchDDP, PyTorchDeepSpeed, TensorFlowPS, MPI, MindSpore"
        )),
    }
}

/// Shells whose `-c` form a TrainingJob command may already be written in.
const SHELLS: &[&str] = &["/bin/bash", "bash", "/bin/sh", "sh"];

/// The container command for a TrainingJob's command line: a shell `-c`
/// form is kept as that shell (its script unquoted once), anything else
/// (`python …`, `torchrun …`, `mpirun …`) runs through `/bin/sh -c` so the
/// shell splits it as it was written.
pub fn command(line: &str) -> Vec<String> {
    let line = line.trim();
    for shell in SHELLS {
        let Some(rest) = line.strip_prefix(shell).and_then(|r| r.trim_start().strip_prefix("-c")) else { continue };
        if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
            continue;
        }
        let script = rest.trim();
        let unquoted = ['"', '\'']
            .iter()
            .find_map(|q| script.strip_prefix(*q).and_then(|s| s.strip_suffix(*q)).filter(|s| !s.contains(*q)))
            .unwrap_or(script);
        return vec![shell.to_string(), "-c".to_string(), unquoted.to_string()];
    }
    vec!["/bin/sh".to_string(), "-c".to_string(), line.to_string()]
}

/// Requests (= limits) of a TrainingJob role's `resources`.
fn resources(res: Option<&Value>, ctx: &Context, field: &str) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    let Some(res) = res else { return Ok(out) };
    let obj = res.as_object().ok_or_else(|| format!("{field}: {res}: must be an object"))?;
    for (k, v) in obj {
        let (resource, value) = match k.as_str() {
            "gpu" | "npu" => {
                let n = v.as_u64().ok_or_else(|| format!("{field}.{k}: {v}: must be a non-negative integer"))?;
                let r = if k == "gpu" { super::quota::GPU.to_string() } else { ctx.npu_resource.clone() };
                (r, json!(n))
            }
            "cpu" | "memory" => match v {
                Value::String(s) => (k.clone(), json!(s)),
                Value::Number(n) => (k.clone(), json!(n.to_string())),
                other => return Err(format!("{field}.{k}: {other}: must be a quantity")),
            },
            other => (other.to_string(), v.clone()),
        };
        if value.as_u64() != Some(0) {
            out.insert(resource, value);
        }
    }
    Ok(out)
}

/// The framework job of `run` (of TrainingJob `tj`), or why there is none.
pub fn build(tj: &Value, run: &Value, ctx: &Context) -> Result<Value, String> {
    let framework = str_at(tj, &["spec", "framework"]).unwrap_or_default();
    let shape = shape(framework)?;
    let image = str_at(tj, &["spec", "image"]).filter(|s| !s.is_empty()).ok_or("spec.image: required")?;
    let line = str_at(tj, &["spec", "command"]).unwrap_or_default();
    let roles = at(tj, &["spec", "roles"])
        .and_then(Value::as_array)
        .filter(|r| !r.is_empty())
        .ok_or("spec.roles: required: at least one role ({name, count, resources})")?;
    let npu = roles.iter().any(|r| at(r, &["resources", "npu"]).and_then(Value::as_u64).unwrap_or(0) > 0);
    let mut labels = Map::new();
    labels.insert(TRAINING_JOB_LABEL.into(), json!(name(tj)));
    labels.insert(RUN_LABEL.into(), json!(name(run)));
    if shape.kind == "AscendJob" {
        labels.insert(keys::FRAMEWORK.into(), json!("mindspore"));
    }
    if npu || shape.kind == "AscendJob" {
        labels.insert(keys::RING_CONTROLLER.into(), json!(ctx.ring_controller));
        // MindCluster's switch affinity: pods under as few ToRs as possible.
        if ctx.topology_affinity {
            labels.insert(ringleader_api::ascend::TOR_AFFINITY.into(), json!("normal-schema"));
        }
    }
    let mut env: Vec<Value> = at(tj, &["spec", "env"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| Some(json!({"name": e.get("name")?.as_str()?, "value": e.get("value").and_then(Value::as_str).unwrap_or_default()})))
        .collect();
    // The mounts' variables, unless the job sets them itself.
    for m in &ctx.mounts {
        for var in &m.env {
            if !env.iter().any(|e| e["name"] == var.as_str()) {
                env.push(json!({"name": var, "value": m.mount_path}));
            }
        }
    }
    let mut volumes: Vec<Value> = ctx
        .mounts
        .iter()
        .enumerate()
        .map(|(i, m)| json!({"name": format!("mount-{i}"), "hostPath": {"path": m.host_path}}))
        .collect();
    let mut volume_mounts: Vec<Value> = ctx
        .mounts
        .iter()
        .enumerate()
        .map(|(i, m)| json!({"name": format!("mount-{i}"), "mountPath": m.mount_path}))
        .collect();
    // AI Hub's shared memory: /dev/shm an in-memory volume of that size.
    if let Some(gb) = at(tj, &["spec", "sharedMemoryGB"]).and_then(Value::as_u64) {
        volumes.push(json!({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": format!("{gb}Gi")}}));
        volume_mounts.push(json!({"name": SHM_VOLUME, "mountPath": SHM_PATH}));
    }
    let pull = str_at(tj, &["spec", "imagePullPolicy"]).unwrap_or("IfNotPresent");
    let ssh = at(tj, &["spec", "ssh"]).and_then(Value::as_bool) == Some(true);
    let mut specs = Map::new();
    let mut total = 0u64;
    let mut slots = None;
    for (i, role) in roles.iter().enumerate() {
        let field = format!("spec.roles[{i}]");
        let role_name = str_at(role, &["name"]).filter(|n| !n.is_empty()).ok_or(format!("{field}.name: required"))?;
        let count = role.get("count").map_or(Some(1), Value::as_u64).ok_or(format!(
            "{field}.count: {}: must be a positive integer",
            role.get("count").unwrap_or(&Value::Null)
        ))?;
        total += count;
        let res = resources(role.get("resources"), ctx, &format!("{field}.resources"))?;
        if shape.kind == "MPIJob" && role_name == "Worker" {
            let devices = res.iter().find(|(k, _)| k.contains('/')).and_then(|(_, v)| v.as_u64());
            slots = Some(devices.unwrap_or(1).max(1));
        }
        // MPI workers wait for the launcher's mpirun, as mpi-operator's do.
        let cmd = if shape.kind == "MPIJob" && role_name == "Worker" {
            vec!["/usr/sbin/sshd".to_string(), "-De".to_string()]
        } else {
            command(line)
        };
        let mut container = json!({
            "name": shape.container,
            "image": image,
            "imagePullPolicy": pull,
            "command": cmd,
            "env": env,
            "resources": {"requests": res, "limits": res},
        });
        if !volume_mounts.is_empty() {
            container["volumeMounts"] = json!(volume_mounts);
        }
        if ssh {
            container["ports"] = json!([{"name": "ssh", "containerPort": SSH_PORT, "protocol": "TCP"}]);
        }
        let mut pod_spec = json!({"containers": [container]});
        if !volumes.is_empty() {
            pod_spec["volumes"] = json!(volumes);
        }
        if let Some(g) = &ctx.group {
            pod_spec["nodeSelector"] = json!({ GROUP_LABEL: g });
        }
        specs.insert(
            role_name.to_string(),
            json!({
                "replicas": count,
                "restartPolicy": "Never",
                "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            }),
        );
    }
    let min_available = if ctx.gang { total } else { 1 };
    let mut spec = json!({
        "runPolicy": {"schedulingPolicy": {"queue": ctx.queue, "minAvailable": min_available}},
        shape.replica_specs: specs,
    });
    if let Some(s) = slots {
        spec["slotsPerWorker"] = json!(s);
    }
    if shape.kind == "AscendJob" {
        spec["schedulerName"] = json!("volcano");
    }
    let mut metadata = json!({
        "name": name(run),
        "namespace": namespace(run),
        "labels": labels,
        "ownerReferences": owner_ref(run),
    });
    // The VIP job of seed 003: the scheduler runs it only on these nodes and
    // either waits for them to empty or evicts what runs there.
    if let Some(vip) = at(tj, &["spec", "vip"]).filter(|v| v.is_object()) {
        let nodes: Vec<&str> =
            vip.get("nodes").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let mode = vip.get("onBusy").and_then(Value::as_str).unwrap_or("wait");
        if nodes.is_empty() {
            return Err("spec.vip.nodes: a VIP job names the machines it runs on".into());
        }
        metadata["annotations"] = json!({ VIP_ANNOTATION: mode, VIP_NODES_ANNOTATION: nodes.join(",") });
    }
    let annotations = settings_annotations(tj);
    if !annotations.is_empty() {
        let mut all = metadata["annotations"].as_object().cloned().unwrap_or_default();
        all.extend(annotations);
        metadata["annotations"] = Value::Object(all);
    }
    Ok(json!({
        "apiVersion": shape.api_version,
        "kind": shape.kind,
        "metadata": metadata,
        "spec": spec,
    }))
}

/// The framework job's annotations of a TrainingJob's AI Hub settings: the
/// env convention and NCCL auto-settings the job controller applies to its
/// pods over the cluster's, and what is only recorded (category, project,
/// estimated run time).
fn settings_annotations(tj: &Value) -> Map<String, Value> {
    use ringleader_controller::env::{ENV_VARIANT_ANNOTATION, NCCL_AUTO_ANNOTATION};
    let mut out = Map::new();
    if let Some(v) = str_at(tj, &["spec", "envVariant"]) {
        out.insert(ENV_VARIANT_ANNOTATION.into(), json!(v));
    }
    let ib = at(tj, &["spec", "ibNetwork"]).and_then(Value::as_bool);
    // The IB switch turns the NCCL auto-settings on unless the job turns them off.
    match (at(tj, &["spec", "ncclAuto"]).and_then(Value::as_bool), ib) {
        (Some(false), _) => {
            out.insert(NCCL_AUTO_ANNOTATION.into(), json!("off"));
        }
        (_, Some(ib)) => {
            out.insert(NCCL_AUTO_ANNOTATION.into(), json!(if ib { "rdma" } else { "ethernet" }));
        }
        _ => {}
    }
    for (field, key) in [("category", CATEGORY_ANNOTATION), ("project", PROJECT_ANNOTATION)] {
        if let Some(v) = str_at(tj, &["spec", field]) {
            out.insert(key.into(), json!(v));
        }
    }
    if let Some(t) = at(tj, &["spec", "estimatedRunTimeSeconds"]).and_then(Value::as_u64) {
        out.insert(ESTIMATED_RUN_TIME_ANNOTATION.into(), json!(t.to_string()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_api::{validate, Resource};

    #[test]
    fn commands_run_through_a_shell() {
        assert_eq!(command("python train.py --lr 0.1"), ["/bin/sh", "-c", "python train.py --lr 0.1"]);
        assert_eq!(command("/bin/bash -c 'cd /w && torchrun t.py'"), ["/bin/bash", "-c", "cd /w && torchrun t.py"]);
        assert_eq!(command("bash -c \"echo hi\""), ["bash", "-c", "echo hi"]);
        assert_eq!(command("sh -c echo 'a' && echo b"), ["sh", "-c", "echo 'a' && echo b"]);
        assert_eq!(command("shx -c x"), ["/bin/sh", "-c", "shx -c x"]);
        assert_eq!(command("bash -cx"), ["/bin/sh", "-c", "bash -cx"]);
    }

    fn tj(framework: &str, roles: Value) -> Value {
        json!({"apiVersion": super::super::API, "kind": "TrainingJob",
               "metadata": {"name": "train", "namespace": "team-a", "uid": "tj-uid"},
               "spec": {"queue": "q1", "image": "pytorch/pytorch:2.4", "framework": framework,
                        "command": "torchrun --nproc_per_node=8 train.py", "env": [{"name": "LR", "value": "0.1"}],
                        "roles": roles}})
    }

    fn run() -> Value {
        json!({"apiVersion": super::super::API, "kind": "Run",
               "metadata": {"name": "train-r1", "namespace": "team-a", "uid": "run-uid"},
               "spec": {"trainingJob": "train"}})
    }

    fn ctx() -> Context {
        Context {
            queue: "q1".into(),
            group: Some("g1".into()),
            gang: true,
            topology_affinity: false,
            npu_resource: "huawei.com/Ascend910".into(),
            ring_controller: "ascend-910b".into(),
            mounts: vec![Mount {
                host_path: "/datasets/mnist".into(),
                mount_path: "/data".into(),
                env: vec!["DATA_PATH".into(), "DATASET_MNIST".into()],
            }],
        }
    }

    fn valid(job: &Value) {
        let r = Resource::from_value(job).unwrap_or_else(|e| panic!("{e}: {job:#}"));
        let errs = validate(&r);
        assert!(errs.is_empty(), "{errs:?}\n{job:#}");
    }

    #[test]
    fn ai_hub_settings_reach_the_pods_and_the_job() {
        let mut t = tj("PyTorchDDP", json!([{"name": "Worker", "count": 2, "resources": {"gpu": 8}}]));
        t["spec"]["sharedMemoryGB"] = json!(16);
        t["spec"]["imagePullPolicy"] = json!("Always");
        t["spec"]["ssh"] = json!(true);
        t["spec"]["ibNetwork"] = json!(true);
        t["spec"]["envVariant"] = json!("aihub");
        t["spec"]["category"] = json!("training");
        t["spec"]["estimatedRunTimeSeconds"] = json!(5400);
        let job = build(&t, &run(), &ctx()).unwrap();
        valid(&job);
        let pod = &job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"];
        assert_eq!(pod["volumes"][1], json!({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}));
        let c = &pod["containers"][0];
        assert_eq!(c["volumeMounts"][1], json!({"name": "dshm", "mountPath": "/dev/shm"}));
        assert_eq!(c["imagePullPolicy"], "Always");
        assert_eq!(c["ports"][0]["containerPort"], 22);
        let a = &job["metadata"]["annotations"];
        assert_eq!(
            (a["ringleader.io/nccl-auto"].as_str(), a["ringleader.io/env-variant"].as_str()),
            (Some("rdma"), Some("aihub"))
        );
        assert_eq!(a[CATEGORY_ANNOTATION], "training");
        assert_eq!(a[ESTIMATED_RUN_TIME_ANNOTATION], "5400");
        // Off, the IB switch still sets NCCL (to Ethernet); ncclAuto: false sets nothing.
        t["spec"]["ibNetwork"] = json!(false);
        assert_eq!(
            build(&t, &run(), &ctx()).unwrap()["metadata"]["annotations"]["ringleader.io/nccl-auto"],
            "ethernet"
        );
        t["spec"]["ncclAuto"] = json!(false);
        assert_eq!(build(&t, &run(), &ctx()).unwrap()["metadata"]["annotations"]["ringleader.io/nccl-auto"], "off");
        // Without settings the job is as before.
        let plain = build(&tj("PyTorchDDP", json!([{"name": "Worker", "count": 1}])), &run(), &ctx()).unwrap();
        assert!(plain["metadata"]["annotations"].is_null(), "{plain}");
    }

    #[test]
    fn every_framework_gives_a_job_that_validates() {
        let gpu = json!({"gpu": 8, "cpu": "16", "memory": "64Gi"});
        let npu = json!({"npu": 8, "cpu": "16", "memory": "64Gi"});
        let cases = [
            (
                "PyTorchDDP",
                json!([{"name": "Master", "count": 1, "resources": gpu}, {"name": "Worker", "count": 1, "resources": gpu}]),
                "PyTorchJob",
            ),
            ("PyTorchDeepSpeed", json!([{"name": "Worker", "count": 2, "resources": gpu}]), "PyTorchJob"),
            (
                "TensorFlowPS",
                json!([{"name": "PS", "count": 1, "resources": {"cpu": "4"}}, {"name": "Worker", "count": 2, "resources": gpu}]),
                "TFJob",
            ),
            (
                "MPI",
                json!([{"name": "Launcher", "count": 1, "resources": {"cpu": "1"}}, {"name": "Worker", "count": 2, "resources": gpu}]),
                "MPIJob",
            ),
            (
                "MindSpore",
                json!([{"name": "Scheduler", "count": 1, "resources": npu}, {"name": "Worker", "count": 1, "resources": npu}]),
                "AscendJob",
            ),
            (
                "PyTorchDDP",
                json!([{"name": "Master", "count": 1, "resources": npu}, {"name": "Worker", "count": 1, "resources": npu}]),
                "PyTorchJob",
            ),
        ];
        for (framework, roles, kind) in cases {
            let job = build(&tj(framework, roles), &run(), &ctx()).expect("built");
            assert_eq!(job["kind"], kind, "{framework}");
            valid(&job);
        }
    }

    #[test]
    fn the_pytorch_job_carries_run_queue_group_mounts_and_owner() {
        let roles = json!([{"name": "Master", "count": 1, "resources": {"gpu": 8}},
                           {"name": "Worker", "count": 3, "resources": {"gpu": 8}}]);
        let job = build(&tj("PyTorchDDP", roles), &run(), &ctx()).expect("built");
        assert_eq!(job["metadata"]["name"], "train-r1");
        assert_eq!(job["metadata"]["labels"][RUN_LABEL], "train-r1");
        assert_eq!(job["metadata"]["labels"][TRAINING_JOB_LABEL], "train");
        assert_eq!(job["metadata"]["ownerReferences"][0]["uid"], "run-uid");
        assert_eq!(job["spec"]["runPolicy"]["schedulingPolicy"], json!({"queue": "q1", "minAvailable": 4}));
        let worker = &job["spec"]["pytorchReplicaSpecs"]["Worker"];
        assert_eq!(worker["replicas"], 3);
        let pod = &worker["template"]["spec"];
        assert_eq!(pod["nodeSelector"][GROUP_LABEL], "g1");
        assert_eq!(pod["volumes"][0]["hostPath"]["path"], "/datasets/mnist");
        let c = &pod["containers"][0];
        assert_eq!(c["volumeMounts"][0]["mountPath"], "/data");
        assert_eq!(c["command"], json!(["/bin/sh", "-c", "torchrun --nproc_per_node=8 train.py"]));
        assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], 8);
        assert_eq!(
            c["env"],
            json!([{"name": "LR", "value": "0.1"}, {"name": "DATA_PATH", "value": "/data"}, {"name": "DATASET_MNIST", "value": "/data"}]),
            "the job's own env, then the mounts' variables"
        );
        assert_eq!(env_name("STORAGE", "ckpt-v2.1"), "STORAGE_CKPT_V2_1");
        assert!(job["metadata"].get("annotations").is_none(), "not a VIP job");
        // A group without the Gang policy places each pod on its own; one
        // with topology affinity asks NPU jobs to keep to few switches.
        let mut loose = ctx();
        (loose.gang, loose.topology_affinity) = (false, true);
        let npu = tj("MindSpore", json!([{"name": "Worker", "count": 4, "resources": {"npu": 8}}]));
        let job = build(&npu, &run(), &loose).expect("built");
        assert_eq!(job["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"], 1);
        assert_eq!(job["metadata"]["labels"]["tor-affinity"], "normal-schema");
        valid(&job);
        let mut vip = tj("PyTorchDDP", json!([{"name": "Worker", "count": 1, "resources": {"gpu": 8}}]));
        vip["spec"]["vip"] = json!({"nodes": ["g1", "g2"], "onBusy": "kill"});
        let job = build(&vip, &run(), &ctx()).expect("built");
        assert_eq!(job["metadata"]["annotations"], json!({VIP_ANNOTATION: "kill", VIP_NODES_ANNOTATION: "g1,g2"}));
        assert_eq!(ringleader_scheduler::vip::VIP, VIP_ANNOTATION);
        assert_eq!(ringleader_scheduler::vip::VIP_NODES, VIP_NODES_ANNOTATION);
        assert_eq!(worker["template"]["metadata"]["labels"][RUN_LABEL], "train-r1");
    }

    #[test]
    fn a_job_that_cannot_be_built_says_which_field() {
        let err = build(&tj("Caffe", json!([{"name": "Worker"}])), &run(), &ctx()).unwrap_err();
        assert!(err.starts_with("spec.framework: \"Caffe\""), "{err}");
        let err = build(&tj("MPI", json!([])), &run(), &ctx()).unwrap_err();
        assert!(err.starts_with("spec.roles"), "{err}");
        let err = build(&tj("MPI", json!([{"name": "Worker", "resources": {"gpu": -1}}])), &run(), &ctx()).unwrap_err();
        assert!(err.starts_with("spec.roles[0].resources.gpu: -1"), "{err}");
    }
}
