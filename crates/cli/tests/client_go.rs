//! client-go as Kubernetes' own components run it: `clientgo/main.go` (a
//! SharedInformerFactory on Pods, Nodes and Namespaces, with the protobuf
//! content type kube-controller-manager sets) watches `ringleader up` for
//! 60 s while jobs and namespaces come and go, and must see every change
//! with no watch error and no relist; beside it the Python `kubernetes`
//! client (`python/watch_churn.py`, JSON) lists and watches the same kinds
//! the way an informer does, with the same checks. The Go program is built
//! here with the Go toolchain (client-go from the module proxy, or the
//! module cache that `scripts/k8s-env.sh build` filled); without Go the test
//! says so and passes as skipped, unless `RINGLEADER_REQUIRE_K8S=1` (CI,
//! which has Go). The Python client is the venv the server's contract test
//! makes (`RINGLEADER_REQUIRE_PYTHON=1` in CI).

mod common;
#[path = "../../server/tests/pyenv/mod.rs"]
mod pyenv;

use common::{cluster_yaml, find, repo, Plane};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHURN: usize = 6;

#[test]
fn client_go_in_protobuf_and_the_python_client_in_json_see_every_change_without_relisting() {
    if !Command::new("go").arg("version").output().is_ok_and(|o| o.status.success()) {
        assert!(
            std::env::var("RINGLEADER_REQUIRE_K8S").map_or(true, |v| v != "1"),
            "RINGLEADER_REQUIRE_K8S=1 but go is not on PATH"
        );
        eprintln!("go not found on PATH: the client-go test is SKIPPED");
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let informer = tmp.path().join("informer");
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&informer)
        .arg(".")
        .current_dir(repo().join("crates/cli/tests/clientgo"))
        .output()
        .expect("go build");
    assert!(built.status.success(), "go build: {}", String::from_utf8_lossy(&built.stderr));

    let p = Plane::start(&cluster_yaml(76, &[("cg-gpu-1", "hgx-h100-8")]), &[]);
    let ready = tmp.path().join("ready");
    let child = Command::new(&informer)
        .arg("-kubeconfig")
        .arg(p.data_dir().join("kubeconfig"))
        .args(["-seconds", "60", "-ready"])
        .arg(&ready)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("informer");
    // The Python client in JSON, watching the same churn.
    let importable = |bin: &std::path::Path| {
        Command::new(bin.join("python")).args(["-c", "import kubernetes"]).output().is_ok_and(|o| o.status.success())
    };
    let py_ready = tmp.path().join("py-ready");
    let python = match pyenv::venv("python-kubernetes-venv", "kubernetes", importable) {
        Ok(bin) => Some(
            Command::new(bin.join("python"))
                .arg(repo().join("crates/cli/tests/python/watch_churn.py"))
                .arg(p.data_dir().join("kubeconfig"))
                .arg("60")
                .arg(&py_ready)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("python"),
        ),
        Err(why) => {
            assert!(pyenv::skip("the Python client's watch", &why).is_ok(), "{why}");
            None
        }
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready.exists() || (python.is_some() && !py_ready.exists()) {
        assert!(Instant::now() < deadline, "the informers' caches never synced (client-go, Python)");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Churn: a namespace with a job in it, its pod running, then the
    // namespace deleted (the pod stopped and removed, then the namespace).
    let (namespaces, pods) = (find("namespaces"), find("pods"));
    for i in 0..CHURN {
        let ns = format!("cg-{i}");
        let yaml = format!(
            "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\n\
             apiVersion: batch/v1\nkind: Job\nmetadata: {{name: churn, namespace: {ns}}}\n\
             spec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      \
             - name: main\n        image: busybox\n        command: [sleep, \"30\"]\n        \
             resources: {{limits: {{nvidia.com/gpu: 1}}}}\n"
        );
        p.apply(&yaml).unwrap_or_else(|e| panic!("{ns}: {e}"));
        let running = |p: &Plane| {
            p.rt.block_on(p.client.list(pods, Some(&ns), None))
                .is_ok_and(|l| l.items.iter().any(|pod| pod["status"]["phase"] == "Running"))
        };
        p.wait_for(30, &format!("a running pod in {ns}"), running);
        p.rt.block_on(p.client.delete(namespaces, "", &ns, None)).unwrap_or_else(|e| panic!("delete {ns}: {e}"));
    }
    for i in 0..CHURN {
        let ns = format!("cg-{i}");
        p.wait_for(30, &format!("namespace {ns} gone"), |p| p.rt.block_on(p.client.get(namespaces, "", &ns)).is_err());
    }

    if let Some(python) = python {
        let out = python.wait_with_output().expect("python output");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "watch_churn.py: {stderr}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        eprintln!("python client report: {report}");
        assert_eq!(report["errors"], serde_json::json!([]), "{report}");
        let events = |kind: &str, what: &str| report["events"][kind][what].as_u64().unwrap_or_default() as usize;
        for kind in ["pods", "nodes", "namespaces"] {
            assert_eq!(report["lists"][kind], 1, "one list each, no relist: {report}");
        }
        assert!(events("pods", "add") >= CHURN && events("pods", "delete") >= CHURN, "{report}");
        assert!(events("namespaces", "add") >= CHURN && events("namespaces", "delete") >= CHURN, "{report}");
        assert!(events("namespaces", "update") >= CHURN, "each marked Terminating: {report}");
    }
    let out = child.wait_with_output().expect("informer output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "informer: {stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    eprintln!("client-go report: {report}");
    assert_eq!(report["watchErrors"], serde_json::json!([]), "{report}");
    for kind in ["pods", "nodes", "namespaces"] {
        assert_eq!(report["lists"][kind], 1, "one LIST each, no relist loop: {report}");
        assert!(report["watches"][kind].as_u64().is_some_and(|w| w >= 1), "{report}");
    }
    let types = report["contentTypes"].as_object().cloned().unwrap_or_default();
    assert!(
        !types.is_empty() && types.keys().all(|t| t.starts_with("application/vnd.kubernetes.protobuf")),
        "lists and watches answered in protobuf: {report}"
    );
    let events = |kind: &str, what: &str| report["events"][kind][what].as_u64().unwrap_or_default() as usize;
    assert!(events("pods", "add") >= CHURN && events("pods", "delete") >= CHURN, "{report}");
    assert!(events("pods", "update") >= CHURN, "bound, started, running, stopping: {report}");
    // The built-in namespaces at the start, then each made and gone.
    assert!(events("namespaces", "add") >= CHURN + 4 && events("namespaces", "delete") >= CHURN, "{report}");
    assert!(events("namespaces", "update") >= CHURN, "each marked Terminating: {report}");
    assert!(events("nodes", "add") >= 1, "{report}");
}
