//! `node stop|start|fault`: power a virtual node off and on, and inject or
//! clear device faults, through the writable ringleader.io Node;
//! `node adopt|bind|unbind|remove`: the platform's node list
//! ([`crate::node_binding`]).

use crate::printer::emit;
use crate::support::{rt, server_error, Conn};
use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::{json, Value};

#[derive(Args)]
pub struct NodeArgs {
    #[command(subcommand)]
    pub action: NodeAction,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Subcommand)]
pub enum NodeAction {
    /// Power a virtual node off: its processes die, heartbeats stop.
    Stop { node: String },
    /// Power it back on.
    Start { node: String },
    /// Inject or clear a device fault.
    Fault {
        node: String,
        #[arg(long)]
        device: u32,
        #[arg(long, value_parser = ["unhealthy", "network", "recover"])]
        kind: String,
    },
    /// Adopt (纳管) an existing node into the platform's node list, bound to a resource group.
    Adopt {
        node: String,
        #[arg(long = "resource-group", short = 'g')]
        resource_group: Option<String>,
    },
    /// Bind nodes of the node list to a resource group.
    Bind {
        #[arg(required = true)]
        nodes: Vec<String>,
        #[arg(long = "resource-group", short = 'g')]
        resource_group: String,
    },
    /// Unbind nodes from their resource group (the machines stay in the node list).
    Unbind {
        #[arg(required = true)]
        nodes: Vec<String>,
    },
    /// Remove adopted, unbound nodes from the node list (only 纳管 nodes may be removed).
    Remove {
        #[arg(required = true)]
        nodes: Vec<String>,
    },
}
pub fn run(args: NodeArgs) -> Result<()> {
    let client = args.conn.client()?;
    // The writable ringleader.io Node (a core v1 Node view is read-only).
    let t = ringleader_registry::resources::NODES;
    rt()?.block_on(async {
        let (name, patch) = match &args.action {
            NodeAction::Adopt { node, resource_group } => {
                return crate::node_binding::adopt(&client, node, resource_group.as_deref()).await
            }
            NodeAction::Bind { nodes, resource_group } => {
                return crate::node_binding::bind(&client, nodes, Some(resource_group)).await
            }
            NodeAction::Unbind { nodes } => return crate::node_binding::bind(&client, nodes, None).await,
            NodeAction::Remove { nodes } => return crate::node_binding::remove(&client, nodes).await,
            NodeAction::Stop { node } => (node, json!({"spec": {"stopped": true}})),
            NodeAction::Start { node } => (node, json!({"spec": {"stopped": false}})),
            NodeAction::Fault { node, device, kind } => {
                let v = client.get(t, "", node).await.map_err(server_error)?;
                let list = |p: &str| -> Vec<u64> {
                    v.pointer(p)
                        .and_then(Value::as_array)
                        .map_or(vec![], |a| a.iter().filter_map(Value::as_u64).collect())
                };
                let (mut bad, mut net) = (list("/spec/injectedFaults/unhealthy"), list("/spec/injectedFaults/network"));
                let d = u64::from(*device);
                match kind.as_str() {
                    "unhealthy" => bad.push(d),
                    "network" => net.push(d),
                    _ => {
                        bad.retain(|x| *x != d);
                        net.retain(|x| *x != d);
                    }
                }
                bad.sort_unstable();
                bad.dedup();
                net.sort_unstable();
                net.dedup();
                (node, json!({"spec": {"injectedFaults": {"unhealthy": bad, "network": net}}}))
            }
        };
        client.patch_merge(t, "", name, &patch).await.map_err(server_error)?;
        emit(&format!("node/{name} patched\n"))
    })
}
