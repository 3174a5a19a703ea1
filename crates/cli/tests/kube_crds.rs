//! `ringleader crds` against a real kube-apiserver (issue 14's test
//! environment, `scripts/k8s-env.sh`): stock `kubectl apply` installs every
//! CRD, the apiserver marks each Established and none NonStructuralSchema,
//! and every bundled example of those kinds passes `kubectl apply
//! --dry-run=server` with strict field validation, while a wrongly typed one
//! is refused. Gated like `kube_apiserver.rs`: without the cached binaries
//! (or kubectl) it says SKIPPED and passes, unless `RINGLEADER_REQUIRE_K8S=1`.

#[path = "../../kube/tests/k8s_env/mod.rs"]
mod k8s_env;

use k8s_env::{repo, run_bounded, Env};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The kinds `ringleader crds` defines, by `apiVersion` and `kind`.
const CRD_KINDS: &[(&str, &str)] = &[
    ("mindxdl.gitee.com/v1", "AscendJob"),
    ("kubeflow.org/v1", "PyTorchJob"),
    ("kubeflow.org/v1", "TFJob"),
    ("kubeflow.org/v2beta1", "MPIJob"),
    ("batch.volcano.sh/v1alpha1", "Job"),
    ("scheduling.volcano.sh/v1beta1", "Queue"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"),
];

fn crd_documents(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut items = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&text) {
        let value: Value = serde::Deserialize::deserialize(doc).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let key = (value["apiVersion"].as_str().unwrap_or(""), value["kind"].as_str().unwrap_or(""));
        if CRD_KINDS.contains(&key) {
            items.push(value);
        }
    }
    (!items.is_empty()).then(|| serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string())
}

#[test]
fn crds_install_and_the_examples_pass_server_side_validation() {
    let Some(env) = Env::start("crds_install_and_the_examples_pass_server_side_validation") else { return };
    let crds_file = env.scratch.path().join("crds.yaml");
    let (ok, crds) =
        run_bounded(env!("CARGO_BIN_EXE_ringleader"), &["crds"], Duration::from_secs(30), env.scratch.path());
    assert!(ok, "ringleader crds failed:\n{crds}");
    std::fs::write(&crds_file, &crds).expect("write crds.yaml");
    let crds_file = crds_file.to_string_lossy().into_owned();
    // Plain client-side apply: strict field validation of the CRD objects
    // themselves, and the last-applied annotation must fit.
    env.kubectl(&["apply", "-f", &crds_file]);
    env.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd",
        "-l",
        "app.kubernetes.io/managed-by=ringleader",
        "--timeout=60s",
    ]);
    let names = env.kubectl(&["get", "crd", "-l", "app.kubernetes.io/managed-by=ringleader", "-o", "name"]);
    assert_eq!(names.lines().count(), CRD_KINDS.len(), "{names}");
    let non_structural = env.kubectl(&[
        "get",
        "crd",
        "-o",
        r#"jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="NonStructuralSchema")].message}{"\n"}{end}"#,
    ]);
    for line in non_structural.lines() {
        assert!(line.ends_with('='), "NonStructuralSchema: {line}");
    }
    // Applying again changes nothing: what the apiserver stored is what we sent.
    let again = env.kubectl(&["apply", "-f", &crds_file]);
    assert!(again.lines().all(|l| l.ends_with("unchanged")), "{again}");

    // Upstream's short names and scope are served.
    env.kubectl(&["get", "vcjob,pg", "-A"]);
    env.kubectl(&["get", "q"]);

    for ns in ["mindie", "vcjob"] {
        env.kubectl(&["create", "namespace", ns]);
    }
    let mut files: Vec<PathBuf> = ["examples", "examples/demo"]
        .iter()
        .flat_map(|d| {
            std::fs::read_dir(repo().join(d)).expect("read examples").filter_map(|e| e.ok().map(|e| e.path()))
        })
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut checked = 0;
    for file in &files {
        let Some(docs) = crd_documents(file) else { continue };
        let only = env.scratch.path().join("example.json");
        std::fs::write(&only, docs).expect("write example");
        let only = only.to_string_lossy().into_owned();
        let (ok, out) = env.try_kubectl(&["apply", "--dry-run=server", "--validate=strict", "-f", &only]);
        assert!(ok, "{}: server-side dry run failed:\n{out}", file.display());
        checked += out.lines().count();
    }
    eprintln!("{checked} example objects passed the server-side dry run");
    assert!(checked >= CRD_KINDS.len() - 1, "only {checked} objects checked");

    let wrong = repo().join("crates/api/tests/fixtures/invalid/wrong-type.yaml").to_string_lossy().into_owned();
    let (ok, out) = env.try_kubectl(&["apply", "--dry-run=server", "-f", &wrong]);
    assert!(!ok && out.contains("spec.tfReplicaSpecs.Worker.replicas"), "a string replicas is refused:\n{out}");
    drop(env);
}
