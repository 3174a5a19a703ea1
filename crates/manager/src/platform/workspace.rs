//! Workspaces: each maps onto the namespace of its name, where two
//! RoleBindings give its members the built-in ClusterRoles (`admin` for
//! the workspace's admins, `edit` for its members), so the API's RBAC is
//! the workspace boundary. Its queues are bound to it (`spec.workspace`); a
//! queue bound to another workspace fails it, naming that workspace.
//!
//! The Workspace and its queues are cluster-scoped, out of the namespace's
//! reach: a ClusterRole and ClusterRoleBinding of the workspace let its
//! people `get` exactly those objects, and its resource group, by name
//! (nothing they could list), so a member's console offers the workspace's
//! queues and the group's machines (a VIP job's) instead of asking for
//! names typed from memory. A second pair lets its admins `update` and
//! `patch` the Workspace itself (members, display name, description), by
//! name; its resource group and queues stay the platform admin's ([`editor`]).

use super::api::{QUEUE_API, RBAC_API};
use super::object::{key_of, name, owner_ref, status_op};
use crate::cache::{at, str_at};
use ringleader_api::kinds::namespace;
use ringleader_store::{ObjectKey, Op};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// RoleBinding of the workspace's admins (ClusterRole `admin`).
pub const ADMINS: &str = "platform:workspace-admins";
/// RoleBinding of the workspace's members (ClusterRole `edit`).
pub const MEMBERS: &str = "platform:workspace-members";

/// The RoleBinding `binding` of `ws` binding `cluster_role` to the users of `role`.
pub fn role_binding(ws: &Value, binding: &str, cluster_role: &str, role: &str) -> Value {
    let subjects = members(ws, Some(role));
    json!({
        "apiVersion": RBAC_API,
        "kind": "RoleBinding",
        "metadata": {"name": binding, "namespace": name(ws), "ownerReferences": owner_ref(ws)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
        "subjects": subjects,
    })
}

/// The workspace's members (of `role`, or all) as RBAC User subjects, each once.
fn members(ws: &Value, role: Option<&str>) -> Vec<Value> {
    let users: BTreeSet<&str> = at(ws, &["spec", "members"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| role.is_none_or(|r| m.get("role").and_then(Value::as_str) == Some(r)))
        .filter_map(|m| m.get("user").and_then(Value::as_str))
        .collect();
    users.into_iter().map(|u| json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": u})).collect()
}

/// The ClusterRole (and its ClusterRoleBinding) letting the people of workspace `ws` read it and its queues.
pub fn reader_name(ws: &str) -> String {
    format!("platform:workspace-reader:{ws}")
}

/// The ClusterRole and ClusterRoleBinding giving every member of `ws`
/// (either role) `get` of the Workspace, its resource group and `queues`,
/// by name. A rule without names would grant every object of its
/// resource, so a workspace without queues (or group) gets no such rule.
pub fn reader(ws: &Value, queues: &[&str]) -> [Value; 2] {
    let role = reader_name(name(ws));
    let mut rules = vec![json!({"apiGroups": ["platform.ringleader.io"], "resources": ["workspaces"],
                                "verbs": ["get"], "resourceNames": [name(ws)]})];
    if let Some(group) = str_at(ws, &["spec", "resourceGroup"]).filter(|g| !g.is_empty()) {
        rules.push(json!({"apiGroups": ["platform.ringleader.io"], "resources": ["resourcegroups"],
                          "verbs": ["get"], "resourceNames": [group]}));
    }
    if !queues.is_empty() {
        rules.push(json!({"apiGroups": ["scheduling.volcano.sh"], "resources": ["queues"],
                          "verbs": ["get"], "resourceNames": queues}));
    }
    let subjects = members(ws, None);
    [
        json!({"apiVersion": RBAC_API, "kind": "ClusterRole",
               "metadata": {"name": role, "ownerReferences": owner_ref(ws)}, "rules": rules}),
        json!({"apiVersion": RBAC_API, "kind": "ClusterRoleBinding",
               "metadata": {"name": role, "ownerReferences": owner_ref(ws)},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
               "subjects": subjects}),
    ]
}

/// The ClusterRole (and its ClusterRoleBinding) letting the admins of workspace `ws` edit it.
pub fn editor_name(ws: &str) -> String {
    format!("platform:workspace-editor:{ws}")
}

/// The ClusterRole and ClusterRoleBinding giving the admins of `ws` (role
/// `admin`) `update` and `patch` of that Workspace, by name: its display
/// name, description and members are theirs to keep. What it is made of —
/// its resource group and queues — stays the platform admin's: the API
/// refuses a change of those from anyone who may not create workspaces
/// (`ringleader-server`'s admission, `workspace_fields`), so this grant
/// cannot claim another group's machines or a queue. Being by name, it
/// reaches no other workspace (an admin cannot add himself elsewhere), and
/// it grants no `create` or `delete`.
pub fn editor(ws: &Value) -> [Value; 2] {
    let role = editor_name(name(ws));
    let rules = json!([{"apiGroups": ["platform.ringleader.io"], "resources": ["workspaces"],
                        "verbs": ["update", "patch"], "resourceNames": [name(ws)]}]);
    [
        json!({"apiVersion": RBAC_API, "kind": "ClusterRole",
               "metadata": {"name": role, "ownerReferences": owner_ref(ws)}, "rules": rules}),
        json!({"apiVersion": RBAC_API, "kind": "ClusterRoleBinding",
               "metadata": {"name": role, "ownerReferences": owner_ref(ws)},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
               "subjects": members(ws, Some("admin"))}),
    ]
}

/// Whether `want` (an RBAC object this controller writes) is already in `have` as written.
fn written(have: &[Value], want: &Value) -> bool {
    have.iter().find(|b| key_of(b) == key_of(want)).is_some_and(|h| {
        ["roleRef", "subjects", "rules"].iter().all(|f| h.get(f) == want.get(f))
            && at(h, &["metadata", "ownerReferences"]) == at(want, &["metadata", "ownerReferences"])
    })
}

/// Label naming the workspace a namespace was made for.
pub const WORKSPACE_LABEL: &str = "platform.ringleader.io/workspace";

/// The namespace made for `ws`.
pub fn workspace_namespace(ws: &Value) -> Value {
    let mut n = namespace::object(name(ws));
    n["metadata"]["labels"][WORKSPACE_LABEL] = json!(name(ws));
    n["metadata"]["ownerReferences"] = owner_ref(ws);
    n
}

fn queue_patch(queue: &str, workspace: Value) -> Op {
    Op::Patch {
        key: ObjectKey::new(QUEUE_API, "Queue", "", queue),
        patch: json!({"spec": {"workspace": workspace}}),
        expected: None,
    }
}

/// The writes that bring RoleBindings, the readers' ClusterRoles and
/// ClusterRoleBindings, queue bindings and workspace statuses in line with
/// the workspaces; `bindings` holds the RBAC objects there are now (all
/// three kinds).
pub fn decide(workspaces: &[Value], queues: &[Value], bindings: &[Value], namespaces: &[Value]) -> Vec<Op> {
    let existing: BTreeSet<&str> = workspaces.iter().map(name).collect();
    let mut claimed: BTreeMap<&str, String> = queues
        .iter()
        .filter_map(|q| {
            Some((name(q), str_at(q, &["spec", "workspace"]).filter(|w| existing.contains(w))?.to_string()))
        })
        .collect();
    let mut ops = Vec::new();
    for q in queues {
        if str_at(q, &["spec", "workspace"]).is_some_and(|w| !existing.contains(w)) {
            ops.push(queue_patch(name(q), Value::Null));
        }
    }
    for ws in workspaces {
        let ns = name(ws);
        // The workspace's namespace: made (owned by it, so it goes with it)
        // unless one of that name exists; nothing is written into one
        // being deleted.
        match namespaces.iter().find(|n| name(n) == ns) {
            None => ops.push(Op::Create(workspace_namespace(ws))),
            Some(n) if namespace::terminating(n) => {
                let message = format!("namespace {ns} is being deleted");
                ops.extend(status_op(ws, json!({"namespace": ns, "state": "failed", "message": message})));
                continue;
            }
            Some(_) => {}
        }
        for (binding, cluster_role, role) in [(ADMINS, "admin", "admin"), (MEMBERS, "edit", "member")] {
            let want = role_binding(ws, binding, cluster_role, role);
            if !written(bindings, &want) {
                ops.push(Op::Apply(want));
            }
        }
        let group = str_at(ws, &["spec", "resourceGroup"]);
        let listed: Vec<&str> = at(ws, &["spec", "queues"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut problems = Vec::new();
        let mut bound = Vec::new();
        for qn in &listed {
            let Some(q) = queues.iter().find(|q| name(q) == *qn) else {
                problems.push(format!("queue {qn} not found"));
                continue;
            };
            if let Some(other) = claimed.get(qn).filter(|o| o.as_str() != ns) {
                problems.push(format!("queue {qn} is already bound to workspace {other}"));
                continue;
            }
            let qg = str_at(q, &["spec", "resourceGroup"]);
            if let (Some(want), Some(have)) = (group, qg) {
                if want != have {
                    problems.push(format!("queue {qn} belongs to resource group {have}, not {want}"));
                    continue;
                }
            }
            claimed.insert(qn, ns.to_string());
            bound.push(*qn);
            if str_at(q, &["spec", "workspace"]) != Some(ns) {
                ops.push(queue_patch(qn, json!(ns)));
            }
        }
        // Only queues the workspace holds: one claimed by another stays theirs to read.
        for want in reader(ws, &bound).into_iter().chain(editor(ws)) {
            if !written(bindings, &want) {
                ops.push(Op::Apply(want));
            }
        }
        for q in queues.iter().filter(|q| str_at(q, &["spec", "workspace"]) == Some(ns)) {
            if !listed.contains(&name(q)) {
                ops.push(queue_patch(name(q), Value::Null));
            }
        }
        let (state, message) = if problems.is_empty() {
            ("ready", format!("namespace {ns}, {} queue(s)", listed.len()))
        } else {
            ("failed", problems.join("; "))
        };
        ops.extend(status_op(ws, json!({"namespace": ns, "state": state, "message": message})));
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(name: &str, queues: Value) -> Value {
        json!({"apiVersion": super::super::API, "kind": "Workspace",
               "metadata": {"name": name, "uid": format!("uid-{name}")},
               "spec": {"resourceGroup": "g", "queues": queues,
                        "members": [{"user": "alice", "role": "admin"}, {"user": "bob", "role": "member"},
                                    {"user": "carol", "role": "member"}]}})
    }

    fn queue(name: &str, group: &str, workspace: Option<&str>) -> Value {
        json!({"apiVersion": QUEUE_API, "kind": "Queue", "metadata": {"name": name},
               "spec": {"resourceGroup": group, "workspace": workspace}})
    }

    #[test]
    fn bindings_by_role_and_queues_bound() {
        let ops = decide(&[ws("team-a", json!(["q1"]))], &[queue("q1", "g", None)], &[], &[]);
        let made: Vec<&Value> = ops.iter().filter_map(|o| if let Op::Create(v) = o { Some(v) } else { None }).collect();
        assert_eq!(made.len(), 1, "the workspace's namespace: {ops:?}");
        assert_eq!((made[0]["kind"].as_str(), name(made[0])), (Some("Namespace"), "team-a"));
        assert_eq!(made[0]["metadata"]["ownerReferences"][0]["uid"], "uid-team-a", "it goes with the workspace");
        assert_eq!(made[0]["metadata"]["labels"][WORKSPACE_LABEL], "team-a");
        let namespaces = [made[0].clone()];
        let applied: Vec<&Value> =
            ops.iter().filter_map(|o| if let Op::Apply(v) = o { Some(v) } else { None }).collect();
        assert_eq!(
            applied.len(),
            6,
            "two RoleBindings, the reader's and editor's ClusterRoles and bindings: {applied:?}"
        );
        let role = applied
            .iter()
            .find(|o| name(o) == reader_name("team-a") && o["kind"] == "ClusterRole")
            .expect("reader role");
        assert_eq!(name(role), "platform:workspace-reader:team-a");
        assert_eq!(
            role["rules"],
            json!([{"apiGroups": ["platform.ringleader.io"], "resources": ["workspaces"], "verbs": ["get"], "resourceNames": ["team-a"]},
                   {"apiGroups": ["platform.ringleader.io"], "resources": ["resourcegroups"], "verbs": ["get"], "resourceNames": ["g"]},
                   {"apiGroups": ["scheduling.volcano.sh"], "resources": ["queues"], "verbs": ["get"], "resourceNames": ["q1"]}])
        );
        let readers = applied
            .iter()
            .find(|o| o["kind"] == "ClusterRoleBinding" && name(o) == reader_name("team-a"))
            .expect("reader binding");
        assert_eq!(readers["roleRef"]["name"], "platform:workspace-reader:team-a");
        let who: Vec<&Value> = readers["subjects"].as_array().expect("list").iter().map(|s| &s["name"]).collect();
        assert_eq!(who, [&json!("alice"), &json!("bob"), &json!("carol")], "every member, either role");
        assert_eq!(readers["metadata"]["ownerReferences"][0]["uid"], "uid-team-a", "it goes with the workspace");
        let admins = applied.iter().find(|b| name(b) == ADMINS).expect("admins");
        assert_eq!(admins["metadata"]["namespace"], "team-a");
        assert_eq!(admins["roleRef"]["name"], "admin");
        assert_eq!(
            admins["subjects"],
            json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}])
        );
        assert_eq!(admins["metadata"]["ownerReferences"][0]["uid"], "uid-team-a");
        let members = applied.iter().find(|b| name(b) == MEMBERS).expect("members");
        assert_eq!(members["roleRef"]["name"], "edit");
        let names: Vec<&Value> = members["subjects"].as_array().expect("list").iter().map(|s| &s["name"]).collect();
        assert_eq!(names, [&json!("bob"), &json!("carol")]);
        let patched = ops.iter().any(|o| {
            matches!(o, Op::Patch { key, patch, .. } if key.name == "q1" && patch == &json!({"spec": {"workspace": "team-a"}}))
        });
        assert!(patched, "{ops:?}");
        let status = ops.iter().find_map(|o| match o {
            Op::Patch { key, patch, .. } if key.kind == "Workspace" => Some(patch["status"].clone()),
            _ => None,
        });
        assert_eq!(status.as_ref().map(|s| &s["state"]), Some(&json!("ready")));

        // Once written, nothing more.
        let bindings: Vec<Value> = applied.into_iter().cloned().collect();
        let mut done = ws("team-a", json!(["q1"]));
        done["status"] = status.unwrap_or_default();
        assert!(decide(&[done], &[queue("q1", "g", Some("team-a"))], &bindings, &namespaces).is_empty());
    }

    #[test]
    fn the_workspace_s_admins_alone_may_edit_it_by_name() {
        let ops = decide(&[ws("team-a", json!(["q1"]))], &[queue("q1", "g", None)], &[], &[]);
        let applied = |kind: &str| {
            ops.iter()
                .find_map(|o| match o {
                    Op::Apply(v) if v["kind"] == kind && name(v) == editor_name("team-a") => Some(v.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("editor {kind}: {ops:?}"))
        };
        let role = applied("ClusterRole");
        // Only its own Workspace, and no verb that makes or removes one.
        assert_eq!(
            role["rules"],
            json!([{"apiGroups": ["platform.ringleader.io"], "resources": ["workspaces"],
                    "verbs": ["update", "patch"], "resourceNames": ["team-a"]}])
        );
        let binding = applied("ClusterRoleBinding");
        assert_eq!(binding["roleRef"]["name"], "platform:workspace-editor:team-a");
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]),
            "the admin, not bob or carol"
        );
        for o in [&role, &binding] {
            assert_eq!(o["metadata"]["ownerReferences"][0]["uid"], "uid-team-a", "it goes with the workspace");
        }
        // A member made admin is bound at the next pass.
        let mut promoted = ws("team-a", json!(["q1"]));
        promoted["spec"]["members"][1]["role"] = json!("admin");
        let again = decide(&[promoted], &[queue("q1", "g", Some("team-a"))], &[role, binding], &[]);
        let subjects = again.iter().find_map(|o| match o {
            Op::Apply(v) if v["kind"] == "ClusterRoleBinding" && name(v) == editor_name("team-a") => {
                Some(v["subjects"].clone())
            }
            _ => None,
        });
        let names: Vec<Value> = subjects
            .and_then(|s| s.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|s| s["name"].clone())
            .collect();
        assert_eq!(names, [json!("alice"), json!("bob")], "{again:?}");
    }

    #[test]
    fn nothing_is_written_into_a_workspace_namespace_being_deleted() {
        let mut going = namespace::object("team-a");
        going["status"]["phase"] = json!("Terminating");
        let ops = decide(&[ws("team-a", json!([]))], &[], &[], &[going]);
        assert!(!ops.iter().any(|o| matches!(o, Op::Apply(_) | Op::Create(_))), "{ops:?}");
        let failed = ops.iter().any(|o| {
            matches!(o, Op::Patch { key, patch, .. } if key.kind == "Workspace"
                && patch["status"]["message"] == "namespace team-a is being deleted")
        });
        assert!(failed, "{ops:?}");
    }

    #[test]
    fn a_queue_of_another_workspace_or_group_or_none_fails_the_workspace() {
        let queues = [queue("q1", "g", Some("team-b")), queue("q2", "other", None)];
        let ops = decide(&[ws("team-a", json!(["q1", "q2", "q3"])), ws("team-b", json!(["q1"]))], &queues, &[], &[]);
        let status = ops
            .iter()
            .find_map(|o| match o {
                Op::Patch { key, patch, .. } if key.kind == "Workspace" && key.name == "team-a" => {
                    Some(patch["status"].clone())
                }
                _ => None,
            })
            .expect("status");
        assert_eq!(status["state"], "failed");
        let msg = status["message"].as_str().unwrap_or_default();
        assert!(msg.contains("queue q1 is already bound to workspace team-b"), "{msg}");
        assert!(msg.contains("queue q2 belongs to resource group other, not g"), "{msg}");
        assert!(msg.contains("queue q3 not found"), "{msg}");
        assert!(!ops.iter().any(|o| matches!(o, Op::Patch { key, .. } if key.kind == "Queue")), "{ops:?}");
    }

    #[test]
    fn a_reader_is_granted_no_queue_the_workspace_does_not_hold() {
        // q1 is team-b's; a rule naming no queue would grant them all.
        let workspaces = [ws("team-a", json!(["q1"])), ws("team-b", json!(["q1"]))];
        let ops = decide(&workspaces, &[queue("q1", "g", Some("team-b"))], &[], &[]);
        let role = ops
            .iter()
            .find_map(|o| match o {
                Op::Apply(v) if v["kind"] == "ClusterRole" && name(v) == reader_name("team-a") => Some(v.clone()),
                _ => None,
            })
            .expect("reader role");
        let resources: Vec<&Value> = role["rules"].as_array().expect("rules").iter().map(|r| &r["resources"]).collect();
        assert_eq!(resources, [&json!(["workspaces"]), &json!(["resourcegroups"])], "no queue: {role}");
        assert_eq!(role["rules"][0]["resourceNames"], json!(["team-a"]));
    }

    #[test]
    fn a_queue_left_out_or_of_a_deleted_workspace_is_unbound() {
        let queues = [queue("q1", "g", Some("team-a")), queue("q2", "g", Some("gone"))];
        let ops = decide(&[ws("team-a", json!([]))], &queues, &[], &[]);
        for q in ["q1", "q2"] {
            let unbound = ops.iter().any(|o| {
                matches!(o, Op::Patch { key, patch, .. } if key.name == q && patch == &json!({"spec": {"workspace": null}}))
            });
            assert!(unbound, "{q}: {ops:?}");
        }
    }
}
