//! The CustomResourceDefinitions of the job kinds ringleader runs on a real
//! Kubernetes cluster: MindCluster's AscendJob, Kubeflow's PyTorchJob, TFJob
//! and MPIJob (v2beta1, mpi-operator's), and Volcano's Job, Queue and
//! PodGroup. `ringleader crds` prints them; Kubernetes mode installs those a
//! cluster lacks.
//!
//! Names, short names, scope, printer columns and subresources follow the
//! upstream operators' own CRDs, so objects written for those operators
//! (and the operators themselves) work against ours. The schemas are the ones
//! the API server already serves ([`crate::openapi`]: the typed specs of
//! `ringleader-api` and `k8s-openapi`'s pod template), rewritten into the
//! *structural* form `apiextensions.k8s.io/v1` requires: every `$ref`
//! inlined, a `type` on every node (or an int-or-string / preserve-unknown
//! marker), no `additionalProperties` beside `properties`, only the keywords
//! a CRD schema may carry. Pod templates are inlined in full (as Kubeflow's
//! CRDs do) without Kubernetes' long descriptions (as Volcano's do), their
//! `metadata` reduced to what controller-gen keeps of an embedded ObjectMeta.
//! `spec` also keeps fields ringleader does not type, so an upstream field
//! newer than ringleader's model survives a round trip; `status` is free-form.

use crate::openapi;
use ringleader_registry::resources::{self, ResourceType};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// `$ref` prefix of the catalog's schemas.
const REFS: &str = "#/components/schemas/";
/// The schema name of Kubernetes' ObjectMeta.
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
/// Prefix of Kubernetes' own schemas, whose descriptions are dropped.
const KUBERNETES_SCHEMAS: &str = "io.k8s.";
/// How deep a schema may nest before the rest is left free-form: far below
/// what a pod template reaches, a bound on a recursive type.
const MAX_DEPTH: usize = 64;

/// Keywords an `apiextensions.k8s.io/v1` JSONSchemaProps accepts that the
/// rewrite keeps; anything else (`x-kubernetes-group-version-kind`, patch
/// strategies, list-map keys whose defaults were dropped) goes.
const KEPT: &[&str] = &[
    "description",
    "type",
    "format",
    "enum",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "properties",
    "additionalProperties",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
];

/// Formats kube-apiserver validates; others (schemars' `uint32`, …) are
/// replaced or dropped so the CRD says only what the server enforces.
const FORMATS: &[&str] = &[
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "date",
    "date-time",
    "duration",
    "uuid",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uri",
    "password",
    "binary",
];

/// One CRD ringleader ships: the resource type and what upstream's
/// definition adds beyond it.
struct Definition {
    kind: &'static str,
    group: &'static str,
    /// Upstream's short names (the CLI's own aliases may be more).
    short_names: &'static [&'static str],
    /// Upstream's `additionalPrinterColumns`.
    columns: fn() -> Value,
    /// Whether upstream serves a `status` subresource (Volcano's PodGroup
    /// does not: its scheduler writes status with plain updates).
    status_subresource: bool,
}

/// The kinds in the order `ringleader crds` prints them.
const DEFINITIONS: &[Definition] = &[
    Definition {
        kind: "AscendJob",
        group: "mindxdl.gitee.com",
        short_names: &["acjob"],
        columns: kubeflow_columns,
        status_subresource: true,
    },
    Definition {
        kind: "PyTorchJob",
        group: "kubeflow.org",
        short_names: &[],
        columns: kubeflow_columns,
        status_subresource: true,
    },
    Definition {
        kind: "TFJob",
        group: "kubeflow.org",
        short_names: &[],
        columns: kubeflow_columns,
        status_subresource: true,
    },
    Definition {
        kind: "MPIJob",
        group: "kubeflow.org",
        short_names: &[],
        columns: no_columns,
        status_subresource: true,
    },
    Definition {
        kind: "Job",
        group: "batch.volcano.sh",
        short_names: &["vcjob", "vj"],
        columns: volcano_job_columns,
        status_subresource: true,
    },
    Definition {
        kind: "Queue",
        group: "scheduling.volcano.sh",
        short_names: &["q", "queue-v1beta1"],
        columns: queue_columns,
        status_subresource: true,
    },
    Definition {
        kind: "PodGroup",
        group: "scheduling.volcano.sh",
        short_names: &["pg", "podgroup-v1beta1"],
        columns: podgroup_columns,
        status_subresource: false,
    },
];

fn age() -> Value {
    json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})
}

/// training-operator's and ascend-operator's columns.
fn kubeflow_columns() -> Value {
    json!([{"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"}, age()])
}

/// mpi-operator's v2beta1 CRD declares none.
fn no_columns() -> Value {
    json!([])
}

fn volcano_job_columns() -> Value {
    json!([
        {"name": "STATUS", "type": "string", "jsonPath": ".status.state.phase"},
        {"name": "minAvailable", "type": "integer", "jsonPath": ".status.minAvailable"},
        {"name": "RUNNINGS", "type": "integer", "jsonPath": ".status.running"},
        {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "QUEUE", "type": "string", "jsonPath": ".spec.queue", "priority": 1},
    ])
}

fn queue_columns() -> Value {
    json!([{"name": "PARENT", "type": "string", "description": "The parent queue of this queue", "jsonPath": ".spec.parent"}])
}

fn podgroup_columns() -> Value {
    json!([
        {"name": "STATUS", "type": "string", "jsonPath": ".status.phase"},
        {"name": "minMember", "type": "integer", "jsonPath": ".spec.minMember"},
        {"name": "RUNNINGS", "type": "integer", "jsonPath": ".status.running"},
        {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "QUEUE", "type": "string", "jsonPath": ".spec.queue", "priority": 1},
    ])
}

/// Every CRD, as `apiextensions.k8s.io/v1` objects.
pub fn crds() -> Vec<Value> {
    DEFINITIONS.iter().filter_map(crd).collect()
}

/// The CRDs `only` names (kind, plural, singular, short name or
/// `plural.group`, case-insensitive), in the usual order; a name that is
/// none of them is an error listing what is allowed.
pub fn select(only: &[String]) -> Result<Vec<Value>, String> {
    let mut wanted = BTreeSet::new();
    for name in only.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let hits: Vec<usize> = DEFINITIONS
            .iter()
            .enumerate()
            .filter(|(_, d)| resource_type(d).is_some_and(|rt| names(d, rt).contains(&name.to_ascii_lowercase())))
            .map(|(i, _)| i)
            .collect();
        match hits.as_slice() {
            [] => return Err(format!("--only {name:?}: not a kind with a CRD; allowed: {}", allowed())),
            [i] => {
                wanted.insert(*i);
            }
            _ => return Err(format!("--only {name:?}: names several kinds; use plural.group, one of: {}", allowed())),
        }
    }
    Ok(DEFINITIONS.iter().enumerate().filter(|(i, _)| wanted.contains(i)).filter_map(|(_, d)| crd(d)).collect())
}

/// `plural.group` of every CRD, comma-separated.
fn allowed() -> String {
    DEFINITIONS
        .iter()
        .filter_map(resource_type)
        .map(|rt| format!("{}.{}", rt.plural, rt.group))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every name that selects a definition, lower-case.
fn names(d: &Definition, rt: &ResourceType) -> Vec<String> {
    let mut out =
        vec![rt.kind.to_ascii_lowercase(), rt.plural.into(), rt.singular.into(), format!("{}.{}", rt.plural, rt.group)];
    out.extend(d.short_names.iter().map(|s| s.to_string()));
    out
}

fn resource_type(d: &Definition) -> Option<&'static ResourceType> {
    resources::RESOURCES.iter().find(|rt| rt.kind == d.kind && rt.group == d.group)
}

/// One CRD; `None` only if the resource table lost the kind, which the
/// tests rule out.
fn crd(d: &Definition) -> Option<Value> {
    let rt = resource_type(d)?;
    let catalog = openapi::catalog();
    let root = catalog.root(rt)?;
    let mut schema = structural(root, &mut Vec::new(), false);
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        // The API server owns metadata's schema; a CRD may not restate it.
        props.insert("metadata".into(), json!({"type": "object"}));
        if let Some(spec) = props.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
        }
        props.insert(
            "status".into(),
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "description": "Most recently observed state, written by the job controller. Read-only."}),
        );
    }
    let mut version = json!({
        "name": rt.version,
        "served": true,
        "storage": true,
        "schema": {"openAPIV3Schema": schema},
        "subresources": if d.status_subresource { json!({"status": {}}) } else { json!({}) },
    });
    let columns = (d.columns)();
    if columns.as_array().is_some_and(|c| !c.is_empty()) {
        version["additionalPrinterColumns"] = columns;
    }
    let mut names = json!({
        "kind": rt.kind,
        "listKind": format!("{}List", rt.kind),
        "plural": rt.plural,
        "singular": rt.singular,
    });
    if !d.short_names.is_empty() {
        names["shortNames"] = json!(d.short_names);
    }
    Some(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": format!("{}.{}", rt.plural, rt.group),
            "labels": {"app.kubernetes.io/managed-by": "ringleader"},
        },
        "spec": {
            "group": rt.group,
            "names": names,
            "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
            "versions": [version],
        },
    }))
}

/// The structural form of a catalog schema. `stack` holds the `$ref`s being
/// inlined (a repeat is a recursive type, left free-form); `kubernetes`
/// says the node is inside one of Kubernetes' own schemas.
fn structural(schema: &Value, stack: &mut Vec<String>, kubernetes: bool) -> Value {
    let map = match schema {
        Value::Object(map) => map,
        // `true` (serde_json::Value fields) or anything unexpected: any value.
        _ => return free(),
    };
    if stack.len() > MAX_DEPTH {
        return free_object();
    }
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        let mut inlined = inline(reference, stack);
        overlay(&mut inlined, map, kubernetes);
        return inlined;
    }
    let mut out = Map::new();
    // `allOf` (a described `$ref`) and `anyOf`/`oneOf` (untagged unions)
    // fold into this node: a structural schema may not type inside them.
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(parts)) = map.get(key) {
            let parts: Vec<Value> = parts.iter().map(|p| structural(p, stack, kubernetes)).collect();
            if key != "allOf" && !same_type(&parts) {
                return with_description(free(), map, kubernetes);
            }
            for part in parts {
                if let Value::Object(part) = part {
                    merge(&mut out, part);
                }
            }
        }
    }
    for (key, value) in map {
        if !KEPT.contains(&key.as_str()) || (kubernetes && key == "description") {
            continue;
        }
        let converted = match key.as_str() {
            "properties" => match value {
                Value::Object(props) => Value::Object(
                    props.iter().map(|(name, sub)| (name.clone(), structural(sub, stack, kubernetes))).collect(),
                ),
                _ => continue,
            },
            "items" => structural(value, stack, kubernetes),
            "additionalProperties" => match value {
                Value::Bool(_) => value.clone(),
                other => structural(other, stack, kubernetes),
            },
            "type" => match value {
                // `["string", "null"]`: null is pruned by the server anyway.
                Value::Array(types) => match types.iter().find(|t| t.as_str() != Some("null")) {
                    Some(t) => t.clone(),
                    None => continue,
                },
                _ => value.clone(),
            },
            "format" => match format(value.as_str().unwrap_or("")) {
                Some(f) => json!(f),
                None => continue,
            },
            // Option<enum>'s `null` member: nulls are pruned before validation.
            "enum" => Value::Array(value.as_array().into_iter().flatten().filter(|v| !v.is_null()).cloned().collect()),
            _ => value.clone(),
        };
        out.insert(key.clone(), converted);
    }
    finish(out)
}

/// The schema a `$ref` names, inlined; ObjectMeta inside a template becomes
/// controller-gen's embedded form, without the read-only fields a client may
/// send back as `null`.
fn inline(reference: &str, stack: &mut Vec<String>) -> Value {
    let name = reference.strip_prefix(REFS).unwrap_or(reference);
    if name == OBJECT_META {
        let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
        return json!({"type": "object", "properties": {
            "name": {"type": "string"},
            "namespace": {"type": "string"},
            "labels": strings,
            "annotations": strings,
            "finalizers": {"type": "array", "items": {"type": "string"}},
        }});
    }
    if stack.iter().any(|s| s == name) {
        return free_object();
    }
    let Some(target) = openapi::catalog().resolve(&format!("{REFS}{name}")) else {
        return free();
    };
    stack.push(name.to_string());
    let inlined = structural(target, stack, name.starts_with(KUBERNETES_SCHEMAS));
    stack.pop();
    inlined
}

/// A `$ref`'s siblings (a description) over the inlined schema.
fn overlay(inlined: &mut Value, siblings: &Map<String, Value>, kubernetes: bool) {
    if let (Some(out), Some(description)) = (inlined.as_object_mut(), siblings.get("description")) {
        if !kubernetes {
            out.insert("description".into(), description.clone());
        }
    }
}

fn with_description(mut schema: Value, from: &Map<String, Value>, kubernetes: bool) -> Value {
    if let (Some(description), false) = (from.get("description"), kubernetes) {
        schema["description"] = description.clone();
    }
    schema
}

/// Whether folded alternatives agree on one type (or are all objects), so
/// merging them loses nothing a value could be.
fn same_type(parts: &[Value]) -> bool {
    let types: BTreeSet<Option<&str>> = parts.iter().map(|p| p.get("type").and_then(Value::as_str)).collect();
    types.len() == 1 && !types.contains(&None)
}

/// Folds one alternative into a node: properties and required are unioned,
/// other keywords keep the first value.
fn merge(out: &mut Map<String, Value>, part: Map<String, Value>) {
    for (key, value) in part {
        match (key.as_str(), out.get_mut(&key), value) {
            ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                for (k, v) in theirs {
                    mine.entry(k).or_insert(v);
                }
            }
            ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                for v in theirs {
                    if !mine.contains(&v) {
                        mine.push(v);
                    }
                }
            }
            (_, Some(_), _) => {}
            (_, None, value) => {
                out.insert(key, value);
            }
        }
    }
}

/// Gives a node its type and resolves `additionalProperties` against
/// `properties`, the two rules every structural node must meet.
fn finish(mut out: Map<String, Value>) -> Value {
    let int_or_string = out.get("x-kubernetes-int-or-string") == Some(&json!(true));
    if int_or_string {
        // Only the exact anyOf [integer, string] may sit beside the marker.
        out.remove("type");
        out.remove("format");
    }
    if !int_or_string && !out.contains_key("type") {
        let inferred = if out.contains_key("properties") || out.contains_key("additionalProperties") {
            Some("object")
        } else if out.contains_key("items") {
            Some("array")
        } else {
            out.get("enum").and_then(Value::as_array).and_then(|values| enum_type(values))
        };
        match inferred {
            Some(t) => {
                out.insert("type".into(), json!(t));
            }
            None => {
                out.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
            }
        }
    }
    let has_properties = out.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
    match out.remove("additionalProperties") {
        // Open objects keep what they are sent; closed ones say nothing
        // (the server prunes unknown fields of a structural schema).
        Some(Value::Bool(true)) => {
            out.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
        }
        Some(Value::Bool(false)) | None => {}
        Some(schema) if has_properties => {
            // Both typed fields and a map of the rest: keep the fields,
            // let the rest through untyped.
            let _ = schema;
            out.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
        }
        Some(schema) => {
            out.insert("additionalProperties".into(), schema);
        }
    }
    if out.get("type").and_then(Value::as_str) != Some("array") {
        out.remove("items");
    }
    Value::Object(out)
}

/// The type every value of an enum shares, if one does.
fn enum_type(values: &[Value]) -> Option<&'static str> {
    let kind = |v: &Value| match v {
        Value::String(_) => Some("string"),
        Value::Bool(_) => Some("boolean"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
        Value::Number(_) => Some("number"),
        _ => None,
    };
    let first = kind(values.first()?)?;
    values.iter().all(|v| kind(v) == Some(first)).then_some(first)
}

/// A schemars format in the set kube-apiserver knows: unsigned widths map to
/// the signed ones (their `minimum: 0` stays), others go.
fn format(f: &str) -> Option<&'static str> {
    match f {
        "uint8" | "uint16" | "int8" | "int16" | "uint32" => Some("int32"),
        "uint64" | "uint" | "int" => Some("int64"),
        other => FORMATS.iter().find(|k| **k == other).copied(),
    }
}

/// Any value at all.
fn free() -> Value {
    json!({"x-kubernetes-preserve-unknown-fields": true})
}

/// Any object.
fn free_object() -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// What makes a schema non-structural, one line per problem with its path
/// (empty: structural). It checks the rules `apiextensions.k8s.io/v1`
/// enforces and this module relies on: a `type` on every node unless it is
/// int-or-string or preserves unknown fields; no `$ref`, `allOf`, `anyOf`,
/// `oneOf` or `not` (the rewrite folds them all); no `additionalProperties`
/// beside `properties`; `items` only on arrays and exactly one schema; the
/// root's `metadata` only `type: object`; only JSONSchemaProps keywords.
pub fn structural_problems(root: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    check(root, "", &mut problems);
    match root.pointer("/properties/metadata") {
        Some(meta) if meta == &json!({"type": "object"}) => {}
        Some(meta) => problems.push(format!(".metadata: must be only {{\"type\": \"object\"}}, is {meta}")),
        None => {}
    }
    if root.get("type").and_then(Value::as_str) != Some("object") {
        problems.push("(root): type must be object".into());
    }
    problems
}

fn check(node: &Value, path: &str, problems: &mut Vec<String>) {
    let at = if path.is_empty() { "(root)" } else { path };
    let Some(map) = node.as_object() else {
        problems.push(format!("{at}: a schema must be an object, is {node}"));
        return;
    };
    for key in map.keys() {
        if !KEPT.contains(&key.as_str()) {
            problems.push(format!("{at}: keyword {key:?} is not allowed here"));
        }
    }
    let flag = |k: &str| map.get(k) == Some(&json!(true));
    let int_or_string = flag("x-kubernetes-int-or-string");
    match map.get("type").and_then(Value::as_str) {
        Some("object" | "array" | "string" | "integer" | "number" | "boolean") if int_or_string => {
            problems.push(format!("{at}: int-or-string must not also have a type"))
        }
        Some("object" | "array" | "string" | "integer" | "number" | "boolean") => {}
        Some(other) => {
            problems.push(format!("{at}: type {other:?} is not one of object, array, string, integer, number, boolean"))
        }
        None if int_or_string || flag("x-kubernetes-preserve-unknown-fields") => {}
        None => problems.push(format!("{at}: no type")),
    }
    if map.contains_key("properties") && map.contains_key("additionalProperties") {
        problems.push(format!("{at}: additionalProperties beside properties"));
    }
    let ty = map.get("type").and_then(Value::as_str);
    if let Some(props) = map.get("properties") {
        if ty != Some("object") {
            problems.push(format!("{at}: properties on a non-object"));
        }
        match props.as_object() {
            Some(props) => props.iter().for_each(|(name, sub)| check(sub, &format!("{path}.{name}"), problems)),
            None => problems.push(format!("{at}: properties must be an object")),
        }
    }
    match map.get("additionalProperties") {
        Some(Value::Bool(_)) => problems.push(format!("{at}: additionalProperties must be a schema")),
        Some(sub) => check(sub, &format!("{path}.*"), problems),
        None => {}
    }
    match (ty, map.get("items")) {
        (Some("array"), Some(items)) if items.is_object() => check(items, &format!("{path}[*]"), problems),
        (Some("array"), _) => problems.push(format!("{at}: an array needs one items schema")),
        (_, Some(_)) => problems.push(format!("{at}: items on a non-array")),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(crd: &Value) -> &Value {
        &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    }

    #[test]
    fn every_kind_has_a_crd_named_plural_dot_group() {
        let crds = crds();
        assert_eq!(crds.len(), DEFINITIONS.len());
        let names: Vec<&str> = crds.iter().filter_map(|c| c["metadata"]["name"].as_str()).collect();
        assert_eq!(
            names,
            [
                "ascendjobs.mindxdl.gitee.com",
                "pytorchjobs.kubeflow.org",
                "tfjobs.kubeflow.org",
                "mpijobs.kubeflow.org",
                "jobs.batch.volcano.sh",
                "queues.scheduling.volcano.sh",
                "podgroups.scheduling.volcano.sh",
            ]
        );
        for crd in &crds {
            let spec = &crd["spec"];
            let expected =
                format!("{}.{}", spec["names"]["plural"].as_str().unwrap_or(""), spec["group"].as_str().unwrap_or(""));
            assert_eq!(crd["metadata"]["name"], json!(expected));
            assert_eq!(
                spec["names"]["listKind"],
                json!(format!("{}List", spec["names"]["kind"].as_str().unwrap_or("")))
            );
        }
    }

    #[test]
    fn versions_match_upstream_and_one_is_served_and_stored() {
        let expected = [
            ("AscendJob", "v1"),
            ("PyTorchJob", "v1"),
            ("TFJob", "v1"),
            ("MPIJob", "v2beta1"),
            ("Job", "v1alpha1"),
            ("Queue", "v1beta1"),
            ("PodGroup", "v1beta1"),
        ];
        for (crd, (kind, version)) in crds().iter().zip(expected) {
            assert_eq!(crd["spec"]["names"]["kind"], json!(kind));
            let versions = crd["spec"]["versions"].as_array().cloned().unwrap_or_default();
            assert_eq!(versions.iter().filter(|v| v["storage"] == json!(true)).count(), 1, "{kind}");
            assert_eq!(versions.iter().filter(|v| v["served"] == json!(true)).count(), 1, "{kind}");
            assert_eq!(versions[0]["name"], json!(version), "{kind}");
        }
    }

    #[test]
    fn scope_short_names_and_subresources_follow_upstream() {
        let by_name =
            |name: &str| crds().into_iter().find(|c| c["metadata"]["name"] == json!(name)).unwrap_or(Value::Null);
        let queue = by_name("queues.scheduling.volcano.sh");
        assert_eq!(queue["spec"]["scope"], json!("Cluster"));
        assert_eq!(queue["spec"]["names"]["shortNames"], json!(["q", "queue-v1beta1"]));
        let vcjob = by_name("jobs.batch.volcano.sh");
        assert_eq!(vcjob["spec"]["scope"], json!("Namespaced"));
        assert_eq!(vcjob["spec"]["names"]["shortNames"], json!(["vcjob", "vj"]));
        assert_eq!(vcjob["spec"]["versions"][0]["subresources"], json!({"status": {}}));
        assert_eq!(
            vcjob["spec"]["versions"][0]["additionalPrinterColumns"][0]["jsonPath"],
            json!(".status.state.phase")
        );
        let pg = by_name("podgroups.scheduling.volcano.sh");
        assert_eq!(pg["spec"]["names"]["shortNames"], json!(["pg", "podgroup-v1beta1"]));
        assert_eq!(pg["spec"]["versions"][0]["subresources"], json!({}));
        assert_eq!(by_name("ascendjobs.mindxdl.gitee.com")["spec"]["names"]["shortNames"], json!(["acjob"]));
        let pytorch = by_name("pytorchjobs.kubeflow.org");
        assert!(pytorch["spec"]["names"].get("shortNames").is_none());
        assert_eq!(pytorch["spec"]["versions"][0]["additionalPrinterColumns"][0]["name"], json!("State"));
        assert!(by_name("mpijobs.kubeflow.org")["spec"]["versions"][0].get("additionalPrinterColumns").is_none());
    }

    #[test]
    fn every_schema_is_structural() {
        for crd in crds() {
            let problems = structural_problems(schema(&crd));
            assert!(problems.is_empty(), "{}: {problems:#?}", crd["metadata"]["name"]);
        }
    }

    #[test]
    fn pod_templates_are_inlined_with_int_or_string_quantities() {
        let crds = crds();
        let pytorch = schema(&crds[1]);
        let template = &pytorch["properties"]["spec"]["properties"]["pytorchReplicaSpecs"]["additionalProperties"]
            ["properties"]["template"];
        let container = &template["properties"]["spec"]["properties"]["containers"]["items"];
        assert_eq!(container["properties"]["image"]["type"], json!("string"));
        let limits = &container["properties"]["resources"]["properties"]["limits"];
        assert_eq!(limits["type"], json!("object"));
        assert_eq!(limits["additionalProperties"]["x-kubernetes-int-or-string"], json!(true));
        let port = &container["properties"]["livenessProbe"]["properties"]["httpGet"]["properties"]["port"];
        assert_eq!(port, &json!({"x-kubernetes-int-or-string": true}));
        let meta = &template["properties"]["metadata"]["properties"];
        assert_eq!(meta["labels"]["additionalProperties"]["type"], json!("string"));
        assert!(meta.get("creationTimestamp").is_none());
    }

    #[test]
    fn the_checker_finds_what_is_not_structural() {
        let bad = json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
            "a": {"$ref": "#/components/schemas/X"},
            "b": {"type": "object", "properties": {"c": {"type": "string"}}, "additionalProperties": {"type": "string"}},
            "d": {"description": "untyped"},
            "e": {"type": "array"},
            "f": {"x-kubernetes-int-or-string": true},
        }});
        let problems = structural_problems(&bad).join("\n");
        for expected in [
            ".metadata: must be only",
            ".a: keyword \"$ref\"",
            ".b: additionalProperties beside properties",
            ".d: no type",
            ".e: an array needs",
        ] {
            assert!(problems.contains(expected), "{expected} not in {problems}");
        }
        assert!(!problems.contains(".f"), "{problems}");
    }

    #[test]
    fn only_selects_by_any_name_and_names_what_is_allowed() {
        let picked =
            select(&["vcjob".into(), "PyTorchJob".into(), "queues.scheduling.volcano.sh".into()]).unwrap_or_default();
        let names: Vec<&str> = picked.iter().filter_map(|c| c["metadata"]["name"].as_str()).collect();
        assert_eq!(names, ["pytorchjobs.kubeflow.org", "jobs.batch.volcano.sh", "queues.scheduling.volcano.sh"]);
        let err = select(&["deployment".into()]).err().unwrap_or_default();
        assert!(err.contains("\"deployment\"") && err.contains("ascendjobs.mindxdl.gitee.com"), "{err}");
        // `job` is both Volcano's kind and nothing else with a CRD here.
        assert_eq!(select(&["job".into()]).map(|c| c.len()), Ok(1));
    }
}
