//! The contract with stock kubectl: `contract/kubectl.sh` runs the kubectl on
//! this machine against a real `ringleader up`, with only the kubeconfig that
//! `up` wrote, over TLS. Without kubectl on the PATH the test says so and
//! passes as skipped, unless `RINGLEADER_REQUIRE_KUBECTL=1` (CI sets it: the
//! machine image has kubectl), where that is a failure.

mod common;

use common::{cluster_yaml, repo, Plane};
use std::process::Command;

#[test]
fn stock_kubectl_drives_the_cluster() {
    if !common::kubectl_or_skip("the kubectl contract test") {
        return;
    }
    let p = Plane::start(&cluster_yaml(31, &[("gpu-1", "hgx-h100-8"), ("npu-1", "atlas-800-910")]), &[]);
    let kubeconfig = p.data_dir().join("kubeconfig");
    assert!(kubeconfig.is_file(), "`up` writes {}", kubeconfig.display());
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = Command::new("bash")
        .arg(repo().join("crates/cli/tests/contract/kubectl.sh"))
        .env("KUBECONFIG", &kubeconfig)
        .env("EXAMPLES", repo().join("examples"))
        .env("NODE_GPU", "gpu-1")
        .env("RINGLEADER", env!("CARGO_BIN_EXE_ringleader"))
        .env("TMPDIR", tmp.path())
        // kubectl's cache of discovery and OpenAPI stays inside the test's directory.
        .env("HOME", tmp.path())
        .env_remove("KUBECTL_EXTERNAL_DIFF")
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kubectl contract failed\n--- steps ---\n{stdout}\n--- failure ---\n{stderr}");
    assert!(stdout.contains("kubectl contract: all steps passed"), "{stdout}");
}

/// `contract/seed_steps.sh`: seed 000's and seed 002's first steps, word for
/// word, with the seeds' jobs (their commands made runnable on this machine's
/// process runtime: the vendor images' scripts are not here).
#[test]
fn the_seeds_first_steps_word_for_word() {
    if !common::kubectl_or_skip("the seed steps test") {
        return;
    }
    // Two machines as MindCluster and ACK find them: no host-arch label yet
    // (MindCluster's install sets it), no topology opt-in yet (seed 002's step).
    let cluster = "apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {name: npu-1}\n\
         spec: {profile: atlas-800t-a2, address: 127.0.74.1}\n---\n\
         apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {name: gpu-1, labels: {gpu-model: h100}}\n\
         spec: {profile: hgx-h100-8, address: 127.0.74.2}\n---\n\
         apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 1}\n";
    let p = Plane::start(cluster, &[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let jobs = tmp.path().join("jobs");
    std::fs::create_dir_all(&jobs).expect("jobs dir");
    let vcjob: String = common::example("examples/vcjob-rings-config.yaml")
        .lines()
        .map(|l| if l.trim_start().starts_with("- \"cd /job/code/scripts") { "          - \"sleep 600\"" } else { l })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(vcjob.contains("- \"sleep 600\"") && vcjob.contains("namespace: vcjob"));
    std::fs::write(jobs.join("a800_pytorch_vcjob.yaml"), vcjob).expect("write");
    // Seed 002's PyTorchJob names no namespace (the example's `default` is ours).
    let ack = common::example("examples/pytorchjob-ack-gpu-topology.yaml")
        .replace("  namespace: default\n", "")
        .replace("command:\n              - python\n", "command: [sleep, \"600\"]\n")
        .replace("              args: [\"/opt/mnist/src/mnist.py\", \"--backend\", \"nccl\"]\n", "");
    assert!(!ack.contains("namespace:") && ack.matches("command: [sleep, \"600\"]").count() == 2, "{ack}");
    std::fs::write(jobs.join("pytorch-dist-nccl.yaml"), ack).expect("write");
    let out = Command::new("bash")
        .arg(repo().join("crates/cli/tests/contract/seed_steps.sh"))
        .env("KUBECONFIG", p.data_dir().join("kubeconfig"))
        .env("JOBS", &jobs)
        .env("NODE_NPU", "npu-1")
        .env("NODE_GPU", "gpu-1")
        .env("TMPDIR", tmp.path())
        .env("HOME", tmp.path())
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "seed steps failed\n--- steps ---\n{stdout}\n--- failure ---\n{stderr}");
    assert!(stdout.contains("seed steps: all steps passed"), "{stdout}");
}
