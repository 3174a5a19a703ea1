//! The jobs the benchmarks submit, shaped as users write them: shared by
//! `bench e2e` and `bench kube`.

use serde_json::{json, Value};

/// An AscendJob of `pods` pods (one Master, the rest Workers) in
/// `namespace`, each requesting `chips` of `resource`, shaped as the Ascend
/// operator requires (container `ascend`, port `ascendjob-port`, the
/// `ring-controller.atlas` label).
pub fn ascend_job(name: &str, namespace: &str, pods: usize, chips: u32, resource: &str) -> Value {
    let role = |replicas: usize| {
        json!({
            "replicas": replicas,
            "restartPolicy": "Never",
            "template": {
                "metadata": {"labels": {"ring-controller.atlas": "ascend-910b"}},
                "spec": {"containers": [{
                    "name": "ascend",
                    "image": "bench",
                    "command": ["sleep", "infinity"],
                    "ports": [{"containerPort": 2222, "name": "ascendjob-port"}],
                    "resources": {"limits": {resource: chips}, "requests": {resource: chips}},
                }]},
            },
        })
    };
    let mut specs = json!({"Master": role(1)});
    if pods > 1 {
        specs["Worker"] = role(pods - 1);
    }
    json!({
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"framework": "pytorch", "ring-controller.atlas": "ascend-910b"}},
        "spec": {
            "schedulerName": "volcano",
            "runPolicy": {"schedulingPolicy": {"minAvailable": pods, "queue": "default"}},
            "replicaSpecs": specs,
        },
    })
}
