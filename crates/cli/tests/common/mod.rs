//! A whole control plane for end-to-end tests: `ringleader up` as a child
//! process on a temporary data directory, with a cluster of virtual nodes
//! on an address block of its own (tests run in parallel; two clusters must
//! not share a loopback address and port), and an API client.

#![allow(dead_code)]

use ringleader_client::Client;
use ringleader_registry::resources;
use ringleader_server::ResourceType;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A cluster file: `(name, profile)` nodes on addresses `127.0.<block>.<i+1>`.
pub fn cluster_yaml(block: u8, nodes: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (name, profile)) in nodes.iter().enumerate() {
        let labels = match *profile {
            p if p.starts_with("atlas") => "{host-arch: huawei-arm}",
            "hgx-h100-8" => "{gpu-model: h100}",
            "pcie-4090-8" => "{gpu-model: rtx4090}",
            _ => "{}",
        };
        out.push_str(&format!(
            "apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: {name}, labels: {labels}}}\nspec: {{profile: {profile}, address: 127.0.{block}.{}}}\n---\n",
            i + 1
        ));
    }
    out.push_str(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 1}\n",
    );
    out
}

pub struct Plane {
    pub dir: tempfile::TempDir,
    pub child: Option<Child>,
    pub client: Client,
    pub rt: tokio::runtime::Runtime,
    args: Vec<String>,
}

impl Plane {
    /// Starts `ringleader up` with the cluster and extra flags.
    pub fn start(cluster: &str, extra: &[&str]) -> Plane {
        Plane::start_in(tempfile::tempdir().expect("tempdir"), cluster, extra)
    }

    /// [`Plane::start`] in a directory given (its `data` may be a mount of its own).
    pub fn start_in(dir: tempfile::TempDir, cluster: &str, extra: &[&str]) -> Plane {
        let file = dir.path().join("cluster.yaml");
        std::fs::write(&file, cluster).expect("cluster file");
        let mut args: Vec<String> = vec![
            "up".into(),
            "--cluster".into(),
            file.display().to_string(),
            "--data-dir".into(),
            dir.path().join("data").display().to_string(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--heartbeat-interval".into(),
            "0.2".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        let mut plane = Plane { dir, child: None, client: Client::new("http://127.0.0.1:1", ""), rt, args };
        plane.spawn();
        plane
    }

    /// Makes the next [`Plane::spawn`] listen on the port this start got
    /// (it started on any free one), so a client holding the URL (a
    /// browser) finds the restarted server where it was.
    pub fn pin_port(&mut self) {
        let url = std::fs::read_to_string(self.data_dir().join("server")).expect("server url");
        let port = url.trim().trim_end_matches('/').rsplit(':').next().expect("a port").to_string();
        for a in &mut self.args {
            if a == "127.0.0.1:0" {
                *a = format!("127.0.0.1:{port}");
            }
        }
    }

    /// Adds flags for the next [`Plane::spawn`].
    pub fn args_push(&mut self, arg: &str) {
        self.args.push(arg.to_string());
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The log a pod wrote, read from its sandboxes on every node rather than through
    /// the API, so it is still there after the job's cleanup deleted the pod.
    pub fn sandbox_log(&self, pod: &str) -> String {
        let mut out = String::new();
        let Ok(nodes) = std::fs::read_dir(self.data_dir().join("nodes")) else { return out };
        let mut dirs: Vec<PathBuf> =
            nodes.flatten().map(|n| n.path().join("pods").join(format!("default_{pod}"))).collect();
        dirs.sort();
        for d in dirs {
            if let Ok(text) = std::fs::read_to_string(d.join("log")) {
                out.push_str(&text);
            }
        }
        out
    }

    /// (Re)starts the `up` process on the same data directory.
    pub fn spawn(&mut self) {
        let server_file = self.data_dir().join("server");
        let _ = std::fs::remove_file(&server_file);
        let child = Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("ringleader up");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(url) = std::fs::read_to_string(&server_file) {
                if let Ok(c) = Client::from_data_dir(url.trim(), &self.data_dir()) {
                    if self.rt.block_on(c.healthy()) {
                        self.client = c;
                        return;
                    }
                }
            }
            assert!(Instant::now() < deadline, "ringleader up did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs `up` as [`Plane::spawn`] does, for a start that must fail: its
    /// stderr once it exited non-zero (panics if it serves or exits 0).
    pub fn spawn_refused(&mut self) -> String {
        let server_file = self.data_dir().join("server");
        let _ = std::fs::remove_file(&server_file);
        let mut child = Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ringleader up");
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline || server_file.exists() {
                let _ = child.kill();
                let out = child.wait_with_output().expect("wait");
                panic!("ringleader up started when it should not: {}", String::from_utf8_lossy(&out.stderr));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().expect("wait");
        assert!(!out.status.success(), "ringleader up exited 0 without serving");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// SIGKILLs the `up` process (a crash).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn apply(&self, yaml: &str) -> Result<(), String> {
        self.rt.block_on(self.client.apply_documents(yaml)).map(|_| ()).map_err(|e| e.to_string())
    }

    pub fn list(&self, kind: &str) -> Vec<Value> {
        let t = find(kind);
        let ns = if t.namespaced { Some("default") } else { None };
        self.rt.block_on(self.client.list(t, ns, None)).map(|l| l.items).unwrap_or_default()
    }

    pub fn get(&self, kind: &str, name: &str) -> Option<Value> {
        let t = find(kind);
        let ns = if t.namespaced { "default" } else { "" };
        self.rt.block_on(self.client.get(t, ns, name)).ok()
    }

    pub fn patch(&self, kind: &str, name: &str, patch: &Value) {
        let t = find(kind);
        let ns = if t.namespaced { "default" } else { "" };
        self.rt.block_on(self.client.patch_merge(t, ns, name, patch)).expect("patch");
    }

    /// The job's phase as the controller wrote it.
    pub fn phase(&self, kind: &str, name: &str) -> String {
        self.get(kind, name)
            .and_then(|j| j.pointer("/status/ringleader/phase").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default()
    }

    /// Waits until `f` holds (panics with `what` after `secs`).
    pub fn wait_for(&self, secs: u64, what: &str, mut f: impl FnMut(&Plane) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !f(self) {
            if Instant::now() > deadline {
                let pods: Vec<String> = self
                    .list("pods")
                    .iter()
                    .map(|p| {
                        // Why a pod ended where it did: its reason, message
                        // and each container's last state, so a failure in
                        // CI says more than the phase.
                        format!(
                            "{} {} {} {} {} {}",
                            p["metadata"]["name"].as_str().unwrap_or(""),
                            p["status"]["phase"].as_str().unwrap_or(""),
                            p["spec"]["nodeName"].as_str().unwrap_or(""),
                            p["status"]["reason"].as_str().unwrap_or(""),
                            p["status"]["message"].as_str().unwrap_or(""),
                            p["status"]["containerStatuses"]
                        )
                    })
                    .collect();
                panic!("timed out waiting for {what}; pods: {pods:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs a `ringleader` CLI command against this plane; its stdout.
    pub fn ctl(&self, args: &[&str]) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .args(args)
            .arg("--data-dir")
            .arg(self.data_dir())
            .output()
            .expect("ringleader");
        assert!(out.status.success(), "ringleader {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `ringleader ARGS` as `who` (a kubeconfig, or the admin's data dir
    /// when `None`), refused or not: (success, stdout then stderr).
    pub fn ringleader_as(&self, who: Option<&Path>, args: &[&str]) -> (bool, String) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(args).env_remove("KUBECONFIG");
        match who {
            Some(k) => cmd.arg("--kubeconfig").arg(k),
            None => cmd.arg("--data-dir").arg(self.data_dir()),
        };
        let out = cmd.output().expect("ringleader");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.success(), text)
    }

    pub fn log(&self, pod: &str) -> String {
        use futures_util::StreamExt;
        self.rt.block_on(async {
            let Ok(mut s) = self.client.logs("default", pod, false, None).await else { return String::new() };
            let mut out = Vec::new();
            while let Some(Ok(b)) = s.next().await {
                out.extend_from_slice(&b);
            }
            String::from_utf8_lossy(&out).into_owned()
        })
    }
}

impl Drop for Plane {
    fn drop(&mut self) {
        if let Some(c) = &self.child {
            // SIGINT: `up` stops in order; its pods run on under their shims.
            unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
        }
        if let Some(mut c) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && !matches!(c.try_wait(), Ok(Some(_))) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        kill_pods_left(&self.data_dir());
        unmount_under(self.dir.path());
    }
}

/// Lazily unmounts whatever is mounted under `dir` (a container's tmpfs
/// volume left when a test stopped `up` before deleting its pods), so the
/// temporary directory can go.
pub fn unmount_under(dir: &Path) {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else { return };
    let prefix = dir.to_string_lossy().into_owned();
    let mut points: Vec<&str> =
        mounts.lines().filter_map(|l| l.split_whitespace().nth(1)).filter(|m| m.starts_with(&prefix)).collect();
    points.sort_by_key(|m| std::cmp::Reverse(m.len()));
    for m in points {
        if let Ok(c) = std::ffi::CString::new(m) {
            // SAFETY: a valid NUL-terminated path.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }
}

/// The pod processes the shims under `data_dir` keep running (they outlive
/// `up` and `ringleader agent` on purpose), each as `(pid, start time)`.
pub fn pods_left(data_dir: &Path) -> Vec<(i32, u64)> {
    let mut out = Vec::new();
    let Ok(nodes) = std::fs::read_dir(data_dir.join("nodes")) else { return out };
    for node in nodes.flatten() {
        let Ok(states) = std::fs::read_dir(node.path().join("run")) else { continue };
        for state in states.flatten() {
            let Ok(text) = std::fs::read(state.path().join("pod.json")) else { continue };
            let Ok(record) = serde_json::from_slice::<Value>(&text) else { continue };
            let pid = record["pod"]["pid"].as_i64().and_then(|p| i32::try_from(p).ok());
            if let (Some(pid), Some(start)) = (pid, record["pod"]["start"].as_u64()) {
                out.push((pid, start));
            }
        }
    }
    out
}

/// Start time (clock ticks after boot) of a live, non-zombie `pid`.
pub fn process_start(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    (fields.first() != Some(&"Z")).then_some(())?;
    fields.get(19)?.parse().ok()
}

/// Kills what the test's pods left running, so no test leaves processes behind.
pub fn kill_pods_left(data_dir: &Path) {
    for (pid, start) in pods_left(data_dir) {
        if pid > 1 && process_start(pid) == Some(start) {
            // SAFETY: signals the pod's own process group, checked by start time.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
    }
}

pub fn find(kind: &str) -> &'static ResourceType {
    resources::resolve(kind).and_then(|v| v.into_iter().next()).unwrap_or_else(|| panic!("type {kind}"))
}

pub fn example(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).expect("example")
}

/// Pipes a scrape to `promtool check metrics` (Prometheus' own linter) and
/// fails on its complaints; without promtool on the PATH it says so and
/// skips, unless `RINGLEADER_REQUIRE_PROMTOOL=1` (CI), where that fails.
pub fn promtool_check_metrics(text: &str) {
    use std::io::Write;
    if !Command::new("promtool").arg("--version").output().is_ok_and(|o| o.status.success()) {
        assert!(
            std::env::var("RINGLEADER_REQUIRE_PROMTOOL").map_or(true, |v| v != "1"),
            "RINGLEADER_REQUIRE_PROMTOOL=1 but promtool is not on PATH"
        );
        eprintln!("promtool not found on PATH: `promtool check metrics` is SKIPPED");
        return;
    }
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write to promtool");
    let out = child.wait_with_output().expect("promtool");
    assert!(
        out.status.success(),
        "promtool check metrics failed:\n{}{}\n--- scrape ---\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A `ringleader agent` child process, stopped with SIGTERM (then killed
/// after ten seconds) when dropped, so its pods are cleaned up.
pub struct Agent(pub Child);

impl Drop for Agent {
    fn drop(&mut self) {
        // Its pods outlive it (under their shims): found through its data dir.
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", self.0.id())).unwrap_or_default();
        let args: Vec<String> = cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        let data_dir = args.iter().position(|a| a == "--data-dir").and_then(|i| args.get(i + 1)).map(PathBuf::from);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && !matches!(self.0.try_wait(), Ok(Some(_))) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
        if let Some(d) = data_dir {
            kill_pods_left(&d);
        }
    }
}

// --- a GPU machine without a GPU: a scripted `nvidia-smi` ---------------

/// A real `nvidia-smi topo -m` of a one-H100 machine (driver 580).
const TOPO: &str = include_str!("../../../topology/tests/data/h100-x1-driver580.topo");
const INVENTORY: &str = "0, GPU-5e8f3b1a-7c2d-4e9f-8a1b-2c3d4e5f6a70, 81559, NVIDIA H100 80GB HBM3\n";

/// The telemetry query's answer: `power` as printed (`[N/A]` for none).
pub fn gpu_figures(util: u32, used_mib: u32, temp: u32, power: &str) -> String {
    format!("0, GPU-5e8f3b1a-7c2d-4e9f-8a1b-2c3d4e5f6a70, {util}, {used_mib}, 81559, {temp}, {power}\n")
}

/// A `nvidia-smi` answering the three command lines the agent runs from
/// files beside it (rewritten by the test as the GPU "changes").
pub fn fake_nvidia_smi(dir: &Path) {
    std::fs::write(dir.join("topo"), TOPO).expect("topo");
    std::fs::write(dir.join("inventory"), INVENTORY).expect("inventory");
    std::fs::write(dir.join("figures"), gpu_figures(37, 1024, 34, "[N/A]")).expect("figures");
    let script = format!(
        "#!/bin/sh\nd='{}'\ncase \"$1\" in\n  topo) cat \"$d/topo\" ;;\n  --query-gpu=index,uuid,memory.total,name) cat \"$d/inventory\" ;;\n  --query-gpu=index,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw) cat \"$d/figures\" ;;\n  *) echo \"fake nvidia-smi: unexpected arguments: $*\" >&2; exit 2 ;;\nesac\n",
        dir.display()
    );
    let path = dir.join("nvidia-smi");
    std::fs::write(&path, script).expect("script");
    std::fs::set_permissions(&path, <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755))
        .expect("chmod");
}

/// `ringleader agent --detect` registering `node` at `address`, on a
/// machine where NVML cannot be loaded and the scripted `nvidia-smi` of
/// [`fake_nvidia_smi`] in `tools` comes first on its PATH.
pub fn detecting_agent(p: &Plane, node: &str, address: &str, tools: &Path) -> Agent {
    let kubeconfig = p.dir.path().join(format!("{node}.kubeconfig"));
    let user = format!("system:node:{node}");
    let out = kubeconfig.to_str().expect("utf-8 path");
    p.ctl(&["token", "create", "--user", &user, "--group", "system:nodes", "--kubeconfig-out", out]);
    let path = format!("{}:{}", tools.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
    cmd.args(["agent", "--node", node, "--detect", "--listen", "127.0.0.1:0", "--heartbeat-interval", "0.2"])
        .args(["--address", address])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--data-dir")
        .arg(p.dir.path().join(format!("agent-{node}")))
        .env("PATH", path)
        .env("RINGLEADER_NVML_LIBRARY", tools.join("no-such-libnvidia-ml.so.1"))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        cmd.arg("--unsafe-process-runtime");
    }
    Agent(cmd.spawn().expect("ringleader agent"))
}

/// Whether stock kubectl is on the PATH; when it is not, says which test is
/// skipped, or fails when `RINGLEADER_REQUIRE_KUBECTL=1` (CI: the machine
/// image has kubectl).
pub fn kubectl_or_skip(what: &str) -> bool {
    if Command::new("kubectl").args(["version", "--client"]).output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    assert!(
        std::env::var("RINGLEADER_REQUIRE_KUBECTL").map_or(true, |v| v != "1"),
        "RINGLEADER_REQUIRE_KUBECTL=1 but kubectl is not on PATH"
    );
    eprintln!("kubectl not found on PATH: {what} is SKIPPED");
    false
}
