//! A v1 Node's hardware from what clusters publish: fixtures of a MindCluster
//! node with its device-info ConfigMap, an ACK topology-aware GPU node, a GPU
//! Operator node with GPU Feature Discovery labels, a node with ringleader's
//! annotations, a CPU-only node and malformed sources.

use k8s_openapi::api::core::v1::{ConfigMap, Node};
use ringleader_scheduler::k8s_node::{node_hardware, HardwareSource, NodeHardwareError};
use ringleader_topology::{LinkKind, Vendor};

fn fixture<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let path = format!("{}/tests/fixtures/k8s_node/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn node(name: &str) -> Node {
    fixture(name)
}

fn set_annotation(n: &mut Node, key: &str, value: &str) {
    n.metadata.annotations.get_or_insert_with(Default::default).insert(key.to_string(), value.to_string());
}

fn set_label(n: &mut Node, key: &str, value: &str) {
    n.metadata.labels.get_or_insert_with(Default::default).insert(key.to_string(), value.to_string());
}

fn set_capacity(n: &mut Node, key: &str, value: &str) {
    let status = n.status.get_or_insert_with(Default::default);
    status
        .capacity
        .get_or_insert_with(Default::default)
        .insert(key.to_string(), k8s_openapi::apimachinery::pkg::api::resource::Quantity(value.to_string()));
}

fn invalid(e: NodeHardwareError) -> (String, String, String) {
    match e {
        NodeHardwareError::Invalid { object, field, message, .. } => (object, field, message),
        other => panic!("expected Invalid, got {other}"),
    }
}

#[test]
fn mindcluster_node_with_device_info() {
    let n = node("mindcluster-node.json");
    let cm: ConfigMap = fixture("mindcluster-deviceinfo.json");
    let other = ConfigMap {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("mindx-dl-deviceinfo-some-other-node".into()),
            namespace: Some("kube-system".into()),
            ..Default::default()
        },
        data: Some([("DeviceInfoCfg".to_string(), "not json".to_string())].into()),
        ..Default::default()
    };
    let hw = node_hardware(&n, &[other, cm]).unwrap();
    assert_eq!(hw.name, "ascend-a2-01");
    assert_eq!(hw.source, HardwareSource::MindClusterDeviceInfo);
    assert_eq!(hw.profile.name, "atlas-800t-a2");
    assert!(hw.choice.contains("accelerator-type=module-910b-8"), "{}", hw.choice);
    // -Unhealthy lists chip 1; ManuallySeparateNPU lists chip 4.
    assert_eq!(hw.unhealthy, vec![1, 4]);
    assert_eq!(hw.network_unhealthy, vec![7]);
    assert_eq!(hw.address.as_deref(), Some("192.168.20.11"));
    assert_eq!(hw.super_pod_id, Some(-1));
    assert_eq!(hw.labels.get("accelerator-type").map(String::as_str), Some("module-910b-8"));

    let c = hw.to_cluster_node();
    assert_eq!(c.device_ids(c.state.unhealthy), vec![1, 4]);
    assert_eq!(c.device_ids(c.state.network_unhealthy), vec![7]);
    assert_eq!(c.network.super_pod, None);
}

#[test]
fn mindcluster_without_model_labels_uses_chip_name_then_count() {
    let mut n = node("mindcluster-node.json");
    let cm: ConfigMap = fixture("mindcluster-deviceinfo.json");
    n.metadata.labels.as_mut().map(|l| l.remove("accelerator-type"));
    let hw = node_hardware(&n, std::slice::from_ref(&cm)).unwrap();
    assert_eq!(hw.profile.name, "atlas-800t-a2");
    assert!(hw.choice.contains("node.kubernetes.io/npu.chip.name=910B3"), "{}", hw.choice);

    n.metadata.labels.as_mut().map(|l| l.remove("node.kubernetes.io/npu.chip.name"));
    let hw = node_hardware(&n, &[cm]).unwrap();
    assert_eq!(hw.profile.name, "atlas-800-910", "first built-in of 8 × huawei.com/Ascend910");
    assert!(hw.choice.contains("no model label matched"), "{}", hw.choice);
}

#[test]
fn mindcluster_accelerator_type_must_agree_with_capacity() {
    let mut n = node("mindcluster-node.json");
    set_capacity(&mut n, "huawei.com/Ascend910", "16");
    let cm: ConfigMap = fixture("mindcluster-deviceinfo.json");
    let (object, field, message) = invalid(node_hardware(&n, &[cm]).unwrap_err());
    assert_eq!(object, "Node ascend-a2-01");
    assert_eq!(field, "metadata.labels[\"accelerator-type\"]");
    assert!(
        message.contains("atlas-800t-a2 of 8 chips, but status.capacity[\"huawei.com/Ascend910\"] is 16"),
        "{message}"
    );
}

#[test]
fn malformed_device_info_names_the_key() {
    let n = node("mindcluster-node.json");
    let good: ConfigMap = fixture("mindcluster-deviceinfo.json");
    let with = |key: &str, value: &str| {
        let mut cm = good.clone();
        cm.data.get_or_insert_with(Default::default).insert(key.to_string(), value.to_string());
        cm
    };

    let e = node_hardware(&n, &[with("DeviceInfoCfg", "{\"DeviceInfo\":")]).unwrap_err();
    let text = e.to_string();
    let (object, field, message) = invalid(e);
    assert_eq!(object, "ConfigMap kube-system/mindx-dl-deviceinfo-ascend-a2-01");
    assert_eq!(field, "data[\"DeviceInfoCfg\"]");
    assert!(message.contains("not the device plugin's JSON"), "{message}");
    assert!(
        text.starts_with(
            "node ascend-a2-01: ConfigMap kube-system/mindx-dl-deviceinfo-ascend-a2-01 data[\"DeviceInfoCfg\"]"
        ),
        "{text}"
    );

    // Editing the list without recomputing the code: Volcano would ignore this ConfigMap.
    let cfg = good.data.as_ref().and_then(|d| d.get("DeviceInfoCfg")).cloned().unwrap_or_default();
    let edited =
        cfg.replace("\"huawei.com/Ascend910-Unhealthy\":\"Ascend910-1\"", "\"huawei.com/Ascend910-Unhealthy\":\"\"");
    assert_ne!(edited, cfg);
    let (_, field, message) = invalid(node_hardware(&n, &[with("DeviceInfoCfg", &edited)]).unwrap_err());
    assert_eq!(field, "data[\"DeviceInfoCfg\"].CheckCode");
    assert!(message.contains("does not match the SHA-256 of DeviceInfo"), "{message}");

    let (_, field, message) = invalid(node_hardware(&n, &[with("ManuallySeparateNPU", "Ascend910-x")]).unwrap_err());
    assert_eq!(field, "data[\"ManuallySeparateNPU\"]");
    assert!(message.contains("\"Ascend910-x\" is not Ascend910-<physical ID>"), "{message}");

    let (_, field, message) = invalid(node_hardware(&n, &[with("ManuallySeparateNPU", "Ascend910-9")]).unwrap_err());
    assert_eq!(field, "data[\"ManuallySeparateNPU\"]");
    assert!(message.contains("no such device on profile atlas-800t-a2"), "{message}");

    let mut no_key = good.clone();
    no_key.data.as_mut().map(|d| d.remove("DeviceInfoCfg"));
    let (_, field, message) = invalid(node_hardware(&n, &[no_key]).unwrap_err());
    assert_eq!(field, "data[\"DeviceInfoCfg\"]");
    assert!(message.contains("missing"), "{message}");
}

#[test]
fn device_info_without_capacity_is_an_error() {
    let mut n = node("mindcluster-node.json");
    n.status.as_mut().and_then(|s| s.capacity.as_mut()).map(|c| c.remove("huawei.com/Ascend910"));
    let cm: ConfigMap = fixture("mindcluster-deviceinfo.json");
    let (_, field, message) = invalid(node_hardware(&n, &[cm]).unwrap_err());
    assert_eq!(field, "status.capacity[\"huawei.com/Ascend910\"]");
    assert!(message.contains("the capacity gives the chip count"), "{message}");
}

#[test]
fn ack_topology_node_with_gpu_topology_annotation() {
    let n = node("ack-node.json");
    let hw = node_hardware(&n, &[]).unwrap();
    assert_eq!(hw.source, HardwareSource::AckGpuTopology);
    assert_eq!(hw.profile.len(), 8);
    assert_eq!(hw.profile.resource_name, "aliyun.com/gpu");
    assert_eq!(hw.profile.chip, "Tesla-V100-SXM2-16GB");
    assert_eq!(hw.profile.links[0][3].kind, LinkKind::NvLink(2));
    assert_eq!(hw.profile.links[0][1].kind, LinkKind::NvLink(1));
    assert_eq!(hw.profile.links[4][0].kind, LinkKind::Sys);
    assert!(hw.profile.bandwidth(0, 3) > hw.profile.bandwidth(0, 1));
    assert_eq!(hw.address.as_deref(), Some("192.168.0.113"));
    assert!(hw.unhealthy.is_empty());
}

#[test]
fn ack_topology_node_without_annotation_picks_builtin_by_model() {
    let mut n = node("ack-node.json");
    n.metadata.annotations.as_mut().map(|a| a.remove("GPU_TOPOLOGY"));
    let hw = node_hardware(&n, &[]).unwrap();
    assert_eq!(hw.source, HardwareSource::AckGpuTopology);
    assert_eq!(hw.profile.name, "dgx-1-v100");
    assert_eq!(hw.profile.resource_name, "aliyun.com/gpu", "pods on ACK topology nodes request aliyun.com/gpu");

    let mut broken = node("ack-node.json");
    set_annotation(&mut broken, "GPU_TOPOLOGY", r#"{"GPU_NV1_0_1":"Single NVLink"}"#);
    let (_, field, message) = invalid(node_hardware(&broken, &[]).unwrap_err());
    assert_eq!(field, "metadata.annotations[\"GPU_TOPOLOGY\"]");
    assert!(message.contains("no entry for GPU pair (0, 2) of 8 GPUs"), "{message}");
}

#[test]
fn gpu_operator_node_with_gfd_labels() {
    let n = node("gfd-node.json");
    let hw = node_hardware(&n, &[]).unwrap();
    assert_eq!(hw.source, HardwareSource::Capacity);
    assert_eq!(hw.profile.name, "hgx-h100-8");
    assert_eq!(hw.profile.resource_name, "nvidia.com/gpu");
    assert!(hw.choice.contains("nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"), "{}", hw.choice);
    assert_eq!(hw.address.as_deref(), Some("10.0.4.17"));
    assert_eq!(hw.labels.get("accelerator").map(String::as_str), Some("nvidia-gpu"));

    // Four PCIe A100s: no built-in of that shape, so a generic profile of four GPUs.
    let mut pcie = node("gfd-node.json");
    set_label(&mut pcie, "nvidia.com/gpu.product", "NVIDIA-A100-PCIE-40GB");
    set_capacity(&mut pcie, "nvidia.com/gpu", "4");
    let hw = node_hardware(&pcie, &[]).unwrap();
    assert_eq!(hw.profile.name, "generic-gpu-4");
    assert_eq!(hw.profile.len(), 4);
    assert_eq!(hw.profile.chip, "NVIDIA-A100-PCIE-40GB");
    assert!(hw.profile.links.iter().flatten().all(|l| matches!(l.kind, LinkKind::Sys | LinkKind::SelfLink)));
    assert!(hw.choice.starts_with("generic: 4 × nvidia.com/gpu"), "{}", hw.choice);

    let mut unhealthy = node("gfd-node.json");
    set_annotation(&mut unhealthy, "ringleader.io/unhealthy-devices", "3, 6");
    assert_eq!(node_hardware(&unhealthy, &[]).unwrap().unhealthy, vec![3, 6]);
    set_annotation(&mut unhealthy, "ringleader.io/unhealthy-devices", "3,eight");
    let (_, field, message) = invalid(node_hardware(&unhealthy, &[]).unwrap_err());
    assert_eq!(field, "metadata.annotations[\"ringleader.io/unhealthy-devices\"]");
    assert!(message.contains("\"eight\" is not a device ID"), "{message}");

    let mut fractional = node("gfd-node.json");
    set_capacity(&mut fractional, "nvidia.com/gpu", "1500m");
    let (_, field, message) = invalid(node_hardware(&fractional, &[]).unwrap_err());
    assert_eq!(field, "status.capacity[\"nvidia.com/gpu\"]");
    assert!(message.contains("whole number"), "{message}");
}

#[test]
fn ringleader_annotation_wins_and_unions_health() {
    let n = node("annotated-node.json");
    let hw = node_hardware(&n, &[]).unwrap();
    assert_eq!(hw.source, HardwareSource::Annotation("ringleader.io/npu-smi-info"));
    assert_eq!(hw.profile.name, "atlas-800t-a2");
    assert_eq!(hw.profile.vendor, Vendor::Huawei);
    // npu-smi shows chip 5 in Alarm; the annotation adds chip 2.
    assert_eq!(hw.unhealthy, vec![2, 5]);

    // The annotation wins over capacity-based guessing with the GFD node too.
    let mut g = node("gfd-node.json");
    let topo = include_str!("../../topology/tests/data/hgx-h100.topo");
    set_annotation(&mut g, "ringleader.io/nvidia-smi-topo", topo);
    let hw = node_hardware(&g, &[]).unwrap();
    assert_eq!(hw.source, HardwareSource::Annotation("ringleader.io/nvidia-smi-topo"));
    assert_eq!(hw.profile.name, "gpu-h100-07");
    assert_eq!(hw.profile.len(), 8);

    // A stale annotation that disagrees with the device plugin's count.
    set_capacity(&mut g, "nvidia.com/gpu", "4");
    let (_, field, message) = invalid(node_hardware(&g, &[]).unwrap_err());
    assert_eq!(field, "metadata.annotations[\"ringleader.io/nvidia-smi-topo\"]");
    assert!(message.contains("disagrees with status.capacity[\"nvidia.com/gpu\"] = 4"), "{message}");

    let mut garbled = node("gfd-node.json");
    set_annotation(&mut garbled, "ringleader.io/nvidia-smi-topo", "hello");
    let (_, field, message) = invalid(node_hardware(&garbled, &[]).unwrap_err());
    assert_eq!(field, "metadata.annotations[\"ringleader.io/nvidia-smi-topo\"]");
    assert!(message.contains("GPU0"), "{message}");
}

#[test]
fn device_info_must_match_the_annotated_hardware() {
    let mut n = node("gfd-node.json");
    n.metadata.name = Some("ascend-a2-01".into());
    set_annotation(&mut n, "ringleader.io/nvidia-smi-topo", include_str!("../../topology/tests/data/hgx-h100.topo"));
    let cm: ConfigMap = fixture("mindcluster-deviceinfo.json");
    let (object, _, message) = invalid(node_hardware(&n, &[cm]).unwrap_err());
    assert_eq!(object, "ConfigMap kube-system/mindx-dl-deviceinfo-ascend-a2-01");
    assert!(message.contains("lists huawei.com/Ascend910 chips"), "{message}");
}

#[test]
fn node_with_nothing_names_what_was_looked_for() {
    let n = node("cpu-node.json");
    let e = node_hardware(&n, &[]).unwrap_err();
    let text = e.to_string();
    match e {
        NodeHardwareError::NoAccelerator { node, looked_for } => {
            assert_eq!(node, "cpu-01");
            assert_eq!(looked_for.len(), 4);
        }
        other => panic!("expected NoAccelerator, got {other}"),
    }
    for part in [
        "ringleader.io/nvidia-smi-topo",
        "ringleader.io/npu-smi-info",
        "ConfigMap kube-system/mindx-dl-deviceinfo-cpu-01 (key DeviceInfoCfg)",
        "ack.node.gpu.schedule=topology",
        "huawei.com/Ascend910",
        "nvidia.com/gpu",
    ] {
        assert!(text.contains(part), "{part} missing from: {text}");
    }

    // ACK's zeroed resources alone are not an accelerator.
    let mut zeroed = node("cpu-node.json");
    set_capacity(&mut zeroed, "nvidia.com/gpu", "0");
    assert!(matches!(node_hardware(&zeroed, &[]), Err(NodeHardwareError::NoAccelerator { .. })));

    let mut two = node("cpu-node.json");
    set_capacity(&mut two, "nvidia.com/gpu", "8");
    set_capacity(&mut two, "huawei.com/Ascend910", "8");
    let (_, field, message) = invalid(node_hardware(&two, &[]).unwrap_err());
    assert_eq!(field, "status.capacity");
    assert!(message.contains("more than one accelerator resource"), "{message}");
}

#[test]
fn ascend_capacity_alone() {
    let mut n = node("cpu-node.json");
    set_capacity(&mut n, "huawei.com/Ascend310P", "8");
    let hw = node_hardware(&n, &[]).unwrap();
    assert_eq!(hw.source, HardwareSource::Capacity);
    assert_eq!(hw.profile.name, "atlas-300i-duo");

    set_capacity(&mut n, "huawei.com/Ascend310P", "3");
    let hw = node_hardware(&n, &[]).unwrap();
    assert_eq!(hw.profile.name, "generic-ascend310p-3");
    assert_eq!(hw.profile.devices[2].name, "Ascend310P-2");
    assert_eq!(hw.profile.resource_name, "huawei.com/Ascend310P");
}

#[test]
fn a_device_count_beyond_a_node_profile_is_refused_before_anything_is_sized_by_it() {
    // A hostile or broken Node claiming four billion GPUs must not size the
    // n×n link matrix of its GPU_TOPOLOGY annotation (or any profile) by it.
    let mut n = node("ack-node.json");
    set_capacity(&mut n, "aliyun.com/gpu", "4000000000");
    match node_hardware(&n, &[]).unwrap_err() {
        NodeHardwareError::Invalid { field, value, message, .. } => {
            assert_eq!(field, "status.capacity[\"aliyun.com/gpu\"]");
            assert_eq!(value, "4000000000");
            assert!(message.contains("at most 64 devices"), "{message}");
        }
        other => panic!("expected Invalid, got {other}"),
    }
    let mut labelled = node("ack-node.json");
    labelled.status.as_mut().and_then(|s| s.capacity.as_mut()).map(|c| c.remove("aliyun.com/gpu"));
    set_label(&mut labelled, "aliyun.accelerator/nvidia_count", "65");
    let (_, field, _) = invalid(node_hardware(&labelled, &[]).unwrap_err());
    assert_eq!(field, "metadata.labels[\"aliyun.accelerator/nvidia_count\"]");
}
