//! End to end with real processes: `ringleader up` runs the control plane,
//! the bundled jobs run `ringleader probe` on virtual nodes and meet over
//! real sockets through the env and rank tables the controller injects.

mod common;

use common::{cluster_yaml, example, Plane};
use serde_json::{json, Value};

#[test]
fn pytorch_job_all_reduces_across_two_h100_nodes_and_succeeds() {
    let p = Plane::start(&cluster_yaml(11, &[("h100-1", "hgx-h100-8"), ("h100-2", "hgx-h100-8")]), &[]);
    p.apply(&example("examples/demo/pytorchjob-h100.yaml")).expect("apply");
    // Read placements while both pods exist: a finished job stops (deletes) pods still running.
    p.wait_for(60, "both pods released", |p| {
        p.list("pods").iter().filter(|x| x["metadata"]["annotations"]["ringleader.io/start"] == "true").count() == 2
    });
    let master = p.get("pods", "demo-pytorch-master-0").expect("master");
    let worker = p.get("pods", "demo-pytorch-worker-0").expect("worker");
    assert_ne!(master["spec"]["nodeName"], worker["spec"]["nodeName"]);
    // The bindings came with their events, in the same store batch.
    let events = p.list("events");
    for pod in [&master, &worker] {
        let node = pod["spec"]["nodeName"].as_str().expect("bound");
        assert!(
            events.iter().any(|e| e["reason"] == "Scheduled"
                && e["involvedObject"]["uid"] == pod["metadata"]["uid"]
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.ends_with(&format!(" to {node} (devices 0,1,2,3,4,5,6,7)")))),
            "{events:#?}"
        );
    }
    let table = p.ctl(&["get", "events"]);
    assert!(table.starts_with("LAST SEEN"), "{table}");
    assert!(table.lines().any(|l| l.contains("Scheduled") && l.contains("pod/demo-pytorch-master-0")), "{table}");
    let described = p.ctl(&["describe", "pod", "demo-pytorch-master-0"]);
    assert!(described.contains("Events:") && described.contains("ringleader-scheduler"), "{described}");
    p.wait_for(90, "PyTorchJob Completed", |p| p.phase("pytorchjobs", "demo-pytorch") == "Completed");
    for pod in ["demo-pytorch-master-0", "demo-pytorch-worker-0"] {
        let log = p.sandbox_log(pod);
        assert!(log.contains("success"), "{pod}: {log}");
    }
    // The master's success completed the job, so it is still there to read through the API.
    assert!(p.log("demo-pytorch-master-0").contains("check_result"), "the probe table is printed by rank 0");
}

#[test]
fn ascend_job_meets_through_the_rank_table() {
    let p = Plane::start(&cluster_yaml(12, &[("a800-1", "atlas-800-910"), ("a800-2", "atlas-800-910")]), &[]);
    p.apply(&example("examples/demo/ascendjob-910.yaml")).expect("apply");
    // Both pods released with their files (the master may be cleaned up once the job completes).
    p.wait_for(60, "both pods released", |p| {
        p.list("pods").iter().filter(|x| x["metadata"]["annotations"]["ringleader.io/start"] == "true").count() == 2
    });
    // One snapshot: the pods may finish and be cleaned up soon after.
    let snapshot: Vec<Value> = p
        .list("pods")
        .into_iter()
        .filter(|x| x["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("demo-ascend")))
        .collect();
    let pods: Vec<String> =
        snapshot.iter().filter_map(|x| x["metadata"]["name"].as_str().map(str::to_string)).collect();
    assert_eq!(pods.len(), 2);
    // Each pod takes hccl.json from the job's rings-config ConfigMap.
    for pod in &snapshot {
        let from: serde_json::Map<String, Value> = serde_json::from_str(
            pod["metadata"]["annotations"]["ringleader.io/config-files"].as_str().expect("config-files"),
        )
        .expect("json");
        assert_eq!(from["/user/serverid/devindex/config/hccl.json"], "rings-config-demo-ascend/hccl.json");
    }
    let cm = p.get("configmaps", "rings-config-demo-ascend").expect("rings-config ConfigMap");
    let table: Value = serde_json::from_str(cm["data"]["hccl.json"].as_str().expect("hccl")).expect("hccl json");
    assert_eq!(table["status"], "completed");
    let mut chips = Vec::new();
    for server in table["server_list"].as_array().expect("servers") {
        // server_id is the node's address; the pod is found through its node.
        let node = p
            .list("nodes")
            .into_iter()
            .find(|n| n["spec"]["address"] == server["server_id"])
            .expect("a node with that server_id");
        let node_pod =
            snapshot.iter().find(|x| x["spec"]["nodeName"] == node["metadata"]["name"]).expect("a pod on that server");
        let ids: Vec<String> = server["device"]
            .as_array()
            .expect("devices")
            .iter()
            .map(|d| d["device_id"].as_str().expect("id").to_string())
            .collect();
        let chosen: Vec<String> = node_pod["metadata"]["annotations"]["ringleader.io/devices"]
            .as_str()
            .expect("devices")
            .split(',')
            .map(str::to_string)
            .collect();
        assert_eq!(ids, chosen, "hccl.json lists the chips the scheduler chose");
        chips.extend(ids);
    }
    assert_eq!(chips.len(), 16);
    p.wait_for(90, "AscendJob Completed", |p| p.phase("ascendjobs", "demo-ascend") == "Completed");
    // Rank 0's process prints the table, the other its share; read from the sandboxes
    // since the job's end may already have removed a pod that was still running.
    let master = p.sandbox_log(&pods.iter().find(|n| n.contains("master")).cloned().unwrap_or_default());
    assert!(master.contains("16 ranks in"), "{master}");
    for pod in &pods {
        let log = p.sandbox_log(pod);
        assert!(log.contains("success"), "{pod}: {log}");
    }
}

#[test]
fn mpi_launcher_reads_the_hostfile() {
    let p = Plane::start(&cluster_yaml(13, &[("g-1", "pcie-4090-8"), ("g-2", "pcie-4090-8")]), &[]);
    p.apply(&example("examples/demo/mpijob.yaml")).expect("apply");
    p.wait_for(90, "MPIJob Completed", |p| p.phase("mpijobs", "demo-mpi") == "Completed");
    let log = p.sandbox_log("demo-mpi-launcher");
    let log = if log.is_empty() { p.sandbox_log("demo-mpi-launcher-0") } else { log };
    assert!(log.contains("success"), "{log}");
}

fn one_pod_pytorch(name: &str, policy: &str, script: &str) -> String {
    format!(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      restartPolicy: {policy}\n      template:\n        spec:\n          containers:\n          - name: pytorch\n            image: x\n            command: [\"/bin/sh\", \"-c\", {script:?}]\n            resources:\n              requests: {{nvidia.com/gpu: 1}}\n              limits: {{nvidia.com/gpu: 1}}\n"
    )
}

#[test]
fn exit_137_restarts_under_on_failure_and_exit_1_fails_under_exit_code() {
    let p = Plane::start(&cluster_yaml(14, &[("g-1", "pcie-4090-8")]), &[]);
    // In the pod's own sandbox ($HOME), which the replacement pod of the
    // same name gets again: the rest of the host is read-only to a pod.
    let mark = p.data_dir().join("nodes/g-1/pods/default_flaky-master-0/ran-once");
    let script = "if [ -f \"$HOME/ran-once\" ]; then exit 0; fi; touch \"$HOME/ran-once\"; kill -9 $$".to_string();
    p.apply(&one_pod_pytorch("flaky", "OnFailure", &script)).expect("apply");
    p.apply(&one_pod_pytorch("broken", "ExitCode", "exit 1")).expect("apply");
    p.wait_for(60, "flaky Completed", |p| p.phase("pytorchjobs", "flaky") == "Completed");
    assert!(mark.exists(), "the first run was killed, the second succeeded");
    p.wait_for(60, "broken Failed", |p| p.phase("pytorchjobs", "broken") == "Failed");
}

#[test]
fn node_stop_moves_a_force_rescheduled_job_and_unhealthy_devices_stay_unused() {
    let p = Plane::start(
        &cluster_yaml(15, &[("h-1", "hgx-h100-8"), ("h-2", "hgx-h100-8"), ("h-3", "hgx-h100-8")]),
        &["--heartbeat-timeout", "1.5"],
    );
    let job = example("examples/demo/pytorchjob-h100.yaml")
        .replace("name: demo-pytorch", "name: moving\n  labels: {fault-scheduling: force}")
        .replace(
            r#"["ringleader", "probe", "allreduce", "--size", "4MiB", "--iters", "5"]"#,
            r#"["/bin/sh", "-c", "sleep 3; ringleader probe allreduce --size 64KiB --iters 2"]"#,
        );
    p.apply(&job).expect("apply");
    p.wait_for(30, "both pods running", |p| {
        p.list("pods").iter().filter(|x| x["status"]["phase"] == "Running").count() == 2
    });
    let worker = p.get("pods", "moving-worker-0").expect("worker");
    let victim = worker["spec"]["nodeName"].as_str().expect("bound").to_string();
    p.patch("nodes", &victim, &json!({"spec": {"stopped": true}}));
    p.wait_for(90, "job Completed after moving", |p| p.phase("pytorchjobs", "moving") == "Completed");
    for pod in p.list("pods") {
        if pod["status"]["phase"] == "Succeeded" {
            assert_ne!(pod["spec"]["nodeName"].as_str(), Some(victim.as_str()), "no pod finished on the stopped node");
        }
    }

    // A broken GPU is never handed out until it recovers.
    let healthy = ["h-1", "h-2", "h-3"].into_iter().find(|n| *n != victim).expect("a live node");
    p.patch("nodes", healthy, &json!({"spec": {"injectedFaults": {"unhealthy": [3], "network": []}}}));
    p.wait_for(10, "device 3 reported unhealthy", |p| {
        p.get("nodes", healthy).is_some_and(|n| n["status"]["unhealthyDevices"] == json!([3]))
    });
    let other = ["h-1", "h-2", "h-3"].into_iter().find(|n| *n != victim && *n != healthy).expect("third");
    p.patch("nodes", other, &json!({"spec": {"stopped": true}}));
    p.wait_for(10, "third node NotReady", |p| p.get("nodes", other).is_some_and(|n| n["status"]["ready"] == false));
    p.apply(&one_pod_pytorch("seven", "OnFailure", "sleep 30").replace("gpu: 1", "gpu: 7")).expect("apply");
    p.wait_for(30, "seven bound", |p| {
        p.get("pods", "seven-master-0").is_some_and(|x| x["spec"]["nodeName"].is_string())
    });
    let seven = p.get("pods", "seven-master-0").expect("pod");
    let devices = seven["metadata"]["annotations"]["ringleader.io/devices"].as_str().expect("devices");
    assert!(!devices.split(',').any(|d| d == "3"), "{devices}");
}

#[test]
fn api_needs_the_token_and_survives_malformed_bodies() {
    let p = Plane::start(&cluster_yaml(16, &[("g-1", "pcie-4090-8")]), &[]);
    let base = p.client.base().to_string();
    let token = std::fs::read_to_string(p.data_dir().join("token")).expect("token");
    // Trusts the plane's CA (it serves HTTPS) but sends no token of its own.
    let http = p.client.http().clone();
    assert!(base.starts_with("https://"), "{base}");
    let pods = format!("{base}/api/v1/namespaces/default/pods");
    p.rt.block_on(async {
        let r = http.get(&pods).send().await.expect("send");
        assert_eq!(r.status().as_u16(), 401);
        let r = http.get(&pods).bearer_auth("wrong").send().await.expect("send");
        assert_eq!(r.status().as_u16(), 401);
        let jobs = format!("{base}/apis/kubeflow.org/v1/namespaces/default/pytorchjobs");
        let r = http
            .post(&jobs)
            .bearer_auth(token.trim())
            .header("content-type", "application/json")
            .body(r#"{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"x"},"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":"many"}}}}"#)
            .send()
            .await
            .expect("send");
        let code = r.status().as_u16();
        let body: serde_json::Value = r.json().await.expect("status json");
        assert!((400..500).contains(&code), "{code}");
        assert_eq!(body["kind"], "Status");
        assert!(body.to_string().contains("replicas"), "the field path is named: {body}");
        let r = http.post(&jobs).bearer_auth(token.trim()).body("{not json").send().await.expect("send");
        assert!((400..500).contains(&r.status().as_u16()));
        let r = http.get(&pods).bearer_auth(token.trim()).send().await.expect("send");
        assert_eq!(r.status().as_u16(), 200, "still serving");
    });
}

/// SIGTERM (what `kill`, systemd and container runtimes send) stops `up` in
/// order: it exits 0, and its pods keep running for the next `up` to adopt.
#[test]
fn sigterm_stops_up_and_leaves_its_pods_running() {
    let mut p = Plane::start(&cluster_yaml(17, &[("g-1", "pcie-4090-8")]), &[]);
    p.apply(&one_pod_pytorch("sleeper", "OnFailure", "echo up; sleep 600")).expect("apply");
    let running = |p: &Plane| {
        p.get("pods", "sleeper-master-0").is_some_and(|pod| pod.pointer("/status/phase") == Some(&json!("Running")))
    };
    p.wait_for(60, "the sleeper pod Running", running);
    let pod = p.get("pods", "sleeper-master-0").expect("pod");
    let pgid: i32 = pod["metadata"]["annotations"]["ringleader.io/pid"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("the agent records the pod's process group");
    // Live (not zombie) members of the group: once `up` is gone its killed
    // children are reparented to an init that may never reap them.
    let alive = |g: i32| {
        let Ok(procs) = std::fs::read_dir("/proc") else { return false };
        procs.flatten().any(|p| {
            let stat = std::fs::read_to_string(p.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid pgrp …; comm may hold spaces, so split after ')'.
            let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2] == g.to_string()
        })
    };
    assert!(alive(pgid));
    let mut child = p.child.take().expect("up runs");
    // SAFETY: signals our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "up did not stop on SIGTERM");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(status.success(), "up exited with {status}");
    // As a kubelet stopping leaves its containers: the pod runs on under its
    // shim for the next `up` to adopt (tests/chaos/adopt.rs), and stops only
    // when it is deleted, never because its agent went away.
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(alive(pgid), "the pod's process group ended with up");
    // SAFETY: signals the test's own pod group, which the next up would have adopted.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}
