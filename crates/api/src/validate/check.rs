//! Rules of a CheckRun's spec: its type, its nodes, and per type the
//! operations, sizes, iterations and baseline node it may name.

use super::errors::Errors;
use super::names;
use crate::error::FieldError;
use crate::kinds::check::{self as c, CheckRunSpec};
use crate::path;
use std::collections::BTreeSet;

/// Every rule of one CheckRun (`name` is its `metadata.name`: its probe
/// jobs are named after it, so it must be a DNS-1123 label).
pub fn check(name: &str, s: &CheckRunSpec, errs: &mut Errors) {
    if !name.is_empty() && !names::is_dns1123_label(name) {
        errs.push(FieldError::new("metadata.name", format!("{name:?}"), names::LABEL_RULE));
    }
    let kind = s.check_type.as_str();
    if kind.is_empty() {
        errs.push(FieldError::missing("spec.type", format!("required; allowed: {}", c::TYPES.join(", "))));
    } else if !c::TYPES.contains(&kind) {
        errs.push(FieldError::new("spec.type", format!("{kind:?}"), format!("allowed: {}", c::TYPES.join(", "))));
    }
    nodes(s, kind, errs);
    let transfers = matches!(kind, "network" | "collective");
    if kind != "collective" {
        for (field, set) in [
            ("spec.operations", !s.operations.is_empty()),
            ("spec.devicesPerNode", s.devices_per_node.is_some()),
            ("spec.maxBytes", s.max_bytes.is_some()),
        ] {
            if set {
                errs.push(FieldError::new(field, "set", format!("only a collective check takes {field}")));
            }
        }
    }
    if !transfers {
        for (field, set) in [
            ("spec.minBytes", s.min_bytes.is_some()),
            ("spec.iterations", s.iterations.is_some()),
            ("spec.warmup", s.warmup.is_some()),
        ] {
            if set {
                errs.push(FieldError::new(field, "set", format!("only a network or collective check takes {field}")));
            }
        }
    }
    if kind != "server" && s.baseline_node.is_some() {
        errs.push(FieldError::new("spec.baselineNode", "set", "only a server check takes a baseline node"));
    }
    if let Some(b) = &s.baseline_node {
        if kind == "server" && !s.nodes.contains(b) {
            errs.push(FieldError::new("spec.baselineNode", format!("{b:?}"), "must be one of spec.nodes"));
        }
    }
    let mut seen = BTreeSet::new();
    for (i, op) in s.operations.iter().enumerate() {
        let field = path::index("spec.operations", i);
        if !c::OPERATIONS.contains(&op.as_str()) {
            errs.push(FieldError::new(field, format!("{op:?}"), format!("allowed: {}", c::OPERATIONS.join(", "))));
        } else if !seen.insert(op) {
            errs.push(FieldError::new(field, format!("{op:?}"), "each operation may be listed once"));
        }
    }
    if let Some(d) = s.devices_per_node {
        if !(1..=c::MAX_DEVICES_PER_NODE).contains(&d) {
            errs.push(FieldError::new("spec.devicesPerNode", d, format!("allowed: 1 to {}", c::MAX_DEVICES_PER_NODE)));
        }
    }
    let size_rule = format!("a multiple of 4 bytes from 4 to {} (1 GiB)", c::MAX_BYTES);
    for (field, v) in [("spec.minBytes", s.min_bytes), ("spec.maxBytes", s.max_bytes)] {
        if let Some(v) = v {
            if v == 0 || v % 4 != 0 || v > c::MAX_BYTES {
                errs.push(FieldError::new(field, v, size_rule.clone()));
            }
        }
    }
    if let (Some(min), Some(max)) = (s.min_bytes, s.max_bytes) {
        if max < min {
            errs.push(FieldError::new("spec.maxBytes", max, format!("must be at least spec.minBytes ({min})")));
        }
    }
    if let Some(i) = s.iterations {
        if !(1..=c::MAX_ITERATIONS).contains(&i) {
            errs.push(FieldError::new("spec.iterations", i, format!("allowed: 1 to {}", c::MAX_ITERATIONS)));
        }
    }
    if let Some(w) = s.warmup {
        if w > c::MAX_WARMUP {
            errs.push(FieldError::new("spec.warmup", w, format!("allowed: 0 to {}", c::MAX_WARMUP)));
        }
    }
}

fn nodes(s: &CheckRunSpec, kind: &str, errs: &mut Errors) {
    if s.nodes.is_empty() {
        errs.push(FieldError::missing("spec.nodes", "a check names the nodes it runs on"));
        return;
    }
    if s.nodes.len() > c::MAX_NODES {
        errs.push(FieldError::new(
            "spec.nodes",
            format!("{} nodes", s.nodes.len()),
            format!("at most {} nodes per check", c::MAX_NODES),
        ));
    }
    if kind == "network" && s.nodes.len() < 2 {
        errs.push(FieldError::new(
            "spec.nodes",
            format!("{:?}", s.nodes),
            "a network check measures between nodes: name at least 2",
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, n) in s.nodes.iter().enumerate() {
        let field = path::index("spec.nodes", i);
        if !names::is_dns1123_subdomain(n) {
            errs.push(FieldError::new(field, format!("{n:?}"), names::SUBDOMAIN_RULE));
        } else if !seen.insert(n) {
            errs.push(FieldError::new(field, format!("{n:?}"), "listed twice"));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::kinds::Resource;
    use crate::validate::validate;
    use serde_json::{json, Value};

    fn errors(spec: Value) -> Vec<(String, String, String)> {
        let v = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "CheckRun",
                       "metadata": {"name": "chk-1"}, "spec": spec});
        let r = Resource::from_value(&v).expect("typed");
        validate(&r).into_iter().map(|e| (e.field, e.value, e.message)).collect()
    }

    #[test]
    fn a_collective_check_with_every_field_is_valid() {
        let e = errors(json!({"type": "collective", "nodes": ["a", "b"],
            "operations": ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"],
            "devicesPerNode": 8, "minBytes": 1024, "maxBytes": 1048576, "iterations": 20, "warmup": 5}));
        assert!(e.is_empty(), "{e:?}");
        assert!(errors(json!({"type": "server", "nodes": ["a", "b"], "baselineNode": "a"})).is_empty());
        assert!(errors(json!({"type": "network", "nodes": ["a", "b"], "minBytes": 4096})).is_empty());
    }

    #[test]
    fn each_bad_field_is_named_with_its_value_and_what_is_allowed() {
        let e = errors(json!({"type": "collective", "nodes": ["a", "a", "B_x"],
            "operations": ["all_reduce", "broadcast", "all_reduce"], "devicesPerNode": 0,
            "minBytes": 6, "maxBytes": 4, "iterations": 0, "warmup": 5000}));
        let has = |field: &str, value: &str, msg: &str| {
            assert!(
                e.iter().any(|(f, v, m)| f == field && v == value && m.contains(msg)),
                "{field} {value} {msg}: {e:?}"
            )
        };
        has("spec.nodes[1]", "\"a\"", "listed twice");
        has("spec.nodes[2]", "\"B_x\"", "DNS-1123 subdomain");
        has("spec.operations[1]", "\"broadcast\"", "allowed: all_reduce, all_gather, reduce_scatter, all_to_all");
        has("spec.operations[2]", "\"all_reduce\"", "once");
        has("spec.devicesPerNode", "0", "allowed: 1 to 16");
        has("spec.minBytes", "6", "multiple of 4");
        has("spec.maxBytes", "4", "at least spec.minBytes (6)");
        has("spec.iterations", "0", "allowed: 1 to 10000");
        has("spec.warmup", "5000", "allowed: 0 to 1000");
    }

    #[test]
    fn type_nodes_and_baseline_rules() {
        let e = errors(json!({"type": "disk", "nodes": []}));
        assert!(e
            .iter()
            .any(|(f, v, m)| f == "spec.type" && v == "\"disk\"" && m.contains("server, network, collective")));
        assert!(e.iter().any(|(f, _, _)| f == "spec.nodes"));
        let e = errors(json!({"nodes": ["a"]}));
        assert!(e.iter().any(|(f, v, m)| f == "spec.type" && v.is_empty() && m.starts_with("required")));
        let e = errors(json!({"type": "network", "nodes": ["a"]}));
        assert!(e.iter().any(|(f, _, m)| f == "spec.nodes" && m.contains("at least 2")), "{e:?}");
        let e = errors(json!({"type": "server", "nodes": ["a"], "baselineNode": "z", "operations": ["all_reduce"]}));
        assert!(e.iter().any(|(f, v, m)| f == "spec.baselineNode" && v == "\"z\"" && m.contains("one of spec.nodes")));
        assert!(e.iter().any(|(f, _, m)| f == "spec.operations" && m.contains("only a collective")));
        let e = errors(json!({"type": "collective", "nodes": ["a", "b"], "baselineNode": "a"}));
        assert!(e.iter().any(|(f, _, m)| f == "spec.baselineNode" && m.contains("only a server")));
        let too_many: Vec<String> = (0..65).map(|i| format!("n{i}")).collect();
        let e = errors(json!({"type": "server", "nodes": too_many}));
        assert!(e.iter().any(|(f, v, m)| f == "spec.nodes" && v == "65 nodes" && m.contains("at most 64")));
    }

    #[test]
    fn a_name_that_is_not_a_label_and_a_wrong_type_are_refused() {
        let v = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "CheckRun",
                       "metadata": {"name": "a.b"}, "spec": {"type": "server", "nodes": ["a"]}});
        let r = Resource::from_value(&v).expect("typed");
        assert!(validate(&r).iter().any(|e| e.field == "metadata.name"));
        let v = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "CheckRun",
                       "metadata": {"name": "x"}, "spec": {"type": "server", "nodes": ["a"], "iterations": "many"}});
        let err = Resource::from_value(&v).expect_err("iterations is a number");
        assert_eq!(err.field, "spec.iterations");
    }
}
