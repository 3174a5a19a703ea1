//! The platform controller's pass: every reconciler run over the cache in
//! dependency order, and the uids of what owns the objects they made.

use super::api::{API, NODE_API, QUEUE_API, RBAC_API};
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
    let ops = resource_group::decide(
        &objects(cache, API, "ResourceGroup"),
        &objects(cache, NODE_API, "Node"),
        &objects(cache, API, "PlatformNode"),
    );
    write(store, cache, ops)?;
    let ops = quota::decide(
        &objects(cache, QUEUE_API, "Queue"),
        &objects(cache, API, "ResourceGroup"),
        &objects(cache, NODE_API, "Node"),
    );
    write(store, cache, ops)?;
    let bindings = objects(cache, RBAC_API, "RoleBinding");
    let namespaces = objects(cache, namespace::API_VERSION, namespace::KIND);
    let ops = workspace::decide(
        &objects(cache, API, "Workspace"),
        &objects(cache, QUEUE_API, "Queue"),
        &bindings,
        &namespaces,
    );
    write(store, cache, ops)?;
    let ops = storage::decide(&objects(cache, API, "StorageMount"), &objects(cache, NODE_API, "Node"));
    write(store, cache, ops)?;
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
