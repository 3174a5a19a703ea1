//! Pods held to their limits as the kubelet holds them, on a real `ringleader
//! up` whose agent sandboxes pods in cgroups: a pod past its memory limit
//! ends `OOMKilled` (137); a fork bomb stops at the node's pids limit while
//! a pod beside it completes; a pod writing past its ephemeral-storage
//! limit is Evicted with an Event; `/tmp` is as large as the pod's limit.
//!
//! Needs root and a writable cgroup hierarchy (v1 or v2): skipped with a
//! reason otherwise, unless `RINGLEADER_REQUIRE_CGROUPS=1` (CI sets it).

use crate::common::{cluster_yaml, Plane};
use serde_json::Value;
use std::path::Path;

const PIDS_LIMIT: u64 = 64;

fn unavailable() -> Option<String> {
    ringleader_agent::runtime::cgroup::detect(Path::new("/sys/fs/cgroup")).err()
}

/// A Job of one pod (`<name>-0`) that is not retried.
fn job(name: &str, limits: &str, script: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: busybox\n        command: [\"/bin/sh\", \"-c\", {script:?}]\n        resources: {{limits: {{{limits}}}}}\n---\n"
    )
}

fn terminated(p: &Value) -> &Value {
    &p["status"]["containerStatuses"][0]["state"]["terminated"]
}

#[test]
fn pods_are_held_to_their_memory_pids_and_storage_limits() {
    if let Some(why) = unavailable() {
        if std::env::var("RINGLEADER_REQUIRE_CGROUPS").is_ok_and(|v| v == "1") {
            panic!("RINGLEADER_REQUIRE_CGROUPS=1 but {why}");
        }
        eprintln!("SKIPPED: pods_are_held_to_their_memory_pids_and_storage_limits: {why}");
        return;
    }
    let p = Plane::start(
        &cluster_yaml(193, &[("limits-1", "hgx-h100-8")]),
        &["--pod-pids-limit", "64", "--deleted-pod-retention", "1"],
    );
    let pods = [
        // `tail` holds its one endless line in memory until the OOM killer ends it.
        job("oom", "memory: 32Mi", "head -c 400000000 /dev/zero | tail >/dev/null"),
        // Far more processes than the limit (the subshell dies at the first
        // fork refused); then, with builtins only (no fork is left), how many
        // there are in its namespace, and a busy wait while they live.
        job(
            "bomb",
            "cpu: 500m",
            "(i=0; while [ $i -lt 300 ]; do sleep 8 & i=$((i+1)); done) 2>/dev/null; set -- /proc/[0-9]*; echo procs $#; while set -- /proc/[0-9]*; [ $# -gt 4 ]; do :; done; echo bomb over",
        ),
        job("neighbour", "memory: 64Mi", "sleep 3; echo neighbour fine"),
        job("hog", "ephemeral-storage: 8Mi", "dd if=/dev/zero of=big bs=1M count=32 2>&1; sleep 60"),
        job("tmp", "memory: 48Mi", "df -k /tmp /dev/shm | tail -2"),
    ];
    p.apply(&pods.concat()).expect("apply");
    let ended = |p: &Plane, name: &str| {
        p.get("pods", name).is_some_and(|x| matches!(x["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
    };
    for name in ["oom", "bomb", "neighbour", "hog", "tmp"] {
        p.wait_for(120, &format!("pod {name}-0 to end"), |p| ended(p, &format!("{name}-0")));
    }

    let oom = p.get("pods", "oom-0").expect("oom");
    assert_eq!(oom["status"]["phase"], "Failed", "{oom}");
    assert_eq!(terminated(&oom)["reason"], "OOMKilled", "{oom}");
    assert_eq!(terminated(&oom)["exitCode"], 137, "{oom}");

    let bomb_log = p.sandbox_log("bomb-0");
    let procs: u64 = bomb_log
        .lines()
        .find_map(|l| l.strip_prefix("procs "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no process count in the bomb's log: {bomb_log} {:?}", p.get("pods", "bomb-0")));
    eprintln!("the fork bomb reached {procs} processes under a pids limit of {PIDS_LIMIT}");
    assert!(procs < PIDS_LIMIT, "{procs} processes in a pod limited to {PIDS_LIMIT}");
    assert!(procs > PIDS_LIMIT / 2, "the bomb got only {procs} processes: the test did not reach the limit");
    let neighbour = p.get("pods", "neighbour-0").expect("neighbour");
    assert_eq!(neighbour["status"]["phase"], "Succeeded", "{neighbour}");
    let bomb = p.get("pods", "bomb-0").expect("bomb");
    let finished = |x: &Value| terminated(x)["finishedAt"].as_str().unwrap_or_default().to_string();
    assert!(finished(&neighbour) <= finished(&bomb), "the neighbour completed while the bomb held its limit");
    assert!(p.sandbox_log("neighbour-0").contains("neighbour fine"));

    let hog = p.get("pods", "hog-0").expect("hog");
    assert_eq!(hog["status"]["phase"], "Failed", "{hog}");
    assert_eq!(hog["status"]["reason"], "Evicted", "{hog}");
    let message = hog["status"]["message"].as_str().unwrap_or_default();
    assert_eq!(message, "Pod ephemeral local storage usage exceeds the total limit of containers 8Mi. ");
    p.wait_for(10, "the eviction's Event", |p| {
        p.list("events").iter().any(|e| e["reason"] == "Evicted" && e["involvedObject"]["name"] == "hog-0")
    });

    let tmp = p.get("pods", "tmp-0").expect("tmp");
    assert_eq!(tmp["status"]["phase"], "Succeeded", "{tmp}");
    let df = p.sandbox_log("tmp-0");
    let sizes: Vec<&str> = df.lines().filter_map(|l| l.split_whitespace().nth(1)).collect();
    assert_eq!(sizes, ["49152", "49152"], "/tmp and /dev/shm of 48 MiB: {df}");

    // Every pod's cgroup is gone with it.
    for name in ["oom", "bomb", "neighbour", "hog", "tmp"] {
        let uid = p.get("pods", &format!("{name}-0")).expect("pod")["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let dirs = ["pids/", "memory/", "cpu/", ""].map(|c| format!("/sys/fs/cgroup/{c}ringleader/{uid}"));
        p.wait_for(10, &format!("the cgroup of {name}-0 removed"), |_| dirs.iter().all(|d| !Path::new(d).exists()));
    }

    // A deleted pod's sandbox goes after the retention but for its log,
    // which stays while its job does; then that goes too.
    let sandbox = p.data_dir().join("nodes/limits-1/pods/default_neighbour-0");
    assert!(sandbox.join("log").exists());
    p.ctl(&["delete", "pod", "neighbour-0"]);
    let entries = |dir: &Path| -> Vec<String> {
        let list = std::fs::read_dir(dir).map(|d| d.filter_map(Result::ok).collect::<Vec<_>>()).unwrap_or_default();
        list.iter().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
    };
    p.wait_for(20, "the deleted pod's sandbox down to its log", |_| {
        let left = entries(&sandbox);
        !left.is_empty() && left.iter().all(|n| n.starts_with("log"))
    });
    assert!(std::fs::read_to_string(sandbox.join("log")).is_ok_and(|l| l.contains("neighbour fine")));
    p.ctl(&["delete", "jobs.batch", "neighbour"]);
    p.wait_for(20, "the deleted job's pod log removed", |_| !sandbox.exists());
}
