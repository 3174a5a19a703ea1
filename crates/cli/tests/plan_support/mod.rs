//! `ringleader plan -o json` on a cluster and jobs given as text, for the
//! placement tests: the files go to a temporary directory, the answer is the
//! parsed JSON (the command must succeed).

use std::process::Command;

/// The plan of `jobs` on `cluster` at time 1000.
pub fn plan_json(cluster: &str, jobs: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cluster_file, jobs_file) = (dir.path().join("cluster.yaml"), dir.path().join("jobs.yaml"));
    std::fs::write(&cluster_file, cluster).expect("write cluster");
    std::fs::write(&jobs_file, jobs).expect("write jobs");
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .arg("plan")
        .arg("--cluster")
        .arg(&cluster_file)
        .arg("-f")
        .arg(&jobs_file)
        .args(["-o", "json", "--now", "1000"])
        .output()
        .expect("run ringleader plan");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("plan JSON")
}
