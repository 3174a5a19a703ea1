//! `ringleader demo`: an embedded cluster in a temporary data directory,
//! the bundled examples applied through the API, each running the probe
//! all-reduce; prints placements, the rank table and probe results, stops.

use crate::plane::{self, UpArgs};
use anyhow::{bail, Result};
use clap::Args;
use futures_util::StreamExt;
use ringleader_client::Client;
use ringleader_registry::resources;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// The examples the demo applies, in order.
pub const DEMO_JOBS: &[(&str, &str)] = &[
    ("pytorchjob-h100.yaml", include_str!("../../../examples/demo/pytorchjob-h100.yaml")),
    ("ascendjob-910.yaml", include_str!("../../../examples/demo/ascendjob-910.yaml")),
    ("mpijob.yaml", include_str!("../../../examples/demo/mpijob.yaml")),
    ("deployment-inference.yaml", include_str!("../../../examples/demo/deployment-inference.yaml")),
];

#[derive(Args)]
pub struct DemoArgs {
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 180)]
    pub timeout: u64,
    /// Keep the data directory (store, logs, sandboxes) instead of a temporary one.
    #[arg(long)]
    pub data_dir: Option<std::path::PathBuf>,
}

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

pub fn run(args: DemoArgs) -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let data_dir = args.data_dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let mut up_args = UpArgs::defaults(&data_dir)?;
    up_args.pods.name = "process".into();
    up_args.heartbeat_interval = 2.0;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let plane = plane::start(&up_args).await?;
        println!("== cluster: API at {}, {} virtual nodes", plane.url, plane.nodes.len());
        for n in &plane.nodes {
            println!("   {:<10} {:<14} {}", n.name, n.profile, n.address);
        }
        let client = plane.client()?;
        let result = drive(&client, &data_dir, args.timeout).await;
        // Pods outlive a stopped agent (under their shims): the demo's
        // cluster goes away with it, so its pods are stopped first.
        if let Err(e) = stop_pods(&client).await {
            eprintln!("demo: stopping the pods: {e:#}");
        }
        plane.stop().await?;
        result
    })
}

/// Deletes the demo's jobs and pods and waits (bounded) until every pod is
/// gone: the agent stops each one (SIGTERM, then SIGKILL after its grace).
async fn stop_pods(client: &Client) -> Result<()> {
    let pod_t = resources::find("pods").ok_or_else(|| anyhow::anyhow!("pods type"))?;
    for t in resources::job_types() {
        let Ok(jobs) = client.list(t, Some("default"), None).await else { continue };
        for j in jobs.items {
            let _ = client.delete(t, "default", s(&j, "/metadata/name"), None).await;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let pods = client.list(pod_t, Some("default"), None).await?.items;
        if pods.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{} pod(s) still there after 40 s", pods.len());
        }
        for p in &pods {
            if p.pointer("/metadata/deletionTimestamp").is_none() {
                let _ = client.delete(pod_t, "default", s(p, "/metadata/name"), Some(5)).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

async fn drive(client: &Client, data_dir: &Path, timeout: u64) -> Result<()> {
    println!("\n== applying the bundled examples");
    for (name, text) in DEMO_JOBS {
        for r in client.apply_documents_from(name, text).await? {
            println!("   {name}: {}/{} {}", r.kind, r.name, r.action);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(timeout);
    let jobs = [("PyTorchJob", "demo-pytorch"), ("AscendJob", "demo-ascend"), ("MPIJob", "demo-mpi")];
    let pod_t = resources::find("pods").ok_or_else(|| anyhow::anyhow!("pods type"))?;
    // Every pod as last seen: a finished job stops the pods still running, so some are
    // gone from the API by the time the demo prints placements and logs.
    let mut seen: BTreeMap<String, Value> = BTreeMap::new();
    // The job's ConfigMap goes with the job, so the completed table is taken while it runs.
    let mut rank_table: Option<Value> = None;
    loop {
        for p in client.list(pod_t, Some("default"), None).await?.items {
            seen.insert(s(&p, "/metadata/name").to_string(), p);
        }
        if rank_table.is_none() {
            rank_table = config_map_table(client).await;
        }
        let mut done = 0;
        for (kind, name) in jobs {
            let t = resources::job_types().find(|t| t.kind == kind).ok_or_else(|| anyhow::anyhow!("{kind} type"))?;
            let job = client.get(t, "default", name).await?;
            match s(&job, "/status/ringleader/phase") {
                "Completed" => done += 1,
                p @ ("Failed" | "Aborted" | "Terminated") => {
                    print_logs(client, data_dir, &seen, name).await;
                    bail!("{kind} {name} ended {p}: {}", s(&job, "/status/ringleader/message"))
                }
                _ => {}
            }
        }
        let infer_ok = infer_log(client).await.is_some_and(|l| l.contains("success"));
        if done == jobs.len() && infer_ok {
            break;
        }
        if Instant::now() > deadline {
            let pods = client.list(pod_t, Some("default"), None).await?.items;
            for p in &pods {
                println!("   {} {} {}", s(p, "/metadata/name"), s(p, "/status/phase"), s(p, "/spec/nodeName"));
            }
            bail!("the demo jobs did not finish within {timeout} s");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    println!("\n== placements");
    for p in client.list(pod_t, Some("default"), None).await?.items {
        seen.insert(s(&p, "/metadata/name").to_string(), p);
    }
    let mut rows = Vec::new();
    for p in seen.values() {
        rows.push(vec![
            s(p, "/metadata/name").to_string(),
            s(p, "/status/phase").to_string(),
            s(p, "/spec/nodeName").to_string(),
            s(p, "/status/podIP").to_string(),
            s(p, "/metadata/annotations/ringleader.io~1devices").to_string(),
        ]);
    }
    crate::support::print_table(&["POD", "STATUS", "NODE", "ADDRESS", "DEVICES"], &rows);

    println!("\n== hccl.json of demo-ascend (rings-config-demo-ascend; the pods read it through RANK_TABLE_FILE)");
    // A job faster than one poll: the copy its pods read stays in their sandboxes.
    let table = match rank_table {
        Some(t) => Some(t),
        None => sandbox_table(data_dir, &seen),
    };
    match table {
        Some(t) => println!("{}", serde_json::to_string_pretty(&t)?),
        None => bail!("no completed rank table of demo-ascend in its ConfigMap or its pods' sandboxes"),
    }
    println!("\n== probe results");
    print_logs(client, data_dir, &seen, "demo-").await;
    Ok(())
}

/// A rank table with `"status": "completed"`; `None` for `initializing` or bad JSON.
fn completed(text: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(text).ok()?;
    (s(&v, "/status") == "completed").then_some(v)
}

/// The completed table in `rings-config-demo-ascend`, if it is there now.
async fn config_map_table(client: &Client) -> Option<Value> {
    let cm_t = resources::find("configmaps")?;
    let cm = client.get(cm_t, "default", "rings-config-demo-ascend").await.ok()?;
    completed(s(&cm, "/data/hccl.json"))
}

/// The completed table a demo-ascend pod was given, read from its sandbox.
fn sandbox_table(data_dir: &Path, seen: &BTreeMap<String, Value>) -> Option<Value> {
    let pod_path = ringleader_controller::ranktable::hccl::POD_PATH;
    seen.iter().filter(|(name, _)| name.starts_with("demo-ascend-")).find_map(|(name, p)| {
        let dir = ringleader_agent::sandbox::sandbox_dir(data_dir, s(p, "/spec/nodeName"), "default", name).ok()?;
        let file = ringleader_agent::sandbox::in_sandbox(&dir, pod_path).ok()?;
        completed(&std::fs::read_to_string(file).ok()?)
    })
}

async fn infer_log(client: &Client) -> Option<String> {
    let pod_t = resources::find("pods")?;
    let pods = client.list(pod_t, Some("default"), Some("app=demo-infer")).await.ok()?.items;
    let p = pods.iter().find(|p| s(p, "/status/phase") == "Running")?;
    log_text(client, s(p, "/metadata/name")).await
}

async fn log_text(client: &Client, pod: &str) -> Option<String> {
    let mut stream = client.logs("default", pod, false, None).await.ok()?;
    let mut text = Vec::new();
    while let Some(Ok(chunk)) = stream.next().await {
        text.extend_from_slice(&chunk);
    }
    Some(String::from_utf8_lossy(&text).into_owned())
}

/// Logs of the pods named `prefix…`: through the API while the pod exists,
/// else from its sandbox (the agent keeps those after the pod is deleted).
async fn print_logs(client: &Client, data_dir: &Path, seen: &BTreeMap<String, Value>, prefix: &str) {
    let Some(pod_t) = resources::find("pods") else { return };
    let live: BTreeMap<String, Value> = match client.list(pod_t, Some("default"), None).await {
        Ok(list) => list.items.into_iter().map(|p| (s(&p, "/metadata/name").to_string(), p)).collect(),
        Err(_) => BTreeMap::new(),
    };
    let names: std::collections::BTreeSet<&String> = live.keys().chain(seen.keys()).collect();
    for name in names.into_iter().filter(|n| n.starts_with(prefix)) {
        if let Some(p) = live.get(name) {
            if let Some(text) = log_text(client, name).await {
                println!("--- {name} ({})", s(p, "/status/phase"));
                print!("{text}");
            }
        } else if let Some(p) = seen.get(name) {
            let node = s(p, "/spec/nodeName");
            let Ok(dir) = ringleader_agent::sandbox::sandbox_dir(data_dir, node, "default", name) else { continue };
            if let Ok(text) = std::fs::read_to_string(dir.join(ringleader_agent::sandbox::LOG_FILE)) {
                println!("--- {name} (stopped with its job; log from its sandbox)");
                print!("{text}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(node: &str) -> Value {
        serde_json::json!({"spec": {"nodeName": node}})
    }

    #[test]
    fn the_table_a_pod_read_is_found_in_its_sandbox_once_completed() {
        let tmp = tempfile::tempdir().unwrap();
        let seen: BTreeMap<String, Value> =
            [("demo-ascend-worker-0".to_string(), pod("npu-0")), ("demo-mpi-worker-0".to_string(), pod("cpu-0"))]
                .into();
        assert_eq!(sandbox_table(tmp.path(), &seen), None);
        let dir =
            ringleader_agent::sandbox::sandbox_dir(tmp.path(), "npu-0", "default", "demo-ascend-worker-0").unwrap();
        let file =
            ringleader_agent::sandbox::in_sandbox(&dir, ringleader_controller::ranktable::hccl::POD_PATH).unwrap();
        ringleader_agent::sandbox::write_file(&file, br#"{"status":"initializing"}"#).unwrap();
        assert_eq!(sandbox_table(tmp.path(), &seen), None);
        ringleader_agent::sandbox::write_file(&file, br#"{"status":"completed","server_count":"1"}"#).unwrap();
        assert_eq!(sandbox_table(tmp.path(), &seen).map(|v| s(&v, "/server_count").to_string()), Some("1".into()));
        assert_eq!(completed("not json"), None);
    }
}
