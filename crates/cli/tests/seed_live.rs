//! Issue 18's live features under a real `ringleader up` (the rules have
//! plan and manager tests of their own): GPU memory shares run side by side
//! on one card, the device-plugin handshake annotations reach bound pods, a
//! child queue never reclaims its parent's job, and an elastic job shrinks
//! when a chip fails while the spare node is busy — never left with one pod
//! bound but unreleased beside a pending peer.

mod common;

use common::Plane;
use serde_json::Value;
use std::collections::BTreeSet;

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn running(plane: &Plane, prefix: &str) -> Vec<Value> {
    plane
        .list("pods")
        .into_iter()
        .filter(|p| s(p, "/metadata/name").starts_with(prefix) && s(p, "/status/phase") == "Running")
        .collect()
}

/// A Volcano job of `replicas` × `chips` Ascend 910 chips in `queue`;
/// elastic down to `min` when given.
fn vcjob(name: &str, queue: &str, replicas: u32, chips: u32, min: Option<u32>) -> String {
    let (labels, annotations, retry) = match min {
        Some(m) => (
            "{ring-controller.atlas: ascend-910, fault-scheduling: grace, elastic-scheduling: \"on\"}".to_string(),
            format!("{{minReplicas: \"{m}\"}}"),
            0,
        ),
        None => ("{ring-controller.atlas: ascend-910}".to_string(), "{}".to_string(), 3),
    };
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {name}, namespace: default, labels: {labels}, annotations: {annotations}}}\n\
         spec:\n  minAvailable: 1\n  schedulerName: volcano\n  queue: {queue}\n  maxRetry: {retry}\n  tasks:\n  - name: worker\n    replicas: {replicas}\n\
         \x20   template:\n      metadata: {{labels: {{ring-controller.atlas: ascend-910}}}}\n      spec:\n        restartPolicy: Never\n\
         \x20       containers:\n        - name: c\n          image: mindspore\n          command: [\"sleep\", \"600\"]\n\
         \x20         resources: {{requests: {{huawei.com/Ascend910: {chips}}}, limits: {{huawei.com/Ascend910: {chips}}}}}\n"
    )
}

fn events(plane: &Plane, reason: &str) -> Vec<Value> {
    plane.list("events").into_iter().filter(|e| s(e, "/reason") == reason).collect()
}

#[test]
fn gpu_memory_shares_run_side_by_side_on_one_card() {
    let plane = Plane::start(&common::cluster_yaml(82, &[("rtx", "pcie-4090-8")]), &[]);
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ack, labels: {app: ack}}\n\
                      spec:\n  replicas: 2\n  selector: {matchLabels: {app: ack}}\n  template:\n    metadata: {labels: {app: ack}}\n\
                      \x20   spec:\n      containers:\n      - name: infer\n        image: infer:1\n        command: [\"sleep\", \"600\"]\n\
                      \x20       resources: {limits: {aliyun.com/gpu-mem: 10}}\n";
    plane.apply(deployment).expect("apply");
    plane.wait_for(60, "both shares running", |p| running(p, "ack-").len() == 2);
    let pods = running(&plane, "ack-");
    // 10 GiB + 10 GiB of a 24 GiB RTX 4090: best fit puts both on one card.
    let cards: BTreeSet<&str> = pods.iter().map(|p| s(p, "/metadata/annotations/ALIYUN_COM_GPU_MEM_IDX")).collect();
    assert_eq!(cards.len(), 1, "one card holds both shares: {pods:?}");
    for p in &pods {
        assert_eq!(s(p, "/metadata/annotations/ALIYUN_COM_GPU_MEM_POD"), "10");
        assert_eq!(s(p, "/metadata/annotations/ALIYUN_COM_GPU_MEM_DEV"), "24");
    }
    assert!(
        events(&plane, "DeviceConflict").is_empty()
            && plane.list("pods").iter().all(|p| s(p, "/status/reason") != "DeviceConflict")
    );
}

#[test]
fn bound_npu_pods_carry_the_device_plugin_handshake() {
    let plane = Plane::start(&common::cluster_yaml(83, &[("a1", "atlas-800-910")]), &[]);
    plane.apply(&vcjob("hs", "default", 1, 4, None)).expect("apply");
    plane.wait_for(60, "the pod running", |p| running(p, "hs-").len() == 1);
    let pod = &running(&plane, "hs-")[0];
    let chips = s(pod, "/metadata/annotations/huawei.com~1Ascend910");
    assert_eq!(chips.split(',').count(), 4, "{pod}");
    assert_eq!(s(pod, "/metadata/annotations/huawei.com~1AscendReal"), chips, "{pod}");
    assert_eq!(s(pod, "/metadata/annotations/huawei.com~1kltDev"), chips, "{pod}");
    let config: Value =
        serde_json::from_str(s(pod, "/metadata/annotations/ascend.kubectl.kubernetes.io~1ascend-910-configuration"))
            .unwrap_or(Value::Null);
    assert_eq!(config["devices"].as_array().map(Vec::len), Some(4), "{pod}");
    assert!(!s(pod, "/metadata/annotations/predicate-time").is_empty());
}

#[test]
fn a_child_queue_never_reclaims_its_parent_s_job() {
    let plane = Plane::start(&common::cluster_yaml(84, &[("n1", "atlas-800-910"), ("n2", "atlas-800-910")]), &[]);
    plane
        .apply(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: team-a}\nspec: {weight: 1, reclaimable: true}\n---\n\
             apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: team-a-child}\nspec: {weight: 1, parent: team-a}\n",
        )
        .expect("queues");
    plane.apply(&vcjob("parent-1", "team-a", 1, 8, None)).expect("apply");
    plane.apply(&vcjob("parent-2", "team-a", 1, 8, None)).expect("apply");
    plane.wait_for(60, "the parent queue's jobs running", |p| running(p, "parent-").len() == 2);
    let before: BTreeSet<String> =
        running(&plane, "parent-").iter().map(|p| s(p, "/metadata/uid").to_string()).collect();
    plane.apply(&vcjob("child", "team-a-child", 1, 8, None)).expect("apply");
    plane.wait_for(30, "the child job's FailedScheduling", |p| {
        events(p, "FailedScheduling").iter().any(|e| s(e, "/involvedObject/name") == "child")
    });
    std::thread::sleep(std::time::Duration::from_secs(2));
    let after: BTreeSet<String> =
        running(&plane, "parent-").iter().map(|p| s(p, "/metadata/uid").to_string()).collect();
    assert_eq!(before, after, "the parent's pods run on, untouched");
    assert!(events(&plane, "Evicted").is_empty(), "nothing evicted: {:?}", events(&plane, "Evicted"));
    assert!(running(&plane, "child-").is_empty());
}

#[test]
fn an_elastic_job_shrinks_when_a_chip_fails_and_the_spare_node_is_busy() {
    let cluster =
        common::cluster_yaml(85, &[("n1", "atlas-800-910"), ("n2", "atlas-800-910"), ("n3", "atlas-800-910")]);
    let plane = Plane::start(&cluster, &[]);
    plane.apply(&vcjob("elastic", "default", 2, 8, Some(1))).expect("apply");
    plane.wait_for(60, "the elastic job's two pods running", |p| running(p, "elastic-").len() == 2);
    let nodes: BTreeSet<String> =
        running(&plane, "elastic-").iter().map(|p| s(p, "/spec/nodeName").to_string()).collect();
    let spare = ["n1", "n2", "n3"].into_iter().find(|n| !nodes.contains(*n)).expect("a spare node").to_string();
    // Another job takes the spare node.
    let busy = vcjob("busy", "default", 1, 8, None).replace(
        "        containers:",
        &format!("        nodeSelector: {{kubernetes.io/hostname: {spare}}}\n        containers:"),
    );
    plane.apply(&busy).expect("apply");
    plane.wait_for(60, "the spare node busy", |p| running(p, "busy-").len() == 1);
    let victim = nodes.iter().next().expect("a node of the job").clone();
    plane.ctl(&["node", "fault", &victim, "--device", "0", "--kind", "unhealthy"]);
    plane.wait_for(90, "the job shrunk to one pod, running", |p| running(p, "elastic-").len() == 1);
    std::thread::sleep(std::time::Duration::from_secs(2));
    let reasons: Vec<String> = plane
        .list("events")
        .iter()
        .filter(|e| s(e, "/involvedObject/name") == "elastic")
        .map(|e| format!("{}: {}", s(e, "/reason"), s(e, "/message")))
        .collect();
    // Rescheduled after the fault, sized from the capacity left: one pod.
    assert!(reasons.iter().any(|r| r.starts_with("FaultRescheduling:")), "{reasons:#?}");
    assert!(reasons.iter().any(|r| r == "Running: 1 of 1 pods started"), "{reasons:#?}");
    // Never one pod bound but waiting for a release, holding chips, beside a pending peer.
    let pods: Vec<Value> =
        plane.list("pods").into_iter().filter(|p| s(p, "/metadata/name").starts_with("elastic-")).collect();
    let stuck: Vec<&Value> = pods
        .iter()
        .filter(|p| !s(p, "/spec/nodeName").is_empty() && s(p, "/metadata/annotations/ringleader.io~1start") != "true")
        .filter(|p| !matches!(s(p, "/status/phase"), "Succeeded" | "Failed"))
        .collect();
    assert!(stuck.is_empty(), "no pod bound and unreleased: {stuck:?}");
    let on_victim = running(&plane, "elastic-").iter().any(|p| s(p, "/spec/nodeName") == victim);
    assert!(!on_victim, "the shrunk job left the node with the broken chip");
}

#[test]
fn ack_topology_pods_go_only_to_nodes_that_opted_in() {
    // g1 opted in to ACK's topology-aware GPU scheduling; g2 did not, so it
    // publishes no `aliyun.com/gpu`.
    let cluster = common::cluster_yaml(86, &[("g1", "hgx-h100-8"), ("g2", "hgx-h100-8")]).replacen(
        "metadata: {name: g1, labels: {gpu-model: h100}}",
        "metadata: {name: g1, labels: {gpu-model: h100, ack.node.gpu.schedule: topology}}",
        1,
    );
    let plane = Plane::start(&cluster, &[]);
    let job = common::example("examples/pytorchjob-ack-gpu-topology.yaml");
    plane.apply(&job).expect("apply");
    plane.wait_for(60, "both pods bound", |p| {
        let pods = p.list("pods");
        pods.len() == 2 && pods.iter().all(|x| !s(x, "/spec/nodeName").is_empty())
    });
    for p in plane.list("pods") {
        assert_eq!(s(&p, "/spec/nodeName"), "g1", "{}", s(&p, "/metadata/name"));
    }
    // With no node opted in, the job waits, saying why.
    let none = common::cluster_yaml(87, &[("g3", "hgx-h100-8")]);
    let plane = Plane::start(&none, &[]);
    plane.apply(&job).expect("apply");
    plane.wait_for(30, "FailedScheduling naming aliyun.com/gpu", |p| {
        events(p, "FailedScheduling").iter().any(|e| s(e, "/message").contains("aliyun.com/gpu"))
    });
    assert!(plane.list("pods").iter().all(|p| s(p, "/spec/nodeName").is_empty()));
}
