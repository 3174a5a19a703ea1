//! `ringleader plan` places Atlas 350 (`huawei.com/npu`) cards for an
//! AscendJob and a Volcano Job labelled `ring-controller.atlas: ascend-npu`
//! (issue 18: before, only Deployments passed validation and were placed).

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
---
apiVersion: ringleader.io/v1alpha1
kind: Node
metadata: {name: mesh-b, labels: {host-arch: huawei-arm}}
spec: {profile: atlas-350-8}
---
apiVersion: ringleader.io/v1alpha1
kind: Node
metadata: {name: flat, labels: {host-arch: huawei-arm}}
spec: {profile: atlas-350-16-pcie}
"#;

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
    let v = plan_support::plan_json(CLUSTER, &jobs);
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
