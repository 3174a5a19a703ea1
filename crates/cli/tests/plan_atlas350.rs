//! `ringleader plan` gives Atlas 350 (`huawei.com/npu`) pods their cards
//! (issue 18: they used to be placed with `devices: []`), following
//! MindCluster's chip4nodex mesh affinity and its chip1 base handler; an
//! AscendJob and a Volcano Job labelled `ring-controller.atlas: ascend-npu`
//! get them too (before, only Deployments passed validation).

mod plan_support;

/// An Atlas 800 and three Atlas 350 nodes (two 8-card UB-mesh, one 16-card
/// PCIe), with the cards each already has in use.
fn cluster(mesh_a: &[u32], mesh_b: &[u32], flat: &[u32]) -> String {
    let node = |name: &str, profile: &str, used: &[u32]| {
        format!(
            "apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: {name}, labels: {{host-arch: huawei-arm}}}}\nspec: {{profile: {profile}}}\nstatus: {{allocatedDevices: {used:?}}}\n"
        )
    };
    [
        node("a800", "atlas-800-910", &[]),
        node("mesh-a", "atlas-350-8", mesh_a),
        node("mesh-b", "atlas-350-8", mesh_b),
        node("flat", "atlas-350-16-pcie", flat),
    ]
    .join("---\n")
}

fn deployment(name: &str, policy: &str, count: u32) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, annotations: {{huawei.com/schedule_policy: {policy}}}, labels: {{app: {name}}}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
      - name: infer
        image: infer:1
        resources: {{requests: {{huawei.com/npu: {count}}}, limits: {{huawei.com/npu: {count}}}}}
"#
    )
}

#[test]
fn atlas_350_pods_get_cards_by_mesh_affinity() {
    let jobs = format!("{}---{}", deployment("pair", "chip4-node8", 2), deployment("flat3", "chip1-node16", 3));
    let v = plan_support::plan_json(&cluster(&[0], &[0, 1, 4], &[0]), &jobs);
    assert_eq!(v["pending"].as_array().map(Vec::len), Some(0), "{v}");
    let placements = v["placements"].as_array().unwrap();
    let find = |job: &str| {
        placements.iter().find(|p| p["job"] == format!("default/{job}")).unwrap_or_else(|| panic!("{job}: {v}"))
    };
    // 2 cards: both 350 nodes have two meshes that fit; mesh-b is left with fewer free
    // cards, and its mesh 0–3 has exactly 2 free (best fit inside one mesh).
    let pair = find("pair");
    assert_eq!(pair["node"], "mesh-b");
    assert_eq!(pair["devices"], serde_json::json!([2, 3]));
    assert_eq!(pair["annotations"]["huawei.com/npu"], "npu-2,npu-3");
    // chip1-node16: the lowest free cards of the node without interconnect.
    let flat = find("flat3");
    assert_eq!(flat["node"], "flat");
    assert_eq!(flat["devices"], serde_json::json!([1, 2, 3]));
    assert_eq!(flat["annotations"]["huawei.com/npu"], "npu-1,npu-2,npu-3");
}

const ACJOB: &str = r#"
apiVersion: mindxdl.gitee.com/v1
kind: AscendJob
metadata:
  name: train350
  labels: {framework: pytorch, ring-controller.atlas: ascend-npu}
  annotations: {huawei.com/schedule_policy: chip4-node8}
spec:
  schedulerName: volcano
  replicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        metadata: {labels: {ring-controller.atlas: ascend-npu}}
        spec:
          nodeSelector: {host-arch: huawei-arm}
          containers:
          - name: ascend
            image: ascend-pytorch:26.0
            resources: {requests: {huawei.com/npu: 8}, limits: {huawei.com/npu: 8}}
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        metadata: {labels: {ring-controller.atlas: ascend-npu}}
        spec:
          nodeSelector: {host-arch: huawei-arm}
          containers:
          - name: ascend
            image: ascend-pytorch:26.0
            resources: {requests: {huawei.com/npu: 8}, limits: {huawei.com/npu: 8}}
"#;

const VCJOB: &str = r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: vc350
  labels: {ring-controller.atlas: ascend-npu}
  annotations: {huawei.com/schedule_policy: chip1-node16}
spec:
  minAvailable: 1
  schedulerName: volcano
  tasks:
  - name: worker
    replicas: 1
    template:
      metadata: {labels: {ring-controller.atlas: ascend-npu}}
      spec:
        containers:
        - name: train
          image: train:1
          resources: {requests: {huawei.com/npu: 3}, limits: {huawei.com/npu: 3}}
"#;

#[test]
fn ascend_job_and_vcjob_asking_huawei_npu_are_placed() {
    let jobs = format!("{ACJOB}---{VCJOB}");
    let v = plan_support::plan_json(&cluster(&[], &[], &[]), &jobs);
    assert_eq!(v["pending"].as_array().map(Vec::len), Some(0), "{v}");
    let placements = v["placements"].as_array().unwrap();
    let of = |job: &str| placements.iter().filter(|p| p["job"] == format!("default/{job}")).collect::<Vec<_>>();
    // chip4-node8, 8 cards a pod: each pod takes a whole 8-card Atlas 350 node.
    let acjob = of("train350");
    assert_eq!(acjob.len(), 2, "{v}");
    let mut nodes: Vec<_> = acjob.iter().map(|p| p["node"].as_str().unwrap_or_default()).collect();
    nodes.sort_unstable();
    assert_eq!(nodes, ["mesh-a", "mesh-b"], "{v}");
    for p in &acjob {
        assert_eq!(p["devices"], serde_json::json!([0, 1, 2, 3, 4, 5, 6, 7]), "{v}");
        assert_eq!(p["annotations"]["huawei.com/npu"], "npu-0,npu-1,npu-2,npu-3,npu-4,npu-5,npu-6,npu-7");
    }
    // chip1-node16: the lowest cards of the 16-card node without interconnect.
    let vc = of("vc350");
    assert_eq!(vc.len(), 1, "{v}");
    assert_eq!(vc[0]["node"], "flat");
    assert_eq!(vc[0]["devices"], serde_json::json!([0, 1, 2]));
    assert_eq!(vc[0]["annotations"]["huawei.com/npu"], "npu-0,npu-1,npu-2");
}
