//! API discovery, in kube-apiserver's shapes, so stock `kubectl` can map
//! the names users type (`pj`, `vcjob`, `nodes`) to resources: `/version`,
//! the legacy lists (`/api` APIVersions, `/apis` APIGroupList, and an
//! APIResourceList per group-version), and the aggregated v2 documents
//! (`apidiscovery.k8s.io/v2` APIGroupDiscoveryList) that kubectl 1.30+
//! asks `/api` and `/apis` for first, saving it one request per group.
//!
//! Everything is derived from [`resources::discoverable`]: the resource
//! table plus the read-only core v1 Node view, so the lists name exactly
//! the paths the router serves.

use axum::extract::Path;
use axum::http::header::{ACCEPT, CONTENT_TYPE, VARY};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use ringleader_observability::resource_metrics;
use ringleader_registry::resources::{self, ResourceType, PODS, REPLICA_SETS};
use ringleader_registry::scale;
use ringleader_registry::status::ApiError;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The Kubernetes release whose API this server's objects follow (the
/// `k8s-openapi` feature the workspace builds with).
const KUBE_MAJOR: &str = "1";
const KUBE_MINOR: &str = "33";

/// The media type of aggregated discovery, exactly as kubectl matches it.
pub(crate) const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// What the `status` subresource of every kind with a status answers.
const STATUS_VERBS: &[&str] = &["get", "patch", "update"];

/// Subresources served, by parent: `pods/log`, the streams of pods run as
/// containers, and `pods/eviction` (`kubectl drain` looks for it, and for
/// its `policy/v1` kind, before it evicts rather than deletes). Each with
/// the API group of the kind it answers.
const SUBRESOURCES: &[(&ResourceType, &str, &str, &str, &[&str])] = &[
    (PODS, "log", "", "Pod", &["get"]),
    (PODS, "exec", "", "PodExecOptions", &["create", "get"]),
    (PODS, "attach", "", "PodAttachOptions", &["create", "get"]),
    (PODS, "portforward", "", "PodPortForwardOptions", &["create", "get"]),
    (PODS, "eviction", "policy", "Eviction", &["create"]),
    (scale::PYTORCH_JOBS, "scale", "autoscaling", "Scale", SCALE_VERBS),
    (scale::DEPLOYMENTS, "scale", "autoscaling", "Scale", SCALE_VERBS),
    (REPLICA_SETS, "scale", "autoscaling", "Scale", SCALE_VERBS),
];

/// Verbs of the `scale` subresource ([`crate::scale`]).
const SCALE_VERBS: &[&str] = &["get", "patch", "update"];

/// `GET /version`: kube-apiserver's `version.Info`. The Kubernetes version
/// comes first so kubectl's version-skew check reads it; ringleader's own
/// version is the build metadata.
pub(crate) async fn version() -> Response {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    axum::Json(json!({
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": format!("v{KUBE_MAJOR}.{KUBE_MINOR}.0+ringleader.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": option_env!("RINGLEADER_GIT_COMMIT").unwrap_or(""),
        "gitTreeState": "",
        "buildDate": option_env!("RINGLEADER_BUILD_DATE").unwrap_or(""),
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{arch}", std::env::consts::OS),
    }))
    .into_response()
}

/// Whether the client asked for aggregated discovery. kubectl lists it
/// before plain JSON; a client that takes only plain JSON gets the legacy list.
fn wants_aggregated(headers: &HeaderMap) -> bool {
    let accept = headers.get(ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    accept.split(',').any(|part| {
        let params: Vec<String> = part.split(';').map(|p| p.trim().to_ascii_lowercase()).collect();
        params.first().is_some_and(|m| m == "application/json")
            && params.iter().any(|p| p == "g=apidiscovery.k8s.io")
            && params.iter().any(|p| p == "v=v2")
            && params.iter().any(|p| p == "as=apigroupdiscoverylist")
    })
}

fn aggregated(body: Value) -> Response {
    (StatusCode::OK, [(CONTENT_TYPE, AGGREGATED), (VARY, "Accept")], axum::Json(body).into_response().into_body())
        .into_response()
}

fn legacy(body: Value) -> Response {
    (StatusCode::OK, [(VARY, "Accept")], axum::Json(body)).into_response()
}

/// Kubernetes' version order: GA before beta before alpha, higher first
/// within each (`v1` > `v2beta1` > `v1alpha1`).
fn version_rank(version: &str) -> (u8, u32, u32) {
    let rest = version.trim_start_matches('v');
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (stability, minor) = if let Some(n) = tail.strip_prefix("beta") {
        (1, n.parse().unwrap_or(0))
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (0, n.parse().unwrap_or(0))
    } else if tail.is_empty() {
        (2, 0)
    } else {
        (0, 0)
    };
    (stability, major, minor)
}

/// The groups other than core, Kubernetes' own first (kubectl resolves an
/// unqualified name to the first group that has it, so `jobs` means
/// batch/v1 Job as in Kubernetes), each with its versions, preferred first.
fn groups() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut by_group: BTreeMap<(bool, &'static str), Vec<&'static str>> = BTreeMap::new();
    for rt in resources::discoverable().chain(resources::SELF_REVIEWS).filter(|r| !r.group.is_empty()) {
        let builtin = matches!(rt.group, "apps" | "batch" | "policy") || rt.group.ends_with(".k8s.io");
        let versions = by_group.entry((!builtin, rt.group)).or_default();
        if !versions.contains(&rt.version) {
            versions.push(rt.version);
        }
    }
    by_group.insert((false, resource_metrics::GROUP), vec![resource_metrics::VERSION]);
    by_group
        .into_iter()
        .map(|((_, group), mut versions)| {
            versions.sort_by_key(|v| std::cmp::Reverse(version_rank(v)));
            (group, versions)
        })
        .collect()
}

fn types_of(group: &str, version: &str) -> Vec<&'static ResourceType> {
    let metrics = [&resource_metrics::NODE_METRICS, &resource_metrics::POD_METRICS];
    resources::discoverable()
        .chain(resources::SELF_REVIEWS)
        .chain(metrics)
        .filter(|r| r.group == group && r.version == version)
        .collect()
}

/// What may be done to a type: the resource metrics are only read.
fn verbs(rt: &ResourceType) -> &'static [&'static str] {
    if rt.group == resource_metrics::GROUP {
        resource_metrics::VERBS
    } else {
        rt.verbs()
    }
}

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// One APIResource of a legacy list, then its subresources.
fn api_resources(group: &str, version: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for rt in types_of(group, version) {
        let mut r = json!({
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": verbs(rt),
        });
        if !rt.short_names.is_empty() {
            r["shortNames"] = json!(rt.short_names);
        }
        if !rt.categories().is_empty() {
            r["categories"] = json!(rt.categories());
        }
        out.push(r);
        if rt.has_status() {
            out.push(json!({"name": format!("{}/status", rt.plural), "singularName": "",
                "namespaced": rt.namespaced, "kind": rt.kind, "verbs": STATUS_VERBS}));
        }
        for (parent, sub, group, kind, verbs) in SUBRESOURCES {
            if *parent == rt {
                let mut r = json!({"name": format!("{}/{sub}", rt.plural), "singularName": "",
                    "namespaced": rt.namespaced, "kind": kind, "verbs": verbs});
                if !group.is_empty() {
                    r["group"] = json!(group);
                    r["version"] = json!("v1");
                }
                out.push(r);
            }
        }
    }
    out
}

fn resource_list(group: &str, version: &str) -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version(group, version),
        "resources": api_resources(group, version),
    })
}

/// One version of an aggregated group: its resources with scope, verbs and
/// the kind they answer.
fn discovery_version(group: &str, version: &str) -> Value {
    let resources: Vec<Value> = types_of(group, version)
        .into_iter()
        .map(|rt| {
            let mut r = json!({
                "resource": rt.plural,
                "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
                "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
                "singularResource": rt.singular,
                "verbs": verbs(rt),
            });
            if !rt.short_names.is_empty() {
                r["shortNames"] = json!(rt.short_names);
            }
            if !rt.categories().is_empty() {
                r["categories"] = json!(rt.categories());
            }
            let status = rt.has_status().then(|| {
                json!({"subresource": "status",
                    "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind}, "verbs": STATUS_VERBS})
            });
            let subs: Vec<Value> = status
                .into_iter()
                .chain(SUBRESOURCES.iter().filter(|(parent, ..)| *parent == rt).map(|(_, sub, group, kind, verbs)| {
                    json!({"subresource": sub, "responseKind": {"group": group, "version": "v1", "kind": kind},
                        "verbs": verbs})
                }))
                .collect();
            if !subs.is_empty() {
                r["subresources"] = json!(subs);
            }
            r
        })
        .collect();
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

fn discovery_list(items: Vec<Value>) -> Value {
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

/// `GET /api`: APIVersions, or the core group aggregated.
pub(crate) async fn core_versions(headers: HeaderMap) -> Response {
    if wants_aggregated(&headers) {
        let item = json!({"metadata": {"creationTimestamp": null}, "versions": [discovery_version("", "v1")]});
        return aggregated(discovery_list(vec![item]));
    }
    let host = headers.get("host").and_then(|v| v.to_str().ok()).unwrap_or("");
    legacy(json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
    }))
}

/// `GET /api/v1`: the core group's resources.
pub(crate) async fn core_resources() -> Response {
    legacy(resource_list("", "v1"))
}

/// `GET /apis`: APIGroupList, or every group aggregated.
pub(crate) async fn group_list(headers: HeaderMap) -> Response {
    if wants_aggregated(&headers) {
        let items = groups()
            .into_iter()
            .map(|(group, versions)| {
                json!({"metadata": {"name": group, "creationTimestamp": null},
                    "versions": versions.iter().map(|v| discovery_version(group, v)).collect::<Vec<_>>()})
            })
            .collect();
        return aggregated(discovery_list(items));
    }
    let groups: Vec<Value> = groups()
        .into_iter()
        .map(|(group, versions)| {
            let gv = |v: &str| json!({"groupVersion": group_version(group, v), "version": v});
            json!({
                "name": group,
                "versions": versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
                "preferredVersion": gv(versions.first().copied().unwrap_or_default()),
            })
        })
        .collect();
    legacy(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
}

/// `GET /apis/{group}/{version}`: that group-version's resources.
pub(crate) async fn group_resources(Path((group, version)): Path<(String, String)>) -> Response {
    if group.is_empty() || types_of(&group, &version).is_empty() {
        return ApiError::no_route(&format!("/apis/{group}/{version}")).into_response();
    }
    legacy(resource_list(&group, &version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_as_kubernetes_orders_them() {
        let mut v = vec!["v1alpha1", "v2beta1", "v1", "v1beta1", "v2"];
        v.sort_by_key(|v| std::cmp::Reverse(version_rank(v)));
        assert_eq!(v, ["v2", "v1", "v2beta1", "v1beta1", "v1alpha1"]);
    }

    #[test]
    fn kubeflow_prefers_v1_and_builtin_groups_come_first() {
        let g = groups();
        assert_eq!(g.iter().find(|(n, _)| *n == "kubeflow.org").map(|(_, v)| v.clone()), Some(vec!["v1", "v2beta1"]));
        assert_eq!(g.first().map(|(n, _)| *n), Some("apps"));
        let batch = g.iter().position(|(n, _)| *n == "batch");
        let volcano = g.iter().position(|(n, _)| *n == "batch.volcano.sh");
        assert!(batch < volcano);
    }

    #[test]
    fn the_aggregated_accept_header_is_recognised() {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json".parse().unwrap_or(axum::http::HeaderValue::from_static("")));
        assert!(wants_aggregated(&h));
        h.insert(ACCEPT, axum::http::HeaderValue::from_static("application/json, */*"));
        assert!(!wants_aggregated(&h));
    }

    #[test]
    fn core_v1_lists_the_node_view_pod_logs_and_status_subresources() {
        let list = api_resources("", "v1");
        let nodes = list.iter().find(|r| r["name"] == "nodes").cloned().unwrap_or_default();
        assert_eq!(nodes["verbs"], json!(["get", "list", "watch", "patch", "update"]));
        assert_eq!(nodes["namespaced"], false);
        assert!(list.iter().any(|r| r["name"] == "pods/log" && r["verbs"] == json!(["get"])));
        // What kubectl drain's CheckEvictionSupport looks for.
        assert!(list.iter().any(|r| r["name"] == "pods/eviction"
            && (r["group"].as_str(), r["version"].as_str(), r["kind"].as_str())
                == (Some("policy"), Some("v1"), Some("Eviction"))));
        let status = list.iter().find(|r| r["name"] == "pods/status").cloned().unwrap_or_default();
        assert_eq!(
            (status["kind"].clone(), status["verbs"].clone()),
            (json!("Pod"), json!(["get", "patch", "update"]))
        );
        assert!(!list.iter().any(|r| r["name"] == "configmaps/status"), "a ConfigMap has no status");
        let aggregated = discovery_version("kubeflow.org", "v1");
        let pytorch =
            aggregated["resources"].as_array().and_then(|r| r.iter().find(|r| r["resource"] == "pytorchjobs"));
        let subs = pytorch.map(|p| p["subresources"].clone()).unwrap_or_default();
        assert_eq!(subs[0]["subresource"], "status", "{subs}");
        assert_eq!(subs[0]["responseKind"], json!({"group": "kubeflow.org", "version": "v1", "kind": "PyTorchJob"}));
    }
}
