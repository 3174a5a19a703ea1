//! The platform controller's pass: every reconciler run over the cache in
//! dependency order, and the uids of what owns the objects they made.

use super::api::{API, GROUP_LABEL, NODE_API, QUEUE_API, RBAC_API};
use super::object::objects;
use super::{check, quota, resource_group, run, script, storage, workspace};
use crate::cache::{str_at, Cache};
use crate::writes::write;
use crate::ManagerError;
use ringleader_api::kinds::namespace;
use ringleader_store::Backend;

/// Kinds of the platform group that own what the controller makes.
const OWNER_KINDS: &[&str] = &["Workspace", "ResourceGroup", "TrainingJob", "Run", "ScriptRun", "StorageMount"];

/// One pass of every platform reconciler, in dependency order: groups label
/// nodes before quotas read them, workspaces bind queues before runs check
/// them.
pub fn pass(store: &dyn Backend, cache: &mut Cache, now: f64) -> Result<(), ManagerError> {
    // Nodes are copied only for the reconcilers that have something to
    // decide: a cluster of thousands of nodes and no platform objects (a
    // plain `up`) would otherwise copy every Node three times a pass.
    let groups = objects(cache, API, "ResourceGroup");
    let platform_nodes = objects(cache, API, "PlatformNode");
    let nodes = if groups.is_empty() && platform_nodes.is_empty() {
        // Without groups only a label left by a deleted one matters.
        cache
            .of_kind(NODE_API, "Node")
            .filter(|n| {
                n.object.get("metadata").and_then(|m| m.get("labels")).and_then(|l| l.get(GROUP_LABEL)).is_some()
            })
            .map(|n| n.object.clone())
            .collect()
    } else {
        objects(cache, NODE_API, "Node")
    };
    let ops = resource_group::decide(&groups, &nodes, &platform_nodes);
    write(store, cache, ops)?;
    let queues = objects(cache, QUEUE_API, "Queue");
    // Only a queue with a quota gets a capability written.
    if queues.iter().any(|q| q.pointer("/spec/quota").is_some_and(serde_json::Value::is_object)) {
        let ops = quota::decide(&queues, &objects(cache, API, "ResourceGroup"), &objects(cache, NODE_API, "Node"));
        write(store, cache, ops)?;
    }
    // The cluster's own ClusterRoles are none of the workspaces' business.
    let ours = [workspace::reader_name(""), workspace::editor_name("")];
    let bindings: Vec<_> = objects(cache, RBAC_API, "RoleBinding")
        .into_iter()
        .chain(["ClusterRole", "ClusterRoleBinding"].into_iter().flat_map(|k| {
            cache
                .of_kind(RBAC_API, k)
                .filter(|o| {
                    str_at(&o.object, &["metadata", "name"])
                        .is_some_and(|n| ours.iter().any(|p| n.starts_with(p.as_str())))
                })
                .map(|o| o.object.clone())
        }))
        .collect();
    let namespaces = objects(cache, namespace::API_VERSION, namespace::KIND);
    let ops = workspace::decide(
        &objects(cache, API, "Workspace"),
        &objects(cache, QUEUE_API, "Queue"),
        &bindings,
        &namespaces,
    );
    write(store, cache, ops)?;
    let mounts = objects(cache, API, "StorageMount");
    if !mounts.is_empty() {
        let ops = storage::decide(&mounts, &objects(cache, NODE_API, "Node"));
        write(store, cache, ops)?;
    }
    let ops = run::pass_ops(cache, now);
    write(store, cache, ops)?;
    let ops = script::pass_ops(cache, now);
    write(store, cache, ops)?;
    let ops = check::pass_ops(cache, now);
    write(store, cache, ops)
}

/// Uids of the platform objects that own others: the garbage collector
/// must not take what they made for orphans.
pub fn owner_uids(cache: &Cache) -> Vec<String> {
    OWNER_KINDS
        .iter()
        .flat_map(|k| cache.of_kind(API, k))
        .filter_map(|o| str_at(&o.object, &["metadata", "uid"]).map(str::to_string))
        .chain(check::owner_uids(cache))
        .collect()
}
