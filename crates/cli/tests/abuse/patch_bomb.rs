//! Patches that expand: a 1.3 KB JSON patch of `copy` operations doubles a
//! ConfigMap 30 times (2^30 copies of its data if built); merge and
//! strategic patches that carry more than the object limit. Each is refused
//! with 413 before it is built, quickly and in little memory.

use crate::common::{cluster_yaml, Plane};
use crate::requests::{peak_rss, send};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const CM: &str = "/api/v1/namespaces/default/configmaps";

fn configmap(p: &Plane, name: &str) {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                      "data": {"seed": "x".repeat(2000)}});
    let (code, out) = send(p, "POST", CM, "application/json", body.to_string().into_bytes());
    assert_eq!(code, 201, "{out}");
}

#[test]
fn copy_bomb_and_oversized_merges_are_refused_413_quickly_in_little_memory() {
    let p = Plane::start(&cluster_yaml(41, &[("gpu-1", "hgx-h100-8")]), &["--runtime", "simulated"]);
    configmap(&p, "bomb");
    let ops: Vec<Value> =
        (0..30).map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")})).collect();
    let body = serde_json::to_vec(&ops).expect("patch");
    assert!(body.len() < 2000, "the bomb is small: {} bytes", body.len());
    let started = Instant::now();
    let (code, out) = send(&p, "PATCH", &format!("{CM}/bomb"), "application/json-patch+json", body);
    let took = started.elapsed();
    assert_eq!(code, 413, "{out}");
    assert_eq!(out["reason"], "RequestEntityTooLarge", "{out}");
    assert!(took < Duration::from_secs(1), "answered in {took:?}");
    let peak = peak_rss(&p);
    assert!(peak < 200 << 20, "peak RSS {} MB", peak >> 20);

    // Merge and strategic patches adding 2 MB: refused, the object unchanged.
    let big = json!({"data": {"big": "y".repeat(2 << 20)}}).to_string().into_bytes();
    for kind in ["application/merge-patch+json", "application/strategic-merge-patch+json"] {
        let (code, out) = send(&p, "PATCH", &format!("{CM}/bomb"), kind, big.clone());
        assert_eq!(code, 413, "{kind}: {out}");
        assert_eq!(out["reason"], "RequestEntityTooLarge", "{kind}: {out}");
    }
    let stored = p.get("ConfigMap", "bomb").expect("the ConfigMap is still there");
    assert_eq!(stored["data"].as_object().map(|d| d.len()), Some(1), "nothing of the patches was stored");
    // A patch within the budget still applies.
    let ok = json!([{"op": "copy", "from": "/data/seed", "path": "/data/again"}]).to_string().into_bytes();
    let (code, out) = send(&p, "PATCH", &format!("{CM}/bomb"), "application/json-patch+json", ok);
    assert_eq!(code, 200, "{out}");
    assert_eq!(out["data"]["again"].as_str().map(str::len), Some(2000));
}

#[test]
fn json_patch_of_identity_fields_is_invalid() {
    let p = Plane::start(&cluster_yaml(42, &[("gpu-1", "hgx-h100-8")]), &["--runtime", "simulated"]);
    configmap(&p, "named");
    for (path, field) in [
        ("/metadata/name", "metadata.name"),
        ("/kind", "kind"),
        ("/apiVersion", "apiVersion"),
        ("/metadata/namespace", "metadata.namespace"),
        ("/metadata/uid", "metadata.uid"),
    ] {
        let op = json!([{"op": "replace", "path": path, "value": "other"}]).to_string().into_bytes();
        let (code, out) = send(&p, "PATCH", &format!("{CM}/named"), "application/json-patch+json", op);
        assert_eq!(code, 422, "{path}: {out}");
        assert_eq!(out["reason"], "Invalid", "{path}: {out}");
        assert_eq!(out["details"]["causes"][0]["field"], field, "{path}: {out}");
        let message = out["message"].as_str().unwrap_or_default();
        assert!(message.contains("field is immutable"), "{path}: {message}");
    }
    assert!(p.get("ConfigMap", "named").is_some(), "the ConfigMap keeps its name");
}

/// Strategic merge lists merge by key or by value: 100,000 finalizers or
/// containers in one 1.3 MB patch were 5·10^9 comparisons (minutes of a
/// core) when each element was looked up by a scan.
#[test]
fn large_strategic_lists_merge_in_linear_time() {
    let p = Plane::start(&cluster_yaml(46, &[("gpu-1", "hgx-h100-8")]), &["--runtime", "simulated"]);
    configmap(&p, "lists");
    let finalizers: Vec<String> = (0..100_000).map(|i| format!("f{i}")).collect();
    let names: Vec<Value> = (0..60_000).map(|i| json!({"name": format!("c{i}")})).collect();
    for (what, patch) in [
        ("finalizers", json!({"metadata": {"finalizers": finalizers}})),
        ("containers", json!({"spec": {"containers": names}})),
    ] {
        let started = Instant::now();
        let (code, out) = send(
            &p,
            "PATCH",
            &format!("{CM}/lists?dryRun=All"),
            "application/strategic-merge-patch+json",
            patch.to_string().into_bytes(),
        );
        let took = started.elapsed();
        assert!(code < 500, "{what}: {code} {out}");
        // Generous for a debug build on 2 shared cores; the scan took minutes.
        assert!(took < Duration::from_secs(10), "{what}: answered in {took:?}");
    }
}
