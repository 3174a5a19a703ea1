//! `metrics.k8s.io/v1beta1`, the resource metrics API that metrics-server
//! serves in Kubernetes, so `kubectl top pods|nodes` works. The figures are
//! the agent's samples of each pod's processes or containers (pod annotations) and their
//! sum per node (`status.usage` of the ringleader Node); each sample carries
//! the one before it, so the CPU rate is the CPU time used between the two
//! over the time between them, read from one object. Pods and nodes with no
//! sample (simulated ones) are left out, as metrics-server leaves out what it
//! could not scrape. Who may read is decided by RBAC on the request's path
//! (`get`/`list` of `pods` or `nodes` in group `metrics.k8s.io`).

use crate::encode::OutputFormat;
use crate::ServerState;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use ringleader_observability::resource_metrics::{
    node_metrics, pod_metrics, API_VERSION, GROUP, NODE_METRICS, POD_METRICS, VERSION,
};
use ringleader_registry::resources::{NODES, PODS};
use ringleader_registry::selector::ObjectSelector;
use ringleader_registry::status::{ApiError, Resource};
use ringleader_store::{ObjectKey, Selector};
use serde_json::{json, Value};
use std::collections::HashMap;

enum Target {
    Nodes(Option<String>),
    Pods { ns: Option<String>, name: Option<String> },
}

fn target(path: &str) -> Option<Result<Target, ApiError>> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match segs.as_slice() {
        ["apis", GROUP, VERSION, rest @ ..] => rest,
        _ => return None,
    };
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Some(match rest {
        ["nodes"] => Ok(Target::Nodes(None)),
        ["nodes", name] if !name.is_empty() => Ok(Target::Nodes(some(name))),
        ["pods"] => Ok(Target::Pods { ns: None, name: None }),
        ["namespaces", ns, "pods"] if !ns.is_empty() => Ok(Target::Pods { ns: some(ns), name: None }),
        ["namespaces", ns, "pods", name] if !ns.is_empty() && !name.is_empty() => {
            Ok(Target::Pods { ns: some(ns), name: some(name) })
        }
        _ => Err(ApiError::no_route(path)),
    })
}

fn not_found(plural: &str, name: &str) -> ApiError {
    ApiError::not_found(&Resource { plural: plural.into(), group: GROUP.into() }, name)
}

/// Answers a request under `/apis/metrics.k8s.io/v1beta1/`; `None` for any other path.
pub(crate) async fn serve(
    state: &ServerState,
    method: &Method,
    path: &str,
    query: &HashMap<String, String>,
    format: OutputFormat,
) -> Option<Result<Response, ApiError>> {
    let target = match target(path)? {
        Ok(t) => t,
        Err(e) => return Some(Err(e)),
    };
    if *method != Method::GET {
        return Some(Err(ApiError::method(method.as_str(), path)));
    }
    Some(answer(state, target, query, format).await)
}

/// A stored object's metrics, if it has any.
type Project = fn(&Value) -> Option<Value>;

async fn answer(
    state: &ServerState,
    target: Target,
    query: &HashMap<String, String>,
    format: OutputFormat,
) -> Result<Response, ApiError> {
    let (rt, source, ns, name, project): (_, _, _, _, Project) = match target {
        Target::Nodes(name) => (&NODE_METRICS, NODES, None, name, node_metrics),
        Target::Pods { ns, name } => (&POD_METRICS, PODS, ns, name, pod_metrics),
    };
    if let Some(name) = name {
        let key = ObjectKey::new(source.api_version, source.kind, ns.as_deref().unwrap_or(""), &name);
        let stored = state.blocking(move |s| s.get(&key)).await?;
        return match stored.as_ref().and_then(|s| project(&s.object)) {
            Some(m) => Ok(format.respond(StatusCode::OK, &m)),
            None => Err(not_found(rt.plural, &name)),
        };
    }
    let param = |k: &str| query.get(k).map(String::as_str);
    let selector =
        ObjectSelector::parse(param("labelSelector"), param("fieldSelector")).map_err(ApiError::bad_request)?;
    let mut sel = Selector::kind(source.api_version, source.kind);
    if let Some(ns) = &ns {
        sel = sel.in_namespace(ns);
    }
    let (objects, version) = state.blocking(move |s| s.list(&sel)).await?;
    let items: Vec<Value> =
        objects.iter().filter(|o| selector.matches(&o.object)).filter_map(|o| project(&o.object)).collect();
    let list = json!({
        "kind": format!("{}List", rt.kind), "apiVersion": API_VERSION,
        "metadata": {"resourceVersion": version.to_string()}, "items": items,
    });
    Ok(format.respond(StatusCode::OK, &list))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_groups_paths_are_taken() {
        assert!(target("/api/v1/pods").is_none());
        assert!(matches!(target("/apis/metrics.k8s.io/v1beta1/namespaces/a/pods/p"), Some(Ok(Target::Pods { .. }))));
        assert!(matches!(target("/apis/metrics.k8s.io/v1beta1/nodes/n"), Some(Ok(Target::Nodes(Some(_))))));
        assert!(matches!(target("/apis/metrics.k8s.io/v1beta1/namespaces/a/nodes"), Some(Err(_))));
    }
}
