//! Gang placement scenarios with exact assertions: ring rules reach the pod
//! annotations, gangs are all-or-nothing, ToR locality, explanations.

mod common;

use common::{cluster, jobs};
use ringleader_scheduler::place::{place_job, plan};

fn node(name: &str, profile: &str, tor: &str, status: &str) -> String {
    format!(
        "---\napiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: {name}, labels: {{host-arch: huawei-arm}}}}\nspec: {{profile: {profile}, network: {{tor: {tor}}}}}\nstatus: {status}\n"
    )
}

/// A vcjob of `replicas` pods with `chips` Ascend 910 chips each.
fn npu_job(name: &str, replicas: u32, min_available: u32, chips: u32, accelerator: &str) -> String {
    format!(
        r#"---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, labels: {{ring-controller.atlas: ascend-910}}}}
spec:
  minAvailable: {min_available}
  maxRetry: 3
  tasks:
  - name: worker
    replicas: {replicas}
    template:
      metadata: {{labels: {{ring-controller.atlas: ascend-910}}}}
      spec:
        restartPolicy: OnFailure
        nodeSelector: {{accelerator-type: {accelerator}}}
        containers:
        - name: main
          image: train:1
          resources:
            requests: {{huawei.com/Ascend910: {chips}}}
            limits: {{huawei.com/Ascend910: {chips}}}
"#
    )
}

fn gpu_job(name: &str, replicas: u32, gpus: u32) -> String {
    format!(
        r#"---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: {name}}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: {replicas}
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch:2
            resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
"#
    )
}

#[test]
fn atlas_800_single_chip_follows_the_ring_preference_and_annotates() {
    // Ring 0-3 has 3 free chips (0 is taken), ring 4-7 has 4: request 1 prefers free 3 over free 4.
    let mut c = cluster(&node("n1", "atlas-800-910", "t1", "{allocatedDevices: [0]}"));
    let j = jobs(&npu_job("one", 1, 1, 1, "module"));
    let placed = place_job(&mut c, &j[0], 42).unwrap();
    assert_eq!(placed.len(), 1);
    assert_eq!(placed[0].pod, "one-worker-0");
    assert_eq!(placed[0].devices, vec![1]);
    assert_eq!(placed[0].annotations["huawei.com/Ascend910"], "Ascend910-1");
    assert_eq!(placed[0].annotations["predicate-time"], "42");
    // The next single chip again takes ring 0-3 (now 2 free: preference 1 > 3 > 2 > 4).
    let placed = place_job(&mut c, &jobs(&npu_job("two", 1, 1, 1, "module"))[0], 43).unwrap();
    assert_eq!(placed[0].devices, vec![2]);
}

#[test]
fn gang_is_all_or_nothing_and_leaves_state_unchanged() {
    let mut c = cluster(&(node("n1", "atlas-800-910", "t1", "{}") + &node("n2", "atlas-800-910", "t1", "{}")));
    let big = jobs(&npu_job("big", 3, 3, 8, "module"));
    let err = place_job(&mut c, &big[0], 0).unwrap_err();
    assert_eq!(err, "gang: only 2 of minAvailable 3 pods fit; pod big-worker-2: 0/2 nodes are available: 2 Insufficient huawei.com/Ascend910.");
    assert!(c.nodes.iter().all(|n| n.state.allocated.is_empty()), "a failed gang must not hold devices");
    // With minAvailable 2 the same shape places two pods and leaves the third out.
    let placed = place_job(&mut c, &jobs(&npu_job("elastic", 3, 2, 8, "module"))[0], 0).unwrap();
    assert_eq!(placed.iter().map(|p| p.node.as_str()).collect::<Vec<_>>(), vec!["n1", "n2"]);
}

#[test]
fn unhealthy_and_allocated_chips_are_never_used() {
    let mut c = cluster(&node("n1", "atlas-800-910", "t1", "{allocatedDevices: [4], unhealthyDevices: [0, 1]}"));
    // Ring 0-3 has 2 usable chips (2, 3), ring 4-7 has 3 (5, 6, 7): request 2 prefers free 2.
    let placed = place_job(&mut c, &jobs(&npu_job("pair", 1, 1, 2, "module"))[0], 0).unwrap();
    assert_eq!(placed[0].devices, vec![2, 3]);
    // Request 4 needs a fully free ring: none is left.
    let err = place_job(&mut c, &jobs(&npu_job("four", 1, 1, 4, "module"))[0], 0).unwrap_err();
    assert!(
        err.starts_with("gang: only 0 of minAvailable 1 pods fit; pod four-worker-0: 0/1 nodes are available: 1 "),
        "{err}"
    );
}

#[test]
fn selector_mismatch_is_explained_per_node() {
    let mut c = cluster(&(node("n1", "atlas-800-910", "t1", "{}") + &node("g1", "hgx-h100-8", "t2", "{}")));
    let err = place_job(&mut c, &jobs(&npu_job("a2", 1, 1, 8, "module-910b-8"))[0], 0).unwrap_err();
    assert_eq!(err, "gang: only 0 of minAvailable 1 pods fit; pod a2-worker-0: 0/2 nodes are available: 2 node(s) didn't match node selector.");
    let err = place_job(&mut c, &jobs(&gpu_job("big", 1, 16))[0], 0).unwrap_err();
    assert_eq!(err, "gang: only 0 of minAvailable 1 pods fit; pod big-worker-0: 0/2 nodes are available: 1 16 nvidia.com/gpu not allowed on hgx-h100-8 (allowed: 1–8), 1 Insufficient nvidia.com/gpu.");
}

#[test]
fn multi_node_jobs_fill_one_tor_before_the_next() {
    let nodes = node("a", "hgx-h100-8", "tor-a", "{}")
        + &node("b1", "hgx-h100-8", "tor-b", "{}")
        + &node("b2", "hgx-h100-8", "tor-b", "{}")
        + &node("b3", "hgx-h100-8", "tor-b", "{}")
        + &node("c", "hgx-h100-8", "tor-c", "{}");
    let mut c = cluster(&nodes);
    let placed = place_job(&mut c, &jobs(&gpu_job("ddp", 3, 8))[0], 0).unwrap();
    let mut used: Vec<&str> = placed.iter().map(|p| p.node.as_str()).collect();
    used.sort();
    assert_eq!(used, vec!["b1", "b2", "b3"]);
    assert!(placed.iter().all(|p| p.annotations["ringleader.io/visible-devices"] == "0,1,2,3,4,5,6,7"));
}

#[test]
fn small_gpu_pods_of_one_job_share_a_node_and_plan_keeps_state_between_jobs() {
    let mut c = cluster(&(node("g1", "hgx-h100-8", "t", "{}") + &node("g2", "hgx-h100-8", "t", "{}")));
    let all = jobs(&(gpu_job("small", 2, 2) + &gpu_job("fill", 1, 8) + &gpu_job("late", 1, 8)));
    let (placements, pending) = plan(&mut c, &all, 0);
    let small: Vec<&str> = placements.iter().filter(|p| p.job == "default/small").map(|p| p.node.as_str()).collect();
    assert_eq!(small, vec!["g1", "g1"]);
    assert_eq!(placements.iter().find(|p| p.job == "default/fill").map(|p| p.node.as_str()), Some("g2"));
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].job, "default/late");
}

#[test]
fn a_lone_pod_of_a_gang_never_takes_a_network_faulty_chip() {
    let bad = node("bad", "atlas-800-910", "t1", "{networkUnhealthyDevices: [0]}");
    let mut lone = jobs(&npu_job("one", 1, 1, 8, "module")).remove(0);
    // A one-pod job may use a chip whose network is down.
    assert_eq!(place_job(&mut cluster(&bad), &lone, 0).unwrap()[0].node, "bad");
    // As the part still to place of a two-pod gang it may not.
    lone.annotations.insert(ringleader_scheduler::place::GANG_DEVICE_PODS.to_string(), "2".to_string());
    assert!(place_job(&mut cluster(&bad), &lone, 0).is_err());
    let mut both = cluster(&(bad + &node("good", "atlas-800-910", "t1", "{}")));
    assert_eq!(place_job(&mut both, &lone, 0).unwrap()[0].node, "good");
}

/// A GPU node with `taints` (YAML flow list) in its spec.
fn tainted_gpu_node(name: &str, tor: &str, taints: &str) -> String {
    format!(
        "---\napiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: {name}}}\nspec: {{profile: hgx-h100-8, network: {{tor: {tor}}}, taints: {taints}}}\nstatus: {{}}\n"
    )
}

#[test]
fn taints_keep_out_pods_that_do_not_tolerate_them_and_prefer_no_schedule_is_tried_last() {
    let nodes = tainted_gpu_node("g1", "t1", "[{key: dedicated, value: infer, effect: NoSchedule}]")
        + &tainted_gpu_node("g2", "t1", "[{key: maintenance, effect: NoExecute}]");
    let mut c = cluster(&nodes);
    let err = place_job(&mut c, &jobs(&gpu_job("plain", 1, 1))[0], 0).unwrap_err();
    assert_eq!(
        err,
        "gang: only 0 of minAvailable 1 pods fit; pod plain-worker-0: 0/2 nodes are available: 1 node(s) had untolerated taint {dedicated: infer}, 1 node(s) had untolerated taint {maintenance}."
    );
    // Tolerating the NoSchedule taint by key, value and effect opens g1 only.
    let tolerant = gpu_job("tolerant", 1, 1).replace(
        "          containers:",
        "          tolerations: [{key: dedicated, operator: Equal, value: infer, effect: NoSchedule}]\n          containers:",
    );
    let placed = place_job(&mut c, &jobs(&tolerant)[0], 0).unwrap();
    assert_eq!(placed[0].node, "g1");
    // `operator: Exists` with no key tolerates everything.
    let all = gpu_job("all", 2, 8)
        .replace("          containers:", "          tolerations: [{operator: Exists}]\n          containers:");
    let mut c = cluster(&nodes);
    let placed = place_job(&mut c, &jobs(&all)[0], 0).unwrap();
    assert_eq!(placed.len(), 2);

    // PreferNoSchedule filters nothing, but an untainted node goes first,
    // even where the tainted one sorts first by name and score.
    let nodes = tainted_gpu_node("a-soft", "t1", "[{key: spot, effect: PreferNoSchedule}]")
        + &tainted_gpu_node("b-plain", "t1", "[]");
    let mut c = cluster(&nodes);
    let placed = place_job(&mut c, &jobs(&gpu_job("first", 1, 8))[0], 0).unwrap();
    assert_eq!(placed[0].node, "b-plain");
    let placed = place_job(&mut c, &jobs(&gpu_job("second", 1, 8))[0], 0).unwrap();
    assert_eq!(placed[0].node, "a-soft", "it still takes pods once the others are full");
}
