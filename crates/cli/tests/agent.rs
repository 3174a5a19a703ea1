//! `ringleader agent` as a process of its own against `up --no-agent`, on
//! loopback: registration with a node token, pods run and reported, the
//! image Event, logs proxied by the API server, the agent's log endpoint
//! refusing callers the API server does not allow, and what a node token
//! may not do.

mod common;

use common::{cluster_yaml, Agent, Plane};
use serde_json::{json, Value};
use std::process::{Command, Stdio};

fn agent(p: &Plane, node: &str, extra: &[&str]) -> Agent {
    let kubeconfig = p.dir.path().join(format!("{node}.kubeconfig"));
    let user = format!("system:node:{node}");
    p.ctl(&[
        "token",
        "create",
        "--user",
        &user,
        "--group",
        "system:nodes",
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
    ]);
    let child = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["agent", "--node", node, "--listen", "127.0.0.1:0", "--heartbeat-interval", "0.2"])
        .args(extra)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--data-dir")
        .arg(p.dir.path().join(format!("agent-{node}")))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("ringleader agent");
    Agent(child)
}

const JOB: &str = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: hello, namespace: default}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.example/hello:1
        command: ["sh", "-c", "echo hello from $(hostname); test -s $RINGLEADER_SERVICE_ACCOUNT_DIR/token && echo token mounted; sleep 1; echo bye"]
        resources: {limits: {nvidia.com/gpu: 1}}
"#;

#[test]
fn a_standalone_agent_runs_pods_and_serves_their_logs_only_to_whom_the_api_allows() {
    let p = Plane::start(&cluster_yaml(40, &[("unused", "hgx-h100-8")]), &["--no-agent"]);
    assert!(p.list("nodes").is_empty(), "--no-agent serves no node of its own");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut flags = vec!["--profile", "hgx-h100-8", "--address", "127.0.40.9"];
    if !root {
        // Without root there are no sandboxes: the agent refuses pods unless told.
        flags.push("--unsafe-process-runtime");
    }
    let _a = agent(&p, "solo-1", &flags);
    p.wait_for(30, "solo-1 Ready", |p| p.get("nodes", "solo-1").is_some_and(|n| n["status"]["ready"] == true));
    let node = p.get("nodes", "solo-1").expect("node");
    assert_eq!(node["spec"]["address"], "127.0.40.9");
    assert_eq!(node["spec"]["profile"], "hgx-h100-8");
    let endpoint = node["status"]["agentEndpoint"]["url"].as_str().expect("agent endpoint").to_string();
    assert!(endpoint.starts_with("https://127.0.0.1:"), "{endpoint}");
    assert!(node["status"]["agentEndpoint"]["caPem"].as_str().is_some_and(|c| c.contains("BEGIN CERTIFICATE")));

    p.apply(JOB).expect("apply");
    p.wait_for(60, "hello-0 Succeeded", |p| {
        p.get("pods", "hello-0").is_some_and(|x| x["status"]["phase"] == "Succeeded")
    });
    let pod = p.get("pods", "hello-0").expect("pod");
    assert_eq!(pod["status"]["podIP"], "127.0.40.9");
    // Through the API server, which proxies to the agent.
    let log = p.log("hello-0");
    // In a sandbox the host name is the pod's (UTS namespace).
    let greeting = if root { "hello from hello-0\n" } else { "hello from " };
    assert!(log.contains(greeting) && log.contains("bye"), "{log}");
    // Its ServiceAccount token, from a TokenRequest the agent sent as its node.
    assert!(log.contains("token mounted"), "{log}");
    // The image is reported as not used.
    let events = p.list("events");
    let image = events.iter().find(|e| e["reason"] == "ImageNotUsed").expect("ImageNotUsed event");
    assert_eq!(image["involvedObject"]["name"], "hello-0");
    assert!(image["message"].as_str().is_some_and(|m| m.contains("registry.example/hello:1")), "{image}");

    // The agent's endpoint asks the API server about each caller.
    let url = format!("{endpoint}/containerLogs/default/hello-0/main");
    let insecure = reqwest::Client::builder().danger_accept_invalid_certs(true).build().expect("client");
    let alice = p.ctl(&["token", "create", "--user", "alice"]).trim().to_string();
    let admin = std::fs::read_to_string(p.data_dir().join("token")).expect("token").trim().to_string();
    p.rt.block_on(async {
        let r = insecure.get(&url).send().await.expect("send");
        assert_eq!(r.status().as_u16(), 401, "no token");
        let r = insecure.get(&url).bearer_auth("not-a-token").send().await.expect("send");
        assert_eq!(r.status().as_u16(), 401, "unknown token");
        let r = insecure.get(&url).bearer_auth(&alice).send().await.expect("send");
        assert_eq!(r.status().as_u16(), 403, "alice holds no role");
        let r = insecure.get(format!("{url}?tailLines=1")).bearer_auth(&admin).send().await.expect("send");
        assert_eq!(r.status().as_u16(), 200);
        assert_eq!(r.text().await.expect("body"), "bye\n");
    });

    // A node token writes its Node's status and registration, not the admin's switches,
    // and no other node.
    let token = |node: &str| -> String {
        let kc = std::fs::read_to_string(p.dir.path().join(format!("{node}.kubeconfig"))).expect("kubeconfig");
        let v: Value = serde_yaml_ng::from_str(&kc).expect("yaml");
        v["users"][0]["user"]["token"].as_str().expect("token").to_string()
    };
    let solo = token("solo-1");
    let base = p.client.base().to_string();
    let http = p.client.http().clone();
    let patch = |node: &str, body: Value| {
        let http = http.clone();
        let url = format!("{base}/apis/ringleader.io/v1alpha1/nodes/{node}");
        let solo = solo.clone();
        p.rt.block_on(async move {
            http.patch(&url)
                .bearer_auth(&solo)
                .header("content-type", "application/merge-patch+json")
                .body(body.to_string())
                .send()
                .await
                .expect("send")
                .status()
                .as_u16()
        })
    };
    assert_eq!(patch("solo-1", json!({"spec": {"stopped": true}})), 403, "spec.stopped is the admin's");
    assert_eq!(patch("solo-1", json!({"spec": {"profile": "hgx-h100-8"}, "status": {"ready": true}})), 200);
    assert_eq!(patch("other", json!({"status": {"ready": true}})), 403, "another node's object");
}

#[test]
fn an_agent_with_a_bad_flag_or_profile_stops_with_the_reason() {
    let p = Plane::start(&cluster_yaml(41, &[("unused", "hgx-h100-8")]), &["--no-agent"]);
    let kubeconfig = p.dir.path().join("bad.kubeconfig");
    p.ctl(&[
        "token",
        "create",
        "--user",
        "system:node:bad",
        "--group",
        "system:nodes",
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
    ]);
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .args(["agent", "--node", "bad", "--listen", "127.0.0.1:0", "--unsafe-process-runtime"])
            .args(extra)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--data-dir")
            .arg(p.dir.path().join("agent-bad"))
            .output()
            .expect("run");
        assert!(!out.status.success(), "{extra:?} was accepted");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = run(&["--profile", "no-such-box"]);
    assert!(e.contains("profile") && e.contains("no-such-box") && e.contains("hgx-h100-8"), "{e}");
    let e = run(&["--profile", "hgx-h100-8", "--address", "127.0.41.1", "--address", "127.0.41.2"]);
    assert!(e.contains("--address") && e.contains("2 times for 1 nodes"), "{e}");
    let e = run(&["--profile", "hgx-h100-8", "--label", "novalue"]);
    assert!(e.contains("--label") && e.contains("KEY=VALUE"), "{e}");
    assert!(p.get("nodes", "bad").is_none(), "nothing was registered");
}
