//! "Only me" (seeds 003 and 004): a TrainingJob or Dataset whose
//! `spec.visibility` is `only-me` (the default) is its creator's. Another
//! member of the workspace gets 403 on a get, update, patch or delete of it,
//! and on a Run of such a job (creating one is running the job, patching
//! `spec.stop` stopping it): RBAC lets every member `edit` the namespace, so
//! this is the one rule the URL alone does not decide. Lists and watches
//! leave such objects out rather than refusing the whole list, as the seeds'
//! consoles show a member only the jobs she may open, and a member may still
//! list the workspace's shared ones. The creator, the workspace's admins
//! (its `spec.members` of role `admin`) and cluster admins (`system:masters`,
//! the scheduler and agents, which act on every job) are not held to it.
//!
//! The creator is the server's record, not the writer's claim: the
//! annotation [`CREATOR`] is set from the authenticated identity when the
//! object is created, carried over when a write leaves it out, and only a
//! cluster admin may change it.

use crate::authz::{forbidden, Attributes};
use crate::ServerState;
use ringleader_auth::identity::{Identity, APISERVER_USER, MASTERS_GROUP};
use ringleader_registry::resources::ResourceType;
use ringleader_registry::status::ApiError;
use ringleader_store::{ObjectKey, Selector};
use serde_json::Value;
use std::collections::HashSet;

/// Annotation naming the user who created a TrainingJob, Dataset or Run.
pub const CREATOR: &str = "platform.ringleader.io/creator";
const API: &str = "platform.ringleader.io/v1alpha1";
const GROUP: &str = "platform.ringleader.io";
const ONLY_ME: &str = "only-me";

/// Whether objects of `rt` are held to their visibility.
pub(crate) fn concerned(rt: &ResourceType) -> bool {
    rt.group == GROUP && matches!(rt.kind, "TrainingJob" | "Dataset" | "Run")
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn creator(o: &Value) -> Option<&str> {
    o.pointer("/metadata/annotations").and_then(|a| a.get(CREATOR)).and_then(Value::as_str)
}

/// The creator an only-me TrainingJob or Dataset is kept for (`None`: visible to the workspace).
fn owner_of_only_me(o: &Value) -> Option<&str> {
    let visibility = o.pointer("/spec/visibility").and_then(Value::as_str).unwrap_or(ONLY_ME);
    (visibility == ONLY_ME).then(|| creator(o).unwrap_or_default())
}

/// Identities that act on every object: cluster admins, the scheduler and
/// controllers, the node agents.
fn cluster_wide(id: &Identity) -> bool {
    id.in_group(MASTERS_GROUP) || id.is_scheduler() || id.node_name().is_some() || id.user == APISERVER_USER
}

/// Whether `user` is an admin of workspace `ws` (a member of role `admin`).
fn workspace_admin(workspace: &Value, user: &str) -> bool {
    workspace
        .pointer("/spec/members")
        .and_then(Value::as_array)
        .is_some_and(|m| m.iter().any(|m| s(m, "/user") == user && s(m, "/role") == "admin"))
}

async fn is_workspace_admin(state: &ServerState, id: &Identity, ns: &str) -> Result<bool, ApiError> {
    let key = ObjectKey::new(API, "Workspace", "", ns);
    let ws = state.blocking(move |s| s.get(&key)).await?;
    Ok(ws.is_some_and(|w| workspace_admin(&w.object, &id.user)))
}

/// The creator `object` (of `rt`) is kept for, when it is only-me: its own
/// for a TrainingJob or Dataset, its job's for a Run.
async fn kept_for(state: &ServerState, rt: &ResourceType, object: &Value) -> Result<Option<String>, ApiError> {
    if rt.kind != "Run" {
        return Ok(owner_of_only_me(object).map(str::to_string));
    }
    let key = ObjectKey::new(API, "TrainingJob", s(object, "/metadata/namespace"), s(object, "/spec/trainingJob"));
    let job = state.blocking(move |s| s.get(&key)).await?;
    Ok(job.and_then(|j| owner_of_only_me(&j.object).map(str::to_string)))
}

/// 403 unless `id` may `verb` `object` of `rt` (a no-op for other kinds).
pub(crate) async fn check(
    state: &ServerState,
    id: Option<&Identity>,
    verb: &str,
    rt: &ResourceType,
    object: &Value,
) -> Result<(), ApiError> {
    let Some(id) = id.filter(|id| concerned(rt) && !cluster_wide(id)) else { return Ok(()) };
    let Some(owner) = kept_for(state, rt, object).await? else { return Ok(()) };
    let ns = s(object, "/metadata/namespace");
    if owner == id.user || is_workspace_admin(state, id, ns).await? {
        return Ok(());
    }
    Err(refusal(id, verb, rt, object, &owner))
}

fn refusal(id: &Identity, verb: &str, rt: &ResourceType, object: &Value, owner: &str) -> ApiError {
    let (ns, name) = (s(object, "/metadata/namespace"), s(object, "/metadata/name"));
    let a = Attributes::write_of(verb, rt, ns, name);
    let what = if rt.kind == "Run" {
        format!("it is a run of trainingjob {:?}, whose spec.visibility is only-me", s(object, "/spec/trainingJob"))
    } else {
        "its spec.visibility is only-me".to_string()
    };
    forbidden(id, &a, &format!("{what}: only its creator {owner:?} and the workspace's admins may {verb} it"))
}

/// A write of `object` (create, update, patch or apply) by `id`, `before`
/// what it replaces: the writer may act on what was there (and, for a new
/// Run, on its job), and the creator annotation is the server's — set on a
/// create, carried over when left out, changed only by a cluster admin.
pub(crate) async fn admit_write(
    state: &ServerState,
    id: Option<&Identity>,
    verb: &str,
    rt: &ResourceType,
    object: &mut Value,
    before: Option<&Value>,
) -> Result<(), ApiError> {
    if !concerned(rt) {
        return Ok(());
    }
    match before {
        Some(b) => check(state, id, verb, rt, b).await?,
        // Creating a Run is running its job.
        None if rt.kind == "Run" => check(state, id, "create", rt, object).await?,
        None => {}
    }
    let recorded = match before {
        Some(b) => creator(b).map(str::to_string),
        None => id.map(|id| id.user.clone()),
    };
    let Some(recorded) = recorded else { return Ok(()) };
    let claimed = creator(object).map(str::to_string);
    let admin = id.is_some_and(cluster_wide);
    if before.is_some() && claimed.as_ref().is_some_and(|c| *c != recorded) && !admin {
        return Err(creator_refused(id, verb, rt, object, &recorded));
    }
    if claimed.is_none() || (before.is_none() && !admin) {
        set_creator(object, &recorded);
    }
    Ok(())
}

/// A patch of `before` into `patched` by `id`: the writer may act on it, and
/// the creator annotation stays as recorded (a cluster admin's aside).
pub(crate) async fn admit_patch(
    state: &ServerState,
    id: Option<&Identity>,
    verb: &str,
    rt: &ResourceType,
    before: &Value,
    patched: &Value,
) -> Result<(), ApiError> {
    if !concerned(rt) {
        return Ok(());
    }
    check(state, id, verb, rt, before).await?;
    match creator(before) {
        Some(recorded) if creator(patched) != Some(recorded) && !id.is_some_and(cluster_wide) => {
            Err(creator_refused(id, verb, rt, patched, recorded))
        }
        _ => Ok(()),
    }
}

fn creator_refused(id: Option<&Identity>, verb: &str, rt: &ResourceType, object: &Value, recorded: &str) -> ApiError {
    let id = id.cloned().unwrap_or_else(|| Identity::new("system:anonymous", Vec::<String>::new()));
    let (ns, name) = (s(object, "/metadata/namespace"), s(object, "/metadata/name"));
    let field = ringleader_api::path::key("metadata.annotations", CREATOR);
    let why = format!(
        "{field}: set by the API server to the user who created it ({recorded:?}); only a cluster admin may change it"
    );
    forbidden(&id, &Attributes::write_of(verb, rt, ns, name), &why)
}

fn set_creator(object: &mut Value, user: &str) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let annotations = meta.entry("annotations").or_insert_with(|| Value::Object(Default::default()));
    if !annotations.is_object() {
        *annotations = Value::Object(Default::default());
    }
    if let Some(a) = annotations.as_object_mut() {
        a.insert(CREATOR.to_string(), Value::String(user.to_string()));
    }
}

/// What a list or watch of a concerned kind leaves out for one identity.
pub(crate) struct Hidden {
    user: String,
    /// Namespaces whose workspace `user` administers: nothing hidden there.
    admin_of: HashSet<String>,
    /// For Runs: the (namespace, name) of only-me TrainingJobs not `user`'s.
    jobs: HashSet<(String, String)>,
    runs: bool,
}

impl Hidden {
    /// Whether `object` is left out.
    pub(crate) fn hides(&self, object: &Value) -> bool {
        let ns = s(object, "/metadata/namespace");
        if self.admin_of.contains(ns) {
            return false;
        }
        if self.runs {
            return self.jobs.contains(&(ns.to_string(), s(object, "/spec/trainingJob").to_string()));
        }
        owner_of_only_me(object).is_some_and(|owner| owner != self.user)
    }
}

/// The filter of a list or watch of `rt` in `ns` (all namespaces: `None`)
/// by `id`; `None` when nothing is hidden from it.
pub(crate) async fn hidden(
    state: &ServerState,
    id: Option<&Identity>,
    rt: &ResourceType,
    ns: Option<&str>,
) -> Result<Option<Hidden>, ApiError> {
    let Some(id) = id.filter(|id| concerned(rt) && !cluster_wide(id)) else { return Ok(None) };
    let user = id.user.clone();
    let ns = ns.map(str::to_string);
    let runs = rt.kind == "Run";
    let hidden = state
        .blocking(move |s| {
            let (workspaces, _) = s.list(&Selector::kind(API, "Workspace"))?;
            let admin_of: HashSet<String> = workspaces
                .iter()
                .filter(|w| workspace_admin(&w.object, &user))
                .map(|w| s_owned(&w.object, "/metadata/name"))
                .collect();
            let mut jobs = HashSet::new();
            if runs {
                let mut selector = Selector::kind(API, "TrainingJob");
                if let Some(ns) = &ns {
                    selector = selector.in_namespace(ns);
                }
                for j in s.list(&selector)?.0 {
                    if owner_of_only_me(&j.object).is_some_and(|o| o != user) {
                        jobs.insert((s_owned(&j.object, "/metadata/namespace"), s_owned(&j.object, "/metadata/name")));
                    }
                }
            }
            Ok(Hidden { user, admin_of, jobs, runs })
        })
        .await?;
    Ok(Some(hidden))
}

fn s_owned(v: &Value, pointer: &str) -> String {
    s(v, pointer).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hidden(user: &str, runs: bool, jobs: &[(&str, &str)], admin_of: &[&str]) -> Hidden {
        Hidden {
            user: user.into(),
            admin_of: admin_of.iter().map(|s| s.to_string()).collect(),
            jobs: jobs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
            runs,
        }
    }

    #[test]
    fn only_me_is_the_default_and_keeps_an_object_for_its_creator() {
        let job = |visibility: Option<&str>| {
            let mut j =
                json!({"metadata": {"namespace": "ws", "name": "j", "annotations": {CREATOR: "alice"}}, "spec": {}});
            if let Some(v) = visibility {
                j["spec"]["visibility"] = json!(v);
            }
            j
        };
        assert_eq!(owner_of_only_me(&job(None)), Some("alice"));
        assert_eq!(owner_of_only_me(&job(Some("only-me"))), Some("alice"));
        assert_eq!(owner_of_only_me(&job(Some("workspace"))), None);
        assert!(hidden("carol", false, &[], &[]).hides(&job(None)));
        assert!(!hidden("alice", false, &[], &[]).hides(&job(None)));
        assert!(!hidden("carol", false, &[], &["ws"]).hides(&job(None)), "a workspace admin sees it");
        assert!(!hidden("carol", false, &[], &[]).hides(&job(Some("workspace"))));
        let run = json!({"metadata": {"namespace": "ws", "name": "j-r1"}, "spec": {"trainingJob": "j"}});
        assert!(hidden("carol", true, &[("ws", "j")], &[]).hides(&run));
        assert!(!hidden("carol", true, &[("other", "j")], &[]).hides(&run));
    }

    #[test]
    fn workspace_admins_are_members_of_role_admin() {
        let ws = json!({"spec": {"members": [{"user": "dave", "role": "admin"}, {"user": "carol", "role": "member"}]}});
        assert!(workspace_admin(&ws, "dave"));
        assert!(!workspace_admin(&ws, "carol") && !workspace_admin(&ws, "eve"));
    }
}
