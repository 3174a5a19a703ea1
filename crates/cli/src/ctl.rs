//! The kubectl-style commands over the API: `apply`, `get`, `describe`,
//! `logs`, `delete`, `top nodes`, `explain`, `node stop|start|fault`.

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use futures_util::StreamExt;
use ringleader_server::{resolve, Client, ClientError, ResourceType};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

/// Where the API is and who we are.
#[derive(Args, Clone, Debug)]
pub struct Conn {
    /// API server URL (default: the one `ringleader up` wrote into the data directory).
    #[arg(long, env = "RINGLEADER_SERVER", global = true)]
    pub server: Option<String>,
    /// Data directory of `ringleader up` (its token and address are read from it).
    #[arg(long, env = "RINGLEADER_DATA_DIR", default_value = "ringleader-data", global = true)]
    pub data_dir: PathBuf,
}

impl Conn {
    pub fn client(&self) -> Result<Client> {
        let url = match &self.server {
            Some(u) => u.clone(),
            None => std::fs::read_to_string(crate::up::server_file(&self.data_dir))
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "http://127.0.0.1:8470".to_string()),
        };
        Ok(Client::from_data_dir(&url, &self.data_dir)?)
    }
}

#[derive(Args)]
pub struct ApplyArgs {
    /// Files or directories of YAML/JSON documents (`-` for stdin).
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args)]
pub struct GetArgs {
    /// jobs, pods, nodes, queues, podgroups, events, configmaps, or any kind/plural/short name.
    pub resource: String,
    /// One object by name.
    pub name: Option<String>,
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// All namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// wide, yaml or json.
    #[arg(short = 'o', long)]
    pub output: Option<String>,
    /// Label selector (`a=b,c!=d`).
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    /// Keep printing changes.
    #[arg(short = 'w', long)]
    pub watch: bool,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args)]
pub struct NamedArgs {
    /// Resource type (for `logs`: the pod name).
    pub resource: String,
    /// Name.
    pub name: Option<String>,
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// Follow (logs).
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Last lines only (logs).
    #[arg(long)]
    pub tail: Option<u64>,
    /// Grace period in seconds (delete).
    #[arg(long)]
    pub grace_period: Option<u64>,
    #[command(flatten)]
    pub conn: Conn,
}

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
}

fn rt() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

fn types(name: &str) -> Result<Vec<&'static ResourceType>> {
    resolve(name).ok_or_else(|| {
        anyhow!("unknown resource type {name:?}: use jobs, pods, nodes, queues, podgroups, events, configmaps or a kind name")
    })
}

pub fn apply(args: ApplyArgs) -> Result<()> {
    let client = args.conn.client()?;
    let mut sources = Vec::new();
    for f in &args.files {
        if f.as_os_str() == "-" {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
            sources.push(("-".to_string(), s));
        } else if f.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(f)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json"))
                .collect();
            entries.sort();
            for p in entries {
                sources.push((p.display().to_string(), std::fs::read_to_string(&p)?));
            }
        } else {
            sources
                .push((f.display().to_string(), std::fs::read_to_string(f).with_context(|| f.display().to_string())?));
        }
    }
    rt()?.block_on(async {
        for (source, body) in sources {
            let results = client.apply_documents_from(&source, &body).await.map_err(explain_status)?;
            for r in results {
                let t = ringleader_server::resources::by_kind(&r.api_version, &r.kind);
                let name = t.map_or(r.kind.to_lowercase(), |t| t.singular.to_string());
                println!("{name}/{} {}", r.name, r.action);
            }
        }
        Ok(())
    })
}

/// A server refusal with its field causes, one per line.
fn explain_status(e: ClientError) -> anyhow::Error {
    if let ClientError::Status { status, message, .. } = &e {
        let causes: Vec<String> = status
            .pointer("/details/causes")
            .and_then(Value::as_array)
            .map(|c| {
                c.iter()
                    .map(|c| {
                        format!(
                            "  {}: {}",
                            c.get("field").and_then(Value::as_str).unwrap_or(""),
                            c.get("message").and_then(Value::as_str).unwrap_or("")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if !causes.is_empty() {
            return anyhow!("{message}\n{}", causes.join("\n"));
        }
    }
    anyhow!(e)
}

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

fn age(v: &Value) -> String {
    let Some(t) =
        v.pointer("/metadata/creationTimestamp").and_then(Value::as_str).and_then(ringleader_api::time::parse_rfc3339)
    else {
        return "<unknown>".into();
    };
    let d = (ringleader_api::time::now() - t).max(0.0) as u64;
    match d {
        0..=119 => format!("{d}s"),
        120..=7199 => format!("{}m", d / 60),
        7200..=172_799 => format!("{}h", d / 3600),
        _ => format!("{}d", d / 86400),
    }
}

/// Columns of one object in `get`'s table.
fn row(t: &ResourceType, v: &Value, wide: bool, all_ns: bool) -> Vec<String> {
    let mut r = Vec::new();
    if all_ns && t.namespaced {
        r.push(s(v, "/metadata/namespace").to_string());
    }
    r.push(s(v, "/metadata/name").to_string());
    match t.kind {
        "Pod" => {
            let phase = s(v, "/status/phase");
            let deleting = v.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null());
            let status = if deleting {
                "Terminating"
            } else if phase.is_empty() {
                "Pending"
            } else {
                phase
            };
            let ready = if phase == "Running" { "1/1" } else { "0/1" };
            r.extend([ready.to_string(), status.to_string(), age(v)]);
            if wide {
                r.push(nonempty(s(v, "/status/podIP")));
                r.push(nonempty(s(v, "/spec/nodeName")));
                r.push(nonempty(s(v, "/metadata/annotations/ringleader.io~1devices")));
            }
        }
        "Node" => {
            let ready = match v.pointer("/status/ready").and_then(Value::as_bool) {
                Some(false) => "NotReady",
                _ if v.pointer("/spec/stopped").and_then(Value::as_bool) == Some(true) => "Stopped",
                Some(true) => "Ready",
                None => "Unknown",
            };
            r.extend([ready.to_string(), s(v, "/spec/profile").to_string(), s(v, "/spec/address").to_string(), age(v)]);
            if wide {
                let list = |p: &str| {
                    v.pointer(p)
                        .and_then(Value::as_array)
                        .map_or(String::new(), |a| a.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","))
                };
                r.push(nonempty(&list("/status/unhealthyDevices")));
                r.push(nonempty(&list("/status/networkUnhealthyDevices")));
            }
        }
        "PodGroup" => {
            r.extend([
                nonempty(s(v, "/status/phase")),
                v.pointer("/spec/minMember").map_or("-".into(), |m| m.to_string()),
                nonempty(s(v, "/spec/queue")),
                age(v),
            ]);
        }
        "Queue" => {
            r.extend([
                v.pointer("/spec/weight").map_or("1".into(), |w| w.to_string()),
                match s(v, "/status/state") {
                    "" => "Open".to_string(),
                    state => state.to_string(),
                },
                age(v),
            ]);
        }
        "Event" => {
            r.extend([
                s(v, "/type").to_string(),
                s(v, "/reason").to_string(),
                format!("{}/{}", s(v, "/involvedObject/kind"), s(v, "/involvedObject/name")),
                s(v, "/message").to_string(),
            ]);
        }
        _ if t.job => {
            let phase = match s(v, "/status/ringleader/phase") {
                "" => "Pending",
                p => p,
            };
            r.extend([t.kind.to_string(), phase.to_string(), age(v)]);
            if wide {
                r.push(s(v, "/status/ringleader/reason").to_string());
            }
        }
        _ => r.push(age(v)),
    }
    r
}

fn nonempty(x: &str) -> String {
    if x.is_empty() {
        "-".into()
    } else {
        x.to_string()
    }
}

fn header(t: &ResourceType, wide: bool, all_ns: bool) -> Vec<&'static str> {
    let mut h = Vec::new();
    if all_ns && t.namespaced {
        h.push("NAMESPACE");
    }
    h.push("NAME");
    match t.kind {
        "Pod" => {
            h.extend(["READY", "STATUS", "AGE"]);
            if wide {
                h.extend(["IP", "NODE", "DEVICES"]);
            }
        }
        "Node" => {
            h.extend(["STATUS", "PROFILE", "ADDRESS", "AGE"]);
            if wide {
                h.extend(["UNHEALTHY", "NETWORK-UNHEALTHY"]);
            }
        }
        "PodGroup" => h.extend(["PHASE", "MINMEMBER", "QUEUE", "AGE"]),
        "Queue" => h.extend(["WEIGHT", "STATE", "AGE"]),
        "Event" => h.extend(["TYPE", "REASON", "OBJECT", "MESSAGE"]),
        _ if t.job => {
            h.extend(["KIND", "STATUS", "AGE"]);
            if wide {
                h.push("REASON");
            }
        }
        _ => h.push("AGE"),
    }
    h
}

/// Prints rows aligned as kubectl does (columns padded by 3 spaces).
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(c.len());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let n = cells.len();
        let mut out = String::new();
        for (i, c) in cells.into_iter().enumerate() {
            if i + 1 == n {
                out.push_str(c);
            } else {
                out.push_str(&format!("{c:<w$}   ", w = widths[i]));
            }
        }
        println!("{}", out.trim_end());
    };
    line(header.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
}

fn print_objects(items: &[Value], output: Option<&str>) -> Result<()> {
    let value =
        if items.len() == 1 { items[0].clone() } else { json!({"apiVersion": "v1", "kind": "List", "items": items}) };
    match output {
        Some("json") => println!("{}", serde_json::to_string_pretty(&value)?),
        _ => print!("{}", serde_yaml_ng::to_string(&value)?),
    }
    Ok(())
}

pub fn get(args: GetArgs) -> Result<()> {
    let client = args.conn.client()?;
    let types = types(&args.resource)?;
    let wide = args.output.as_deref() == Some("wide");
    let structured = matches!(args.output.as_deref(), Some("yaml" | "json"));
    if let Some(o) = args.output.as_deref() {
        if !matches!(o, "wide" | "yaml" | "json") {
            bail!("-o {o}: allowed are wide, yaml, json");
        }
    }
    rt()?.block_on(async {
        let mut all_items = Vec::new();
        let mut version = 0;
        for t in &types {
            let ns = if !t.namespaced || args.all_namespaces { None } else { Some(args.namespace.as_str()) };
            let items = match &args.name {
                Some(name) => match client.get(t, ns.unwrap_or(""), name).await {
                    Ok(v) => vec![v],
                    Err(e) if e.is_not_found() && types.len() > 1 => vec![],
                    Err(e) => return Err(explain_status(e)),
                },
                None => {
                    let list = client.list(t, ns, args.selector.as_deref()).await.map_err(explain_status)?;
                    version = version.max(list.resource_version);
                    list.items
                }
            };
            all_items.extend(items.into_iter().map(|v| (*t, v)));
        }
        if args.name.is_some() && all_items.is_empty() {
            bail!(
                "{} {:?} not found in namespace {}",
                args.resource,
                args.name.as_deref().unwrap_or(""),
                args.namespace
            );
        }
        if structured {
            let items: Vec<Value> = all_items.into_iter().map(|(_, v)| v).collect();
            return print_objects(&items, args.output.as_deref());
        }
        let t0 = types[0];
        let rows: Vec<Vec<String>> = all_items.iter().map(|(t, v)| row(t, v, wide, args.all_namespaces)).collect();
        if rows.is_empty() && !args.watch {
            println!("No resources found{}.", if args.all_namespaces { "" } else { " in this namespace" });
            return Ok(());
        }
        let header = header(t0, wide, args.all_namespaces);
        print_table(&header, &rows);
        if !args.watch {
            return Ok(());
        }
        let mut streams = Vec::new();
        for t in &types {
            let ns = if !t.namespaced || args.all_namespaces { None } else { Some(args.namespace.as_str()) };
            let stream = client.watch(t, ns, Some(version)).await.map_err(explain_status)?;
            streams.push(stream.map(move |e| (*t, e)));
        }
        let mut merged = futures_util::stream::select_all(streams);
        while let Some((t, event)) = merged.next().await {
            let event = event.map_err(explain_status)?;
            let mut r = row(t, &event.object, wide, args.all_namespaces);
            if event.event_type == "DELETED" {
                r.push("(deleted)".into());
            }
            println!("{}", r.join("   "));
            std::io::stdout().flush()?;
        }
        Ok(())
    })
}

pub fn logs(args: NamedArgs) -> Result<()> {
    let client = args.conn.client()?;
    let pod = args.name.clone().unwrap_or(args.resource.clone());
    let pod = pod.strip_prefix("pod/").unwrap_or(&pod).to_string();
    rt()?.block_on(async {
        let mut stream = client.logs(&args.namespace, &pod, args.follow, args.tail).await.map_err(explain_status)?;
        let mut out = std::io::stdout();
        while let Some(chunk) = stream.next().await {
            out.write_all(&chunk.map_err(explain_status)?)?;
            out.flush()?;
        }
        Ok(())
    })
}

pub fn delete(args: NamedArgs) -> Result<()> {
    let client = args.conn.client()?;
    let (kind, name) = split_name(&args)?;
    let types = types(&kind)?;
    rt()?.block_on(async {
        for t in &types {
            let ns = if t.namespaced { args.namespace.as_str() } else { "" };
            match client.delete(t, ns, &name, args.grace_period).await {
                Ok(_) => {
                    println!("{}/{name} deleted", t.singular);
                    return Ok(());
                }
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(explain_status(e)),
            }
        }
        bail!("{kind} {name:?} not found in namespace {}", args.namespace)
    })
}

fn split_name(args: &NamedArgs) -> Result<(String, String)> {
    match (&args.name, args.resource.split_once('/')) {
        (Some(n), _) => Ok((args.resource.clone(), n.clone())),
        (None, Some((k, n))) => Ok((k.to_string(), n.to_string())),
        (None, None) => bail!("name: required (`TYPE NAME` or `TYPE/NAME`)"),
    }
}

/// The job object of a name, whatever its kind.
async fn find_job(client: &Client, ns: &str, name: &str) -> Result<(&'static ResourceType, Value)> {
    for t in ringleader_server::resources::job_types() {
        match client.get(t, ns, name).await {
            Ok(v) => return Ok((t, v)),
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(explain_status(e)),
        }
    }
    bail!("no job named {name:?} in namespace {ns}")
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

pub fn describe(args: NamedArgs) -> Result<()> {
    let client = args.conn.client()?;
    let (kind, name) = split_name(&args)?;
    let types = types(&kind)?;
    rt()?.block_on(async {
        let pod_t = ringleader_server::resources::find("pods").ok_or_else(|| anyhow!("pods type"))?;
        for t in &types {
            let ns = if t.namespaced { args.namespace.as_str() } else { "" };
            let v = match client.get(t, ns, &name).await {
                Ok(v) => v,
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(explain_status(e)),
            };
            println!("Name:         {}", s(&v, "/metadata/name"));
            if t.namespaced {
                println!("Namespace:    {}", s(&v, "/metadata/namespace"));
            }
            println!("Kind:         {} ({})", t.kind, t.api_version);
            println!("Created:      {}", s(&v, "/metadata/creationTimestamp"));
            if let Some(labels) = v.pointer("/metadata/labels").and_then(Value::as_object) {
                let l: Vec<String> = labels.iter().map(|(k, x)| format!("{k}={}", x.as_str().unwrap_or(""))).collect();
                println!("Labels:       {}", l.join(", "));
            }
            if t.job {
                println!("Status:       {} {}", s(&v, "/status/ringleader/phase"), s(&v, "/status/ringleader/message"));
                let pods = client.list(pod_t, Some(ns), None).await.map_err(explain_status)?.items;
                println!("Pods:");
                let mut rows = Vec::new();
                for p in pods_of(&pods, &v) {
                    rows.push(row(pod_t, p, true, false));
                }
                print_table(&header(pod_t, true, false), &rows);
                if let Some(reason) = pending_reason(&client, ns, &name).await {
                    println!("Pending because: {reason}");
                }
            } else {
                if let Some(spec) = v.get("spec") {
                    println!("Spec:\n{}", indent(&serde_yaml_ng::to_string(spec)?));
                }
                if let Some(st) = v.get("status") {
                    println!("Status:\n{}", indent(&serde_yaml_ng::to_string(st)?));
                }
            }
            return Ok(());
        }
        bail!("{kind} {name:?} not found in namespace {}", args.namespace)
    })
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

async fn pending_reason(client: &Client, ns: &str, job: &str) -> Option<String> {
    let t = ringleader_server::resources::find("podgroups")?;
    let pg = client.get(t, ns, job).await.ok()?;
    pg.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| s(c, "/type") == "Unschedulable")
        .map(|c| s(c, "/message").to_string())
}

pub fn explain(args: NamedArgs) -> Result<()> {
    let client = args.conn.client()?;
    let name = args.name.clone().unwrap_or(args.resource.clone());
    rt()?.block_on(async {
        let (t, job) = find_job(&client, &args.namespace, &name).await?;
        let phase = s(&job, "/status/ringleader/phase");
        println!("{} {}/{}: {}", t.kind, args.namespace, name, if phase.is_empty() { "Pending" } else { phase });
        match pending_reason(&client, &args.namespace, &name).await {
            Some(r) => println!("pending: {r}"),
            None if phase.is_empty() || phase == "Pending" => println!("waiting for the next scheduling pass"),
            None => println!("not pending: every pod is bound"),
        }
        Ok(())
    })
}

pub fn top_nodes(conn: Conn) -> Result<()> {
    let client = conn.client()?;
    rt()?.block_on(async {
        let node_t = ringleader_server::resources::find("nodes").ok_or_else(|| anyhow!("nodes type"))?;
        let pod_t = ringleader_server::resources::find("pods").ok_or_else(|| anyhow!("pods type"))?;
        let nodes = client.list(node_t, None, None).await.map_err(explain_status)?.items;
        let pods = client.list(pod_t, None, None).await.map_err(explain_status)?.items;
        let mut held: BTreeMap<(String, u32), String> = BTreeMap::new();
        for p in &pods {
            if matches!(s(p, "/status/phase"), "Succeeded" | "Failed") {
                continue;
            }
            let node = s(p, "/spec/nodeName");
            for d in s(p, "/metadata/annotations/ringleader.io~1devices").split(',').filter_map(|d| d.parse().ok()) {
                held.insert((node.to_string(), d), s(p, "/metadata/name").to_string());
            }
        }
        let mut rows = Vec::new();
        for n in &nodes {
            let name = s(n, "/metadata/name");
            let Some(profile) = ringleader_topology::builtin(s(n, "/spec/profile")) else { continue };
            let unhealthy: Vec<u64> = n
                .pointer("/status/unhealthyDevices")
                .and_then(Value::as_array)
                .map_or(vec![], |a| a.iter().filter_map(Value::as_u64).collect());
            let mut map = String::new();
            let mut used = 0;
            for d in &profile.devices {
                let c = if unhealthy.contains(&u64::from(d.id)) {
                    'x'
                } else if held.contains_key(&(name.to_string(), d.id)) {
                    used += 1;
                    '#'
                } else {
                    '.'
                };
                map.push(c);
            }
            let mut holders: Vec<&str> =
                held.iter().filter(|((nn, _), _)| nn == name).map(|(_, p)| p.as_str()).collect();
            holders.dedup();
            rows.push(vec![
                name.to_string(),
                profile.name.to_string(),
                format!("{used}/{}", profile.devices.len()),
                format!("[{map}]"),
                holders.join(","),
            ]);
        }
        print_table(&["NODE", "PROFILE", "DEVICES", "MAP (#=allocated x=unhealthy)", "PODS"], &rows);
        Ok(())
    })
}

pub fn node(args: NodeArgs) -> Result<()> {
    let client = args.conn.client()?;
    let t = ringleader_server::resources::find("nodes").ok_or_else(|| anyhow!("nodes type"))?;
    rt()?.block_on(async {
        let (name, patch) = match &args.action {
            NodeAction::Stop { node } => (node, json!({"spec": {"stopped": true}})),
            NodeAction::Start { node } => (node, json!({"spec": {"stopped": false}})),
            NodeAction::Fault { node, device, kind } => {
                let v = client.get(t, "", node).await.map_err(explain_status)?;
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
        client.patch_merge(t, "", name, &patch).await.map_err(explain_status)?;
        println!("node/{name} patched");
        Ok(())
    })
}
