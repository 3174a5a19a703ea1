//! What a Workspace is made of — its resource group and its queues — is
//! the platform admin's to set. A workspace's own admins hold `update` and
//! `patch` of it by name (the manager's `platform:workspace-editor:<ws>`
//! role) to keep its members, display name and description; were those
//! verbs enough for every field, one could name another group (its
//! machines) or claim a queue not given to the workspace. So a write that
//! changes either field is held to what creating a workspace needs: RBAC
//! `create` of `workspaces`, which no per-workspace role grants.

use super::refusal::refuse;
use crate::authz::{self, Attributes};
use crate::ServerState;
use ringleader_auth::Identity;
use ringleader_registry::resources::ResourceType;
use ringleader_registry::status::ApiError;
use serde_json::Value;

/// The platform admin's fields of a Workspace.
const FIELDS: [(&str, &str); 2] = [("spec.resourceGroup", "/spec/resourceGroup"), ("spec.queues", "/spec/queues")];

/// Which of [`FIELDS`] differ between `before` and `after` (absent, null
/// and an empty list or name are one: the same workspace).
pub(crate) fn changed(before: &Value, after: &Value) -> Vec<String> {
    let value = |o: &Value, p: &str| {
        o.pointer(p)
            .filter(|v| !(v.is_null() || v.as_str() == Some("") || v.as_array().is_some_and(Vec::is_empty)))
            .cloned()
    };
    FIELDS.iter().filter(|(_, p)| value(before, p) != value(after, p)).map(|(f, _)| f.to_string()).collect()
}

/// Refuses (403, naming the fields) a change of [`FIELDS`] by an identity
/// that may not create workspaces; a create is RBAC's alone.
pub(crate) async fn admit(
    state: &ServerState,
    id: &Identity,
    verb: &str,
    rt: &ResourceType,
    after: &Value,
    before: Option<&Value>,
) -> Result<(), ApiError> {
    let Some(before) = before else { return Ok(()) };
    let fields = changed(before, after);
    if fields.is_empty() {
        return Ok(());
    }
    // No name: a grant of some workspaces by name does not cover it.
    let creator = Attributes::write_of("create", rt, "", "");
    if authz::decide(state, id, &creator).await?.allowed {
        return Ok(());
    }
    let why = "only a platform admin (who may create workspaces) sets a workspace's resource group and queues; a workspace admin may change its members, display name and description";
    Err(refuse(id, verb, rt, after, &fields, why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_group_and_queues_are_found_changed_and_nothing_else() {
        let ws =
            json!({"spec": {"resourceGroup": "g", "queues": ["q1"], "members": [{"user": "alice", "role": "admin"}]}});
        let mut members = ws.clone();
        members["spec"]["members"] = json!([{"user": "alice", "role": "member"}, {"user": "bob", "role": "admin"}]);
        members["spec"]["description"] = json!("ours");
        assert!(changed(&ws, &members).is_empty(), "members and description are the workspace admin's");
        let mut group = ws.clone();
        group["spec"]["resourceGroup"] = json!("other");
        assert_eq!(changed(&ws, &group), ["spec.resourceGroup"]);
        let mut queues = ws.clone();
        queues["spec"]["queues"] = json!(["q1", "q2"]);
        queues["spec"].as_object_mut().map(|s| s.remove("resourceGroup"));
        assert_eq!(changed(&ws, &queues), ["spec.resourceGroup", "spec.queues"]);
        let bare = json!({"spec": {}});
        assert!(changed(&bare, &json!({"spec": {"queues": [], "resourceGroup": ""}})).is_empty(), "empty is absent");
    }
}
