//! Who holds which device, and a node's devices as one character each:
//! shared by `describe node` and `top nodes`.

use crate::support::s;
use serde_json::Value;
use std::collections::BTreeMap;

/// Who holds which device: (node, device id) → (namespace, pod), from the
/// pods that may still hold them (not Succeeded or Failed).
pub fn held_devices(pods: &[Value]) -> BTreeMap<(String, u32), (String, String)> {
    let mut held = BTreeMap::new();
    for p in pods {
        if matches!(s(p, "/status/phase"), "Succeeded" | "Failed") {
            continue;
        }
        let node = s(p, "/spec/nodeName");
        if node.is_empty() {
            continue;
        }
        for d in s(p, "/metadata/annotations/ringleader.io~1devices").split(',').filter_map(|d| d.trim().parse().ok()) {
            held.insert(
                (node.to_string(), d),
                (s(p, "/metadata/namespace").to_string(), s(p, "/metadata/name").to_string()),
            );
        }
    }
    held
}

/// Device ids a node reports broken at `path`.
pub fn device_list(node: &Value, path: &str) -> Vec<u64> {
    node.pointer(path).and_then(Value::as_array).map_or(vec![], |a| a.iter().filter_map(Value::as_u64).collect())
}

/// One character per device of the profile (`#` allocated, `x` unhealthy,
/// `.` free) and how many are allocated.
pub fn device_map(
    node: &str,
    profile: &ringleader_topology::Profile,
    unhealthy: &[u64],
    held: &BTreeMap<(String, u32), (String, String)>,
) -> (String, usize) {
    let mut map = String::new();
    let mut used = 0;
    for d in &profile.devices {
        let c = if unhealthy.contains(&u64::from(d.id)) {
            'x'
        } else if held.contains_key(&(node.to_string(), d.id)) {
            used += 1;
            '#'
        } else {
            '.'
        };
        map.push(c);
    }
    (map, used)
}
