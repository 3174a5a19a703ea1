//! Stock kubectl and identities: impersonation, `auth can-i --list`, `auth
//! whoami`, `/version/`, and the pod subresources the runtime cannot serve
//! yet (`contract/kubectl_auth.sh` against a real `ringleader up`). Skipped
//! with a note without kubectl on the PATH unless
//! `RINGLEADER_REQUIRE_KUBECTL=1` (CI), where that is a failure.

mod common;

use common::{cluster_yaml, repo, Plane};
use std::process::Command;

#[test]
fn stock_kubectl_impersonates_lists_rules_and_names_the_caller() {
    if !common::kubectl_or_skip("the kubectl auth contract test") {
        return;
    }
    let p = Plane::start(&cluster_yaml(33, &[("gpu-1", "hgx-h100-8")]), &[]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = Command::new("bash")
        .arg(repo().join("crates/cli/tests/contract/kubectl_auth.sh"))
        .env("KUBECONFIG", p.data_dir().join("kubeconfig"))
        .env("RINGLEADER", env!("CARGO_BIN_EXE_ringleader"))
        .env("TMPDIR", tmp.path())
        .env("HOME", tmp.path())
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kubectl auth contract failed\n--- steps ---\n{stdout}\n--- failure ---\n{stderr}");
    assert!(stdout.contains("kubectl auth contract: all steps passed"), "{stdout}");
}
