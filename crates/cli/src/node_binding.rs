//! `node adopt|bind|unbind|remove` (seed 004 节点: 纳管, 绑定, 解绑, 移除):
//! the platform's node list through PlatformNodes. Each is one API write a
//! user could make with kubectl; the platform controller binds or unbinds
//! and says how it went in the PlatformNode's status.

use crate::printer::emit;
use crate::support::server_error;
use anyhow::{Context, Result};
use ringleader_client::Client;
use ringleader_registry::resources::PLATFORM_NODES;
use serde_json::{json, Value};

/// A PlatformNode of source `adopted` (纳管), bound to `group` if given.
pub fn adopted(node: &str, group: Option<&str>) -> Value {
    json!({"apiVersion": PLATFORM_NODES.api_version, "kind": PLATFORM_NODES.kind,
           "metadata": {"name": node},
           "spec": {"source": "adopted", "resourceGroup": group}})
}

/// Brings an existing node into the platform's node list.
pub async fn adopt(client: &Client, node: &str, group: Option<&str>) -> Result<()> {
    client.create(PLATFORM_NODES, "", &adopted(node, group)).await.map_err(server_error)?;
    let to = group.map_or(String::new(), |g| format!(", binding to resource group {g}"));
    emit(&format!("platformnode/{node} adopted{to}\n"))
}

/// Binds nodes to `group`, or unbinds them (`None`), one write each; the
/// first refusal stops the rest and names the node.
pub async fn bind(client: &Client, nodes: &[String], group: Option<&str>) -> Result<()> {
    for node in nodes {
        let patch = json!({"spec": {"resourceGroup": group}});
        client
            .patch_merge(PLATFORM_NODES, "", node, &patch)
            .await
            .map_err(server_error)
            .with_context(|| format!("platformnode/{node}"))?;
        match group {
            Some(g) => emit(&format!("platformnode/{node} binding to resource group {g}\n"))?,
            None => emit(&format!("platformnode/{node} unbinding\n"))?,
        }
    }
    Ok(())
}

/// Removes adopted, unbound nodes from the platform's node list (the
/// machines themselves stay).
pub async fn remove(client: &Client, nodes: &[String]) -> Result<()> {
    for node in nodes {
        client
            .delete(PLATFORM_NODES, "", node, None)
            .await
            .map_err(server_error)
            .with_context(|| format!("platformnode/{node}"))?;
        emit(&format!("platformnode/{node} removed\n"))?;
    }
    Ok(())
}
