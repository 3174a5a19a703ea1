//! vNPUs under `ringleader up`: a static vNPU pod gets the identity
//! MindCluster's device plugin gives it (`huawei.com/Ascend310P-2c:
//! Ascend310P-2c-<vNPU ID>-<chip>`, its ID in `ASCEND_VISIBLE_DEVICES`,
//! `ASCEND_RUNTIME_OPTIONS=VIRTUAL`).

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
