//! The platform of seeds 003 and 004, as seed 004's chapters run it: an
//! admin makes a resource group with nodes, a queue with a quota and a
//! workspace with a member; the member, with a token of her own, makes a
//! dataset and a training job, runs it twice (each run with its pods and
//! logs, the dataset mounted at /data), the admin locks the queue (a third
//! run stays queued while the others go on), the member stops a run (the
//! record stays, the devices are freed) and clones the job; a member of
//! another workspace is refused all of it; the audit record lists each step.

mod common;

use common::Plane;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const BLOCK: u8 = 77;

fn ok(plane: &Plane, who: Option<&Path>, args: &[&str]) -> String {
    let (success, out) = plane.ringleader_as(who, args);
    assert!(success, "ringleader {args:?} failed:\n{out}");
    out
}

fn token(plane: &Plane, user: &str) -> PathBuf {
    let file = plane.dir.path().join(format!("{user}.kubeconfig"));
    ok(plane, None, &["token", "create", "--user", user, "--kubeconfig-out", &file.to_string_lossy()]);
    file
}

fn apply(plane: &Plane, who: Option<&Path>, name: &str, yaml: &str) {
    let file = plane.dir.path().join(name);
    std::fs::write(&file, yaml).expect("write");
    ok(plane, who, &["apply", "-f", &file.to_string_lossy()]);
}

fn get_json(plane: &Plane, who: Option<&Path>, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend(["-o", "json"]);
    serde_json::from_str(&ok(plane, who, &all)).unwrap_or(Value::Null)
}

/// `kubectl ARGS` with `kubeconfig`: `Some(stdout)` on success, `None` when refused.
fn kubectl(kubeconfig: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("kubectl").arg("--kubeconfig").arg(kubeconfig).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn run_state(plane: &Plane, alice: &Path, run: &str) -> String {
    get_json(plane, Some(alice), &["runs", run, "-n", "ws-a"])["status"]["state"].as_str().unwrap_or("").to_string()
}

fn wait(secs: u64, what: &str, mut done: impl FnMut() -> bool, context: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{what}: not within {secs} s\n{}", context());
}

#[test]
fn seed_004_s_chapters_run_as_an_admin_and_two_members() {
    let cluster = common::cluster_yaml(BLOCK, &[("g1", "hgx-h100-8"), ("g2", "hgx-h100-8"), ("other", "hgx-h100-8")]);
    let plane = Plane::start(&cluster, &[]);
    let dataset_dir = plane.dir.path().join("mnist");
    std::fs::create_dir_all(&dataset_dir).expect("dataset dir");
    std::fs::write(dataset_dir.join("train-images.idx"), "pixels").expect("dataset file");

    // The admin: a resource group of two nodes, a queue with a quota, two workspaces.
    apply(
        &plane,
        None,
        "admin.yaml",
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: ResourceGroup\nmetadata: {name: rg-gpu}\n\
         spec: {displayName: GPU资源组, accelerator: NVIDIA, policies: [Gang], nodes: {names: [g1, g2]}}\n---\n\
         apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: team-a}\n\
         spec: {weight: 1, resourceGroup: rg-gpu, quota: {instanceSpec: {gpu: 8, cpu: \"16\", memory: 64Gi}, instanceCount: 2}}\n---\n\
         apiVersion: platform.ringleader.io/v1alpha1\nkind: Workspace\nmetadata: {name: ws-a}\n\
         spec: {displayName: 视觉组, resourceGroup: rg-gpu, queues: [team-a], members: [{user: alice, role: member}]}\n---\n\
         apiVersion: platform.ringleader.io/v1alpha1\nkind: Workspace\nmetadata: {name: ws-b}\n\
         spec: {displayName: 语音组, resourceGroup: rg-gpu, queues: [], members: [{user: bob, role: member}]}\n",
    );
    let alice = token(&plane, "alice");
    let bob = token(&plane, "bob");
    wait(
        30,
        "the resource group running with its two nodes, the workspace's bindings",
        || {
            let rg = get_json(&plane, None, &["resourcegroups", "rg-gpu"]);
            let nodes = rg["status"]["nodes"].as_array().map_or(0, Vec::len);
            rg["status"]["state"] == "running"
                && nodes == 2
                && plane.ringleader_as(Some(&alice), &["get", "trainingjobs", "-n", "ws-a"]).0
        },
        || format!("{}", get_json(&plane, None, &["resourcegroups", "rg-gpu"])),
    );
    let queue = get_json(&plane, None, &["queues", "team-a"]);
    assert_eq!(
        queue["spec"]["capability"]["nvidia.com/gpu"]
            .as_str()
            .or(queue["spec"]["capability"]["nvidia.com/gpu"].as_u64().map(|_| "16")),
        Some("16"),
        "quota = spec × count: {queue}"
    );

    // The member: a dataset and a training job, saved without running.
    let job = format!(
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: Dataset\nmetadata: {{name: mnist, namespace: ws-a}}\n\
         spec: {{description: 手写数字, visibility: workspace, type: image, source: {{path: {}}}}}\n---\n\
         apiVersion: platform.ringleader.io/v1alpha1\nkind: TrainingJob\nmetadata: {{name: mnist-ddp, namespace: ws-a}}\n\
         spec:\n  queue: team-a\n  image: pytorch/pytorch:2.4.0\n  framework: PyTorchDDP\n\
         \x20 command: \"/bin/sh -c 'ls $DATA_PATH; echo rank $RANK of $WORLD_SIZE; sleep 600'\"\n\
         \x20 roles:\n  - {{name: Master, count: 1, resources: {{gpu: 2}}}}\n  - {{name: Worker, count: 1, resources: {{gpu: 2}}}}\n\
         \x20 mounts: [{{dataset: mnist}}]\n  visibility: workspace\n  description: 两个节点的 DDP\n",
        dataset_dir.display()
    );
    apply(&plane, Some(&alice), "job.yaml", &job);
    assert!(
        get_json(&plane, Some(&alice), &["runs", "-n", "ws-a"])["items"].as_array().is_some_and(Vec::is_empty),
        "saved, not run"
    );
    // Preset images are every workspace's to pick: a member reads them.
    assert!(
        get_json(&plane, Some(&alice), &["images", "-n", "platform-system"])["items"].is_array(),
        "a member lists the preset images"
    );

    // Two runs, each with its pods and their logs; the dataset is at /data.
    ok(&plane, Some(&alice), &["run", "mnist-ddp", "-n", "ws-a"]);
    ok(&plane, Some(&alice), &["run", "mnist-ddp", "-n", "ws-a"]);
    for run in ["mnist-ddp-r1", "mnist-ddp-r2"] {
        wait(
            60,
            &format!("{run} running with two pods"),
            || {
                let r = get_json(&plane, Some(&alice), &["runs", run, "-n", "ws-a"]);
                r["status"]["state"] == "running"
                    && r["status"]["pods"]
                        .as_array()
                        .is_some_and(|p| p.len() == 2 && p.iter().all(|p| p["phase"] == "Running"))
            },
            || format!("{}", get_json(&plane, Some(&alice), &["runs", run, "-n", "ws-a"])),
        );
        let r = get_json(&plane, Some(&alice), &["runs", run, "-n", "ws-a"]);
        for pod in r["status"]["pods"].as_array().into_iter().flatten() {
            let name = pod["name"].as_str().unwrap_or_default();
            assert!(!pod["hostIP"].as_str().unwrap_or("").is_empty() && pod["role"].is_string(), "{pod}");
            let log_of = || plane.ringleader_as(Some(&alice), &["logs", name, "-n", "ws-a"]).1;
            wait(20, &format!("{name}'s log"), || log_of().contains("rank"), log_of);
            let log = log_of();
            assert!(
                log.contains("train-images.idx"),
                "the dataset is mounted (at /data, or where the sandbox put it: $DATA_PATH):\n{log}"
            );
        }
        let timeline = r["status"]["timeline"].as_array().cloned().unwrap_or_default();
        assert!(timeline.iter().any(|t| t["state"] == "running"), "{r}");
    }
    let runs = ok(&plane, Some(&alice), &["runs", "mnist-ddp", "-n", "ws-a"]);
    assert!(runs.contains("mnist-ddp-r1") && runs.contains("mnist-ddp-r2"), "{runs}");

    // The admin locks the queue: a third run stays queued, the two go on.
    ok(&plane, None, &["queue", "lock", "team-a"]);
    ok(&plane, Some(&alice), &["run", "mnist-ddp", "-n", "ws-a"]);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(run_state(&plane, &alice, "mnist-ddp-r3"), "queued");
    assert_eq!(run_state(&plane, &alice, "mnist-ddp-r1"), "running");
    assert_eq!(run_state(&plane, &alice, "mnist-ddp-r2"), "running");

    // The member stops a run: its record stays, its pods and devices go.
    ok(&plane, Some(&alice), &["stop", "mnist-ddp-r1", "-n", "ws-a"]);
    wait(
        30,
        "mnist-ddp-r1 stopped, its pods gone",
        || {
            let pods = get_json(&plane, Some(&alice), &["pods", "-n", "ws-a"]);
            let left = pods["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["metadata"]["labels"]["platform.ringleader.io/run"] == "mnist-ddp-r1");
            run_state(&plane, &alice, "mnist-ddp-r1") == "stopped" && left.count() == 0
        },
        || format!("{}", get_json(&plane, Some(&alice), &["runs", "mnist-ddp-r1", "-n", "ws-a"])),
    );
    let r1 = get_json(&plane, Some(&alice), &["runs", "mnist-ddp-r1", "-n", "ws-a"]);
    let pods = r1["status"]["pods"].as_array().cloned().unwrap_or_default();
    assert!(
        pods.len() == 2 && pods.iter().all(|p| p["phase"] == "Deleted" && p["name"].is_string()),
        "the record keeps its pods: {r1}"
    );
    let top = ok(&plane, None, &["top", "nodes"]);
    assert!(!top.contains("mnist-ddp-r1"), "the stopped run holds no device:\n{top}");

    // Unlocked, the queued run starts.
    ok(&plane, None, &["queue", "unlock", "team-a"]);
    wait(
        60,
        "mnist-ddp-r3 running once the queue is open",
        || run_state(&plane, &alice, "mnist-ddp-r3") == "running",
        String::new,
    );

    ok(&plane, Some(&alice), &["clone", "mnist-ddp", "mnist-ddp-2", "-n", "ws-a"]);
    let copy = get_json(&plane, Some(&alice), &["trainingjobs", "mnist-ddp-2", "-n", "ws-a"]);
    assert_eq!(copy["spec"]["framework"], "PyTorchDDP");
    // Everything but the name and the framework may be edited.
    let edited = job.replace("description: 两个节点的 DDP", "description: 改过的描述");
    apply(&plane, Some(&alice), "edited.yaml", &edited);
    let (refused, out) = {
        let file = plane.dir.path().join("framework.yaml");
        std::fs::write(&file, job.replace("framework: PyTorchDDP", "framework: PyTorchDeepSpeed")).expect("write");
        plane.ringleader_as(Some(&alice), &["apply", "-f", &file.to_string_lossy()])
    };
    assert!(!refused && out.contains("spec.framework") && out.contains("immutable"), "{out}");

    // A VIP job on g1 that kills what runs there: the runs it evicted record who.
    apply(
        &plane,
        Some(&alice),
        "vip.yaml",
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: TrainingJob\nmetadata: {name: urgent, namespace: ws-a}\n\
         spec:\n  queue: team-a\n  image: pytorch/pytorch:2.4.0\n  framework: PyTorchDDP\n\
         \x20 command: \"/bin/sh -c 'sleep 600'\"\n  roles: [{name: Worker, count: 1, resources: {gpu: 8}}]\n\
         \x20 vip: {nodes: [g1], onBusy: kill}\n",
    );
    ok(&plane, Some(&alice), &["run", "urgent", "-n", "ws-a"]);
    wait(
        60,
        "a run the VIP job evicted records it",
        || {
            ["mnist-ddp-r2", "mnist-ddp-r3"].iter().any(|r| {
                let k = &get_json(&plane, Some(&alice), &["runs", r, "-n", "ws-a"])["status"]["killedBy"];
                k["job"] == "ws-a/urgent-r1" && k["user"] == "alice"
            })
        },
        || format!("{}", get_json(&plane, Some(&alice), &["runs", "-n", "ws-a"])),
    );
    wait(
        60,
        "the VIP run running on g1",
        || run_state(&plane, &alice, "urgent-r1") == "running",
        || {
            format!(
                "{}\n{}\n{}",
                get_json(&plane, Some(&alice), &["runs", "urgent-r1", "-n", "ws-a"]),
                ok(&plane, None, &["get", "pods", "-n", "ws-a", "-o", "wide"]),
                ok(&plane, None, &["get", "events", "-n", "ws-a"])
            )
        },
    );

    // A member of another workspace is refused all of it.
    for args in [
        vec!["get", "trainingjobs", "-n", "ws-a"],
        vec!["get", "runs", "-n", "ws-a"],
        vec!["get", "datasets", "-n", "ws-a"],
        vec!["get", "pods", "-n", "ws-a"],
        vec!["run", "mnist-ddp", "-n", "ws-a"],
        vec!["stop", "mnist-ddp-r2", "-n", "ws-a"],
        vec!["clone", "mnist-ddp", "stolen", "-n", "ws-a"],
        vec!["logs", "mnist-ddp-r2-master-0", "-n", "ws-a"],
    ] {
        let (success, out) = plane.ringleader_as(Some(&bob), &args);
        assert!(!success && out.contains("forbidden"), "bob: ringleader {args:?} must be forbidden:\n{out}");
    }

    // Stock kubectl reads every platform kind as the member (Tables, explain).
    if common::kubectl_or_skip("the kubectl part") {
        let out = kubectl(&alice, &["get", "trainingjobs,runs,datasets", "-n", "ws-a"]).expect("kubectl get as alice");
        for want in ["mnist-ddp", "mnist-ddp-r2", "mnist"] {
            assert!(out.contains(want), "kubectl get lists {want}:\n{out}");
        }
        let explain = kubectl(&alice, &["explain", "trainingjob.spec.framework"]).unwrap_or_default();
        assert!(explain.contains("framework"), "{explain}");
        let denied = kubectl(&bob, &["get", "trainingjobs", "-n", "ws-a"]);
        assert!(denied.is_none(), "kubectl as bob is refused");
    }

    // The admin runs a script on two nodes: each node's exit code and output are kept.
    apply(
        &plane,
        None,
        "script.yaml",
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: Script\nmetadata: {name: hello}\n\
         spec: {timeoutSeconds: 600, content: \"echo node $RINGLEADER_NODE ok; test $RINGLEADER_NODE = g1\"}\n---\n\
         apiVersion: platform.ringleader.io/v1alpha1\nkind: ScriptRun\nmetadata: {name: hello-1}\n\
         spec: {script: hello, nodes: [g1, g2]}\n",
    );
    wait(
        60,
        "the script run finished on both nodes",
        || {
            let sr = get_json(&plane, None, &["scriptruns", "hello-1"]);
            sr["status"]["nodes"]
                .as_array()
                .is_some_and(|n| n.len() == 2 && n.iter().all(|n| n["exitCode"].is_number()))
        },
        || format!("{}", get_json(&plane, None, &["scriptruns", "hello-1"])),
    );
    let sr = get_json(&plane, None, &["scriptruns", "hello-1"]);
    let node = |n: &str| {
        sr["status"]["nodes"].as_array().into_iter().flatten().find(|x| x["node"] == n).cloned().unwrap_or(Value::Null)
    };
    assert_eq!((node("g1")["exitCode"].as_i64(), node("g2")["exitCode"].as_i64()), (Some(0), Some(1)), "{sr}");
    assert!(node("g1")["output"].as_str().is_some_and(|o| o.contains("node g1 ok")), "{sr}");
    assert_eq!(sr["status"]["state"], "failed", "one node failed: {sr}");

    // Deleting a job deletes its runs, their jobs and pods.
    ok(&plane, Some(&alice), &["delete", "trainingjob", "mnist-ddp-2", "-n", "ws-a"]);
    ok(&plane, Some(&alice), &["run", "urgent", "-n", "ws-a"]);
    ok(&plane, Some(&alice), &["delete", "trainingjob", "urgent", "-n", "ws-a"]);
    wait(
        30,
        "urgent's runs and pods gone with it",
        || {
            let runs = get_json(&plane, Some(&alice), &["runs", "-n", "ws-a"]);
            let pods = get_json(&plane, Some(&alice), &["pods", "-n", "ws-a"]);
            let of = |v: &Value| {
                let names = v["items"].as_array().into_iter().flatten().filter_map(|o| o["metadata"]["name"].as_str());
                names.filter(|n| n.starts_with("urgent-r")).count()
            };
            of(&runs) == 0 && of(&pods) == 0
        },
        || format!("{}", get_json(&plane, Some(&alice), &["runs", "-n", "ws-a"])),
    );

    // The audit record names who did each step, in order.
    let audit = get_json(&plane, None, &["auditrecords"]);
    let records: Vec<(String, String, String, String)> = audit["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let f = |k: &str| r["spec"][k].as_str().unwrap_or("").to_string();
            (f("user"), f("verb"), f("resource"), f("name"))
        })
        .collect();
    let at = |user: &str, verb: &str, name: &str| {
        records.iter().position(|(u, v, _, n)| u == user && v == verb && n == name)
    };
    let mut last = 0;
    for (user, verb, name) in [
        ("ringleader-admin", "create", "rg-gpu"),
        ("ringleader-admin", "create", "ws-a"),
        ("alice", "create", "mnist"),
        ("alice", "create", "mnist-ddp"),
        ("alice", "run", "mnist-ddp-r1"),
        ("alice", "run", "mnist-ddp-r2"),
        ("ringleader-admin", "lock", "team-a"),
        ("alice", "stop", "mnist-ddp-r1"),
        ("alice", "create", "mnist-ddp-2"),
        ("alice", "delete", "urgent"),
    ] {
        let i = at(user, verb, name).unwrap_or_else(|| panic!("audit: {user} {verb} {name} in {records:?}"));
        assert!(i >= last, "audit records list the steps in order: {user} {verb} {name} in {records:?}");
        last = i;
    }
}
