//! Queue quotas: a Queue with `spec.quota {instanceSpec, instanceCount}`
//! gets `spec.capability` = instance spec × count, the accelerator counted
//! under the resource name of its resource group's chips, so the
//! scheduler's capability check enforces the fixed quota of seed 004.

use super::api::GROUP_LABEL;
use super::object::{key_of, label, name};
use crate::cache::{at, str_at};
use ringleader_store::Op;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// NVIDIA GPUs.
pub const GPU: &str = "nvidia.com/gpu";
/// Ascend NPUs when the group's nodes name no other resource.
pub const NPU: &str = "huawei.com/Ascend910";

/// The resource name of the accelerator of a group: NVIDIA → `nvidia.com/gpu`,
/// Ascend → the resource of its nodes' profile (`huawei.com/Ascend910` when
/// it has none). `None` for a group that is not given or does not exist.
pub fn group_resource(group: Option<&Value>, nodes: &[Value]) -> Option<String> {
    let group = group?;
    let g = name(group);
    match str_at(group, &["spec", "accelerator"]) {
        Some("NVIDIA") => Some(GPU.to_string()),
        Some("Ascend") => Some(
            nodes
                .iter()
                .filter(|n| label(n, GROUP_LABEL) == Some(g))
                .filter_map(|n| ringleader_topology::profiles::builtin(str_at(n, &["spec", "profile"])?))
                .map(|p| p.resource_name.clone())
                .next()
                .unwrap_or_else(|| NPU.to_string()),
        ),
        _ => None,
    }
}

/// A quantity (`8`, `0.5`, `500m`, `64Gi`) times `n`, in the same unit.
pub fn times(quantity: &str, n: u64) -> Option<String> {
    let q = quantity.trim();
    let split = q.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(q.len());
    let (number, unit) = q.split_at(split);
    if number.is_empty() || !unit.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    if let Ok(i) = number.parse::<u64>() {
        return Some(format!("{}{unit}", i.checked_mul(n)?));
    }
    let f: f64 = number.parse().ok()?;
    Some(format!("{}{unit}", f * n as f64))
}

/// The capability a quota stands for, or why it cannot be computed.
pub fn capability(quota: &Value, accelerator: Option<&str>) -> Result<BTreeMap<String, Value>, String> {
    let count = quota.get("instanceCount").and_then(Value::as_u64).ok_or_else(|| {
        format!(
            "spec.quota.instanceCount: {}: must be a non-negative integer",
            quota.get("instanceCount").unwrap_or(&Value::Null)
        )
    })?;
    let spec = quota.get("instanceSpec").and_then(Value::as_object).ok_or("spec.quota.instanceSpec: required")?;
    let mut cap = BTreeMap::new();
    for (k, v) in spec {
        let device = match k.as_str() {
            "gpu" => Some(accelerator.unwrap_or(GPU)),
            "npu" => Some(accelerator.unwrap_or(NPU)),
            _ => None,
        };
        if let Some(resource) = device {
            let n = v
                .as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                .ok_or_else(|| format!("spec.quota.instanceSpec.{k}: {v}: must be a non-negative integer"))?;
            cap.insert(resource.to_string(), json!(n.saturating_mul(count)));
            continue;
        }
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => return Err(format!("spec.quota.instanceSpec.{k}: {other}: must be a quantity")),
        };
        let total = times(&text, count).ok_or_else(|| {
            format!("spec.quota.instanceSpec.{k}: {text}: must be a quantity such as 8, 500m or 64Gi")
        })?;
        cap.insert(k.clone(), json!(total));
    }
    Ok(cap)
}

fn same(a: &Value, b: &Value) -> bool {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    text(a) == text(b)
}

/// The capability patches of the queues whose quota says otherwise.
pub fn decide(queues: &[Value], groups: &[Value], nodes: &[Value]) -> Vec<Op> {
    let mut ops = Vec::new();
    for q in queues {
        let Some(quota) = at(q, &["spec", "quota"]).filter(|v| v.is_object()) else { continue };
        let group = str_at(q, &["spec", "resourceGroup"]).and_then(|g| groups.iter().find(|x| name(x) == g));
        let accelerator = group_resource(group, nodes);
        let cap = match capability(quota, accelerator.as_deref()) {
            Ok(c) => c,
            Err(why) => {
                tracing::warn!(queue = name(q), "quota not applied: {why}");
                continue;
            }
        };
        let current = at(q, &["spec", "capability"]).and_then(Value::as_object).cloned().unwrap_or_default();
        let mut patch = Map::new();
        for (k, v) in &cap {
            if current.get(k).is_none_or(|c| !same(c, v)) {
                patch.insert(k.clone(), v.clone());
            }
        }
        for k in current.keys().filter(|k| !cap.contains_key(*k)) {
            patch.insert(k.clone(), Value::Null);
        }
        if !patch.is_empty() {
            ops.push(Op::Patch { key: key_of(q), patch: json!({"spec": {"capability": patch}}), expected: None });
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_multiply_in_their_unit() {
        assert_eq!(times("8", 4).as_deref(), Some("32"));
        assert_eq!(times("64Gi", 4).as_deref(), Some("256Gi"));
        assert_eq!(times("500m", 3).as_deref(), Some("1500m"));
        assert_eq!(times("0.5", 3).as_deref(), Some("1.5"));
        assert_eq!(times("Gi", 3), None);
        assert_eq!(times("1e3", 3), None);
        assert_eq!(times("8 Gi", 3), None);
    }

    fn queue(group: &str, quota: Value, capability: Value) -> Value {
        json!({"apiVersion": super::super::QUEUE_API, "kind": "Queue", "metadata": {"name": "q"},
               "spec": {"resourceGroup": group, "quota": quota, "capability": capability}})
    }

    #[test]
    fn capability_is_spec_times_count_by_the_groups_accelerator() {
        let groups = vec![
            json!({"metadata": {"name": "gpu"}, "spec": {"accelerator": "NVIDIA"}}),
            json!({"metadata": {"name": "npu"}, "spec": {"accelerator": "Ascend"}}),
        ];
        let quota = json!({"instanceSpec": {"gpu": 8, "cpu": "48", "memory": "384Gi"}, "instanceCount": 2});
        let ops = decide(&[queue("gpu", quota.clone(), json!({"pods": 9}))], &groups, &[]);
        let Some(Op::Patch { patch, .. }) = ops.first() else { panic!("a patch: {ops:?}") };
        assert_eq!(
            patch,
            &json!({"spec": {"capability": {"nvidia.com/gpu": 16, "cpu": "96", "memory": "768Gi", "pods": null}}})
        );
        let npu = json!({"instanceSpec": {"npu": 8}, "instanceCount": 3});
        let ops = decide(&[queue("npu", npu, json!({}))], &groups, &[]);
        let Some(Op::Patch { patch, .. }) = ops.first() else { panic!("a patch: {ops:?}") };
        assert_eq!(patch["spec"]["capability"]["huawei.com/Ascend910"], 24);
        // Already there (numbers written as strings count the same): nothing to write.
        let done = json!({"nvidia.com/gpu": "16", "cpu": "96", "memory": "768Gi"});
        assert!(decide(&[queue("gpu", quota, done)], &groups, &[]).is_empty());
    }

    #[test]
    fn a_bad_quota_is_named_and_left_alone() {
        let err = capability(&json!({"instanceSpec": {"cpu": "lots"}, "instanceCount": 2}), None).unwrap_err();
        assert!(err.contains("spec.quota.instanceSpec.cpu: lots"), "{err}");
        let err = capability(&json!({"instanceSpec": {}, "instanceCount": -1}), None).unwrap_err();
        assert!(err.contains("instanceCount: -1"), "{err}");
        assert!(decide(&[queue("x", json!({"instanceCount": 1}), json!({}))], &[], &[]).is_empty());
    }
}
