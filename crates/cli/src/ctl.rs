//! The kubectl-style commands over the API: `apply`, `get`, `describe`,
//! `logs`, `delete`, `top nodes`, `explain`, `node stop|start|fault`.

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use futures_util::StreamExt;
use ringleader_server::{resolve, Client, ClientError, ResourceType};
use serde_json::{json, Value};
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

/// A duration as kubectl prints ages (apimachinery's `HumanDuration`):
/// `45s`, `3m20s`, `25m`, `5h12m`, `3d4h`, `1y30d`.
pub(crate) fn human_duration(secs: f64) -> String {
    let s = secs as i64;
    if s < -1 {
        return "<invalid>".into();
    }
    let s = s.max(0);
    if s < 120 {
        return format!("{s}s");
    }
    let (minutes, hours) = (s / 60, s / 3600);
    let with = |big: i64, unit: &str, small: i64, small_unit: &str| {
        if small == 0 {
            format!("{big}{unit}")
        } else {
            format!("{big}{unit}{small}{small_unit}")
        }
    };
    match hours {
        _ if minutes < 10 => with(minutes, "m", s % 60, "s"),
        _ if minutes < 180 => format!("{minutes}m"),
        0..=7 => with(hours, "h", minutes % 60, "m"),
        8..=47 => format!("{hours}h"),
        48..=191 => with(hours / 24, "d", hours % 24, "h"),
        192..=17_519 => format!("{}d", hours / 24),
        17_520..=70_079 => with(hours / 24 / 365, "y", (hours / 24) % 365, "d"),
        _ => format!("{}y", hours / 24 / 365),
    }
}

/// The age of an RFC 3339 stamp at `now`; `<unknown>` when there is none.
pub(crate) fn since(stamp: &str, now: f64) -> String {
    match ringleader_api::time::parse_rfc3339(stamp) {
        Some(t) => human_duration(now - t),
        None => "<unknown>".into(),
    }
}

fn age(v: &Value, now: f64) -> String {
    since(s(v, "/metadata/creationTimestamp"), now)
}

/// `kind/name` of an event's object, as kubectl shows it.
pub(crate) fn involved(e: &Value) -> String {
    format!("{}/{}", s(e, "/involvedObject/kind").to_ascii_lowercase(), s(e, "/involvedObject/name"))
}

/// When an event last happened (Unix seconds; 0 when it does not say).
fn last_seen(e: &Value) -> f64 {
    ["/lastTimestamp", "/eventTime", "/firstTimestamp", "/metadata/creationTimestamp"]
        .iter()
        .find_map(|p| ringleader_api::time::parse_rfc3339(s(e, p)))
        .unwrap_or(0.0)
}

/// Events oldest first, by last occurrence (ties in write order).
pub(crate) fn sort_events(events: &mut [Value]) {
    let version = |e: &Value| s(e, "/metadata/resourceVersion").parse::<u64>().unwrap_or(0);
    events.sort_by(|a, b| last_seen(a).total_cmp(&last_seen(b)).then_with(|| version(a).cmp(&version(b))));
}

/// kubectl's `get events` columns.
fn event_row(v: &Value, wide: bool, all_ns: bool, now: f64) -> Vec<String> {
    let mut r = Vec::new();
    if all_ns {
        r.push(s(v, "/metadata/namespace").to_string());
    }
    let last = ["/lastTimestamp", "/eventTime", "/firstTimestamp"].iter().map(|p| s(v, p)).find(|t| !t.is_empty());
    r.push(last.map_or("<unknown>".to_string(), |t| since(t, now)));
    r.extend([s(v, "/type").to_string(), s(v, "/reason").to_string(), involved(v)]);
    if wide {
        r.push(source(v).to_string());
    }
    r.push(s(v, "/message").trim().to_string());
    if wide {
        r.push(match s(v, "/firstTimestamp") {
            "" => "<unknown>".to_string(),
            t => since(t, now),
        });
        r.push(v.get("count").and_then(Value::as_u64).unwrap_or(1).to_string());
        r.push(s(v, "/metadata/name").to_string());
    }
    r
}

/// Who reported an event.
pub(crate) fn source(e: &Value) -> &str {
    match s(e, "/source/component") {
        "" => s(e, "/reportingComponent"),
        c => c,
    }
}

/// Columns of one object in `get`'s table.
pub(crate) fn row(t: &ResourceType, v: &Value, wide: bool, all_ns: bool, now: f64) -> Vec<String> {
    if t.kind == "Event" {
        return event_row(v, wide, all_ns, now);
    }
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
            r.extend([ready.to_string(), status.to_string(), age(v, now)]);
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
            r.extend([
                ready.to_string(),
                s(v, "/spec/profile").to_string(),
                s(v, "/spec/address").to_string(),
                age(v, now),
            ]);
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
                age(v, now),
            ]);
        }
        "Queue" => {
            r.extend([
                v.pointer("/spec/weight").map_or("1".into(), |w| w.to_string()),
                match s(v, "/status/state") {
                    "" => "Open".to_string(),
                    state => state.to_string(),
                },
                age(v, now),
            ]);
        }
        _ if t.job => {
            let phase = match s(v, "/status/ringleader/phase") {
                "" => "Pending",
                p => p,
            };
            r.extend([t.kind.to_string(), phase.to_string(), age(v, now)]);
            if wide {
                r.push(s(v, "/status/ringleader/reason").to_string());
            }
        }
        _ => r.push(age(v, now)),
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

pub(crate) fn header(t: &ResourceType, wide: bool, all_ns: bool) -> Vec<&'static str> {
    if t.kind == "Event" {
        let mut h = if all_ns { vec!["NAMESPACE"] } else { vec![] };
        h.extend(["LAST SEEN", "TYPE", "REASON", "OBJECT"]);
        if wide {
            h.push("SOURCE");
        }
        h.push("MESSAGE");
        if wide {
            h.extend(["FIRST SEEN", "COUNT", "NAME"]);
        }
        return h;
    }
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

/// Widths of a table's columns: the widest of header and rows.
pub(crate) fn column_widths(header: &[&str], rows: &[Vec<String>]) -> Vec<usize> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
    }
    widths
}

/// One line of a table: every cell but the last padded to its column and
/// 3 spaces, as kubectl does. Cells wider than their column (a row that
/// came later, under `-w`) push the rest right rather than being cut.
pub(crate) fn table_line<S: AsRef<str>>(cells: &[S], widths: &[usize]) -> String {
    let n = cells.len();
    let mut out = String::new();
    for (i, c) in cells.iter().enumerate() {
        let c = c.as_ref();
        if i + 1 == n {
            out.push_str(c);
        } else {
            let w = widths.get(i).copied().unwrap_or(0);
            out.push_str(c);
            out.extend(std::iter::repeat_n(' ', w.saturating_sub(c.chars().count()) + 3));
        }
    }
    out.trim_end().to_string()
}

/// A table as text, one line per row, header first.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let widths = column_widths(header, rows);
    let mut out = table_line(header, &widths);
    for r in rows {
        out.push('\n');
        out.push_str(&table_line(r, &widths));
    }
    out
}

/// Prints rows aligned as kubectl does (columns padded by 3 spaces).
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    println!("{}", table(header, rows));
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
        if t0.kind == "Event" {
            let mut events: Vec<Value> = all_items.drain(..).map(|(_, v)| v).collect();
            sort_events(&mut events);
            all_items = events.into_iter().map(|v| (t0, v)).collect();
        }
        let now = ringleader_api::time::now();
        let rows: Vec<Vec<String>> = all_items.iter().map(|(t, v)| row(t, v, wide, args.all_namespaces, now)).collect();
        if rows.is_empty() && !args.watch {
            println!("No resources found{}.", if args.all_namespaces { "" } else { " in this namespace" });
            return Ok(());
        }
        let header = header(t0, wide, args.all_namespaces);
        print_table(&header, &rows);
        if !args.watch {
            return Ok(());
        }
        // Later rows keep the columns of the first table, as kubectl does.
        let widths = column_widths(&header, &rows);
        let mut streams = Vec::new();
        for t in &types {
            let ns = if !t.namespaced || args.all_namespaces { None } else { Some(args.namespace.as_str()) };
            let stream = client.watch(t, ns, Some(version)).await.map_err(explain_status)?;
            streams.push(stream.map(move |e| (*t, e)));
        }
        let mut merged = futures_util::stream::select_all(streams);
        while let Some((t, event)) = merged.next().await {
            let event = event.map_err(explain_status)?;
            let mut r = row(t, &event.object, wide, args.all_namespaces, ringleader_api::time::now());
            if event.event_type == "DELETED" {
                r.push("(deleted)".into());
            }
            println!("{}", table_line(&r, &widths));
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
        let pod_t = ringleader_server::resources::PODS;
        let event_t = ringleader_server::resources::EVENTS;
        for t in &types {
            let ns = if t.namespaced { args.namespace.as_str() } else { "" };
            let v = match client.get(t, ns, &name).await {
                Ok(v) => v,
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(explain_status(e)),
            };
            // Events of cluster-scoped objects are filed under `default`,
            // where Kubernetes puts node events: look everywhere for them.
            let events_ns = if t.namespaced { Some(ns) } else { None };
            let events = client.list(event_t, events_ns, None).await.map_err(explain_status)?.items;
            let now = ringleader_api::time::now();
            let text = if t.job {
                let pods = client.list(pod_t, Some(ns), None).await.map_err(explain_status)?.items;
                let podgroup = match ringleader_server::resources::find("podgroups") {
                    Some(pg_t) => client.get(pg_t, ns, &name).await.ok(),
                    None => None,
                };
                crate::describe::job(t, &v, &pods_of(&pods, &v), podgroup.as_ref(), &events, now)
            } else {
                match t.kind {
                    "Pod" => crate::describe::pod(&v, &events, now),
                    "Node" => {
                        let pods = client.list(pod_t, None, None).await.map_err(explain_status)?.items;
                        crate::describe::node(&v, &pods, &events, now)
                    }
                    _ => crate::describe::other(t, &v, &events, now),
                }
            };
            print!("{text}");
            return Ok(());
        }
        bail!("{kind} {name:?} not found in namespace {}", args.namespace)
    })
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
        let held = crate::describe::held_devices(&pods);
        let mut rows = Vec::new();
        for n in &nodes {
            let name = s(n, "/metadata/name");
            let Some(profile) = ringleader_topology::builtin(s(n, "/spec/profile")) else { continue };
            let unhealthy = crate::describe::device_list(n, "/status/unhealthyDevices");
            let (map, used) = crate::describe::device_map(name, profile, &unhealthy, &held);
            let mut holders: Vec<&str> =
                held.iter().filter(|((nn, _), _)| nn == name).map(|(_, (_, p))| p.as_str()).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-23T10:00:00Z.
    const NOW: f64 = 1_795_428_000.0;

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        let cases = [
            (-5.0, "<invalid>"),
            (-1.0, "0s"),
            (0.0, "0s"),
            (45.0, "45s"),
            (119.0, "119s"),
            (120.0, "2m"),
            (200.0, "3m20s"),
            (600.0, "10m"),
            (10_799.0, "179m"),
            (10_800.0, "3h"),
            (5.0 * 3600.0 + 12.0 * 60.0, "5h12m"),
            (8.0 * 3600.0 + 59.0, "8h"),
            (47.0 * 3600.0, "47h"),
            (48.0 * 3600.0, "2d"),
            (76.0 * 3600.0, "3d4h"),
            (8.0 * 86_400.0, "8d"),
            (2.0 * 365.0 * 86_400.0, "2y"),
            (2.0 * 365.0 * 86_400.0 + 30.0 * 86_400.0, "2y30d"),
            (9.0 * 365.0 * 86_400.0, "9y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(secs), want, "{secs} s");
        }
        assert_eq!(since("2026-11-23T09:57:00Z", NOW), "3m");
        assert_eq!(since("", NOW), "<unknown>");
    }

    fn event(ns: &str, kind: &str, name: &str, reason: &str, last: &str, version: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Event",
               "metadata": {"name": format!("{name}.abc"), "namespace": ns, "resourceVersion": version},
               "involvedObject": {"kind": kind, "name": name}, "type": "Normal", "reason": reason,
               "message": format!("{reason} of {name} "), "count": 2,
               "firstTimestamp": "2026-11-23T09:00:00Z", "lastTimestamp": last,
               "source": {"component": "ringleader-scheduler"}})
    }

    fn events_table(events: &[Value], wide: bool, all_ns: bool) -> String {
        let mut events = events.to_vec();
        sort_events(&mut events);
        let rows: Vec<Vec<String>> = events.iter().map(|e| row(resources::EVENTS, e, wide, all_ns, NOW)).collect();
        table(&header(resources::EVENTS, wide, all_ns), &rows)
    }

    use ringleader_server::resources;

    #[test]
    fn events_are_listed_oldest_first_with_kubectl_columns() {
        let events = vec![
            event("default", "PyTorchJob", "demo", "PyTorchJobCreated", "2026-11-23T09:59:55Z", "9"),
            event("default", "Pod", "demo-master-0", "Scheduled", "2026-11-23T09:55:00Z", "7"),
            event("team", "PodGroup", "demo", "Unschedulable", "2026-11-23T09:55:00Z", "3"),
        ];
        assert_eq!(
            events_table(&events, false, false),
            "LAST SEEN   TYPE     REASON              OBJECT              MESSAGE\n\
             5m          Normal   Unschedulable       podgroup/demo       Unschedulable of demo\n\
             5m          Normal   Scheduled           pod/demo-master-0   Scheduled of demo-master-0\n\
             5s          Normal   PyTorchJobCreated   pytorchjob/demo     PyTorchJobCreated of demo"
        );
        let wide = events_table(&events[..1], true, true);
        assert_eq!(
            wide,
            "NAMESPACE   LAST SEEN   TYPE     REASON              OBJECT            SOURCE                 MESSAGE                     FIRST SEEN   COUNT   NAME\n\
             default     5s          Normal   PyTorchJobCreated   pytorchjob/demo   ringleader-scheduler   PyTorchJobCreated of demo   60m          2       demo.abc"
        );
        // No timestamps at all: still a row.
        let bare = json!({"kind": "Event", "metadata": {"name": "x"}});
        assert_eq!(row(resources::EVENTS, &bare, false, false, NOW), ["<unknown>", "", "", "/", ""]);
    }

    #[test]
    fn watched_rows_keep_the_columns_of_the_first_table() {
        let header = ["NAME", "STATUS", "AGE"];
        let rows = vec![vec!["demo-master-0".to_string(), "Pending".into(), "1s".into()]];
        let widths = column_widths(&header, &rows);
        assert_eq!(table(&header, &rows), "NAME            STATUS    AGE\ndemo-master-0   Pending   1s");
        let later = ["demo-worker-10".to_string(), "Running".into(), "5s".into()];
        assert_eq!(table_line(&later, &widths), "demo-worker-10   Running   5s", "wider: pushed, not cut");
        let short = ["a", "Succeeded", "9s", "(deleted)"];
        assert_eq!(table_line(&short, &widths), "a               Succeeded   9s    (deleted)");
        assert_eq!(table_line(&["x", "Running", "2s"], &widths), "x               Running   2s");
    }
}
