//! What the metrics read of stored objects: the annotation and label keys
//! naming a pod's devices and queue, and a node's hardware profile and
//! device count from whichever description it carries.

use serde_json::Value;

/// Annotation holding the device IDs a pod was bound to.
pub const DEVICES_ANNOTATION: &str = "ringleader.io/devices";
/// Label or annotation naming a pod's queue.
pub const QUEUE_KEY: &str = "volcano.sh/queue-name";

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    v.as_str()
}

/// A node's hardware profile, from whichever description it carries.
pub fn node_profile(node: &Value) -> Option<std::borrow::Cow<'static, ringleader_topology::Profile>> {
    use ringleader_topology::parse::{npu_smi, nvidia_smi};
    use std::borrow::Cow;
    if let Some(name) = str_at(node, &["spec", "profile"]) {
        return ringleader_topology::builtin(name).map(Cow::Borrowed);
    }
    if let Some(text) = str_at(node, &["spec", "topologyText"]) {
        let name = str_at(node, &["metadata", "name"]).unwrap_or_default();
        return nvidia_smi::profile_from_topo(name, text, Default::default(), "NVIDIA GPU").ok().map(Cow::Owned);
    }
    if let Some(text) = str_at(node, &["spec", "npuSmiText"]) {
        return npu_smi::parse_info(text).and_then(|i| npu_smi::profile_from_info(&i)).ok().map(|(p, _)| Cow::Owned(p));
    }
    None
}

/// A node's device count from its hardware description.
pub fn node_device_total(node: &Value) -> Option<usize> {
    if let Some(n) = node.pointer("/status/capacity/devices").and_then(Value::as_u64) {
        return usize::try_from(n).ok();
    }
    node_profile(node).map(|p| p.len())
}
