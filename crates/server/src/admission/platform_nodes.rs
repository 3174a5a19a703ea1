//! Seed 004's rules on the platform's node list: a PlatformNode's source is
//! fixed at creation (it says who made the machine), and batch operations
//! on nodes (批量存储挂载, 批量执行自定义脚本: StorageMounts and ScriptRuns)
//! apply only to nodes whose binding is `bound` (已绑定-正常). A node without
//! a PlatformNode is outside the platform's lifecycle and not held back.

use crate::ServerState;
use ringleader_registry::resources::{ResourceType, PLATFORM_NODES};
use ringleader_registry::status::ApiError;
use serde_json::Value;
use std::collections::BTreeMap;

/// Kinds whose `spec.nodes` is a batch operation on nodes.
const BATCH_KINDS: &[&str] = &["ScriptRun", "StorageMount"];

/// Whether a write of `rt` is checked here.
pub(crate) fn concerned(rt: &ResourceType) -> bool {
    rt == PLATFORM_NODES || (rt.platform() && BATCH_KINDS.contains(&rt.kind))
}

pub(super) fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// The strings of the list at `pointer` (none when it is not a list).
pub(super) fn strings_at<'a>(v: &'a Value, pointer: &str) -> Vec<&'a str> {
    v.pointer(pointer).and_then(Value::as_array).map_or(Vec::new(), |n| n.iter().filter_map(Value::as_str).collect())
}

fn nodes(v: &Value) -> Vec<&str> {
    strings_at(v, "/spec/nodes")
}

fn invalid(rt: &ResourceType, object: &Value, field: &str, message: String) -> ApiError {
    super::refusal::error(rt, object, vec![(field.to_string(), message)])
}

/// The nodes of `wanted` whose PlatformNode is not `bound`, with their binding.
pub(crate) fn not_bound<'a>(wanted: &[&'a str], bindings: &BTreeMap<String, String>) -> Vec<(&'a str, String)> {
    wanted.iter().filter_map(|n| bindings.get(*n).filter(|b| b.as_str() != "bound").map(|b| (*n, b.clone()))).collect()
}

/// Checks a write of `after` (replacing `before`, if any).
pub(crate) async fn admit(
    state: &ServerState,
    rt: &ResourceType,
    after: &Value,
    before: Option<&Value>,
) -> Result<(), ApiError> {
    if !concerned(rt) {
        return Ok(());
    }
    if rt == PLATFORM_NODES {
        let (was, now) = (before.map(|b| text(b, "/spec/source")), text(after, "/spec/source"));
        if let Some(was) = was.filter(|w| *w != now) {
            let why = format!("Invalid value: {now:?}: field is immutable (was {was:?}): it says who made the machine");
            return Err(invalid(rt, after, "spec.source", why));
        }
        return Ok(());
    }
    let wanted = nodes(after);
    // Only the nodes this write adds: a batch already running is not undone
    // because one of its nodes was unbound since.
    let old = before.map(nodes).unwrap_or_default();
    let added: Vec<&str> = wanted.into_iter().filter(|n| !old.contains(n)).collect();
    if added.is_empty() {
        return Ok(());
    }
    let selector = ringleader_store::Selector::kind(PLATFORM_NODES.api_version, PLATFORM_NODES.kind);
    let (listed, _) = state.blocking(move |s| s.list(&selector)).await?;
    let bindings: BTreeMap<String, String> = listed
        .iter()
        .map(|p| {
            let binding = match text(&p.object, "/status/binding") {
                "" => "unbound",
                b => b,
            };
            (text(&p.object, "/metadata/name").to_string(), binding.to_string())
        })
        .collect();
    let refused = not_bound(&added, &bindings);
    if refused.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = refused.iter().map(|(n, b)| format!("{n} ({b})")).collect();
    let why = format!(
        "batch operations apply only to nodes whose binding is bound (已绑定-正常); not bound: {}",
        list.join(", ")
    );
    Err(invalid(rt, after, "spec.nodes", why))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_nodes_known_and_not_bound_are_refused() {
        let bindings: BTreeMap<String, String> = [("a", "bound"), ("b", "bind-failed"), ("c", "unbound")]
            .iter()
            .map(|(n, b)| (n.to_string(), b.to_string()))
            .collect();
        let refused = not_bound(&["a", "b", "c", "outside"], &bindings);
        assert_eq!(refused, vec![("b", "bind-failed".to_string()), ("c", "unbound".to_string())]);
    }
}
