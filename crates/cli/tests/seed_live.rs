//! Issue 18's live features under a real `ringleader up` (the rules have
//! plan and manager tests of their own): GPU memory shares run side by side
//! on one card, the device-plugin handshake annotations reach bound pods, a
//! child queue never reclaims its parent's job, and an elastic job shrinks
//! when a chip fails while the spare node is busy — never left with one pod
//! bound but unreleased beside a pending peer. Issue 25's: the elastic
//! example shrinks to one node and grows back, and pod-level rescheduling
//! moves only the faulty pod, onto a healthy node. And the scheduler's
//! preempt and reclaim actions, live: a higher PriorityClass takes a server
//! from a lower one; a queue reclaims its share from a reclaimable one.

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
    // Issue 25: each device with its `device_ip`, the one the rank table gives it.
    plane.wait_for(30, "the rank table complete", |p| rank_table(p, "default", "hs") == Some((1, 4)));
    let cm = list_in(&plane, "configmaps", "default")
        .into_iter()
        .find(|c| s(c, "/metadata/name") == "rings-config-hs")
        .expect("rings-config-hs");
    let table: Value = serde_json::from_str(s(&cm, "/data/hccl.json")).unwrap_or(Value::Null);
    let in_table: BTreeSet<(String, String)> = table["server_list"][0]["device"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| (s(d, "/device_id").to_string(), s(d, "/device_ip").to_string()))
        .collect();
    let in_annotation: BTreeSet<(String, String)> = config["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| (s(d, "/device_id").to_string(), s(d, "/device_ip").to_string()))
        .collect();
    assert!(in_annotation.iter().all(|(_, ip)| !ip.is_empty()), "device_ip in {config}");
    assert_eq!(in_annotation, in_table, "the annotation's devices are the rank table's");
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

fn list_in(plane: &Plane, kind: &str, namespace: &str) -> Vec<Value> {
    plane.rt.block_on(plane.client.list(common::find(kind), Some(namespace), None)).map(|l| l.items).unwrap_or_default()
}

fn running_in(plane: &Plane, namespace: &str, prefix: &str) -> Vec<Value> {
    list_in(plane, "pods", namespace)
        .into_iter()
        .filter(|p| s(p, "/metadata/name").starts_with(prefix) && s(p, "/status/phase") == "Running")
        .collect()
}

/// The job's rank table (`hccl.json` of its `rings-config-` ConfigMap) when
/// complete: `(server_count, device_count)`.
fn rank_table(plane: &Plane, namespace: &str, job: &str) -> Option<(usize, usize)> {
    let cm = list_in(plane, "configmaps", namespace)
        .into_iter()
        .find(|c| s(c, "/metadata/name") == format!("rings-config-{job}"))?;
    let table: Value = serde_json::from_str(s(&cm, "/data/hccl.json")).ok()?;
    if table["status"] != "completed" {
        return None;
    }
    let servers = table["server_list"].as_array()?;
    let devices = servers.iter().filter_map(|s| s["device"].as_array()).map(Vec::len).sum();
    Some((servers.len(), devices))
}

/// Issue 25: the README's elastic example on two nodes. One node's chip
/// network faults and no spare exists: the job restarts at 1×8 on the
/// survivor (never on the faulty node: the shrunk job is still the
/// distributed one, and grows back) with a rank table for one server; the
/// node recovers and it grows back to 2×8 with a two-server table again.
#[test]
fn the_elastic_example_shrinks_to_one_node_on_a_fault_and_grows_back() {
    let cluster = common::cluster_yaml(88, &[("e1", "atlas-800-910"), ("e2", "atlas-800-910")])
        .replace("{host-arch: huawei-arm}", "{host-arch: huawei-arm, accelerator-type: module}");
    let plane = Plane::start(&cluster, &[]);
    // The example as written, with a stand-in for the training script the
    // test has no copy of.
    let example: String = common::example("examples/vcjob-elastic.yaml")
        .lines()
        .map(|l| if l.trim_start().starts_with("- \"cd /job/code/scripts;") { "          - \"sleep 600\"" } else { l })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(example.contains("- \"sleep 600\""), "the example's training command moved");
    plane.apply(&example).expect("apply the example");
    let (ns, job) = ("vcjob", "mindx-dls-elastic");
    let uids = |p: &Plane| -> BTreeSet<String> {
        running_in(p, ns, job).iter().map(|x| s(x, "/metadata/uid").to_string()).collect()
    };
    plane.wait_for(60, "2×8 running with a two-server rank table", |p| {
        running_in(p, ns, job).len() == 2 && rank_table(p, ns, job) == Some((2, 16))
    });
    let victim = s(&running_in(&plane, ns, job)[0], "/spec/nodeName").to_string();
    let survivor = if victim == "e1" { "e2" } else { "e1" };
    let before = uids(&plane);
    let fault = std::time::Instant::now();
    // A broken chip network: the node can no longer serve a distributed
    // job, though a one-pod job could use all its chips.
    plane.ctl(&["node", "fault", &victim, "--device", "0", "--kind", "network"]);
    plane.wait_for(10, "restarted at 1×8 on the survivor with a one-server rank table", |p| {
        let pods = running_in(p, ns, job);
        pods.len() == 1
            && s(&pods[0], "/spec/nodeName") == survivor
            && !before.contains(s(&pods[0], "/metadata/uid"))
            && rank_table(p, ns, job) == Some((1, 8))
    });
    println!("shrunk to 1×8 {:.1} s after the fault", fault.elapsed().as_secs_f64());
    let pod = &running_in(&plane, ns, job)[0];
    let chips = s(pod, "/metadata/annotations/huawei.com~1Ascend910");
    assert_eq!(chips.split(',').count(), 8, "{pod}");
    // Nothing of the job left Pending beside the shrunk gang.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let pending: Vec<Value> =
        list_in(&plane, "pods", ns).into_iter().filter(|p| s(p, "/status/phase") == "Pending").collect();
    assert!(pending.is_empty(), "nothing pending at 1×8: {pending:?}");
    let shrunk = uids(&plane);
    assert_eq!(shrunk.len(), 1);

    plane.ctl(&["node", "fault", &victim, "--device", "0", "--kind", "recover"]);
    let recover = std::time::Instant::now();
    plane.wait_for(60, "grown back to 2×8 with a two-server rank table", |p| {
        let now = uids(p);
        now.len() == 2 && now.is_disjoint(&shrunk) && rank_table(p, ns, job) == Some((2, 16))
    });
    println!("grown back to 2×8 {:.1} s after the recovery", recover.elapsed().as_secs_f64());
}

/// Issue 25: pod-level rescheduling (`huawei.com/recover_policy_path: pod`)
/// with a network fault on one node: only that pod moves, to a free healthy
/// node, within 5 s; never back onto the faulty node; its peer keeps its UID.
#[test]
fn pod_level_rescheduling_moves_only_the_faulty_pod_to_a_healthy_node() {
    let cluster = common::cluster_yaml(
        89,
        &[("p1", "atlas-800-910"), ("p2", "atlas-800-910"), ("p3", "atlas-800-910"), ("p4", "atlas-800-910")],
    );
    let plane = Plane::start(&cluster, &[]);
    let job = vcjob("podlevel", "default", 2, 8, None)
        .replacen(
            "{ring-controller.atlas: ascend-910}",
            "{ring-controller.atlas: ascend-910, fault-scheduling: force}",
            1,
        )
        .replacen("annotations: {}", "annotations: {huawei.com/recover_policy_path: pod}", 1);
    plane.apply(&job).expect("apply");
    plane.wait_for(60, "both pods running", |p| running(p, "podlevel-").len() == 2);
    let pods = running(&plane, "podlevel-");
    let (faulty, healthy) = (&pods[0], &pods[1]);
    let bad = s(faulty, "/spec/nodeName").to_string();
    let (faulty_name, faulty_uid) = (s(faulty, "/metadata/name").to_string(), s(faulty, "/metadata/uid").to_string());
    let (healthy_name, healthy_uid) =
        (s(healthy, "/metadata/name").to_string(), s(healthy, "/metadata/uid").to_string());
    plane.ctl(&["node", "fault", &bad, "--device", "0", "--kind", "network"]);
    let fault = std::time::Instant::now();
    let mut seen_on_bad = Vec::new();
    plane.wait_for(5, "the replacement running on a healthy node", |p| {
        let pods = p.list("pods");
        for x in &pods {
            if s(x, "/metadata/name") == faulty_name
                && s(x, "/metadata/uid") != faulty_uid
                && s(x, "/spec/nodeName") == bad
            {
                seen_on_bad.push(s(x, "/metadata/uid").to_string());
            }
        }
        pods.iter().any(|x| {
            s(x, "/metadata/name") == faulty_name
                && s(x, "/metadata/uid") != faulty_uid
                && s(x, "/status/phase") == "Running"
                && !s(x, "/spec/nodeName").is_empty()
                && s(x, "/spec/nodeName") != bad
        })
    });
    println!("replacement running {:.1} s after the fault", fault.elapsed().as_secs_f64());
    // Watch a while longer: it stays put and nothing lands on the faulty node.
    for _ in 0..6 {
        for x in plane.list("pods") {
            if s(&x, "/metadata/name").starts_with("podlevel-") && s(&x, "/spec/nodeName") == bad {
                seen_on_bad.push(format!("{} {}", s(&x, "/metadata/name"), s(&x, "/metadata/uid")));
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    seen_on_bad.retain(|u| !u.ends_with(&faulty_uid));
    assert!(seen_on_bad.is_empty(), "a pod went back onto the faulty node {bad}: {seen_on_bad:?}");
    let now = running(&plane, "podlevel-");
    assert_eq!(now.len(), 2, "{now:?}");
    let peer = now.iter().find(|x| s(x, "/metadata/name") == healthy_name).expect("the healthy pod");
    assert_eq!(s(peer, "/metadata/uid"), healthy_uid, "the healthy pod keeps its UID");
    let binds = events(&plane, "Scheduled").iter().filter(|e| s(e, "/involvedObject/name") == faulty_name).count();
    assert!(binds <= 2, "bound {binds} times");
}

fn priority_class(name: &str, value: i32) -> String {
    format!("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {name}}}\nvalue: {value}\n")
}

/// Seed 000 (Volcano's `preempt` action, on by default): a job of a higher
/// PriorityClass takes a whole server from a lower one in the same queue; the
/// victim's pod gets a `Preempted` Event naming the preemptor.
#[test]
fn a_higher_priority_job_preempts_a_lower_one_under_up() {
    let plane = Plane::start(&common::cluster_yaml(96, &[("q1", "atlas-800-910"), ("q2", "atlas-800-910")]), &[]);
    plane.apply(&(priority_class("low", 10) + "---\n" + &priority_class("high", 1000))).expect("classes");
    let with_class =
        |yaml: String, class: &str| yaml.replacen("  queue:", &format!("  priorityClassName: {class}\n  queue:"), 1);
    plane.apply(&with_class(vcjob("low-1", "default", 1, 8, None), "low")).expect("apply");
    plane.apply(&with_class(vcjob("low-2", "default", 1, 8, None), "low")).expect("apply");
    plane.wait_for(60, "both low-priority jobs running", |p| running(p, "low-").len() == 2);
    plane.apply(&with_class(vcjob("high", "default", 1, 8, None), "high")).expect("apply");
    plane.wait_for(30, "the high-priority job running", |p| running(p, "high-").len() == 1);
    assert_eq!(running(&plane, "low-").len(), 1, "exactly one low-priority job gave way");
    let preempted = events(&plane, "Preempted");
    assert!(
        preempted
            .iter()
            .any(|e| s(e, "/involvedObject/name").starts_with("low-") && s(e, "/message").contains("default/high")),
        "a Preempted event naming the preemptor: {preempted:?}"
    );
}

/// Seed 000 (Volcano's `reclaim`): queue team-b, idle while team-a took the
/// whole cluster, gets its deserved half back from team-a's reclaimable
/// queue; the reclaimed pod gets an `Evicted` Event saying why.
#[test]
fn a_queue_reclaims_its_share_from_a_reclaimable_queue_under_up() {
    let plane = Plane::start(&common::cluster_yaml(97, &[("r1", "atlas-800-910"), ("r2", "atlas-800-910")]), &[]);
    plane
        .apply(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: team-a}\nspec: {weight: 1, reclaimable: true}\n---\n\
             apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: team-b}\nspec: {weight: 1}\n",
        )
        .expect("queues");
    plane.apply(&vcjob("a-1", "team-a", 1, 8, None)).expect("apply");
    plane.apply(&vcjob("a-2", "team-a", 1, 8, None)).expect("apply");
    plane.wait_for(60, "team-a holding both servers", |p| running(p, "a-").len() == 2);
    plane.apply(&vcjob("b-1", "team-b", 1, 8, None)).expect("apply");
    plane.wait_for(30, "team-b's job running", |p| running(p, "b-1-").len() == 1);
    assert_eq!(running(&plane, "a-").len(), 1, "team-a keeps its deserved half");
    let evicted = events(&plane, "Evicted");
    assert!(
        evicted.iter().any(|e| s(e, "/involvedObject/name").starts_with("a-") && s(e, "/message").contains("team-b")),
        "an Evicted event saying the queue reclaimed it: {evicted:?}"
    );
}
