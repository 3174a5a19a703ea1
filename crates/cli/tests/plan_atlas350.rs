//! `ringleader plan` gives Atlas 350 (`huawei.com/npu`) pods their cards
//! (issue 18: they used to be placed with `devices: []`), following
//! MindCluster's chip4nodex mesh affinity and its chip1 base handler.

mod plan_support;

const CLUSTER: &str = r#"
apiVersion: ringleader.io/v1alpha1
kind: Node
metadata: {name: a800, labels: {host-arch: huawei-arm}}
spec: {profile: atlas-800-910}
---
apiVersion: ringleader.io/v1alpha1
kind: Node
metadata: {name: mesh-a, labels: {host-arch: huawei-arm}}
spec: {profile: atlas-350-8}
status: {allocatedDevices: [0]}
---
apiVersion: ringleader.io/v1alpha1
kind: Node
metadata: {name: mesh-b, labels: {host-arch: huawei-arm}}
spec: {profile: atlas-350-8}
status: {allocatedDevices: [0, 1, 4]}
---
apiVersion: ringleader.io/v1alpha1
kind: Node
metadata: {name: flat, labels: {host-arch: huawei-arm}}
spec: {profile: atlas-350-16-pcie}
status: {allocatedDevices: [0]}
"#;

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
    let v = plan_support::plan_json(CLUSTER, &jobs);
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
