//! Objects that must be emptied before they go (spec/platform.md): a
//! ResourceGroup while nodes still belong to it, a StorageMount while any
//! node still has it mounted, a PlatformNode (seed 004 节点移除) that the
//! platform made or that is still bound, a Volcano Queue while a Workspace
//! lists it (its runs would otherwise fail later with `queue not found`).
//! Deleting one answers 409 naming the object and what to do first.

use crate::ServerState;
use axum::http::StatusCode;
use ringleader_registry::resources::{ResourceType, PLATFORM_NODES, RESOURCE_GROUPS, STORAGE_MOUNTS};
use ringleader_registry::status::ApiError;
use ringleader_store::Selector;
use serde_json::Value;

const WORKSPACE_API: &str = "platform.ringleader.io/v1alpha1";

fn is_queue(rt: &ResourceType) -> bool {
    rt.group == "scheduling.volcano.sh" && rt.kind == "Queue"
}

/// Whether deletes of `rt` are guarded.
pub(crate) fn guarded(rt: &ResourceType) -> bool {
    rt == RESOURCE_GROUPS || rt == STORAGE_MOUNTS || rt == PLATFORM_NODES || is_queue(rt)
}

/// Why `object` cannot be deleted now, by itself ([`refusal`]) or because
/// other objects still use it (a Queue listed in a Workspace's `spec.queues`).
pub(crate) async fn check(state: &ServerState, rt: &ResourceType, object: &Value) -> Result<(), ApiError> {
    if let Some(refused) = refusal(rt, object) {
        return Err(refused);
    }
    if !is_queue(rt) {
        return Ok(());
    }
    let selector = Selector::kind(WORKSPACE_API, "Workspace");
    let (workspaces, _) = state.blocking(move |s| s.list(&selector)).await?;
    let workspaces: Vec<Value> = workspaces.into_iter().map(|w| w.object).collect();
    match queue_refusal(rt, object, &workspaces) {
        Some(refused) => Err(refused),
        None => Ok(()),
    }
}

/// A Queue named in the `spec.queues` of any of `workspaces` is in use.
fn queue_refusal(rt: &ResourceType, queue: &Value, workspaces: &[Value]) -> Option<ApiError> {
    let name = queue.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let users: Vec<&str> = workspaces
        .iter()
        .filter(|w| w.pointer("/spec/queues").and_then(Value::as_array).is_some_and(|q| q.iter().any(|q| q == name)))
        .filter_map(|w| w.pointer("/metadata/name").and_then(Value::as_str))
        .collect();
    if users.is_empty() {
        return None;
    }
    let message = format!(
        "Queue {name:?} cannot be deleted: it is in use by workspace(s) {}; remove it from their spec.queues first",
        names(&users)
    );
    Some(ApiError::new(StatusCode::CONFLICT, "Conflict", message).with_object(&rt.qualified(), name))
}

fn names(list: &[&str]) -> String {
    const SHOWN: usize = 5;
    let mut out = list.iter().take(SHOWN).copied().collect::<Vec<_>>().join(", ");
    if list.len() > SHOWN {
        out.push_str(&format!(" and {} more", list.len() - SHOWN));
    }
    out
}

/// Why `object` (of type `rt`) cannot be deleted now, if it cannot.
pub(crate) fn refusal(rt: &ResourceType, object: &Value) -> Option<ApiError> {
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let message = if rt == RESOURCE_GROUPS {
        let nodes: Vec<&str> = object
            .pointer("/status/nodes")
            .and_then(Value::as_array)
            .map_or(Vec::new(), |n| n.iter().filter_map(Value::as_str).collect());
        if nodes.is_empty() {
            return None;
        }
        format!(
            "ResourceGroup {name:?} cannot be deleted: {} node(s) still belong to it ({}); remove them from spec.nodes and wait until status.nodes is empty",
            nodes.len(),
            names(&nodes)
        )
    } else if rt == STORAGE_MOUNTS {
        let mounted: Vec<&str> = object.pointer("/status/nodes").and_then(Value::as_array).map_or(Vec::new(), |n| {
            n.iter()
                .filter(|n| n.get("state").and_then(Value::as_str) == Some("mounted"))
                .filter_map(|n| n.get("node").and_then(Value::as_str))
                .collect()
        });
        if mounted.is_empty() {
            return None;
        }
        format!(
            "StorageMount {name:?} cannot be deleted: it is still mounted on {}; set spec.mounted to false and wait until every node in status.nodes reads unmounted",
            names(&mounted)
        )
    } else if rt == PLATFORM_NODES {
        platform_node(name, object)?
    } else {
        return None;
    };
    Some(ApiError::new(StatusCode::CONFLICT, "Conflict", message).with_object(&rt.qualified(), name))
}

/// Seed 004 节点移除: only an adopted (纳管) node leaves the node list, and
/// only once unbound; a node the platform made is unsubscribed instead.
fn platform_node(name: &str, object: &Value) -> Option<String> {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default();
    if text("/spec/source") != "adopted" {
        return Some(format!(
            "移除仅支持来源为纳管的节点 (removal supports only nodes whose source is adopted): PlatformNode {name:?} has spec.source {:?}",
            text("/spec/source")
        ));
    }
    let group = match text("/spec/resourceGroup") {
        "" => text("/status/resourceGroup"),
        g => g,
    };
    if !group.is_empty() || !matches!(text("/status/binding"), "unbound" | "") {
        return Some(format!(
            "PlatformNode {name:?} cannot be removed: it is bound to resource group {group:?} (binding {:?}); unbind it first (set spec.resourceGroup to null) and wait until status.binding reads unbound",
            text("/status/binding")
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_emptied_objects_go() {
        let rg = json!({"metadata": {"name": "rg"}, "status": {"nodes": ["n1", "n2"]}});
        let e = refusal(RESOURCE_GROUPS, &rg).map(|e| (e.code, e.message));
        assert!(matches!(&e, Some((StatusCode::CONFLICT, m)) if m.contains("\"rg\"") && m.contains("n1, n2")), "{e:?}");
        assert!(refusal(RESOURCE_GROUPS, &json!({"metadata": {"name": "rg"}, "status": {"nodes": []}})).is_none());
        assert!(refusal(RESOURCE_GROUPS, &json!({"metadata": {"name": "rg"}})).is_none());
        let sm = |state: &str| json!({"metadata": {"name": "pfs"}, "status": {"nodes": [{"node": "n1", "state": "unmounted"}, {"node": "n2", "state": state}]}});
        let e = refusal(STORAGE_MOUNTS, &sm("mounted")).map(|e| e.message).unwrap_or_default();
        assert!(e.contains("mounted on n2") && !e.contains("n1"), "{e}");
        assert!(refusal(STORAGE_MOUNTS, &sm("unmounted")).is_none());
    }

    #[test]
    fn only_unbound_adopted_nodes_are_removed() {
        let pn = |source: &str, group: Value, binding: &str| {
            json!({"metadata": {"name": "n1"}, "spec": {"source": source, "resourceGroup": group},
                   "status": {"binding": binding}})
        };
        let e = refusal(PLATFORM_NODES, &pn("new", Value::Null, "unbound")).map(|e| (e.code, e.message));
        assert!(matches!(&e, Some((StatusCode::CONFLICT, m)) if m.starts_with("移除仅支持来源为纳管的节点")), "{e:?}");
        let e = refusal(PLATFORM_NODES, &pn("adopted", json!("rg"), "bound")).map(|e| e.message).unwrap_or_default();
        assert!(e.contains("unbind it first") && e.contains("\"rg\""), "{e}");
        assert!(refusal(PLATFORM_NODES, &pn("adopted", Value::Null, "unbound")).is_none());
    }

    #[test]
    fn a_queue_a_workspace_lists_stays() -> Result<(), String> {
        let queues = ringleader_registry::resources::find("queues").copied().ok_or("no queues row")?;
        let q = json!({"metadata": {"name": "team-a"}});
        let ws = |name: &str, queues: Value| json!({"metadata": {"name": name}, "spec": {"queues": queues}});
        let e = queue_refusal(&queues, &q, &[ws("ws-b", json!(["other"])), ws("ws-a", json!(["team-a"]))]);
        let e = e.map(|e| (e.code, e.message));
        assert!(
            matches!(&e, Some((StatusCode::CONFLICT, m)) if m.contains("\"team-a\"") && m.contains("ws-a") && !m.contains("ws-b")),
            "{e:?}"
        );
        assert!(queue_refusal(&queues, &q, &[ws("ws-b", json!(["other"]))]).is_none());
        Ok(())
    }
}
