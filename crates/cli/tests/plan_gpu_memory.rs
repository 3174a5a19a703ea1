//! `ringleader plan` places GPU memory requests as ACK gpushare
//! (`aliyun.com/gpu-mem`, GiB) and HAMi (`nvidia.com/gpumem`, MiB) users
//! write them, on GPUs with that much memory free, with the annotations
//! those device plugins read (issue 18).

mod plan_support;

const CLUSTER: &str = r#"
apiVersion: ringleader.io/v1alpha1
kind: Node
metadata: {name: rtx, labels: {}}
spec: {profile: pcie-4090-8}
status: {allocatedDevices: [0, 1, 2, 3, 4, 5]}
---
apiVersion: ringleader.io/v1alpha1
kind: Node
metadata: {name: hopper, labels: {}}
spec: {profile: hgx-h100-8}
status: {allocatedDevices: [0, 1, 2, 3, 4]}
"#;

fn deployment(name: &str, replicas: u32, resources: &str) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, labels: {{app: {name}}}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
      - name: infer
        image: infer:1
        resources: {{limits: {{{resources}}}}}
"#
    )
}

fn plan(jobs: &str, _tag: &str) -> serde_json::Value {
    plan_support::plan_json(CLUSTER, jobs)
}

#[test]
fn ack_gpu_mem_pods_share_cards_with_the_least_memory_left() {
    // 20 GiB fits a free 24 GiB RTX 4090 (4 GiB left) better than an 80 GiB
    // H100; the second pod no longer fits beside the first, so it takes the
    // other free 4090; the third finds no 4090 with 20 GiB and goes to an H100.
    let v = plan(&deployment("ack", 3, "aliyun.com/gpu-mem: 20"), "ack");
    assert_eq!(v["pending"].as_array().map(Vec::len), Some(0), "{v}");
    let p = v["placements"].as_array().unwrap();
    assert_eq!(p.len(), 3, "{v}");
    let got: Vec<(String, String)> =
        p.iter().map(|x| (x["node"].as_str().unwrap().into(), x["devices"].to_string())).collect();
    assert_eq!(got[0], ("rtx".into(), "[6]".into()), "{v}");
    assert_eq!(got[1], ("rtx".into(), "[7]".into()), "{v}");
    assert_eq!(got[2].0, "hopper", "{v}");
    let a = &p[0]["annotations"];
    assert_eq!(a["ALIYUN_COM_GPU_MEM_IDX"], "6");
    assert_eq!(a["ALIYUN_COM_GPU_MEM_POD"], "20");
    assert_eq!(a["ALIYUN_COM_GPU_MEM_DEV"], "24");
    assert_eq!(a["ALIYUN_COM_GPU_MEM_ASSIGNED"], "false");
    assert!(a["ALIYUN_COM_GPU_MEM_ASSUME_TIME"].as_str().unwrap().parse::<u64>().unwrap() >= 1000);
    assert_eq!(a["ringleader.io/visible-devices"], "6");
    assert_eq!(p[2]["annotations"]["ALIYUN_COM_GPU_MEM_DEV"], "80");
}

#[test]
fn hami_vgpus_take_memory_and_cores_on_each_gpu() {
    // Two vGPUs of 30000 MiB: more than a 4090 has, so two H100s; a second
    // pod of the same shape shares those two H100s (30000 + 30000 ≤ 81920
    // MiB, 50 % + 50 % cores) rather than opening new ones.
    let jobs = deployment("hami", 2, "nvidia.com/gpu: 2, nvidia.com/gpumem: 30000, nvidia.com/gpucores: 50");
    let v = plan(&jobs, "hami");
    assert_eq!(v["pending"].as_array().map(Vec::len), Some(0), "{v}");
    let p = v["placements"].as_array().unwrap();
    assert_eq!(p.len(), 2, "{v}");
    for x in p {
        assert_eq!(x["node"], "hopper", "{v}");
        assert_eq!(x["devices"], serde_json::json!([5, 6]), "{v}");
        let a = &x["annotations"];
        assert_eq!(a["hami.io/vgpu-devices-to-allocate"], "GPU5,NVIDIA,30000,50:GPU6,NVIDIA,30000,50:;");
        assert_eq!(a["hami.io/vgpu-devices-allocated"], a["hami.io/vgpu-devices-to-allocate"]);
        assert_eq!(a["hami.io/vgpu-node"], "hopper");
        assert_eq!(a["hami.io/bind-phase"], "allocating");
        assert_eq!(a["ringleader.io/visible-devices"], "5,6");
    }
}
