//! Dynamic vNPU pods bound in separate scheduling passes pack their chips as
//! one pass placing them all does (issue 18): a pass reads the bound pods'
//! `huawei.com/npu-core: <chip>-<template>` annotations as shares of their
//! chips, so it neither over-fills a chip nor wastes its free AI cores.

use ringleader_manager::cache::Cache;
use ringleader_manager::{pass, ManagerConfig};
use ringleader_store::{Selector, Store};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

const NOW: f64 = 1_795_428_000.0;

/// AI cores per chip of `atlas-inference-310p`, and what each template takes.
const CORES_PER_CHIP: u32 = 8;
fn template_cores(template: &str) -> u32 {
    match template {
        "vir01" => 1,
        "vir02" | "vir02_1c" => 2,
        "vir04" | "vir04_3c" | "vir04_4c_dvpp" | "vir04_3c_ndvpp" => 4,
        other => panic!("unexpected template {other}"),
    }
}

fn node() -> Value {
    json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
           "metadata": {"name": "i-1"},
           "spec": {"profile": "atlas-inference-310p", "address": "127.0.1.9"},
           "status": {"ready": true, "lastHeartbeat": NOW}})
}

fn vcjob(name: &str, cores: u32) -> Value {
    json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": name, "namespace": "default", "labels": {"ring-controller.atlas": "ascend-310P"}},
           "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": "default",
                    "tasks": [{"name": "w", "replicas": 1, "template": {
                        "metadata": {"labels": {"ring-controller.atlas": "ascend-310P"}},
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "w", "image": "x",
                            "resources": {"requests": {"huawei.com/npu-core": cores},
                                          "limits": {"huawei.com/npu-core": cores}}}]}}}]}})
}

/// Each pod's `huawei.com/npu-core` annotation, by pod name.
fn npu_cores(store: &Store) -> Result<BTreeMap<String, String>, Box<dyn std::error::Error>> {
    let pods = store.list(&Selector::kind("v1", "Pod"))?.0;
    Ok(pods
        .into_iter()
        .filter_map(|p| {
            let name = p.object.pointer("/metadata/name")?.as_str()?.to_string();
            let core = p.object.pointer("/metadata/annotations/huawei.com~1npu-core")?.as_str()?.to_string();
            Some((name, core))
        })
        .collect())
}

#[test]
fn vnpu_pods_bound_pass_by_pass_pack_like_one_pass() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path())?;
    store.create(node())?;
    let mut timers = HashMap::new();
    for (k, (name, cores)) in [("a", 2), ("b", 4), ("c", 1), ("d", 4)].into_iter().enumerate() {
        store.create(vcjob(name, cores))?;
        // Two passes: one to make the job's pods, one to bind them.
        for step in 0..2 {
            let mut cache = Cache::default();
            cache.load(store.list(&Selector::all())?.0);
            let now = NOW + (10 * k + step) as f64;
            pass(&store, &mut cache, &ManagerConfig::default(), &mut timers, now)?;
        }
        assert!(npu_cores(&store)?.contains_key(&format!("{name}-w-0")), "{name} not bound: {:?}", npu_cores(&store)?);
    }
    let bound = npu_cores(&store)?;
    // `ringleader plan` places the same four jobs in one pass this way.
    let expected: BTreeMap<String, String> =
        [("a-w-0", "0-vir02_1c"), ("b-w-0", "0-vir04_3c"), ("c-w-0", "0-vir01"), ("d-w-0", "1-vir04_3c")]
            .into_iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect();
    assert_eq!(bound, expected);
    let mut per_chip: BTreeMap<&str, u32> = BTreeMap::new();
    for value in bound.values() {
        let (chip, template) = value.split_once('-').ok_or("annotation without a chip")?;
        *per_chip.entry(chip).or_default() += template_cores(template);
    }
    assert!(per_chip.values().all(|&c| c <= CORES_PER_CHIP), "{per_chip:?}");
    Ok(())
}
