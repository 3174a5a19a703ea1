//! Two probe jobs whose masters share one virtual node: each master listens
//! on the port its env names, the two do not collide, and both complete.

mod common;

use common::{cluster_yaml, Plane};
use serde_json::Value;

/// Master and worker with one GPU each; the worker starts late, so both
/// masters hold their rendezvous port at the same time.
fn probe_job(name: &str) -> String {
    let role = |kind: &str, script: &str| {
        format!(
            "    {kind}:\n      replicas: 1\n      restartPolicy: Never\n      template:\n        spec:\n          containers:\n          - name: pytorch\n            image: ringleader/probe\n            command: [\"/bin/sh\", \"-c\", {script:?}]\n            resources:\n              requests: {{nvidia.com/gpu: 1}}\n              limits: {{nvidia.com/gpu: 1}}\n"
        )
    };
    let probe = "ringleader probe allreduce --size 64KiB --iters 2 --timeout 30";
    format!(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  runPolicy:\n    schedulingPolicy: {{minAvailable: 2, queue: default}}\n  pytorchReplicaSpecs:\n{}{}",
        role("Master", probe),
        role("Worker", &format!("sleep 2; {probe}"))
    )
}

fn env(pod: &Value, name: &str) -> String {
    pod["spec"]["containers"][0]["env"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["name"] == name))
        .and_then(|e| e["value"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn two_probe_jobs_on_one_node_listen_on_different_ports_and_both_complete() {
    let p = Plane::start(&cluster_yaml(67, &[("h100-1", "hgx-h100-8")]), &[]);
    p.apply(&format!("{}---\n{}", probe_job("first"), probe_job("second"))).expect("apply");
    p.wait_for(60, "four pods released", |p| {
        p.list("pods").iter().filter(|x| x["metadata"]["annotations"]["ringleader.io/start"] == "true").count() == 4
    });
    let mut ports = Vec::new();
    for job in ["first", "second"] {
        let master = p.get("pods", &format!("{job}-master-0")).expect("master");
        let worker = p.get("pods", &format!("{job}-worker-0")).expect("worker");
        let port = env(&master, "MASTER_PORT");
        assert_eq!(master["metadata"]["annotations"]["ringleader.io/ports"].as_str(), Some(port.as_str()));
        assert_eq!(env(&worker, "MASTER_PORT"), port, "the worker meets its own master");
        assert_eq!(env(&worker, "MASTER_ADDR"), "127.0.67.1");
        ports.push(port);
    }
    assert_ne!(ports[0], ports[1], "masters on one node never share a port");
    for job in ["first", "second"] {
        p.wait_for(60, &format!("{job} Completed"), |p| p.phase("pytorchjobs", job) == "Completed");
        let log = p.sandbox_log(&format!("{job}-master-0"));
        assert!(log.contains("check_result success"), "{job}: {log}");
    }
}
