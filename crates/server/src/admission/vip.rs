//! Seed 003's VIP jobs run only on the machines they name, inside what
//! their queue may use. A TrainingJob whose `spec.vip.nodes` names a machine
//! that does not exist, or one outside its queue's resource group (whose
//! pods are confined to the group's machines), could never start: the
//! write is refused, naming the machine and the rule.

use super::platform_nodes::{strings_at, text};
use super::refusal::invalid;
use crate::ServerState;
use ringleader_registry::resources::{ResourceType, NODES, RESOURCE_GROUPS};
use ringleader_registry::status::ApiError;
use ringleader_store::{ObjectKey, Selector};
use serde_json::Value;
use std::collections::BTreeMap;

const QUEUE_API: &str = "scheduling.volcano.sh/v1beta1";
/// What confines a queue's pods to its resource group's machines.
const GROUP_LABEL: &str = "platform.ringleader.io/resource-group";

fn vip_nodes(job: &Value) -> Vec<&str> {
    strings_at(job, "/spec/vip/nodes")
}

fn group_of(node: &Value) -> Option<&str> {
    node.pointer("/metadata/labels").and_then(|l| l.get(GROUP_LABEL)).and_then(Value::as_str)
}

/// What a VIP job's machines break, as `(field, message)`: `found` maps each
/// named machine that exists to its resource group; `group` is the queue's.
pub(crate) fn refusals(
    wanted: &[&str],
    queue: &str,
    group: Option<&str>,
    found: &BTreeMap<String, Option<String>>,
    members: &[String],
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, n) in wanted.iter().enumerate() {
        let field = format!("spec.vip.nodes[{i}]");
        match (found.get(*n), group) {
            (None, _) => out.push((field, format!("Invalid value: {n:?}: no such machine"))),
            (Some(has), Some(g)) if has.as_deref() != Some(g) => {
                let shown: Vec<&str> = members.iter().take(10).map(String::as_str).collect();
                let more = if members.len() > shown.len() { ", …" } else { "" };
                out.push((
                    field,
                    format!(
                        "Invalid value: {n:?}: not a machine of resource group {g:?}, and a VIP job runs only on machines its queue {queue:?} may use ({g}: {}{more})",
                        if shown.is_empty() { "none yet".to_string() } else { shown.join(", ") }
                    ),
                ));
            }
            _ => {}
        }
    }
    out
}

/// Checks a TrainingJob write whose VIP machines or queue changed.
pub(crate) async fn admit(
    state: &ServerState,
    rt: &ResourceType,
    after: &Value,
    before: Option<&Value>,
) -> Result<(), ApiError> {
    let wanted: Vec<String> = vip_nodes(after).into_iter().map(str::to_string).collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let queue = text(after, "/spec/queue").to_string();
    if let Some(b) = before {
        if vip_nodes(b) == vip_nodes(after) && text(b, "/spec/queue") == queue {
            return Ok(());
        }
    }
    let (q, names) = (queue.clone(), wanted.clone());
    let (group, named, nodes) = state
        .blocking(move |s| -> Result<_, ringleader_store::StoreError> {
            let queue_object = s.get(&ObjectKey::new(QUEUE_API, "Queue", "", &q))?;
            let group = queue_object
                .as_ref()
                .map(|q| text(&q.object, "/spec/resourceGroup").to_string())
                .filter(|g| !g.is_empty());
            // A machine the group names is its member before the controller
            // has labelled it.
            let named: Vec<String> = match &group {
                Some(g) => s
                    .get(&ObjectKey::new(RESOURCE_GROUPS.api_version, RESOURCE_GROUPS.kind, "", g))?
                    .and_then(|rg| rg.object.pointer("/spec/nodes/names").cloned())
                    .and_then(|n| serde_json::from_value(n).ok())
                    .unwrap_or_default(),
                None => Vec::new(),
            };
            let mut nodes = BTreeMap::new();
            for n in &names {
                if let Some(node) = s.get(&ObjectKey::new(NODES.api_version, NODES.kind, "", n))? {
                    let member =
                        if named.contains(n) { group.clone() } else { group_of(&node.object).map(str::to_string) };
                    nodes.insert(n.clone(), member);
                }
            }
            Ok((group, named, nodes))
        })
        .await?;
    let wanted: Vec<&str> = wanted.iter().map(String::as_str).collect();
    let outside = group.is_some() && nodes.values().any(|has| has.as_deref() != group.as_deref());
    let mut members = Vec::new();
    if outside {
        // Name the machines the job could have: only on the way to a refusal.
        let g = group.clone();
        let (listed, _) = state.blocking(move |s| s.list(&Selector::kind(NODES.api_version, NODES.kind))).await?;
        members = listed
            .iter()
            .filter(|n| group_of(&n.object).is_some() && group_of(&n.object) == g.as_deref())
            .map(|n| text(&n.object, "/metadata/name").to_string())
            .chain(named)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
    }
    let errors = refusals(&wanted, &queue, group.as_deref(), &nodes, &members);
    invalid(rt, after, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machines_missing_or_outside_the_queue_s_group_are_refused() {
        let found: BTreeMap<String, Option<String>> = [("g1", Some("rg-a")), ("g2", Some("rg-b")), ("g3", None)]
            .iter()
            .map(|(n, g)| (n.to_string(), g.map(str::to_string)))
            .collect();
        let members = vec!["g1".to_string()];
        let errs = refusals(&["g1", "g2", "g3", "g9"], "train-a", Some("rg-a"), &found, &members);
        let fields: Vec<&str> = errs.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["spec.vip.nodes[1]", "spec.vip.nodes[2]", "spec.vip.nodes[3]"]);
        assert!(errs[0].1.contains("not a machine of resource group \"rg-a\"") && errs[0].1.contains("(rg-a: g1)"));
        assert!(errs[2].1.contains("no such machine"), "{errs:?}");
        // A queue with no resource group may use any machine there is.
        assert_eq!(refusals(&["g2", "g9"], "q", None, &found, &[]).len(), 1);
    }
}
