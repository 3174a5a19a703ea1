//! vNPUs under `ringleader up`: a static vNPU pod gets the identity
//! MindCluster's device plugin gives it (`huawei.com/Ascend310P-2c:
//! Ascend310P-2c-<vNPU ID>-<chip>`, its ID in `ASCEND_VISIBLE_DEVICES`,
//! `ASCEND_RUNTIME_OPTIONS=VIRTUAL`); dynamic vNPU pods bound in separate
//! passes share their chips' AI cores as `ringleader plan` packs them.

mod common;

use common::{cluster_yaml, Plane};
use serde_json::Value;

/// A one-pod Volcano job asking for `resource: 1`-style devices.
fn vcjob(name: &str, resource: &str, count: u32, command: &str) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {name}, namespace: default, labels: {{ring-controller.atlas: ascend-310P}}}}\nspec:\n  minAvailable: 1\n  schedulerName: volcano\n  queue: default\n  tasks:\n  - name: w\n    replicas: 1\n    template:\n      metadata: {{labels: {{ring-controller.atlas: ascend-310P}}, annotations: {{ringleader.io/duration: \"60\"}}}}\n      spec:\n        restartPolicy: Never\n        containers:\n        - name: w\n          image: x\n{command}          resources: {{requests: {{{resource}: {count}}}, limits: {{{resource}: {count}}}}}\n"
    )
}

fn annotation(pod: &Value, key: &str) -> String {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[test]
fn static_vnpu_pod_gets_its_vnpu_id_and_visible_devices() {
    let p = Plane::start(&cluster_yaml(171, &[("i-1", "atlas-inference-310p")]), &[]);
    let script =
        "          command: [\"/bin/sh\", \"-c\", \"echo VIS=$ASCEND_VISIBLE_DEVICES OPT=$ASCEND_RUNTIME_OPTIONS\"]\n";
    let job = vcjob("svnpu", "huawei.com/Ascend310P-2c", 1, script)
        .replace(", annotations: {ringleader.io/duration: \"60\"}", "");
    p.apply(&job).expect("apply");
    p.wait_for(60, "the pod printed its env", |p| p.sandbox_log("svnpu-w-0").contains("VIS="));
    let pod = p.get("pods", "svnpu-w-0").expect("pod");
    // The first vNPU on chip 0: ID 100 + 16 × 0 + slot 0.
    assert_eq!(annotation(&pod, "huawei.com/Ascend310P-2c"), "Ascend310P-2c-100-0");
    assert_eq!(p.sandbox_log("svnpu-w-0").trim(), "VIS=100 OPT=VIRTUAL");
}

/// `huawei.com/npu-core` of each placement `ringleader plan` makes, by pod name.
fn plan_cores(cluster: &std::path::Path, jobs: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["plan", "--cluster"])
        .arg(cluster)
        .arg("-f")
        .arg(jobs)
        .args(["-o", "json", "--now", "1000"])
        .output()
        .expect("run plan");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("plan json");
    v["placements"]
        .as_array()
        .expect("placements")
        .iter()
        .map(|p| {
            let core = p["annotations"]["huawei.com/npu-core"].as_str().unwrap_or_default();
            (p["pod"].as_str().unwrap_or_default().to_string(), core.to_string())
        })
        .collect()
}

#[test]
fn dynamic_vnpu_pods_bound_one_by_one_pack_as_plan_does() {
    let cluster = cluster_yaml(172, &[("i-1", "atlas-inference-310p")]);
    let p = Plane::start(&cluster, &[]);
    let sizes = [("vd-a", 2), ("vd-b", 4), ("vd-c", 1), ("vd-d", 4)];
    let mut all = String::new();
    let mut up = std::collections::BTreeMap::new();
    // Each job is applied once the one before runs: a pass of its own. The
    // pods must stay live (a pod that ends frees its share of the chip).
    let script = "          command: [\"/bin/sh\", \"-c\", \"sleep 60\"]\n";
    for (name, cores) in sizes {
        let job = vcjob(name, "huawei.com/npu-core", cores, script);
        all.push_str(&format!("---\n{job}"));
        p.apply(&job).expect("apply");
        let pod = format!("{name}-w-0");
        p.wait_for(60, &format!("{pod} running"), |p| {
            p.get("pods", &pod).is_some_and(|v| v.pointer("/status/phase").and_then(Value::as_str) == Some("Running"))
        });
        let bound = p.get("pods", &pod).expect("pod");
        up.insert(pod, annotation(&bound, "huawei.com/npu-core"));
    }
    let cluster_file = p.dir.path().join("plan-cluster.yaml");
    let jobs_file = p.dir.path().join("jobs.yaml");
    std::fs::write(&cluster_file, &cluster).expect("cluster file");
    std::fs::write(&jobs_file, &all).expect("jobs file");
    let plan = plan_cores(&cluster_file, &jobs_file);
    assert_eq!(up, plan);
    // Plan packs the first three on chip 0 (2 + 4 + 1 of its 8 AI cores) and the last on chip 1.
    assert_eq!(up.get("vd-d-w-0").map(String::as_str), Some("1-vir04_3c"), "{up:?}");
}
