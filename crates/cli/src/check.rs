//! `ringleader check`: one-click checks as CheckRun objects. `check
//! server|network|collective --nodes a,b` creates one (and with `--wait`
//! prints its report); `list` is the history, newest last; `report NAME`
//! prints or exports (`-o json|csv`) one; `rerun`, `terminate` and `delete`
//! act on one. The manager runs the probes and writes the report.

use crate::printer::emit;
use crate::support::{print_table, rt, server_error, Conn};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use ringleader_api::kinds::check::{CheckRunStatus, API_VERSION, KIND};
use ringleader_client::Client;
use ringleader_registry::resources;
use ringleader_server::ResourceType;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct CheckArgs {
    #[command(subcommand)]
    pub action: CheckAction,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Subcommand)]
pub enum CheckAction {
    /// CPU, memory, load, driver and chip health of each node (consistency against --baseline).
    Server(NewArgs),
    /// Bandwidth and latency from the first node to each other (TCP, labelled as such).
    Network(NewArgs),
    /// all_reduce, all_gather, reduce_scatter, all_to_all: the nccl-tests table per operation.
    Collective(NewArgs),
    /// Every check, oldest first.
    List,
    /// One check's report (`-o json|csv` to export).
    Report {
        name: String,
        /// table, json or csv.
        #[arg(short, long, default_value = "table")]
        output: String,
    },
    /// Run a check again with the same spec (a new CheckRun).
    Rerun {
        name: String,
        /// Wait for it and print its report.
        #[arg(long)]
        wait: bool,
        /// Seconds to wait at most.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
    },
    /// Stop a running check: its probe pods are stopped, its phase becomes Terminated.
    Terminate { name: String },
    /// Delete a check (and its probe pods).
    Delete { name: String },
}

#[derive(Args)]
pub struct NewArgs {
    /// Nodes to check, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    nodes: Vec<String>,
    /// Collective: operations, comma-separated (all_reduce, all_gather, reduce_scatter, all_to_all).
    #[arg(long, value_delimiter = ',')]
    ops: Vec<String>,
    /// Collective: ranks (devices) per node.
    #[arg(long)]
    devices_per_node: Option<u32>,
    /// Smallest message (4096, 4KiB, 1MiB …).
    #[arg(long)]
    min_bytes: Option<String>,
    /// Collective: largest message; sizes double from --min-bytes.
    #[arg(long)]
    max_bytes: Option<String>,
    /// Timed iterations per size.
    #[arg(long)]
    iters: Option<u32>,
    /// Untimed iterations first.
    #[arg(long)]
    warmup: Option<u32>,
    /// Server: the node the others are compared with.
    #[arg(long)]
    baseline: Option<String>,
    /// The CheckRun's name (default: TYPE-<unix milliseconds>).
    #[arg(long)]
    name: Option<String>,
    /// Wait for it and print its report.
    #[arg(long)]
    wait: bool,
    /// Seconds to wait at most.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
}

fn checkruns() -> Result<&'static ResourceType> {
    resources::find("checkruns").context("the API has no resource checkruns")
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn fresh_name(kind: &str) -> String {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    format!("{kind}-{ms}")
}

/// The CheckRun `args` describe.
fn new_check(kind: &str, a: &NewArgs) -> Result<Value> {
    let size = |v: &Option<String>, flag: &str| -> Result<Option<u64>> {
        v.as_deref().map(|t| ringleader_probe::parse_size(t).with_context(|| format!("--{flag}"))).transpose()
    };
    let mut spec = json!({"type": kind, "nodes": a.nodes});
    let fields = [
        ("operations", (!a.ops.is_empty()).then(|| json!(a.ops))),
        ("devicesPerNode", a.devices_per_node.map(|v| json!(v))),
        ("minBytes", size(&a.min_bytes, "min-bytes")?.map(|v| json!(v))),
        ("maxBytes", size(&a.max_bytes, "max-bytes")?.map(|v| json!(v))),
        ("iterations", a.iters.map(|v| json!(v))),
        ("warmup", a.warmup.map(|v| json!(v))),
        ("baselineNode", a.baseline.as_ref().map(|v| json!(v))),
    ];
    for (k, v) in fields {
        if let Some(v) = v {
            spec[k] = v;
        }
    }
    let name = a.name.clone().unwrap_or_else(|| fresh_name(kind));
    Ok(json!({"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": spec}))
}

pub fn run(args: CheckArgs) -> Result<u8> {
    let client = args.conn.client()?;
    let t = checkruns()?;
    rt()?.block_on(async {
        match args.action {
            CheckAction::Server(a) => create(&client, new_check("server", &a)?, a.wait, a.timeout).await,
            CheckAction::Network(a) => create(&client, new_check("network", &a)?, a.wait, a.timeout).await,
            CheckAction::Collective(a) => create(&client, new_check("collective", &a)?, a.wait, a.timeout).await,
            CheckAction::List => {
                let mut items = client.list(t, None, None).await.map_err(server_error)?.items;
                items.sort_by(|a, b| {
                    (s(a, "/metadata/creationTimestamp"), s(a, "/metadata/name"))
                        .cmp(&(s(b, "/metadata/creationTimestamp"), s(b, "/metadata/name")))
                });
                if items.is_empty() {
                    emit("No checks.\n")?;
                    return Ok(0);
                }
                let rows: Vec<Vec<String>> = items
                    .iter()
                    .map(|c| {
                        let nodes: Vec<&str> = c
                            .pointer("/spec/nodes")
                            .and_then(Value::as_array)
                            .map(|n| n.iter().filter_map(Value::as_str).collect())
                            .unwrap_or_default();
                        vec![
                            s(c, "/metadata/name").to_string(),
                            s(c, "/spec/type").to_string(),
                            nodes.join(","),
                            phase(c).to_string(),
                            s(c, "/status/startTime").to_string(),
                            s(c, "/status/finishTime").to_string(),
                            s(c, "/status/message").to_string(),
                        ]
                    })
                    .collect();
                print_table(&["NAME", "TYPE", "NODES", "PHASE", "STARTED", "FINISHED", "MESSAGE"], &rows);
                Ok(0)
            }
            CheckAction::Report { name, output } => {
                let c = client.get(t, "", &name).await.map_err(server_error)?;
                emit(&render(&c, &output)?)?;
                Ok(0)
            }
            CheckAction::Rerun { name, wait, timeout } => {
                let old = client.get(t, "", &name).await.map_err(server_error)?;
                let mut spec = old.get("spec").cloned().unwrap_or_else(|| json!({}));
                if let Some(o) = spec.as_object_mut() {
                    o.remove("terminate");
                }
                let kind = s(&old, "/spec/type").to_string();
                let new = json!({"apiVersion": API_VERSION, "kind": KIND,
                                 "metadata": {"name": fresh_name(&kind), "labels": {"ringleader.io/rerun-of": name}},
                                 "spec": spec});
                create(&client, new, wait, timeout).await
            }
            CheckAction::Terminate { name } => {
                client.patch_merge(t, "", &name, &json!({"spec": {"terminate": true}})).await.map_err(server_error)?;
                emit(&format!("checkrun/{name} terminating (its probe pods are stopped)\n"))?;
                Ok(0)
            }
            CheckAction::Delete { name } => {
                client.delete(t, "", &name, None).await.map_err(server_error)?;
                emit(&format!("checkrun/{name} deleted\n"))?;
                Ok(0)
            }
        }
    })
}

fn phase(c: &Value) -> &str {
    match s(c, "/status/phase") {
        "" => "Pending",
        p => p,
    }
}

async fn create(client: &Client, check: Value, wait: bool, timeout: u64) -> Result<u8> {
    let t = checkruns()?;
    let name = s(&check, "/metadata/name").to_string();
    client.create(t, "", &check).await.map_err(server_error)?;
    emit(&format!("checkrun/{name} created\n"))?;
    if !wait {
        return Ok(0);
    }
    let deadline = Instant::now() + Duration::from_secs(timeout);
    loop {
        let c = client.get(t, "", &name).await.map_err(server_error)?;
        if matches!(phase(&c), "Succeeded" | "Failed" | "Terminated") {
            emit(&render(&c, "table")?)?;
            return Ok(if phase(&c) == "Succeeded" { 0 } else { 1 });
        }
        if Instant::now() >= deadline {
            bail!("checkrun/{name} is still {} after {timeout} s (`ringleader check report {name}` later)", phase(&c));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A CheckRun's report as `table`, `json` (the whole object) or `csv` (its rows, pairs or items).
pub fn render(c: &Value, output: &str) -> Result<String> {
    let status: CheckRunStatus = serde_json::from_value(c.get("status").cloned().unwrap_or_else(|| json!({})))
        .context("the CheckRun's status does not parse")?;
    let report = status.report.clone().unwrap_or_default();
    match output {
        "json" => Ok(format!("{}\n", serde_json::to_string_pretty(c)?)),
        "csv" => {
            let mut out = String::new();
            let mut line = |cells: Vec<String>| {
                out.push_str(&cells.iter().map(|c| csv_cell(c)).collect::<Vec<_>>().join(","));
                out.push('\n');
            };
            match s(c, "/spec/type") {
                "collective" => {
                    line(
                        ["operation", "data_size", "aveg_time_us", "alg_bandwidth", "bus_bandwidth", "check_result"]
                            .map(String::from)
                            .to_vec(),
                    );
                    for r in &report.rows {
                        line(vec![
                            r.operation.clone(),
                            r.data_size.to_string(),
                            format!("{:.2}", r.aveg_time_us),
                            format!("{:.4}", r.alg_bandwidth),
                            format!("{:.4}", r.bus_bandwidth),
                            r.check_result.clone(),
                        ]);
                    }
                }
                "network" => {
                    line(
                        ["from", "to", "transport", "bytes", "bandwidth_gbps", "latency_us", "pass"]
                            .map(String::from)
                            .to_vec(),
                    );
                    for p in &report.pairs {
                        line(vec![
                            p.from.clone(),
                            p.to.clone(),
                            p.transport.clone(),
                            p.bytes.to_string(),
                            format!("{:.4}", p.bandwidth_gbps),
                            format!("{:.2}", p.latency_us),
                            p.pass.to_string(),
                        ]);
                    }
                }
                _ => {
                    line(
                        ["node", "name", "method", "criterion", "advice", "result", "pass"].map(String::from).to_vec(),
                    );
                    for i in &report.items {
                        line(vec![
                            i.node.clone(),
                            i.name.clone(),
                            i.method.clone(),
                            i.criterion.clone(),
                            i.advice.clone(),
                            i.result.clone(),
                            i.pass.to_string(),
                        ]);
                    }
                }
            }
            Ok(out)
        }
        "table" => {
            let mut out = format!(
                "Name:      {}\nType:      {}\nPhase:     {}\nStarted:   {}\nFinished:  {}\nNodes done: {}\nMessage:   {}\n",
                s(c, "/metadata/name"),
                s(c, "/spec/type"),
                phase(c),
                status.start_time,
                status.finish_time,
                status.nodes_done,
                status.message
            );
            let mut ops: Vec<&str> = Vec::new();
            for r in &report.rows {
                if !ops.contains(&r.operation.as_str()) {
                    ops.push(&r.operation);
                }
            }
            for op in ops {
                out.push_str(&format!(
                    "\n# {op}\ndata_size(Bytes) | aveg_time(us) | alg_bandwidth(GB/s) | bus_bandwidth(GB/s) | check_result\n"
                ));
                for r in report.rows.iter().filter(|r| r.operation == op) {
                    out.push_str(&format!(
                        "{:>16} | {:>13.2} | {:>19.4} | {:>19.4} | {}\n",
                        r.data_size, r.aveg_time_us, r.alg_bandwidth, r.bus_bandwidth, r.check_result
                    ));
                }
            }
            if !report.pairs.is_empty() {
                let rows: Vec<Vec<String>> = report
                    .pairs
                    .iter()
                    .map(|p| {
                        vec![
                            p.from.clone(),
                            p.to.clone(),
                            p.transport.clone(),
                            p.bytes.to_string(),
                            format!("{:.4}", p.bandwidth_gbps),
                            format!("{:.2}", p.latency_us),
                            if p.pass { "success" } else { "fail" }.to_string(),
                        ]
                    })
                    .collect();
                out.push('\n');
                out.push_str(&crate::support::table(
                    &["FROM", "TO", "TRANSPORT", "BYTES", "BANDWIDTH(GB/s)", "LATENCY(us)", "CHECK"],
                    &rows,
                ));
                out.push('\n');
            }
            if !report.items.is_empty() {
                let rows: Vec<Vec<String>> = report
                    .items
                    .iter()
                    .map(|i| {
                        vec![
                            i.node.clone(),
                            i.name.clone(),
                            if i.pass { "pass" } else { "FAIL" }.to_string(),
                            i.result.clone(),
                            i.criterion.clone(),
                        ]
                    })
                    .collect();
                out.push('\n');
                out.push_str(&crate::support::table(&["NODE", "ITEM", "PASS", "RESULT", "CRITERION"], &rows));
                out.push('\n');
                for i in report.items.iter().filter(|i| !i.pass) {
                    out.push_str(&format!(
                        "advice for {} on {}: {} (method: {})\n",
                        i.name, i.node, i.advice, i.method
                    ));
                }
            }
            if !report.summary.is_empty() {
                out.push_str(&format!("\nSummary: {}\n", report.summary));
            }
            Ok(out)
        }
        other => bail!("-o {other:?}: allowed: table, json, csv"),
    }
}

/// One CSV field (RFC 4180 quoting).
fn csv_cell(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done() -> Value {
        json!({"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "c"},
               "spec": {"type": "collective", "nodes": ["a", "b"]},
               "status": {"phase": "Succeeded", "report": {"summary": "ok", "rows": [
                   {"operation": "all_reduce", "data_size": 1024, "aveg_time_us": 10.0, "alg_bandwidth": 0.1024,
                    "bus_bandwidth": 0.1024, "check_result": "success"}]}}})
    }

    #[test]
    fn a_report_renders_as_table_csv_and_json() {
        let table = render(&done(), "table").expect("table");
        assert!(table.contains("# all_reduce\ndata_size(Bytes) | aveg_time(us) | alg_bandwidth(GB/s)"), "{table}");
        assert!(table.contains("1024 |         10.00 |              0.1024"), "{table}");
        let csv = render(&done(), "csv").expect("csv");
        assert_eq!(
            csv,
            "operation,data_size,aveg_time_us,alg_bandwidth,bus_bandwidth,check_result\nall_reduce,1024,10.00,0.1024,0.1024,success\n"
        );
        let back: Value = serde_json::from_str(&render(&done(), "json").expect("json")).expect("parses");
        assert_eq!(back["status"]["report"]["rows"][0]["data_size"], 1024);
        assert!(render(&done(), "xml").is_err());
        assert_eq!(csv_cell("a,\"b\""), "\"a,\"\"b\"\"\"");
    }
}
