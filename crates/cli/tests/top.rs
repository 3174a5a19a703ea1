//! `kubectl top pods|nodes` against `ringleader up`: a pod that burns CPU
//! and holds ~50 MiB shows up in `metrics.k8s.io/v1beta1` with a non-zero
//! CPU rate and at least 40 MiB, read as JSON through the API and through
//! the stock kubectl on this machine (skipped without kubectl unless
//! `RINGLEADER_REQUIRE_KUBECTL=1`).

mod common;

use common::{cluster_yaml, Plane};
use ringleader_observability::resource_metrics::{NODE_METRICS, POD_METRICS};
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

const POD: &str = "burner-master-0";

/// `tail` holds its whole input (one 50 MiB line) while `sleep` never reads
/// it; the loop burns CPU for at most two minutes (the test ends it sooner).
const SCRIPT: &str = "(head -c 50M /dev/zero | tail | sleep 600) & \
    end=$(( $(date +%s) + 120 )); while [ $(date +%s) -lt $end ]; do :; done; wait";

fn job() -> String {
    format!(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: burner, namespace: default}}\nspec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      restartPolicy: Never\n      template:\n        spec:\n          containers:\n          - name: pytorch\n            image: x\n            command: [\"/bin/sh\", \"-c\", {SCRIPT:?}]\n            resources:\n              requests: {{nvidia.com/gpu: 1}}\n              limits: {{nvidia.com/gpu: 1}}\n"
    )
}

/// (nanocores, bytes) of a `usage` object.
fn usage(u: &Value) -> (u64, u64) {
    let cpu = u["cpu"].as_str().and_then(|c| c.strip_suffix('n')).and_then(|c| c.parse().ok()).unwrap_or(0);
    let memory = u["memory"].as_str().and_then(|m| m.parse().ok()).unwrap_or(0);
    (cpu, memory)
}

fn pod_usage(p: &Plane) -> Option<(u64, u64)> {
    let m = p.rt.block_on(p.client.get(&POD_METRICS, "default", POD)).ok()?;
    Some(usage(&m["containers"][0]["usage"]))
}

fn kubectl(p: &Plane, home: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", p.data_dir().join("kubeconfig"))
        .env("HOME", home)
        .output()
        .expect("kubectl");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// kubectl's `NAME CPU(cores) MEMORY(bytes)` row of `name`: (millicores, MiB).
fn top_row(text: &str, name: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.split_whitespace().next() == Some(name))?;
    let cols: Vec<&str> = line.split_whitespace().collect();
    let cpu = cols.get(1)?.strip_suffix('m')?.parse().ok()?;
    let mem_col = cols.iter().skip(2).find(|c| c.ends_with("Mi"))?;
    Some((cpu, mem_col.strip_suffix("Mi")?.parse().ok()?))
}

#[test]
fn kubectl_top_shows_a_busy_pods_cpu_and_memory() {
    let p = Plane::start(&cluster_yaml(47, &[("gpu-1", "hgx-h100-8")]), &[]);
    p.apply(&job()).expect("apply");
    p.wait_for(60, "the pod's usage in metrics.k8s.io", |p| {
        pod_usage(p).is_some_and(|(cpu, memory)| cpu > 0 && memory >= 40 << 20)
    });
    let (cpu, memory) = pod_usage(&p).unwrap_or_default();
    assert!(cpu > 0 && memory >= 40 << 20, "cpu {cpu}n memory {memory}");

    let list = p.rt.block_on(p.client.list(&POD_METRICS, Some("default"), None)).expect("pod metrics list");
    assert!(list.items.iter().any(|m| m["metadata"]["name"] == POD), "{:?}", list.items);
    p.wait_for(30, "the node's usage in metrics.k8s.io", |p| {
        p.rt.block_on(p.client.get(&NODE_METRICS, "", "gpu-1")).is_ok_and(|n| usage(&n["usage"]).1 >= 40 << 20)
    });

    if !common::kubectl_or_skip("the kubectl top part") {
        return;
    }
    let home = tempfile::tempdir().expect("tempdir");
    let deadline = Instant::now() + Duration::from_secs(30);
    let (pods, nodes) = loop {
        let pods = kubectl(&p, home.path(), &["top", "pods", "-n", "default"]);
        let nodes = kubectl(&p, home.path(), &["top", "nodes"]);
        let pod_row = top_row(&pods.1, POD);
        let node_row = top_row(&nodes.1, "gpu-1");
        let busy = |r: Option<(u64, u64)>| r.is_some_and(|(cpu, mem)| cpu > 0 && mem >= 40);
        if pods.0 && nodes.0 && busy(pod_row) && busy(node_row) {
            break (pods.1, nodes.1);
        }
        assert!(Instant::now() < deadline, "kubectl top:\n{}\n{}", pods.1, nodes.1);
        std::thread::sleep(Duration::from_millis(500));
    };
    eprintln!("{pods}{nodes}");
}
