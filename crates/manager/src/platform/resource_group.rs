//! ResourceGroup membership: the nodes a group names or selects become its
//! members and carry the label `platform.ringleader.io/resource-group`
//! (what confines a queue's pods to the group); nodes that left lose it. A
//! node belongs to one group: the label says which, so a second group that
//! names it is `config-failed` and says why.
//!
//! PlatformNodes (seed 004's node list) bind nodes one by one: a node whose
//! PlatformNode names a group is a member like one the group names, but a
//! node that cannot join (missing, not Ready when it would join, of the
//! other accelerator family, held by another group) fails its own binding
//! (`bind-failed` with the reason), not the group. Unbinding (the
//! PlatformNode names no group) fails (`unbind-failed`) while the group's
//! own spec still names or selects the node.

use super::api::{GROUP_LABEL, NODE_API};
use super::object::{label, name, status_op};
use crate::cache::{at, str_at};
use ringleader_store::{ObjectKey, Op};
use ringleader_topology::Vendor;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The accelerator family of a node, from its profile (`None`: unknown profile).
pub fn node_vendor(node: &Value) -> Option<Vendor> {
    let profile = str_at(node, &["spec", "profile"])?;
    ringleader_topology::profiles::builtin(profile).map(|p| p.vendor)
}

fn vendor_name(v: Vendor) -> &'static str {
    match v {
        Vendor::Huawei => "Ascend",
        Vendor::Nvidia => "NVIDIA",
    }
}

fn label_patch(node: &str, value: Value) -> Op {
    Op::Patch {
        key: ObjectKey::new(NODE_API, "Node", "", node),
        patch: json!({"metadata": {"labels": {GROUP_LABEL: value}}}),
        expected: None,
    }
}

/// Why a node cannot join a group now, if it cannot.
fn bind_refusal(n: &str, node: &Value, want: Option<Vendor>, g: &str) -> Option<String> {
    let ready = at(node, &["status", "ready"]).and_then(Value::as_bool) == Some(true);
    if label(node, GROUP_LABEL) != Some(g) && !ready {
        return Some(format!("node {n} is not Ready"));
    }
    match (want, node_vendor(node)) {
        (Some(want), Some(have)) if want != have => Some(format!(
            "node {n} has {} accelerators; this group's accelerator is {}",
            vendor_name(have),
            vendor_name(want)
        )),
        _ => None,
    }
}

/// The writes that bring node labels and group statuses in line with the
/// groups' specs and the PlatformNodes' bindings, and the PlatformNodes'
/// statuses in line with what happened.
pub fn decide(groups: &[Value], nodes: &[Value], platform_nodes: &[Value]) -> Vec<Op> {
    let by_name: BTreeMap<&str, &Value> = nodes.iter().map(|n| (name(n), n)).collect();
    let existing: BTreeSet<&str> = groups.iter().map(name).collect();
    // Who holds each node: its label, when that group still exists.
    let mut claimed: BTreeMap<&str, String> = nodes
        .iter()
        .filter_map(|n| Some((name(n), label(n, GROUP_LABEL).filter(|g| existing.contains(g))?.to_string())))
        .collect();
    let live: BTreeSet<&str> = groups
        .iter()
        .filter(|g| at(g, &["metadata", "deletionTimestamp"]).is_none_or(Value::is_null))
        .map(name)
        .collect();
    // Nodes bound one by one, by group.
    let mut bound_to: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for pn in platform_nodes {
        if let Some(g) = str_at(pn, &["spec", "resourceGroup"]) {
            bound_to.entry(g).or_default().insert(name(pn));
        }
    }
    // Per node bound one by one: why it failed, or whether it is labelled yet.
    let mut bind_failed: BTreeMap<&str, String> = BTreeMap::new();
    let mut joined: BTreeMap<&str, bool> = BTreeMap::new();
    // Nodes a group's own spec holds, and which group.
    let mut held_by_spec: BTreeMap<&str, &str> = BTreeMap::new();
    let mut ops = Vec::new();
    for n in nodes {
        if let Some(g) = label(n, GROUP_LABEL).filter(|g| !existing.contains(g)) {
            tracing::debug!(node = name(n), group = g, "resource group gone: unlabelling");
            ops.push(label_patch(name(n), Value::Null));
        }
    }
    for group in groups {
        let g = name(group);
        if at(group, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null()) {
            continue;
        }
        let mut problems = Vec::new();
        let mut candidates: BTreeSet<&str> = BTreeSet::new();
        let named = at(group, &["spec", "nodes", "names"]).and_then(Value::as_array);
        for n in named.into_iter().flatten().filter_map(Value::as_str) {
            if by_name.contains_key(n) {
                candidates.insert(n);
            } else {
                problems.push(format!("node {n} not found"));
            }
        }
        let selector = at(group, &["spec", "nodes", "selector", "matchLabels"]).and_then(Value::as_object);
        if let Some(sel) = selector.filter(|s| !s.is_empty()) {
            for n in nodes {
                if sel.iter().all(|(k, v)| v.as_str().is_some_and(|v| label(n, k) == Some(v))) {
                    candidates.insert(name(n));
                }
            }
        }
        let want = match str_at(group, &["spec", "accelerator"]) {
            Some("NVIDIA") => Some(Vendor::Nvidia),
            Some("Ascend") => Some(Vendor::Huawei),
            _ => None,
        };
        for n in &candidates {
            held_by_spec.entry(n).or_insert(g);
        }
        let by_binding: BTreeSet<&str> = bound_to.get(g).into_iter().flatten().copied().collect();
        let extra: Vec<&str> = by_binding.iter().filter(|n| !candidates.contains(*n)).copied().collect();
        for n in extra {
            let refusal = match by_name.get(n) {
                None => Some(format!("node {n} not found")),
                Some(node) => match claimed.get(n).filter(|o| o.as_str() != g) {
                    Some(other) => Some(format!("node {n} belongs to resource group {other}")),
                    None => bind_refusal(n, node, want, g),
                },
            };
            match refusal {
                Some(why) => {
                    bind_failed.insert(n, why);
                }
                None => {
                    candidates.insert(n);
                }
            }
        }
        let mut members = Vec::new();
        let mut pending = false;
        for n in candidates {
            let Some(node) = by_name.get(n) else { continue };
            if let Some(other) = claimed.get(n).filter(|o| o.as_str() != g) {
                problems.push(format!("node {n} belongs to resource group {other}"));
                continue;
            }
            if let (Some(want), Some(have)) = (want, node_vendor(node)) {
                if want != have {
                    problems.push(format!(
                        "node {n} has {} accelerators; this group's accelerator is {}",
                        vendor_name(have),
                        vendor_name(want)
                    ));
                    continue;
                }
            }
            claimed.insert(n, g.to_string());
            let labelled = label(node, GROUP_LABEL) == Some(g);
            if !labelled {
                ops.push(label_patch(n, json!(g)));
                pending = true;
            }
            if by_binding.contains(n) {
                joined.insert(n, labelled);
            }
            members.push(n.to_string());
        }
        for n in nodes.iter().filter(|n| label(n, GROUP_LABEL) == Some(g)) {
            if !members.iter().any(|m| m == name(n)) {
                ops.push(label_patch(name(n), Value::Null));
                pending = true;
            }
        }
        let (state, message) = if !problems.is_empty() {
            ("config-failed", problems.join("; "))
        } else if pending {
            ("configuring", format!("labelling {} node(s)", members.len()))
        } else {
            ("running", format!("{} node(s)", members.len()))
        };
        let wanted = json!({"state": state, "nodes": members, "message": message});
        ops.extend(status_op(group, wanted));
    }
    for pn in platform_nodes {
        let n = name(pn);
        let labelled_as = by_name.get(n).and_then(|node| label(node, GROUP_LABEL));
        let wanted = match str_at(pn, &["spec", "resourceGroup"]) {
            Some(g) if !live.contains(g) => {
                json!({"binding": "bind-failed", "resourceGroup": null, "reason": format!("resource group {g} not found")})
            }
            Some(g) => match (bind_failed.get(n), joined.get(n)) {
                (Some(why), _) => json!({"binding": "bind-failed", "resourceGroup": null, "reason": why}),
                (None, Some(true)) => json!({"binding": "bound", "resourceGroup": g, "reason": ""}),
                // Being labelled, or held by the group's own spec (a member already).
                (None, Some(false)) => continue,
                (None, None) => match labelled_as {
                    Some(l) if l == g => json!({"binding": "bound", "resourceGroup": g, "reason": ""}),
                    Some(other) if live.contains(other) => json!({"binding": "bind-failed", "resourceGroup": null,
                        "reason": format!("node {n} belongs to resource group {other}")}),
                    _ => continue,
                },
            },
            None => match held_by_spec.get(n) {
                Some(g) => json!({"binding": "unbind-failed", "resourceGroup": g, "reason": format!(
                    "node {n} is still named or selected by resource group {g}'s spec.nodes; remove it there to unbind"
                )}),
                None if labelled_as.is_some_and(|g| live.contains(g)) => continue,
                None => json!({"binding": "unbound", "resourceGroup": null, "reason": ""}),
            },
        };
        ops.extend(status_op(pn, wanted));
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(n: &str, profile: &str, labels: Value) -> Value {
        json!({"apiVersion": NODE_API, "kind": "Node", "metadata": {"name": n, "labels": labels},
               "spec": {"profile": profile}})
    }

    fn group(n: &str, nodes: Value) -> Value {
        json!({"apiVersion": super::super::API, "kind": "ResourceGroup", "metadata": {"name": n},
               "spec": {"accelerator": "NVIDIA", "nodes": nodes}})
    }

    fn patches(ops: &[Op]) -> Vec<(String, Value)> {
        ops.iter()
            .filter_map(|o| match o {
                Op::Patch { key, patch, .. } => Some((format!("{}/{}", key.kind, key.name), patch.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn members_by_name_and_selector_are_labelled_and_leavers_unlabelled() {
        let nodes = vec![
            node("a", "hgx-h100-8", json!({"pool": "x"})),
            node("b", "hgx-h100-8", json!({"pool": "y"})),
            node("c", "hgx-h100-8", json!({GROUP_LABEL: "g"})),
        ];
        let g = group("g", json!({"names": ["b"], "selector": {"matchLabels": {"pool": "x"}}}));
        let p = patches(&decide(std::slice::from_ref(&g), &nodes, &[]));
        assert!(p.contains(&("Node/a".into(), json!({"metadata": {"labels": {GROUP_LABEL: "g"}}}))), "{p:?}");
        assert!(p.contains(&("Node/b".into(), json!({"metadata": {"labels": {GROUP_LABEL: "g"}}}))), "{p:?}");
        assert!(p.contains(&("Node/c".into(), json!({"metadata": {"labels": {GROUP_LABEL: null}}}))), "{p:?}");
        let status = &p.iter().find(|(k, _)| k == "ResourceGroup/g").expect("status").1["status"];
        assert_eq!(status["state"], "configuring");
        assert_eq!(status["nodes"], json!(["a", "b"]));

        // Once labelled, the group runs and nothing more is written.
        let labelled = vec![
            node("a", "hgx-h100-8", json!({"pool": "x", GROUP_LABEL: "g"})),
            node("b", "hgx-h100-8", json!({"pool": "y", GROUP_LABEL: "g"})),
            node("c", "hgx-h100-8", json!({})),
        ];
        let mut g2 = g;
        g2["status"] = json!({"state": "running", "nodes": ["a", "b"], "message": "2 node(s)"});
        assert!(decide(&[g2], &labelled, &[]).is_empty());
    }

    #[test]
    fn a_missing_node_a_taken_node_or_a_wrong_accelerator_fails_the_config() {
        let nodes =
            vec![node("a", "hgx-h100-8", json!({GROUP_LABEL: "other"})), node("npu", "atlas-800-910", json!({}))];
        let other = group("other", json!({"names": ["a"]}));
        let g = group("g", json!({"names": ["a", "ghost", "npu"]}));
        let p = patches(&decide(&[g, other], &nodes, &[]));
        let status = &p.iter().find(|(k, _)| k == "ResourceGroup/g").expect("status").1["status"];
        assert_eq!(status["state"], "config-failed");
        let msg = status["message"].as_str().unwrap_or_default();
        assert!(msg.contains("node ghost not found"), "{msg}");
        assert!(msg.contains("node a belongs to resource group other"), "{msg}");
        assert!(msg.contains("node npu has Ascend accelerators; this group's accelerator is NVIDIA"), "{msg}");
        assert!(!p.iter().any(|(k, _)| k == "Node/a" || k == "Node/npu"), "{p:?}");
    }

    fn pnode(n: &str, group: Value) -> Value {
        json!({"apiVersion": super::super::API, "kind": "PlatformNode", "metadata": {"name": n},
               "spec": {"source": "adopted", "resourceGroup": group}})
    }

    fn pnode_status<'a>(p: &'a [(String, Value)], n: &str) -> Option<&'a Value> {
        p.iter().find(|(k, _)| k == &format!("PlatformNode/{n}")).map(|(_, v)| &v["status"])
    }

    #[test]
    fn platform_nodes_bind_unbind_and_fail_with_the_reason() {
        let ready = |n: &str, profile: &str, labels: Value, ready: bool| {
            let mut v = node(n, profile, labels);
            v["status"] = json!({"ready": ready});
            v
        };
        let nodes = vec![
            ready("ok", "hgx-h100-8", json!({}), true),
            ready("down", "hgx-h100-8", json!({}), false),
            ready("npu", "atlas-800-910", json!({}), true),
            ready("named", "hgx-h100-8", json!({GROUP_LABEL: "g"}), true),
        ];
        let g = group("g", json!({"names": ["named"]}));
        let pns = vec![
            pnode("ok", json!("g")),
            pnode("down", json!("g")),
            pnode("npu", json!("g")),
            pnode("ghost", json!("g")),
            pnode("lost", json!("nogroup")),
            pnode("named", Value::Null),
        ];
        let p = patches(&decide(std::slice::from_ref(&g), &nodes, &pns));
        assert!(p.contains(&("Node/ok".into(), json!({"metadata": {"labels": {GROUP_LABEL: "g"}}}))), "{p:?}");
        assert!(pnode_status(&p, "ok").is_none(), "bound only once labelled: {p:?}");
        let reason = |n: &str| pnode_status(&p, n).map(|s| (s["binding"].clone(), s["reason"].clone()));
        assert_eq!(reason("down"), Some((json!("bind-failed"), json!("node down is not Ready"))));
        assert_eq!(
            reason("npu"),
            Some((json!("bind-failed"), json!("node npu has Ascend accelerators; this group's accelerator is NVIDIA")))
        );
        assert_eq!(reason("ghost"), Some((json!("bind-failed"), json!("node ghost not found"))));
        assert_eq!(reason("lost"), Some((json!("bind-failed"), json!("resource group nogroup not found"))));
        assert_eq!(pnode_status(&p, "named").map(|s| s["binding"].clone()), Some(json!("unbind-failed")));
        let group_status = &p.iter().find(|(k, _)| k == "ResourceGroup/g").expect("status").1["status"];
        assert_eq!(group_status["state"], "configuring", "a node's failed binding is not the group's: {group_status}");

        // Labelled: bound. Unbound again: the label goes, then the binding reads unbound.
        let labelled = vec![ready("ok", "hgx-h100-8", json!({GROUP_LABEL: "g"}), true)];
        let p = patches(&decide(&[group("g", json!({}))], &labelled, &[pnode("ok", json!("g"))]));
        assert_eq!(pnode_status(&p, "ok").map(|s| s["binding"].clone()), Some(json!("bound")));
        let p = patches(&decide(&[group("g", json!({}))], &labelled, &[pnode("ok", Value::Null)]));
        assert!(p.contains(&("Node/ok".into(), json!({"metadata": {"labels": {GROUP_LABEL: null}}}))), "{p:?}");
        assert!(pnode_status(&p, "ok").is_none(), "unbound only once unlabelled: {p:?}");
        let p = patches(&decide(
            &[group("g", json!({}))],
            &[ready("ok", "hgx-h100-8", json!({}), true)],
            &[pnode("ok", Value::Null)],
        ));
        assert_eq!(pnode_status(&p, "ok").map(|s| s["binding"].clone()), Some(json!("unbound")));
    }

    #[test]
    fn a_deleted_group_releases_its_nodes() {
        let nodes = vec![node("a", "hgx-h100-8", json!({GROUP_LABEL: "gone"}))];
        let p = patches(&decide(&[], &nodes, &[]));
        assert_eq!(p, vec![("Node/a".to_string(), json!({"metadata": {"labels": {GROUP_LABEL: null}}}))]);
    }
}
