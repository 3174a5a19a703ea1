//! `ringleader up --scheduler-conf FILE`: the Volcano-format configuration
//! `plan` reads drives the running cluster's scheduler (here: DRF orders two
//! namespaces' waiting jobs, which the built-in configuration leaves in
//! submission order), and a bad file stops `up` before it serves, naming
//! the file and the field.

mod common;

use common::{cluster_yaml, find, Plane};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The built-in configuration with DRF.
const WITH_DRF: &str = "actions: \"enqueue, allocate, backfill, preempt, reclaim\"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n  - name: nodeorder\n";

/// A one-pod Volcano job of `gpus` GPUs in namespace `ns` that runs for `secs` (simulated).
fn job(ns: &str, name: &str, gpus: u32, secs: u32) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  minAvailable: 1\n  schedulerName: volcano\n  queue: default\n  tasks:\n  - name: w\n    replicas: 1\n    template:\n      metadata: {{annotations: {{ringleader.io/duration: \"{secs}\"}}}}\n      spec:\n        restartPolicy: Never\n        containers:\n        - name: w\n          image: x\n          resources: {{requests: {{nvidia.com/gpu: {gpus}}}, limits: {{nvidia.com/gpu: {gpus}}}}}\n"
    )
}

/// The node a job's only pod is bound to, if any.
fn node_of(p: &Plane, ns: &str, job: &str) -> Option<String> {
    let pod = p.rt.block_on(p.client.get(find("pods"), ns, &format!("{job}-w-0"))).ok()?;
    pod["spec"]["nodeName"].as_str().map(str::to_string)
}

/// Fills the one 8-GPU node with namespace `team-x`'s long job and a short
/// blocker, queues `team-x`'s second job and then `team-y`'s first behind
/// them, and returns which of the two got the room the blocker left.
fn winner(block: u8, extra: &[&str]) -> String {
    let p =
        Plane::start(&cluster_yaml(block, &[("g-1", "pcie-4090-8")]), &[&["--runtime", "simulated"], extra].concat());
    p.apply(&job("team-x", "x-run", 4, 600)).expect("apply x-run");
    p.apply(&job("default", "blocker", 4, 6)).expect("apply blocker");
    p.wait_for(30, "x-run and blocker bound", |p| {
        node_of(p, "team-x", "x-run").is_some() && node_of(p, "default", "blocker").is_some()
    });
    // Both wait for the same room: x-next first in submission order,
    // y-next first by dominant share (team-x holds half the node, team-y nothing).
    p.apply(&job("team-x", "x-next", 4, 600)).expect("apply x-next");
    p.apply(&job("team-y", "y-next", 4, 600)).expect("apply y-next");
    p.wait_for(60, "one of x-next, y-next bound", |p| {
        node_of(p, "team-x", "x-next").is_some() || node_of(p, "team-y", "y-next").is_some()
    });
    let (x, y) = (node_of(&p, "team-x", "x-next"), node_of(&p, "team-y", "y-next"));
    assert!(x.is_none() || y.is_none(), "only 4 GPUs were free, both bound");
    if y.is_some() { "y-next" } else { "x-next" }.to_string()
}

#[test]
fn drf_from_the_scheduler_conf_orders_namespaces_under_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = dir.path().join("drf.yaml");
    std::fs::write(&conf, WITH_DRF).expect("conf");
    let conf = conf.display().to_string();
    assert_eq!(winner(93, &["--scheduler-conf", &conf]), "y-next", "DRF: the namespace with no share goes first");
    assert_eq!(winner(94, &[]), "x-next", "built-in configuration: submission order");
}

#[test]
fn a_bad_scheduler_conf_fails_up_at_start_naming_file_and_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(&cluster, cluster_yaml(95, &[("g-1", "pcie-4090-8")])).expect("cluster");
    let conf = dir.path().join("bad-sched.yaml");
    std::fs::write(
        &conf,
        "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: priority\n  - name: fairshare\n",
    )
    .expect("conf");
    let data = dir.path().join("data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["up", "--listen", "127.0.0.1:0", "--runtime", "simulated", "--cluster"])
        .arg(&cluster)
        .arg("--data-dir")
        .arg(&data)
        .arg("--scheduler-conf")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ringleader up");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("up kept running with a bad scheduler configuration");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        e.read_to_string(&mut stderr).expect("stderr");
    }
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("bad-sched.yaml"), "{stderr}");
    assert!(stderr.contains("tiers[0].plugins[1].name: unknown plugin \"fairshare\""), "{stderr}");
    assert!(!data.join("server").exists(), "nothing was served");
}
