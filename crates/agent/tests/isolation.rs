//! Pod sandboxes against real attacks: a real agent on a temporary store
//! (in its data dir, beside a token file) runs two pods on one node and one
//! on another; from inside one pod, reading the token, the store or another
//! sandbox, writing to the host's `/usr` or `/etc`, and killing the other
//! pod's processes all fail while the pod does its work and Succeeds.
//! Needs root (namespaces, mounts, uids): skipped with a reason otherwise.

mod common;

use common::wait_for;

use ringleader_agent::{AgentConfig, Isolation, Runtime, VirtualNode};
use ringleader_store::{ObjectKey, Store};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const NS: &str = "ns";

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn pod_key(name: &str) -> ObjectKey {
    ObjectKey::new("v1", "Pod", NS, name)
}

fn pod(name: &str, node: &str, script: &str, env: Value, shared: &Path) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "namespace": NS, "annotations": { "ringleader.io/start": "true" } },
        "spec": { "nodeName": node,
            "containers": [{ "name": "main", "command": ["/bin/sh", "-c", script], "env": env,
                "volumeMounts": [{ "name": "shared", "mountPath": "/tmp/shared" }] }],
            "volumes": [{ "name": "shared", "hostPath": { "path": shared } }] },
        "status": { "phase": "Pending" },
    })
}

fn get(store: &Store, name: &str) -> Option<Value> {
    store.get(&pod_key(name)).ok().flatten().map(|s| s.object)
}

async fn wait_phase(store: &Store, name: &str, phases: &[&str]) -> Value {
    wait_for(&format!("{name} to be {phases:?}"), || {
        get(store, name).filter(|p| phases.iter().any(|ph| p["status"]["phase"] == *ph))
    })
    .await
}

fn log_of(p: &Value) -> String {
    let path = p["metadata"]["annotations"]["ringleader.io/log-path"].as_str().unwrap_or_default();
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Host pids of every process whose environment names pod `name`.
fn pids_of(name: &str) -> Vec<i32> {
    let want = format!("RINGLEADER_POD={name}");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(env) = std::fs::read(e.path().join("environ")) else { continue };
        if env.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Each attack prints `OK <what>` when it fails and `BREACH <what>` when it works.
const ATTACKER: &str = r#"
attempt() { what="$1"; shift; if "$@" >/dev/null 2>&1; then echo "BREACH $what"; else echo "OK $what"; fi; }
attempt token cat "$DATA/token"
attempt store cat "$DATA/store.sqlite"
echo "data-dir: $(ls -A "$DATA" | tr '\n' ' ')"
echo "pods-dir: $(ls -A "$DATA/nodes/n-0/pods" | tr '\n' ' ')"
attempt list-victim ls "$DATA/nodes/n-0/pods/ns_victim"
attempt read-victim cat "$DATA/nodes/n-0/pods/ns_victim/secret"
attempt read-victim-log cat "$DATA/nodes/n-0/pods/ns_victim/log"
attempt list-far ls "$DATA/nodes/n-1/pods/ns_far"
attempt write-usr touch /usr/ringleader-breach
attempt write-etc touch /etc/ringleader-breach
for p in $VICTIM_PIDS; do attempt "kill-$p" kill -9 "$p"; attempt "environ-$p" cat "/proc/$p/environ"; done
echo "hostname: $(hostname)"
echo "uid: $(id -u)"
echo "pids: $(ls /proc | grep -E '^[0-9]+$' | tr '\n' ' ')"
echo "commands: $(cat /proc/[0-9]*/comm | tr '\n' ' ')"
echo work > "$HOME/own" && echo "own: $(cat "$HOME/own")"
echo attacker > /tmp/shared/attacker && echo "shared: written"
echo scratch > /tmp/scratch && echo "tmp: written"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_cannot_reach_the_agent_or_other_pods() {
    if !is_root() {
        eprintln!("skipped: pod sandboxes need root (namespaces, mounts, per-pod uids); this test runs as uid != 0");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let store = Store::open(&data).unwrap();
    std::fs::write(data.join("token"), "secret-token\n").unwrap();
    let shared = tmp.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();

    let mut cfg = AgentConfig::new(&data, VirtualNode::numbered("n", "hgx-h100-8", 2, 1))
        .with_runtime(Runtime::Process)
        .with_isolation(Isolation::Required);
    cfg.heartbeat_interval = Duration::from_millis(200);
    cfg.flush_interval = Duration::from_millis(10);
    cfg.init_program = Some(PathBuf::from(env!("CARGO_BIN_EXE_ringleader-pod-init")));
    let agent = ringleader_agent::start(store.clone(), cfg).await.unwrap();

    let victim = "echo secret > \"$HOME/secret\"; id -u > /tmp/shared/victim-uid; while true; do sleep 0.2; done";
    store.create(pod("victim", "n-0", victim, json!([]), &shared)).unwrap();
    let far = "echo \"hostname: $(hostname)\"; echo \"pids: $(ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' ')\"";
    store.create(pod("far", "n-1", far, json!([]), &shared)).unwrap();
    wait_phase(&store, "victim", &["Running"]).await;
    wait_for("the victim's uid", || std::fs::read_to_string(shared.join("victim-uid")).ok()).await;
    // The long-lived ones only: a `sleep 0.2` of the loop seen once is gone
    // by the end for its own reasons, not the attacker's.
    let first = pids_of("victim");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let victim_pids: Vec<i32> = pids_of("victim").into_iter().filter(|p| first.contains(p)).collect();
    assert!(victim_pids.len() >= 3, "init, PID 1 and the shell at least: {victim_pids:?}");

    let env = json!([{ "name": "DATA", "value": data }, { "name": "VICTIM_PIDS",
        "value": victim_pids.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ") }]);
    store.create(pod("attacker", "n-0", ATTACKER, env, &shared)).unwrap();
    let attacker = wait_phase(&store, "attacker", &["Succeeded", "Failed"]).await;
    let log = log_of(&attacker);
    assert_eq!(attacker["status"]["phase"], "Succeeded", "{log}");
    assert!(!log.contains("BREACH"), "{log}");
    for what in ["token", "store", "list-victim", "read-victim", "list-far", "write-usr", "write-etc"] {
        assert!(log.contains(&format!("OK {what}\n")), "{what} not attempted: {log}");
    }
    for p in &victim_pids {
        assert!(log.contains(&format!("OK kill-{p}\n")), "{log}");
        assert!(alive(*p), "victim process {p} died");
    }
    assert!(log.contains("hostname: attacker\n"), "{log}");
    // The data dir shows nothing: the pod sees its sandbox elsewhere.
    assert!(log.contains("data-dir: \n") && log.contains("pods-dir: \n"), "{log}");
    assert!(
        log.contains("own: work\n") && log.contains("shared: written\n") && log.contains("tmp: written\n"),
        "{log}"
    );
    assert!(
        !Path::new("/tmp/scratch").exists()
            || std::fs::read_to_string("/tmp/scratch").unwrap_or_default() != "scratch\n"
    );
    // Only its own processes: PID 1 (the init), the shell and what it runs.
    let pids_line = log.lines().find_map(|l| l.strip_prefix("pids: ")).unwrap_or_default();
    let pids: Vec<i32> = pids_line.split_whitespace().filter_map(|p| p.parse().ok()).collect();
    assert!(pids.contains(&1) && pids.len() <= 6, "{pids_line}");
    assert!(pids.iter().all(|p| !victim_pids.contains(p) || *p < 10), "{pids_line}");
    let commands = log.lines().find_map(|l| l.strip_prefix("commands: ")).unwrap_or_default();
    assert!(!commands.contains("sleep"), "the victim's sleep is visible: {commands}");
    let uid: u32 = log.lines().find_map(|l| l.strip_prefix("uid: ")).and_then(|u| u.parse().ok()).unwrap_or(0);
    let victim_uid: u32 = std::fs::read_to_string(shared.join("victim-uid")).unwrap().trim().parse().unwrap();
    assert!(uid >= 200_000 && victim_uid >= 200_000 && uid != victim_uid, "{uid} {victim_uid}");
    assert_eq!(std::fs::read_to_string(shared.join("attacker")).unwrap(), "attacker\n");
    assert!(!Path::new("/usr/ringleader-breach").exists() && !Path::new("/etc/ringleader-breach").exists());

    let far = wait_phase(&store, "far", &["Succeeded", "Failed"]).await;
    let far_log = log_of(&far);
    assert_eq!(far["status"]["phase"], "Succeeded", "{far_log}");
    assert!(far_log.contains("hostname: far\n"), "{far_log}");
    assert_eq!(get(&store, "victim").unwrap()["status"]["phase"], "Running");
    agent.stop().await.unwrap();
    for p in &victim_pids {
        wait_for("the victim's processes to end with the agent", || (!alive(*p)).then_some(())).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_deletion_and_exit_codes_pass_through_the_sandbox() {
    if !is_root() {
        eprintln!("skipped: pod sandboxes need root (namespaces, mounts, per-pod uids); this test runs as uid != 0");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let store = Store::open(&data).unwrap();
    let mut cfg =
        AgentConfig::new(&data, VirtualNode::numbered("n", "hgx-h100-8", 1, 1)).with_isolation(Isolation::Required);
    cfg.flush_interval = Duration::from_millis(10);
    cfg.init_program = Some(PathBuf::from(env!("CARGO_BIN_EXE_ringleader-pod-init")));
    let agent = ringleader_agent::start(store.clone(), cfg).await.unwrap();
    let shared = tmp.path().join("unused");
    std::fs::create_dir_all(&shared).unwrap();

    store.create(pod("code", "n-0", "echo out; echo err >&2; exit 3", json!([]), &shared)).unwrap();
    let p = wait_phase(&store, "code", &["Failed"]).await;
    assert_eq!(p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 3);
    assert_eq!(log_of(&p), "out\nerr\n");

    store.create(pod("killed", "n-0", "kill -9 $$$$", json!([]), &shared)).unwrap();
    let p = wait_phase(&store, "killed", &["Failed"]).await;
    let t = &p["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(t["exitCode"], 137, "{t}");
    assert!(t["message"].as_str().unwrap_or_default().contains("signal 9"), "{t}");

    // A plain `sleep` (no handler) still ends on SIGTERM: PID 1 forwards it.
    store.create(pod("sleeper", "n-0", "sleep 30 & wait", json!([]), &shared)).unwrap();
    let p = wait_phase(&store, "sleeper", &["Running"]).await;
    wait_for("the sleep", || (pids_of("sleeper").len() >= 4).then_some(())).await;
    let t0 = Instant::now();
    let patch =
        json!({ "metadata": { "deletionTimestamp": "2030-01-01T00:00:00Z", "deletionGracePeriodSeconds": 20 } });
    store.patch(&pod_key("sleeper"), &patch, None).unwrap();
    wait_for("the pod object to go", || get(&store, "sleeper").is_none().then_some(())).await;
    assert!(t0.elapsed() < Duration::from_secs(10), "SIGTERM did not end it: {:?}", t0.elapsed());
    let pgid: i32 = p["metadata"]["annotations"]["ringleader.io/pid"].as_str().unwrap().parse().unwrap();
    assert!(pids_of("sleeper").is_empty() && !alive(pgid));

    let mut missing = pod("missing", "n-0", "x", json!([]), &shared);
    missing["spec"]["containers"][0]["command"] = json!(["/no/such/program", "x"]);
    store.create(missing).unwrap();
    let p = wait_phase(&store, "missing", &["Failed"]).await;
    assert_eq!(p["status"]["reason"], "StartError", "{p}");
    agent.stop().await.unwrap();
}

/// What a pod sees of its sandbox and of the agent's programs when both lie
/// under directories only root may enter (a checkout and data dir in `/root`).
const CLOSED_IN: &str = r#"
echo "home: $HOME"
echo "cwd: $(pwd)"
echo "path: $PATH"
echo "config: $(cat "$CFG")"
echo "hosts: $(test -r "$RINGLEADER_HOSTS" && echo readable)"
echo "tool: $(rl-hello)"
echo "own: $(echo mine > "$HOME/own" && cat "$HOME/own")"
echo "run: $(ls -A /run | tr '
' ' ')"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_reach_their_sandbox_and_the_agents_programs_under_closed_directories() {
    if !is_root() {
        eprintln!("skipped: pod sandboxes need root (namespaces, mounts, per-pod uids); this test runs as uid != 0");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let closed = tmp.path().join("root");
    let (data, programs) = (closed.join("data"), closed.join("checkout/bin"));
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&programs).unwrap();
    std::fs::write(programs.join("rl-hello"), "#!/bin/sh\necho hello from the agent programs\n").unwrap();
    std::fs::set_permissions(programs.join("rl-hello"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    let store = Store::open(&data).unwrap();
    let mut cfg =
        AgentConfig::new(&data, VirtualNode::numbered("n", "hgx-h100-8", 1, 1)).with_isolation(Isolation::Required);
    cfg.flush_interval = Duration::from_millis(10);
    cfg.init_program = Some(PathBuf::from(env!("CARGO_BIN_EXE_ringleader-pod-init")));
    cfg.program_dir = Some(programs.clone());
    cfg.path_env = "/usr/bin:/bin".to_string();
    let agent = ringleader_agent::start(store.clone(), cfg).await.unwrap();

    let mut p = pod(
        "closed",
        "n-0",
        CLOSED_IN,
        json!([{ "name": "CFG", "value": "/etc/job/config.json" }]),
        &tmp.path().join("unused"),
    );
    p["metadata"]["annotations"]["ringleader.io/files"] =
        json!(json!({ "/etc/job/config.json": "{\"rank\":0}" }).to_string());
    p["spec"]["containers"][0]["volumeMounts"] = json!([]);
    p["spec"]["volumes"] = json!([]);
    store.create(p).unwrap();
    let p = wait_phase(&store, "closed", &["Succeeded", "Failed"]).await;
    let log = log_of(&p);
    assert_eq!(p["status"]["phase"], "Succeeded", "{log}");
    for line in [
        "home: /run/ringleader/pod\n",
        "cwd: /run/ringleader/pod\n",
        "path: /run/ringleader/bin:/usr/bin:/bin\n",
        "config: {\"rank\":0}\n",
        "hosts: readable\n",
        "tool: hello from the agent programs\n",
        "own: mine\n",
        "run: ringleader \n",
    ] {
        assert!(log.contains(line), "no {line:?} in:\n{log}");
    }
    // The agent wrote at the host path; the pod's file is there too.
    let sandbox = data.join("nodes/n-0/pods/ns_closed");
    assert_eq!(std::fs::read_to_string(sandbox.join("own")).unwrap(), "mine\n");
    agent.stop().await.unwrap();
}

#[tokio::test]
async fn required_sandboxes_that_cannot_work_stop_the_start() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let store = Store::open(&data).unwrap();
    let mut cfg =
        AgentConfig::new(&data, VirtualNode::numbered("n", "hgx-h100-8", 1, 1)).with_isolation(Isolation::Required);
    // `true` is no pod init (and without root nothing is).
    cfg.init_program = Some(PathBuf::from("/bin/true"));
    let err = ringleader_agent::start(store.clone(), cfg.clone()).await.err().map(|e| e.to_string());
    let err = err.unwrap_or_default();
    assert!(err.contains("--unsafe-process-runtime") && err.contains("sandboxes are not available"), "{err}");
    cfg.isolation = Isolation::Auto;
    let agent = ringleader_agent::start(store.clone(), cfg).await.unwrap();
    agent.stop().await.unwrap();
}
