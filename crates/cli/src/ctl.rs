//! The kubectl-style commands over the API — `apply`, `describe`, `top nodes`
//! (`top pods|jobs` and the trend columns are in [`crate::top`]),
//! `explain`, `node stop|start|fault` (`get`, `logs`, `delete` and `version`
//! have modules of their own) — and what all of them share: the connection,
//! type names, and server refusals printed as kubectl prints them.

use crate::printer::emit;
use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use ringleader_server::{resolve, Client, ClientError, ResourceType};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Where the API is and who we are.
#[derive(Args, Clone, Debug)]
pub struct Conn {
    /// API server URL (default: the one `ringleader up` wrote into the data directory).
    #[arg(long, env = "RINGLEADER_SERVER", global = true)]
    pub server: Option<String>,
    /// Kubeconfig to connect with: its current context's server, CA and token
    /// (default: $KUBECONFIG, unless --data-dir or RINGLEADER_DATA_DIR is given).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// Data directory of `ringleader up` (its kubeconfig, or its token, CA and
    /// address, are read from it) [default: ringleader-data].
    #[arg(long, env = "RINGLEADER_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
}

/// The data directory used when none is given.
pub const DEFAULT_DATA_DIR: &str = "ringleader-data";

impl Conn {
    /// The data directory (given or default).
    pub fn data_dir(&self) -> PathBuf {
        self.data_dir.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR))
    }

    /// A client, from the first of: `--server` (with the data directory's
    /// token and CA); `--kubeconfig`; `$KUBECONFIG` when no data directory
    /// was named (ringleader's own setting wins over the generic one); the
    /// data directory's kubeconfig; its `server` file and token.
    pub fn client(&self) -> Result<Client> {
        let dir = self.data_dir();
        if let Some(url) = &self.server {
            return Ok(Client::from_data_dir(url, &dir)?);
        }
        if let Some(path) = &self.kubeconfig {
            return Ok(Client::from_kubeconfig(path)?);
        }
        if self.data_dir.is_none() {
            if let Some(path) = env_kubeconfig() {
                return Ok(Client::from_kubeconfig(&path)?);
            }
        }
        let own = ringleader_server::kubeconfig::path(&dir);
        if own.is_file() {
            return Ok(Client::from_kubeconfig(&own)?);
        }
        let url = std::fs::read_to_string(crate::up::server_file(&dir))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "http://127.0.0.1:8470".to_string());
        Ok(Client::from_data_dir(&url, &dir)?)
    }
}

/// The first existing file of `$KUBECONFIG` (a `:`-separated list, as
/// kubectl reads it; ringleader does not merge several).
fn env_kubeconfig() -> Option<PathBuf> {
    let list = std::env::var_os("KUBECONFIG")?;
    std::env::split_paths(&list).find(|p| !p.as_os_str().is_empty() && p.is_file())
}

#[derive(Args)]
pub struct ApplyArgs {
    /// Files or directories of YAML/JSON documents (`-` for stdin).
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub conn: Conn,
}

/// `describe TYPE NAME` or `describe TYPE/NAME`.
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

/// `explain JOB`: why a job is pending.
#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The job's name (any job kind).
    pub job: String,
    /// Namespace.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    #[command(flatten)]
    pub conn: Conn,
}

/// `top nodes|pods|jobs`.
#[derive(Args, Debug)]
pub struct TopArgs {
    /// `nodes` (devices, CPU, memory), `pods` (CPU, memory) or `jobs` (pods by phase),
    /// each with its last ten minutes from the server's history.
    #[arg(value_parser = ["nodes", "pods", "jobs"])]
    pub what: String,
    /// Namespace of `pods` and `jobs`.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
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

pub(crate) fn rt() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

pub(crate) fn types(name: &str) -> Result<Vec<&'static ResourceType>> {
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
            let results = client.apply_documents_from(&source, &body).await.map_err(server_error)?;
            for w in crate::validate::warning_lines(&source, &body) {
                eprintln!("{w}");
            }
            for r in results {
                let t = ringleader_server::resources::by_kind(&r.api_version, &r.kind);
                let name = t.map_or(r.kind.to_lowercase(), |t| t.singular.to_string());
                emit(&format!("{name}/{} {}\n", r.name, r.action))?;
            }
        }
        Ok(())
    })
}

/// A refusal by the server, printed as kubectl prints it:
/// `Error from server (NotFound): pods "x" not found`.
#[derive(Debug)]
pub struct ServerError {
    /// The Status reason (`NotFound`, `AlreadyExists`, `Invalid` …).
    pub reason: String,
    /// The Status message, then its field causes one per line.
    pub message: String,
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Error from server ({}): {}", self.reason, self.message)
    }
}

impl std::error::Error for ServerError {}

/// A client failure as the error the CLI reports: server refusals keep
/// their reason and field causes.
pub(crate) fn server_error(e: ClientError) -> anyhow::Error {
    let ClientError::Status { status, message, reason, .. } = &e else { return anyhow!(e) };
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
    let message = if causes.is_empty() { message.clone() } else { format!("{message}\n{}", causes.join("\n")) };
    if reason.is_empty() {
        return anyhow!(message);
    }
    anyhow::Error::new(ServerError { reason: reason.clone(), message })
}

/// The stderr line of a failed command: kubectl's `Error from server (…)` or `error: …`.
pub fn error_line(e: &anyhow::Error) -> String {
    match e.downcast_ref::<ServerError>() {
        Some(server) => server.to_string(),
        None => format!("error: {e:#}"),
    }
}

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

// Ages are the server Table's, so `describe` and `get` agree.
pub(crate) use ringleader_server::table::{human_duration, since};

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

/// Who reported an event.
pub(crate) fn source(e: &Value) -> &str {
    match s(e, "/source/component") {
        "" => s(e, "/reportingComponent"),
        c => c,
    }
}

/// A table as text, header first, no newline after the last row.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    crate::printer::table_text(Some(&header), rows).trim_end_matches('\n').to_string()
}

/// Prints rows aligned as kubectl does.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    println!("{}", table(header, rows));
}

fn split_name(args: &DescribeArgs) -> Result<(String, String)> {
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
            Err(e) => return Err(server_error(e)),
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

pub fn describe(args: DescribeArgs) -> Result<()> {
    let client = args.conn.client()?;
    let (kind, name) = split_name(&args)?;
    let types = types(&kind)?;
    rt()?.block_on(async {
        let pod_t = ringleader_server::resources::PODS;
        let event_t = ringleader_server::resources::EVENTS;
        let mut missing = None;
        for t in &types {
            // A node is described from ringleader's own Node (profile, devices), as `top nodes` reads it.
            let t = if t.kind == "Node" { ringleader_server::resources::NODES } else { t };
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
                let podgroup = match ringleader_server::resources::find("podgroups") {
                    Some(pg_t) => client.get(pg_t, ns, &name).await.ok(),
                    None => None,
                };
                crate::describe::job(t, &v, &pods_of(&pods, &v), podgroup.as_ref(), &events, now)
            } else {
                match t.kind {
                    "Pod" => crate::describe::pod(&v, &events, now),
                    "Node" => {
                        let pods = client.list(pod_t, None, None).await.map_err(server_error)?.items;
                        crate::describe::node(&v, &pods, &events, now)
                    }
                    _ => crate::describe::other(t, &v, &events, now),
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

async fn pending_reason(client: &Client, ns: &str, job: &str) -> Option<String> {
    let t = ringleader_server::resources::find("podgroups")?;
    let pg = client.get(t, ns, job).await.ok()?;
    pg.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| s(c, "/type") == "Unschedulable")
        .map(|c| s(c, "/message").to_string())
}

pub fn explain(args: ExplainArgs) -> Result<()> {
    let client = args.conn.client()?;
    let name = args.job.clone();
    rt()?.block_on(async {
        let (t, job) = find_job(&client, &args.namespace, &name).await?;
        let phase = s(&job, "/status/ringleader/phase");
        let why = match pending_reason(&client, &args.namespace, &name).await {
            Some(r) => format!("pending: {r}"),
            None if phase.is_empty() || phase == "Pending" => "waiting for the next scheduling pass".to_string(),
            None => "not pending: every pod is bound".to_string(),
        };
        let phase = if phase.is_empty() { "Pending" } else { phase };
        emit(&format!("{} {}/{}: {phase}\n{why}\n", t.kind, args.namespace, name))
    })
}

/// `top nodes`: per-device allocation, and CPU and memory with their trend.
pub fn top_nodes(args: TopArgs) -> Result<()> {
    use crate::top;
    let client = args.conn.client()?;
    rt()?.block_on(async {
        // ringleader's own Nodes (profile, devices), whatever `nodes` names on the command line.
        let node_t = ringleader_server::resources::NODES;
        let pod_t = ringleader_server::resources::PODS;
        let nodes = client.list(node_t, None, None).await.map_err(server_error)?.items;
        let pods = client.list(pod_t, None, None).await.map_err(server_error)?.items;
        let held = crate::describe::held_devices(&pods);
        let history = crate::top::read_history(&client, "node/").await;
        let mut rows = Vec::new();
        for n in &nodes {
            let name = s(n, "/metadata/name");
            let Some(profile) = ringleader_topology::builtin(s(n, "/spec/profile")) else { continue };
            let unhealthy = crate::describe::device_list(n, "/status/unhealthyDevices");
            let (map, used) = crate::describe::device_map(name, profile, &unhealthy, &held);
            let mut holders: Vec<&str> =
                held.iter().filter(|((nn, _), _)| nn == name).map(|(_, (_, p))| p.as_str()).collect();
            holders.dedup();
            let [cpu, cpu_trend, spark] = crate::top::trend_cells(&history, &format!("node/{name}/cpu"), top::cores);
            let [memory, ..] = crate::top::trend_cells(&history, &format!("node/{name}/memory"), top::mebibytes);
            rows.push(vec![
                name.to_string(),
                profile.name.to_string(),
                format!("{used}/{}", profile.devices.len()),
                format!("[{map}]"),
                holders.join(","),
                cpu,
                memory,
                cpu_trend,
                spark,
            ]);
        }
        let header = [
            "NODE",
            "PROFILE",
            "DEVICES",
            "MAP (#=allocated x=unhealthy)",
            "PODS",
            "CPU",
            "MEMORY",
            "CPU 10m (min/avg/max)",
            "CPU TREND",
        ];
        emit(&(table(&header, &rows) + "\n"))
    })
}

pub fn node(args: NodeArgs) -> Result<()> {
    let client = args.conn.client()?;
    // The writable ringleader.io Node (a core v1 Node view is read-only).
    let t = ringleader_server::resources::NODES;
    rt()?.block_on(async {
        let (name, patch) = match &args.action {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn event(ns: &str, kind: &str, name: &str, reason: &str, last: &str, version: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Event",
               "metadata": {"name": format!("{name}.abc"), "namespace": ns, "resourceVersion": version},
               "involvedObject": {"kind": kind, "name": name}, "type": "Normal", "reason": reason,
               "message": format!("{reason} of {name} "), "count": 2,
               "firstTimestamp": "2026-11-23T09:00:00Z", "lastTimestamp": last,
               "source": {"component": "ringleader-scheduler"}})
    }

    #[test]
    fn events_sort_oldest_first_by_last_occurrence_then_write_order() {
        let mut events = vec![
            event("default", "PyTorchJob", "demo", "PyTorchJobCreated", "2026-11-23T09:59:55Z", "9"),
            event("default", "Pod", "demo-master-0", "Scheduled", "2026-11-23T09:55:00Z", "7"),
            event("team", "PodGroup", "demo", "Unschedulable", "2026-11-23T09:55:00Z", "3"),
        ];
        sort_events(&mut events);
        let order: Vec<&str> = events.iter().map(|e| s(e, "/involvedObject/kind")).collect();
        assert_eq!(order, ["PodGroup", "Pod", "PyTorchJob"]);
        assert_eq!(source(&events[0]), "ringleader-scheduler");
    }

    #[test]
    fn server_refusals_print_as_kubectl_prints_them() {
        let status = |code: u16, reason: &str, message: &str, causes: Value| ClientError::Status {
            code,
            reason: reason.into(),
            message: message.into(),
            status: json!({"kind": "Status", "details": {"causes": causes}}),
        };
        let e = server_error(status(404, "NotFound", r#"pods "x" not found"#, json!([])));
        assert_eq!(error_line(&e), r#"Error from server (NotFound): pods "x" not found"#);
        let causes = json!([{"field": "spec.replicas", "message": "Invalid value: -1"}]);
        let e = server_error(status(422, "Invalid", r#"Pod "x" is invalid"#, causes));
        assert_eq!(
            error_line(&e),
            "Error from server (Invalid): Pod \"x\" is invalid\n  spec.replicas: Invalid value: -1"
        );
        let e = server_error(status(502, "", "HTTP 502: bad gateway", Value::Null));
        assert_eq!(error_line(&e), "error: HTTP 502: bad gateway");
        assert_eq!(error_line(&anyhow!("-o x: unknown")), "error: -o x: unknown");
    }
}
