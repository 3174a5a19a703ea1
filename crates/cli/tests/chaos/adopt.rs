//! Pods outlive their agent: a node agent killed with SIGKILL (a crash, an
//! upgrade) — standalone or inside `ringleader up` — leaves its pods
//! running under their shims; the next agent on the same data dir adopts
//! them (same pods, same processes, one log) and reports how they really
//! ended; a pod deleted while no agent ran is stopped when one returns.

use crate::common::{cluster_yaml, process_start, Agent, Plane};
use ringleader_registry::resources;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A batch/v1 Job of `pods` pods running `script`.
fn job(name: &str, pods: u32, script: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  parallelism: {pods}\n  completions: {pods}\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: x\n        command: [\"/bin/sh\", \"-c\", {script:?}]\n        resources: {{limits: {{nvidia.com/gpu: 1}}}}\n"
    )
}

/// Starts `ringleader agent` for `node` on `data` (the same dir on restart).
fn agent(p: &Plane, node: &str, address: &str, data: &Path) -> Agent {
    let kubeconfig = p.dir.path().join(format!("{node}.kubeconfig"));
    if !kubeconfig.exists() {
        let user = format!("system:node:{node}");
        let out = kubeconfig.to_str().expect("path");
        p.ctl(&["token", "create", "--user", &user, "--group", "system:nodes", "--kubeconfig-out", out]);
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
    cmd.args(["agent", "--node", node, "--listen", "127.0.0.1:0", "--heartbeat-interval", "0.2"])
        .args(["--profile", "hgx-h100-8", "--address", address])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        cmd.arg("--unsafe-process-runtime");
    }
    Agent(cmd.spawn().expect("ringleader agent"))
}

/// SIGKILL, as a crash or an OOM kill.
fn crash(a: &mut Agent) {
    let _ = a.0.kill();
    let _ = a.0.wait();
}

/// The job's pods, once `n` of them run with their pids recorded: name → (uid, pid).
fn running_pods(p: &Plane, job: &str, n: usize) -> Vec<(String, String, i32)> {
    let mut found = Vec::new();
    p.wait_for(60, &format!("{n} pods of {job} running"), |p| {
        found = p
            .list("pods")
            .iter()
            .filter(|x| x["metadata"]["labels"]["job-name"] == job && x["status"]["phase"] == "Running")
            .filter_map(|x| {
                let pid = x["metadata"]["annotations"]["ringleader.io/pid"].as_str()?.parse().ok()?;
                Some((x["metadata"]["name"].as_str()?.to_string(), x["metadata"]["uid"].as_str()?.to_string(), pid))
            })
            .collect();
        found.len() == n
    });
    found
}

fn alive(pid: i32) -> bool {
    process_start(pid).is_some()
}

/// Waits until `log` (a pod's log file) holds `text`.
fn wait_log(log: &Path, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(log).unwrap_or_default().contains(text) {
        assert!(Instant::now() < deadline, "{} never held {text:?}", log.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What a job's pods must show after the agent's death: the same pods (no
/// replacement), each Succeeded with its real exit, its pid unchanged.
fn assert_adopted(p: &Plane, job: &str, before: &[(String, String, i32)]) {
    let batch = resources::by_kind("batch/v1", "Job").expect("batch/v1 Job");
    let phase = |p: &Plane| {
        let j = p.rt.block_on(p.client.get(batch, "default", job)).expect("job");
        j.pointer("/status/ringleader/phase").and_then(Value::as_str).unwrap_or_default().to_string()
    };
    p.wait_for(60, &format!("{job} completed"), |p| matches!(phase(p).as_str(), "Completed" | "Failed"));
    assert_eq!(phase(p), "Completed");
    let pods: Vec<Value> = p.list("pods").into_iter().filter(|x| x["metadata"]["labels"]["job-name"] == job).collect();
    assert_eq!(pods.len(), before.len(), "no replacement pods: {pods:#?}");
    for (name, uid, pid) in before {
        let pod = pods.iter().find(|x| x["metadata"]["name"] == name.as_str()).expect("same pod");
        assert_eq!(pod["metadata"]["uid"], uid.as_str(), "same pod object");
        assert_eq!(pod["metadata"]["annotations"]["ringleader.io/pid"], pid.to_string().as_str(), "same process");
        assert_eq!(pod["status"]["phase"], "Succeeded", "{pod}");
        let term = &pod["status"]["containerStatuses"][0]["state"]["terminated"];
        assert_eq!(term["exitCode"], 0, "{pod}");
        assert_eq!(term["reason"], "Completed", "{pod}");
    }
}

/// After SIGKILL of the agent, what the pods left: alive 3 s later.
fn assert_survive(pods: &[(String, String, i32)]) {
    std::thread::sleep(Duration::from_secs(3));
    for (name, _, pid) in pods {
        assert!(alive(*pid), "pod {name} (pid {pid}) died with its agent");
    }
}

fn log_of(data: &Path, node: &str, pod: &str) -> PathBuf {
    data.join("nodes").join(node).join("pods").join(format!("default_{pod}")).join("log")
}

const SCRIPT: &str = "echo before; sleep 7; echo after";

#[test]
fn pods_outlive_a_killed_standalone_agent_and_are_adopted() {
    let p = Plane::start(&cluster_yaml(61, &[("unused", "hgx-h100-8")]), &["--no-agent"]);
    let data = p.dir.path().join("agent-adopt-1");
    let mut a = agent(&p, "adopt-1", "127.0.61.9", &data);
    p.wait_for(30, "adopt-1 Ready", |p| p.get("nodes", "adopt-1").is_some_and(|n| n["status"]["ready"] == true));
    p.apply(&job("survivor", 2, SCRIPT)).expect("apply");
    let pods = running_pods(&p, "survivor", 2);
    for (name, _, _) in &pods {
        wait_log(&log_of(&data, "adopt-1", name), "before\n");
    }
    crash(&mut a);
    assert_survive(&pods);
    let _a = agent(&p, "adopt-1", "127.0.61.9", &data);
    assert_adopted(&p, "survivor", &pods);
    for (name, _, _) in &pods {
        let log = std::fs::read_to_string(log_of(&data, "adopt-1", name)).expect("log");
        assert_eq!(log, "before\nafter\n", "one log, before and after the agent's death");
        // The agent's log endpoint (through the API) serves the adopted pod's log.
        assert_eq!(p.log(name), "before\nafter\n");
    }
}

#[test]
fn pods_outlive_a_killed_or_stopped_up_and_are_adopted_by_the_next() {
    let mut p = Plane::start(&cluster_yaml(62, &[("g-1", "pcie-4090-8")]), &[]);
    p.apply(&job("steady", 2, "echo before; sleep 12; echo after")).expect("apply");
    let pods = running_pods(&p, "steady", 2);
    let data = p.data_dir();
    for (name, _, _) in &pods {
        wait_log(&log_of(&data, "g-1", name), "before\n");
    }
    p.kill();
    assert_survive(&pods);
    p.spawn();
    // Stopped in order this time (SIGTERM, an upgrade's restart): the pods
    // run on as well.
    let mut up = p.child.take().expect("up runs");
    // SAFETY: signals our own child process.
    unsafe { libc::kill(up.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Ok(Some(s)) = up.try_wait() {
            break s;
        }
        assert!(Instant::now() < deadline, "up did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "up exited with {status}");
    for (name, _, pid) in &pods {
        assert!(alive(*pid), "pod {name} (pid {pid}) died with a stopped up");
    }
    p.spawn();
    assert_adopted(&p, "steady", &pods);
    for (name, _, _) in &pods {
        assert_eq!(p.sandbox_log(name), "before\nafter\n", "one log, before and after up's death");
        assert_eq!(p.log(name), "before\nafter\n");
    }
}

#[test]
fn a_pod_deleted_while_its_agent_was_down_is_stopped_when_it_returns() {
    let p = Plane::start(&cluster_yaml(63, &[("unused", "hgx-h100-8")]), &["--no-agent"]);
    let data = p.dir.path().join("agent-adopt-3");
    let mut a = agent(&p, "adopt-3", "127.0.63.9", &data);
    p.wait_for(30, "adopt-3 Ready", |p| p.get("nodes", "adopt-3").is_some_and(|n| n["status"]["ready"] == true));
    p.apply(&job("doomed", 2, "echo up; sleep 600")).expect("apply");
    let pods = running_pods(&p, "doomed", 2);
    crash(&mut a);
    assert_survive(&pods);
    // One deleted gracefully (its object stays, marked), one forced: marked
    // with no grace, then removed as only its agent would otherwise do.
    let pod_t = resources::find("pods").expect("pods");
    let (graceful, forced) = (&pods[0], &pods[1]);
    p.rt.block_on(p.client.delete(pod_t, "default", &graceful.0, Some(5))).expect("delete");
    p.rt.block_on(p.client.delete_now(pod_t, "default", &forced.0, None)).expect("delete now");
    p.rt.block_on(p.client.delete_now(pod_t, "default", &forced.0, None)).expect("delete marked pod");
    assert!(p.get("pods", &forced.0).is_none_or(|x| x["metadata"]["uid"] != forced.1.as_str()), "object gone");
    std::thread::sleep(Duration::from_secs(1));
    assert!(alive(graceful.2) && alive(forced.2), "nothing stops them while no agent runs");
    let _a = agent(&p, "adopt-3", "127.0.63.9", &data);
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(graceful.2) || alive(forced.2) {
        assert!(Instant::now() < deadline, "the deleted pods' processes outlived the returning agent");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The marked object is removed once its process is gone.
    p.wait_for(30, "the deleted pod's object gone", |p| {
        p.get("pods", &graceful.0).is_none_or(|x| x["metadata"]["uid"] != graceful.1.as_str())
    });
}

#[test]
fn a_pod_that_ended_while_its_agent_was_down_reports_its_real_exit() {
    let p = Plane::start(&cluster_yaml(64, &[("unused", "hgx-h100-8")]), &["--no-agent"]);
    let data = p.dir.path().join("agent-adopt-4");
    let mut a = agent(&p, "adopt-4", "127.0.64.9", &data);
    p.wait_for(30, "adopt-4 Ready", |p| p.get("nodes", "adopt-4").is_some_and(|n| n["status"]["ready"] == true));
    p.apply(&job("brief", 1, "echo going; sleep 2; echo gone; exit 3")).expect("apply");
    let pods = running_pods(&p, "brief", 1);
    let (name, uid, pid) = &pods[0];
    crash(&mut a);
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(*pid) {
        assert!(Instant::now() < deadline, "the pod never ended");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(p.get("pods", name).expect("pod")["status"]["phase"], "Running", "no agent reported it yet");
    let _a = agent(&p, "adopt-4", "127.0.64.9", &data);
    p.wait_for(30, "the pod's end reported", |p| {
        p.get("pods", name).is_some_and(|x| x["status"]["phase"] == "Failed" && x["metadata"]["uid"] == uid.as_str())
    });
    let pod = p.get("pods", name).expect("pod");
    let term = &pod["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(term["exitCode"], 3, "the exit its shim recorded, not AgentRestarted: {pod}");
    assert_eq!(term["reason"], "Error", "{pod}");
    assert_eq!(std::fs::read_to_string(log_of(&data, "adopt-4", name)).expect("log"), "going\ngone\n");
}
