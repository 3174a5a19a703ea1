//! The entry points the fuzz targets drive, one per target: each takes raw
//! bytes, feeds them to the parsers that read untrusted text (job documents,
//! selectors, patch bodies, `nvidia-smi`/`npu-smi` output) and must return
//! without panicking whatever the bytes are. The same functions run on
//! stable Rust in `crates/server/tests/fuzz_corpus.rs` (the seed corpus plus
//! proptest inputs), which includes this file by path: CI has no nightly
//! toolchain, and one copy keeps the fuzzed and the tested code identical.

use ringleader_api::document::parse_str;
use ringleader_api::{check_documents, Job};
use ringleader_registry::selector::ObjectSelector;
use ringleader_server::patch::{json_patch, merge_patch, strategic_merge};
use ringleader_topology::parse::npu_smi::{parse_info, profile_from_info};
use ringleader_topology::parse::nvidia_smi::{parse_topo, profile_from_topo};
use ringleader_topology::LinkSpeeds;
use serde_json::{json, Value};

/// A target's entry point.
pub type Entry = fn(&[u8]);

/// Every target, by the name of its `fuzz/fuzz_targets/<name>.rs` and
/// `fuzz/corpus/<name>/` directory.
pub const TARGETS: &[(&str, Entry)] = &[
    ("documents", documents),
    ("selectors", selectors),
    ("patches", patches),
    ("nvidia_smi_topo", nvidia_smi_topo),
    ("npu_smi_info", npu_smi_info),
];

/// Multi-document YAML/JSON as `ringleader validate`, `apply -f` and the
/// bulk-apply route read it: split, typed, validated, and valid jobs
/// normalised into the job model and expanded into pod names.
pub fn documents(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(docs) = parse_str("fuzz", &text) else { return };
    for report in check_documents(&docs) {
        let _ = report.object();
        let Some(resource) = &report.resource else { continue };
        // Only valid jobs are expanded, as the manager does: validation is
        // what bounds the replica counts.
        if let (true, Some(job)) = (report.valid, Job::from_resource(resource)) {
            assert_eq!(job.pod_names().len() as u32, job.total_replicas(), "pod names of {}", report.object());
        }
    }
}

/// A `labelSelector` and a `fieldSelector` (the input's first line and the
/// rest), parsed together and alone, and applied to a pod.
pub fn selectors(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (labels, fields) = text.split_once('\n').unwrap_or((&text, ""));
    let pod = sample_pod();
    for (l, f) in [(Some(labels), Some(fields)), (Some(&*text), None), (None, Some(&*text))] {
        if let Ok(selector) = ObjectSelector::parse(l, f) {
            let _ = selector.is_empty();
            let _ = selector.matches(&pod);
            let _ = selector.matches(&Value::Null);
        }
    }
}

/// A patch body applied in every format the server and the store take, to
/// a pod; a JSON array of two values is also tried as `[target, patch]`.
pub fn patches(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    apply_all(sample_pod(), &value);
    if let Value::Array(pair) = &value {
        if let [target, patch] = pair.as_slice() {
            apply_all(target.clone(), patch);
        }
    }
}

fn apply_all(target: Value, patch: &Value) {
    // The server's object limit (1.5 MiB): the budget is part of what is fuzzed.
    let _ = json_patch(&target, patch, 1_572_864);
    let _ = merge_patch(&target, patch);
    let _ = strategic_merge(&target, patch);
    let mut stored = target;
    ringleader_store::merge_patch(&mut stored, patch);
}

/// `nvidia-smi topo -m` output, parsed and turned into a profile.
pub fn nvidia_smi_topo(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = parse_topo(&text);
    if let Ok(profile) = profile_from_topo("fuzz", &text, LinkSpeeds::default(), "fuzz") {
        let _ = profile.validate();
    }
}

/// `npu-smi info` output, parsed and matched to a built-in Ascend profile.
pub fn npu_smi_info(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(info) = parse_info(&text) {
        for chip in &info.chips {
            let _ = chip.is_healthy();
        }
        if let Ok((profile, _unhealthy)) = profile_from_info(&info) {
            let _ = profile.validate();
        }
    }
}

fn sample_pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p", "namespace": "default",
            "labels": {"app": "x", "tier": "db", "n": "5"},
            "finalizers": ["a"],
        },
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "c", "image": "i", "env": [{"name": "A", "value": "1"}],
                            "ports": [{"containerPort": 80}]}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    })
}
