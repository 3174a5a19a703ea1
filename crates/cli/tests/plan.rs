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
