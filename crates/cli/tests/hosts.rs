//! Several hosts on this machine: network namespaces joined by a bridge in
//! a namespace of its own (a switch), the control plane (`up --no-agent`)
//! in one, standalone agents (`ringleader agent`) in two others, each
//! reaching the API server only over its veth address. Jobs run the probe's
//! TCP all-reduce across the hosts; cutting a host's link makes its nodes
//! NotReady and a force-rescheduled job moves to the hosts left.
//!
//! Needs root and iproute2. Without them the test says so and passes as
//! skipped, unless `RINGLEADER_REQUIRE_NETNS=1` (CI sets it).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const BIN: &str = env!("CARGO_BIN_EXE_ringleader");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(cmd: &mut Command) -> Result<Output, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(out)
}

fn ip(args: &[&str]) -> Result<(), String> {
    run(Command::new("ip").args(args)).map(|_| ())
}

/// Why this machine cannot make test hosts, if it cannot.
fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("network namespaces need root".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("iproute2's `ip` is not installed".into()),
    }
}

/// The test's hosts: `cp` (control plane), `h1`, `h2`, all on one bridge.
struct Hosts {
    tag: String,
    subnet: String,
}

impl Hosts {
    fn ns(&self, host: &str) -> String {
        format!("{}-{host}", self.tag)
    }

    /// The switch-side end of a host's link.
    fn port(&self, host: &str) -> String {
        format!("{}{host}b", self.tag)
    }

    fn address(&self, n: u8) -> String {
        format!("{}.{n}", self.subnet)
    }

    fn make() -> Result<Hosts, String> {
        let pid = std::process::id();
        let hosts = Hosts { tag: format!("rl{:x}", pid & 0xffff), subnet: format!("10.213.{}", pid % 250) };
        let sw = hosts.ns("sw");
        for h in ["sw", "cp", "h1", "h2"] {
            ip(&["netns", "add", &hosts.ns(h)])?;
        }
        ip(&["-n", &sw, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &sw, "link", "set", "br0", "up"])?;
        for (i, h) in ["cp", "h1", "h2"].iter().enumerate() {
            let (ns, inside, port) = (hosts.ns(h), format!("{}{h}", hosts.tag), hosts.port(h));
            ip(&["link", "add", &inside, "type", "veth", "peer", "name", &port])?;
            ip(&["link", "set", &inside, "netns", &ns])?;
            ip(&["link", "set", &port, "netns", &sw])?;
            ip(&["-n", &ns, "addr", "add", &format!("{}/24", hosts.address(i as u8 + 1)), "dev", &inside])?;
            ip(&["-n", &ns, "link", "set", &inside, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&["-n", &sw, "link", "set", &port, "master", "br0"])?;
            ip(&["-n", &sw, "link", "set", &port, "up"])?;
        }
        // h1 has a second address for its second GPU node.
        ip(&[
            "-n",
            &hosts.ns("h1"),
            "addr",
            "add",
            &format!("{}/24", hosts.address(4)),
            "dev",
            &format!("{}h1", hosts.tag),
        ])?;
        Ok(hosts)
    }

    /// A command run in `host`'s namespace.
    fn command(&self, host: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(host), program]);
        c
    }

    fn link(&self, host: &str, state: &str) -> Result<(), String> {
        ip(&["-n", &self.ns("sw"), "link", "set", &self.port(host), state])
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth ends in it, and with them their peers.
        for h in ["cp", "h1", "h2", "sw"] {
            let _ = Command::new("ip").args(["netns", "del", &self.ns(h)]).output();
        }
    }
}

/// Child processes, stopped with SIGINT (then SIGKILL) when dropped.
#[derive(Default)]
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &self.0 {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
        }
        for c in &mut self.0 {
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && !matches!(c.try_wait(), Ok(Some(_))) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

struct Cluster {
    hosts: Hosts,
    dir: tempfile::TempDir,
    procs: Procs,
}

impl Cluster {
    fn data(&self) -> PathBuf {
        self.dir.path().join("cp")
    }

    /// `ringleader ARGS --data-dir <control plane>` run on the control-plane host.
    fn ctl(&self, args: &[&str]) -> Result<String, String> {
        let out = run(self.hosts.command("cp", BIN).args(args).arg("--data-dir").arg(self.data()))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn json(&self, args: &[&str]) -> Result<Value, String> {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        let text = self.ctl(&a)?;
        serde_json::from_str(&text).map_err(|e| format!("ringleader {args:?}: not JSON: {e}"))
    }

    fn items(&self, what: &str) -> Vec<Value> {
        self.json(&["get", what]).ok().and_then(|v| v["items"].as_array().cloned()).unwrap_or_default()
    }

    fn ready(&self, node: &str) -> Option<bool> {
        let n = self.items("nodes").into_iter().find(|n| n["metadata"]["name"] == node)?;
        n["status"]["ready"].as_bool()
    }

    fn phase(&self, kind: &str, name: &str) -> String {
        self.json(&["get", kind, name])
            .ok()
            .and_then(|j| j.pointer("/status/ringleader/phase").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default()
    }

    fn wait(&self, secs: u64, what: &str, mut f: impl FnMut(&Cluster) -> bool) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !f(self) {
            if Instant::now() > deadline {
                let pods: Vec<String> = self
                    .items("pods")
                    .iter()
                    .map(|p| format!("{} {} {}", p["metadata"]["name"], p["status"]["phase"], p["spec"]["nodeName"]))
                    .collect();
                return Err(format!("timed out waiting for {what}; pods: {pods:?}"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(())
    }

    /// The logs of the pods named `prefix…` that `node`'s agent ran.
    fn sandbox_logs(&self, node: &str, prefix: &str) -> String {
        let pods = self.dir.path().join(format!("agent-{node}")).join("nodes").join(node).join("pods");
        let mut out = String::new();
        for e in std::fs::read_dir(pods).into_iter().flatten().flatten() {
            if e.file_name().to_string_lossy().starts_with(&format!("default_{prefix}")) {
                out.push_str(&std::fs::read_to_string(e.path().join("log")).unwrap_or_default());
            }
        }
        out
    }

    /// An agent for `node` on `host`, with a node token of its own.
    fn agent(&mut self, host: &str, node: &str, profile: &str, label: &str, address: &str, port: u16) -> TestResult {
        let kubeconfig = self.dir.path().join(format!("{node}.kubeconfig"));
        let user = format!("system:node:{node}");
        self.ctl(
            &["token", "create", "--user", &user, "--group", "system:nodes", "--kubeconfig-out"]
                .into_iter()
                .chain([kubeconfig.to_str().ok_or("path")?])
                .collect::<Vec<_>>(),
        )?;
        let listen = format!("{address}:{port}");
        let data = self.dir.path().join(format!("agent-{node}"));
        let child = self
            .hosts
            .command(host, BIN)
            .args(["agent", "--node", node, "--profile", profile, "--label", label, "--address", address])
            .args(["--listen", &listen, "--heartbeat-interval", "0.3", "--kubeconfig"])
            .arg(&kubeconfig)
            .arg("--data-dir")
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()?;
        self.procs.0.push(child);
        Ok(())
    }
}

fn start() -> Result<Cluster, Box<dyn std::error::Error>> {
    let hosts = Hosts::make()?;
    let dir = tempfile::tempdir()?;
    let cluster_file = dir.path().join("queues.yaml");
    std::fs::write(
        &cluster_file,
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 1}\n",
    )?;
    let listen = format!("{}:8470", hosts.address(1));
    let data = dir.path().join("cp");
    let up = hosts
        .command("cp", BIN)
        .args(["up", "--no-agent", "--listen", &listen, "--heartbeat-timeout", "2", "--node-lost-toleration", "2"])
        .arg("--cluster")
        .arg(&cluster_file)
        .arg("--data-dir")
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()?;
    let c = Cluster { hosts, dir, procs: Procs(vec![up]) };
    c.wait(60, "the control plane", |c| c.data().join("server").exists() && c.ctl(&["get", "nodes"]).is_ok())?;
    Ok(c)
}

fn example(name: &str) -> Result<String, std::io::Error> {
    std::fs::read_to_string(repo().join("examples/demo").join(name))
}

#[test]
fn jobs_run_across_hosts_and_move_when_a_host_is_cut_off() -> TestResult {
    if let Some(why) = unavailable() {
        if std::env::var("RINGLEADER_REQUIRE_NETNS").is_ok_and(|v| v == "1") {
            return Err(format!("RINGLEADER_REQUIRE_NETNS=1 but {why}").into());
        }
        eprintln!("SKIPPED: jobs_run_across_hosts_and_move_when_a_host_is_cut_off: {why}");
        return Ok(());
    }
    let mut c = start()?;
    let (a1, a2, a1b) = (c.hosts.address(2), c.hosts.address(3), c.hosts.address(4));
    c.agent("h1", "h1-gpu", "hgx-h100-8", "gpu-model=h100", &a1, 10250)?;
    c.agent("h1", "h1-npu", "atlas-800-910", "host-arch=huawei-arm", &a1, 10251)?;
    c.agent("h1", "h1-gpu2", "hgx-h100-8", "gpu-model=h100", &a1b, 10252)?;
    c.agent("h2", "h2-gpu", "hgx-h100-8", "gpu-model=h100", &a2, 10250)?;
    c.agent("h2", "h2-npu", "atlas-800-910", "host-arch=huawei-arm", &a2, 10251)?;
    let nodes = ["h1-gpu", "h1-npu", "h1-gpu2", "h2-gpu", "h2-npu"];
    c.wait(60, "five nodes Ready", |c| nodes.iter().all(|n| c.ready(n) == Some(true)))?;
    // Each agent registered its own node with the address it was given.
    for n in c.items("nodes") {
        let name = n["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let want = if name == "h1-gpu2" {
            &a1b
        } else if name.starts_with("h1") {
            &a1
        } else {
            &a2
        };
        assert_eq!(n["spec"]["address"].as_str(), Some(want.as_str()), "{name}");
    }

    // A PyTorchJob of two 8-GPU pods: one per GPU node, ranks meet over the bridge.
    // h1-gpu2 is held back (stopped) so that the two pods land on two hosts.
    c.ctl(&["node", "stop", "h1-gpu2"])?;
    c.wait(20, "h1-gpu2 NotReady", |c| c.ready("h1-gpu2") == Some(false))?;
    let pytorch = c.dir.path().join("pytorch.yaml");
    std::fs::write(&pytorch, example("pytorchjob-h100.yaml")?)?;
    c.ctl(&["apply", "-f", pytorch.to_str().ok_or("path")?])?;
    c.wait(120, "PyTorchJob Completed", |c| c.phase("pytorchjobs", "demo-pytorch") == "Completed")?;
    let master_log = c.ctl(&["logs", "demo-pytorch-master-0"])?;
    assert!(master_log.contains("check_result"), "rank 0's table, proxied from its agent: {master_log}");
    // Both hosts ran a rank to success (read from the agents' sandboxes: a
    // finished job's worker may already be cleaned up).
    assert!(c.sandbox_logs("h1-gpu", "demo-pytorch").contains("success"));
    assert!(c.sandbox_logs("h2-gpu", "demo-pytorch").contains("success"));

    // An AscendJob of two 8-NPU pods on the two NPU nodes: hccl.json names both hosts.
    let ascend = c.dir.path().join("ascend.yaml");
    std::fs::write(&ascend, example("ascendjob-910.yaml")?)?;
    c.ctl(&["apply", "-f", ascend.to_str().ok_or("path")?])?;
    c.wait(120, "AscendJob Completed", |c| c.phase("ascendjobs", "demo-ascend") == "Completed")?;
    assert!(c.sandbox_logs("h1-npu", "demo-ascend").contains("success"));
    assert!(c.sandbox_logs("h2-npu", "demo-ascend").contains("success"));

    // Cut h2 off: its nodes go NotReady and a force-rescheduled job moves to h1's two GPU nodes.
    c.ctl(&["node", "start", "h1-gpu2"])?;
    c.wait(20, "h1-gpu2 Ready", |c| c.ready("h1-gpu2") == Some(true))?;
    let moving = example("pytorchjob-h100.yaml")?
        .replace("name: demo-pytorch", "name: moving\n  labels: {fault-scheduling: force}")
        .replace(
            r#"["ringleader", "probe", "allreduce", "--size", "4MiB", "--iters", "5"]"#,
            r#"["/bin/sh", "-c", "sleep 4; ringleader probe allreduce --size 64KiB --iters 2"]"#,
        );
    let moving_file = c.dir.path().join("moving.yaml");
    std::fs::write(&moving_file, moving)?;
    c.ctl(&["node", "stop", "h1-gpu2"])?;
    c.wait(20, "h1-gpu2 NotReady", |c| c.ready("h1-gpu2") == Some(false))?;
    c.ctl(&["apply", "-f", moving_file.to_str().ok_or("path")?])?;
    c.wait(60, "both pods Running", |c| {
        c.items("pods")
            .iter()
            .filter(|p| p["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("moving")))
            .filter(|p| p["status"]["phase"] == "Running")
            .count()
            == 2
    })?;
    c.ctl(&["node", "start", "h1-gpu2"])?;
    c.hosts.link("h2", "down")?;
    c.wait(30, "h2's nodes NotReady", |c| c.ready("h2-gpu") == Some(false) && c.ready("h2-npu") == Some(false))?;
    c.wait(120, "the moved job Completed", |c| c.phase("pytorchjobs", "moving") == "Completed")?;
    // It finished on h1's two GPU nodes: h1-gpu2 was stopped when it first started,
    // so its rank there is the moved one; none finished on the cut host.
    assert!(c.sandbox_logs("h1-gpu2", "moving").contains("success"), "a rank moved to h1-gpu2 and succeeded");
    assert!(!c.sandbox_logs("h2-gpu", "moving").contains("success"), "no rank succeeded on the cut host");
    // The link comes back: h2's agents reconnect and their nodes are Ready again.
    c.hosts.link("h2", "up")?;
    c.wait(60, "h2's nodes Ready again", |c| c.ready("h2-gpu") == Some(true) && c.ready("h2-npu") == Some(true))?;
    Ok(())
}
