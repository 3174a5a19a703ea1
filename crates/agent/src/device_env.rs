//! The device plugin's part of a pod's env. MindCluster's device plugin
//! answers kubelet's Allocate for a static vNPU (`huawei.com/Ascend310P-2c`)
//! with the vNPU's ID in `ASCEND_VISIBLE_DEVICES` and
//! `ASCEND_RUNTIME_OPTIONS=VIRTUAL` (the Ascend Docker Runtime then mounts
//! that vNPU, not a chip); the seed's job examples therefore drop their own
//! `ASCEND_VISIBLE_DEVICES` for static vNPU. The agent plays that plugin:
//! the vNPU comes from the pod's annotation
//! `huawei.com/Ascend310P-2c: Ascend310P-2c-<vNPU ID>-<chip ID>`.

use ringleader_api::devices::{classify, Family};
use ringleader_api::DeviceKind;
use serde_json::Value;

/// `ASCEND_RUNTIME_OPTIONS` value for virtual devices.
pub const VIRTUAL: &str = "VIRTUAL";

/// Env the device plugin gives the pod, before the pod's own env (which
/// overrides it, as kubelet orders them). Empty for pods without a static vNPU.
pub fn of(pod: &Value) -> Vec<(String, String)> {
    let Some(annotations) = pod.pointer("/metadata/annotations").and_then(Value::as_object) else {
        return Vec::new();
    };
    let ids: Vec<String> = annotations
        .iter()
        .filter(|(k, _)| matches!(classify(k), Some((Family::Ascend, DeviceKind::StaticVnpu { .. }))))
        .filter_map(|(_, v)| v.as_str())
        .flat_map(|v| v.split(','))
        .filter_map(vnpu_id)
        .map(|id| id.to_string())
        .collect();
    if ids.is_empty() {
        return Vec::new();
    }
    vec![
        ("ASCEND_VISIBLE_DEVICES".to_string(), ids.join(",")),
        ("ASCEND_RUNTIME_OPTIONS".to_string(), VIRTUAL.to_string()),
    ]
}

/// The vNPU ID of a device name `<template>-<vNPU ID>-<chip ID>`.
fn vnpu_id(name: &str) -> Option<u32> {
    let mut parts = name.trim().rsplit('-');
    let _chip: u32 = parts.next()?.parse().ok()?;
    parts.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn static_vnpu_annotation_gives_its_id() {
        let pod = json!({"metadata": {"annotations": {
            "huawei.com/Ascend310P-2c": "Ascend310P-2c-117-1", "predicate-time": "5"}}});
        assert_eq!(
            of(&pod),
            [
                ("ASCEND_VISIBLE_DEVICES".to_string(), "117".to_string()),
                ("ASCEND_RUNTIME_OPTIONS".into(), "VIRTUAL".into())
            ]
        );
    }

    #[test]
    fn whole_chips_dynamic_vnpu_and_malformed_values_give_nothing() {
        for ann in [
            json!({"huawei.com/Ascend910": "Ascend910-0,Ascend910-1"}),
            json!({"huawei.com/npu-core": "0-vir02"}),
            json!({"huawei.com/Ascend310P-2c": "Ascend310P-2c"}),
            json!({"huawei.com/Ascend310P-2c": 7}),
        ] {
            assert_eq!(of(&json!({"metadata": {"annotations": ann}})), Vec::<(String, String)>::new());
        }
        assert!(of(&json!({})).is_empty());
    }
}
