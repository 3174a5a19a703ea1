//! `ringleader plan` end to end on the bundled cluster and examples.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn plan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringleader")).arg("plan").args(args).current_dir(repo()).output().unwrap()
}

#[test]
fn examples_plan_onto_the_bundled_cluster() {
    let out = plan(&["--cluster", "examples/cluster.yaml", "-f", "examples/", "-o", "json", "--now", "1000"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let placements = v["placements"].as_array().unwrap();
    let find = |pod: &str| placements.iter().find(|p| p["pod"] == pod).unwrap_or_else(|| panic!("{pod} not placed"));
    // The Atlas 800 PyTorch acjob takes two whole free servers of tor-1.
    let master = find("default-test-pytorch-master-0");
    assert_eq!(master["job"], "default/default-test-pytorch");
    assert_eq!(master["devices"], serde_json::json!([0, 1, 2, 3, 4, 5, 6, 7]));
    assert_eq!(
        master["annotations"]["huawei.com/Ascend910"],
        "Ascend910-0,Ascend910-1,Ascend910-2,Ascend910-3,Ascend910-4,Ascend910-5,Ascend910-6,Ascend910-7"
    );
    assert!(master["annotations"]["predicate-time"].as_str().unwrap().parse::<u64>().unwrap() >= 1000);
    // The single-chip batch job lands on the partly used Atlas 800 whose free
    // ring count the preference order likes best, never on an unhealthy chip.
    let smoke = find("npu-smoke-test-0");
    assert_eq!(smoke["devices"].as_array().unwrap().len(), 1);
    // GPU pods carry their visible devices.
    let w = find("tensorflow-benchmarks-worker-0");
    assert_eq!(w["annotations"]["ringleader.io/visible-devices"], "0,1,2,3,4,5,6,7");
    // The MindIE servers need two A2 nodes with 8 network-healthy chips; the only A2 left (a2-3) has
    // a network-unhealthy chip, so the gang waits whole.
    let pending = v["pending"].as_array().unwrap();
    let mindie = pending.iter().find(|p| p["job"] == "mindie/mindie-server-0").expect("mindie server pending");
    assert!(mindie["reason"].as_str().unwrap().starts_with("gang: only 0 of minAvailable 2 pods fit"), "{mindie}");
    // No device is given twice on a node.
    let mut seen = std::collections::BTreeSet::new();
    for p in placements {
        for d in p["devices"].as_array().unwrap() {
            assert!(seen.insert((p["node"].to_string(), d.to_string())), "device {d} twice on {}", p["node"]);
        }
    }
}

#[test]
fn table_output_and_bad_cluster() {
    let out = plan(&["--cluster", "examples/cluster.yaml", "-f", "examples/pytorchjob.yaml", "--now", "0"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout.starts_with("POD"), "{stdout}");
    assert!(stdout.contains("pytorch-ddp-master-0"));
    let tmp = std::env::temp_dir().join(format!("ringleader-cluster-{}.yaml", std::process::id()));
    std::fs::write(
        &tmp,
        "apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {name: x}\nspec: {profile: no-such-box}\n",
    )
    .unwrap();
    let out = plan(&["--cluster", tmp.to_str().unwrap(), "-f", "examples/pytorchjob.yaml"]);
    std::fs::remove_file(&tmp).ok();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("spec.profile: no-such-box: unknown profile"));
}

#[test]
fn sim_jobs_replays_the_bundled_trace() {
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args([
            "sim",
            "jobs",
            "--cluster",
            "examples/cluster.yaml",
            "-f",
            "crates/sim/tests/data/jobs-replay.yaml",
            "-o",
            "json",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 24);
    // Every job starts no earlier than it arrives, and runs for a positive time.
    for j in jobs {
        let (arrival, start, end) =
            (j["arrival"].as_u64().unwrap(), j["start"].as_u64().unwrap(), j["end"].as_u64().unwrap());
        assert!(arrival <= start && start < end, "{j}");
    }
    assert_eq!(v["never_placed"], serde_json::json!([]));
}

/// A Volcano job of one pod with `chips` Ascend 910 chips on an Atlas 800.
fn npu_job(name: &str, queue: &str, class: &str, chips: u32) -> String {
    let class = if class.is_empty() { String::new() } else { format!("  priorityClassName: {class}\n") };
    format!(
        "---\napiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {name}, labels: {{ring-controller.atlas: ascend-910}}}}\nspec:\n  minAvailable: 1\n  queue: {queue}\n{class}  tasks:\n  - name: worker\n    replicas: 1\n    template:\n      metadata: {{labels: {{ring-controller.atlas: ascend-910}}}}\n      spec:\n        restartPolicy: OnFailure\n        nodeSelector: {{accelerator-type: module}}\n        containers:\n        - name: main\n          image: train:1\n          resources:\n            requests: {{huawei.com/Ascend910: {chips}}}\n            limits: {{huawei.com/Ascend910: {chips}}}\n"
    )
}

#[test]
fn queues_priority_classes_and_workloads_reclaim_and_explain() {
    let jobs = npu_job("urgent-1", "team-a", "high", 8)
        + &npu_job("urgent-2", "team-a", "high", 8)
        + &npu_job("filler", "team-b", "", 2)
        + &npu_job("late", "archive", "", 1);
    let tmp = std::env::temp_dir().join(format!("ringleader-queue-jobs-{}.yaml", std::process::id()));
    std::fs::write(&tmp, jobs).unwrap();
    let out =
        plan(&["--cluster", "examples/cluster-queues.yaml", "-f", tmp.to_str().unwrap(), "-o", "json", "--now", "5"]);
    std::fs::remove_file(&tmp).ok();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // team-a (weight 3, guarantee 8) deserves 20 of the 32 chips; team-b holds 20 and deserves 11, so
    // each urgent job reclaims the smallest team-b gang that frees a whole server — never the VIP serve-a.
    let placed: Vec<(&str, &str)> = v["placements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["pod"].as_str().unwrap(), p["node"].as_str().unwrap()))
        .collect();
    assert_eq!(placed, vec![("urgent-1-worker-0", "a800-3"), ("urgent-2-worker-0", "a800-1")]);
    assert_eq!(
        v["evictions"],
        serde_json::json!([
            {"job": "default/train-b3", "pod": "train-b3-worker-0", "node": "a800-3", "preemptedBy": "default/urgent-1",
             "reason": "reclaimed for queue team-a by default/urgent-1"},
            {"job": "default/train-b1", "pod": "train-b1-worker-0", "node": "a800-1", "preemptedBy": "default/urgent-2",
             "reason": "reclaimed for queue team-a by default/urgent-2"}
        ])
    );
    assert_eq!(
        v["pending"],
        serde_json::json!([
            {"job": "default/filler",
             "reason": "queue team-b over deserved share: huawei.com/Ascend910 requested 2, used 20 of deserved 11"},
            {"job": "default/late", "reason": "queue archive is Closed"}
        ])
    );
}

#[test]
fn scheduler_conf_chooses_the_actions() {
    let jobs = npu_job("urgent-1", "team-a", "high", 8);
    let tmp = std::env::temp_dir().join(format!("ringleader-conf-jobs-{}.yaml", std::process::id()));
    let conf = std::env::temp_dir().join(format!("ringleader-conf-{}.yaml", std::process::id()));
    std::fs::write(&tmp, jobs).unwrap();
    std::fs::write(&conf, "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n")
        .unwrap();
    let args = ["--cluster", "examples/cluster-queues.yaml", "-f", tmp.to_str().unwrap(), "-o", "json"];
    let out = plan(&[&args[..], &["--scheduler-conf", conf.to_str().unwrap()]].concat());
    std::fs::write(&conf, "actions: \"allocate, dance\"\n").unwrap();
    let bad = plan(&[&args[..], &["--scheduler-conf", conf.to_str().unwrap()]].concat());
    std::fs::remove_file(&tmp).ok();
    std::fs::remove_file(&conf).ok();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Without reclaim nothing is evicted and the job waits for room.
    assert_eq!(v["evictions"], serde_json::json!([]));
    assert!(v["pending"][0]["reason"].as_str().unwrap().starts_with("gang: only 0 of minAvailable 1 pods fit"), "{v}");
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("unknown action \"dance\""),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

#[test]
fn workload_on_an_unknown_node_names_its_field() {
    let tmp = std::env::temp_dir().join(format!("ringleader-bad-workload-{}.yaml", std::process::id()));
    std::fs::write(
        &tmp,
        "apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {name: n1}\nspec: {profile: atlas-800-910}\n---\napiVersion: ringleader.io/v1alpha1\nkind: Workload\nmetadata: {name: w}\nspec:\n  pods:\n  - {name: w-0, node: n9, devices: [0]}\n",
    )
    .unwrap();
    let out = plan(&["--cluster", tmp.to_str().unwrap(), "-f", "examples/pytorchjob.yaml"]);
    std::fs::remove_file(&tmp).ok();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Workload/default/w: spec.pods[0].node: n9: no such node in the cluster"), "{stderr}");
}
