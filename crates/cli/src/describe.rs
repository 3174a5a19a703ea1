//! `describe TYPE NAME`: an object as kubectl describes it — its fields,
//! conditions, pods and events — rendered by [`render`].

mod render;

use crate::printer::emit;
use crate::support::{rt, s, server_error, types, Conn};
use anyhow::{bail, Result};
use clap::Args;
use serde_json::Value;

#[derive(Args, Debug)]
pub struct DescribeArgs {
    /// Resource type (pod, node, pytorchjob, jobs …) or TYPE/NAME.
    pub resource: String,
    /// Name.
    pub name: Option<String>,
    /// Namespace.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    #[command(flatten)]
    pub conn: Conn,
}
fn split_name(args: &DescribeArgs) -> Result<(String, String)> {
    match (&args.name, args.resource.split_once('/')) {
        (Some(n), _) => Ok((args.resource.clone(), n.clone())),
        (None, Some((k, n))) => Ok((k.to_string(), n.to_string())),
        (None, None) => bail!("name: required (`TYPE NAME` or `TYPE/NAME`)"),
    }
}
fn pods_of<'a>(pods: &'a [Value], job: &Value) -> Vec<&'a Value> {
    let uid = s(job, "/metadata/uid");
    pods.iter()
        .filter(|p| {
            p.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|r| s(r, "/uid") == uid))
        })
        .collect()
}

pub fn run(args: DescribeArgs) -> Result<()> {
    let client = args.conn.client()?;
    let (kind, name) = split_name(&args)?;
    let types = types(&kind)?;
    rt()?.block_on(async {
        let pod_t = ringleader_registry::resources::PODS;
        let event_t = ringleader_registry::resources::EVENTS;
        let mut missing = None;
        for t in &types {
            // A node is described from ringleader's own Node (profile, devices), as `top nodes` reads it.
            let t = if t.kind == "Node" { ringleader_registry::resources::NODES } else { t };
            let ns = if t.namespaced { args.namespace.as_str() } else { "" };
            let v = match client.get(t, ns, &name).await {
                Ok(v) => v,
                Err(e) if e.is_not_found() => {
                    missing.get_or_insert(e);
                    continue;
                }
                Err(e) => return Err(server_error(e)),
            };
            // Events of cluster-scoped objects are filed under `default`,
            // where Kubernetes puts node events: look everywhere for them.
            let events_ns = if t.namespaced { Some(ns) } else { None };
            let events = client.list(event_t, events_ns, None).await.map_err(server_error)?.items;
            let now = ringleader_api::time::now();
            let text = if t.job {
                let pods = client.list(pod_t, Some(ns), None).await.map_err(server_error)?.items;
                let podgroup = match ringleader_registry::resources::find("podgroups") {
                    Some(pg_t) => client.get(pg_t, ns, &name).await.ok(),
                    None => None,
                };
                render::job(t, &v, &pods_of(&pods, &v), podgroup.as_ref(), &events, now)
            } else {
                match t.kind {
                    "Pod" => render::pod(&v, &events, now),
                    "Node" => {
                        let pods = client.list(pod_t, None, None).await.map_err(server_error)?.items;
                        render::node(&v, &pods, &events, now)
                    }
                    _ => render::other(t, &v, &events, now),
                }
            };
            return emit(&text);
        }
        match missing {
            Some(e) => Err(server_error(e)),
            None => bail!("{kind} {name:?} not found in namespace {}", args.namespace),
        }
    })
}
