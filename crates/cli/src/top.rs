//! `ringleader top pods|jobs` and the trend columns of `top nodes`: the
//! current figures and the last ten minutes of the server's embedded
//! history (`/apis/ringleader.io/v1alpha1/history`) as min/avg/max and a
//! sparkline. One shot: it reads once and prints.

use crate::devices::{device_list, device_map, held_devices};
use crate::printer::emit;
use crate::support::{rt, s, server_error, table, Conn};
use anyhow::Result;
use clap::Args;
use ringleader_client::Client;
use serde_json::Value;
use std::collections::BTreeMap;

/// Seconds of history the trend columns cover.
pub const WINDOW_SECS: u64 = 600;
/// Characters of a sparkline.
const SPARK_WIDTH: usize = 20;
const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Series by name: their values, oldest first.
pub type Series = BTreeMap<String, Vec<f64>>;

/// The values of every series of a history answer.
pub fn series_of(history: &Value) -> Series {
    let mut out = Series::new();
    for s in history.get("series").and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = s.get("name").and_then(Value::as_str) else { continue };
        let values = s
            .get("points")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get(1).and_then(Value::as_f64))
            .filter(|v| v.is_finite())
            .collect();
        out.insert(name.to_string(), values);
    }
    out
}

/// The history under `prefix` over the trend window; a refusal or an older
/// server leaves the trend columns empty rather than failing the command.
pub async fn read_history(client: &Client, prefix: &str) -> Series {
    let window = WINDOW_SECS.to_string();
    match client.history(&[("prefix", prefix), ("sinceSeconds", &window)]).await {
        Ok(v) => series_of(&v),
        Err(e) => {
            eprintln!("warning: no history for the trend columns: {e}");
            Series::new()
        }
    }
}

/// `▁▃█…`: `values` scaled between their min and max, averaged down to
/// at most `width` characters; flat series sit on the lowest block.
pub fn sparkline(values: &[f64], width: usize) -> String {
    if values.is_empty() || width == 0 {
        return String::new();
    }
    let chunk = values.len().div_ceil(width);
    let means: Vec<f64> = values.chunks(chunk).map(|c| c.iter().sum::<f64>() / c.len() as f64).collect();
    let (lo, hi) = means.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    let span = hi - lo;
    means
        .iter()
        .map(|v| {
            let level = if span > 0.0 { ((v - lo) / span * 7.0).round() as usize } else { 0 };
            BLOCKS[level.min(7)]
        })
        .collect()
}

/// (min, avg, max) of the values.
pub fn stats(values: &[f64]) -> Option<(f64, f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    Some((lo, values.iter().sum::<f64>() / values.len() as f64, hi))
}

/// Cores as kubectl prints them: millicores.
pub fn cores(v: f64) -> String {
    format!("{}m", (v * 1000.0).round() as i64)
}

/// Bytes as kubectl prints them: mebibytes.
pub fn mebibytes(v: f64) -> String {
    format!("{}Mi", (v / f64::from(1 << 20)).round() as i64)
}

/// `last`, `min/avg/max` and sparkline cells of a series (dashes without one).
pub fn trend_cells(series: &Series, name: &str, show: fn(f64) -> String) -> [String; 3] {
    let values = series.get(name).map(Vec::as_slice).unwrap_or_default();
    match (values.last(), stats(values)) {
        (Some(last), Some((lo, avg, hi))) => {
            [show(*last), format!("{}/{}/{}", show(lo), show(avg), show(hi)), sparkline(values, SPARK_WIDTH)]
        }
        _ => ["-".to_string(), "-".to_string(), "-".to_string()],
    }
}

/// `top pods|jobs|nodes`.
pub fn run(args: TopArgs) -> Result<()> {
    match args.what.as_str() {
        "pods" => pods(args),
        "jobs" => jobs(args),
        _ => top_nodes(args),
    }
}

fn pods(args: TopArgs) -> Result<()> {
    let client = args.conn.client()?;
    let ns = args.namespace.clone();
    rt()?.block_on(async {
        let pods =
            client.list(ringleader_registry::resources::PODS, Some(&ns), None).await.map_err(server_error)?.items;
        let history = read_history(&client, &format!("pod/{ns}/")).await;
        let mut rows = Vec::new();
        for p in &pods {
            let name = p.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            let phase = p.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending");
            let node = p.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("-");
            let [cpu, cpu_trend, spark] = trend_cells(&history, &format!("pod/{ns}/{name}/cpu"), cores);
            let [memory, memory_trend, _] = trend_cells(&history, &format!("pod/{ns}/{name}/memory"), mebibytes);
            rows.push(vec![
                name.to_string(),
                phase.to_string(),
                node.to_string(),
                cpu,
                memory,
                cpu_trend,
                memory_trend,
                spark,
            ]);
        }
        let header = [
            "NAME",
            "STATUS",
            "NODE",
            "CPU",
            "MEMORY",
            "CPU 10m (min/avg/max)",
            "MEMORY 10m (min/avg/max)",
            "CPU TREND",
        ];
        emit(&(table(&header, &rows) + "\n"))
    })
}

/// `(resource, job)` of a job series name under `job/<ns>/`, and its phase.
fn job_of<'a>(name: &'a str, ns: &str) -> Option<((&'a str, &'a str), &'a str)> {
    let rest = name.strip_prefix("job/")?.strip_prefix(ns)?.strip_prefix('/')?;
    let mut parts = rest.split('/');
    let (resource, job, metric) = (parts.next()?, parts.next()?, parts.next()?);
    Some(((resource, job), metric.strip_prefix("pods-")?))
}

/// The kind of a qualified resource (`pytorchjobs.kubeflow.org` → PyTorchJob).
fn kind_of(resource: &str) -> String {
    ringleader_server::RESOURCES
        .iter()
        .find(|rt| rt.qualified() == resource)
        .map(|rt| rt.kind.to_string())
        .unwrap_or_else(|| resource.to_string())
}

/// The names of the jobs of a qualified resource in `ns` now; `None` when
/// they cannot be listed (an unknown resource, a refusal), so the history
/// alone decides.
async fn existing(client: &Client, resource: &str, ns: &str) -> Option<std::collections::HashSet<String>> {
    let rt = ringleader_server::RESOURCES.iter().find(|rt| rt.qualified() == resource)?;
    let items = client.list(rt, Some(ns), None).await.ok()?.items;
    Some(items.iter().filter_map(|j| j.pointer("/metadata/name").and_then(Value::as_str).map(str::to_string)).collect())
}

fn jobs(args: TopArgs) -> Result<()> {
    let client = args.conn.client()?;
    let ns = args.namespace.clone();
    rt()?.block_on(async {
        let history = read_history(&client, &format!("job/{ns}/")).await;
        let mut jobs: BTreeMap<(&str, &str), BTreeMap<&str, &Vec<f64>>> = BTreeMap::new();
        for (name, values) in &history {
            if let Some((job, phase)) = job_of(name, &ns) {
                jobs.entry(job).or_default().insert(phase, values);
            }
        }
        // The history keeps a deleted job's points for its whole window:
        // only jobs that still exist are listed.
        let mut resources: Vec<&str> = jobs.keys().map(|(resource, _)| *resource).collect();
        resources.dedup();
        for resource in resources {
            if let Some(names) = existing(&client, resource, &ns).await {
                jobs.retain(|(r, job), _| *r != resource || names.contains(*job));
            }
        }
        let mut rows = Vec::new();
        for ((resource, job), phases) in &jobs {
            let now = |phase: &str| {
                phases.get(phase).and_then(|v| v.last()).map(|n| format!("{n:.0}")).unwrap_or_else(|| "-".into())
            };
            let running = phases.get("Running").map(|v| v.as_slice()).unwrap_or_default();
            let peak = stats(running).map(|(_, _, hi)| format!("{hi:.0}")).unwrap_or_else(|| "-".into());
            rows.push(vec![
                job.to_string(),
                kind_of(resource),
                now("Pending"),
                now("Running"),
                now("Succeeded"),
                now("Failed"),
                peak,
                sparkline(running, SPARK_WIDTH),
            ]);
        }
        let header = ["NAME", "KIND", "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "RUNNING 10m MAX", "RUNNING TREND"];
        emit(&(table(&header, &rows) + "\n"))
    })
}

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
/// `top nodes`: per-device allocation, and CPU and memory with their trend.
pub fn top_nodes(args: TopArgs) -> Result<()> {
    let client = args.conn.client()?;
    rt()?.block_on(async {
        // ringleader's own Nodes (profile, devices), whatever `nodes` names on the command line.
        let node_t = ringleader_registry::resources::NODES;
        let pod_t = ringleader_registry::resources::PODS;
        let nodes = client.list(node_t, None, None).await.map_err(server_error)?.items;
        let pods = client.list(pod_t, None, None).await.map_err(server_error)?.items;
        let held = held_devices(&pods);
        let history = read_history(&client, "node/").await;
        let mut rows = Vec::new();
        for n in &nodes {
            let name = s(n, "/metadata/name");
            let Some(profile) = ringleader_topology::builtin(s(n, "/spec/profile")) else { continue };
            let unhealthy = device_list(n, "/status/unhealthyDevices");
            let (map, used) = device_map(name, profile, &unhealthy, &held);
            let mut holders: Vec<&str> =
                held.iter().filter(|((nn, _), _)| nn == name).map(|(_, (_, p))| p.as_str()).collect();
            holders.dedup();
            let [cpu, cpu_trend, spark] = trend_cells(&history, &format!("node/{name}/cpu"), cores);
            let [memory, ..] = trend_cells(&history, &format!("node/{name}/memory"), mebibytes);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sparklines_scale_between_min_and_max() {
        assert_eq!(sparkline(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], 20), "▁▂▃▄▅▆▇█");
        assert_eq!(sparkline(&[3.0, 3.0, 3.0], 20), "▁▁▁");
        assert_eq!(sparkline(&[], 20), "");
        // 40 points average down to 20 characters.
        let long: Vec<f64> = (0..40).map(f64::from).collect();
        let line = sparkline(&long, 20);
        assert_eq!(line.chars().count(), 20);
        assert!(line.starts_with('▁') && line.ends_with('█'), "{line}");
    }

    #[test]
    fn trends_read_the_history_answer() {
        let answer = json!({"series": [
            {"name": "pod/a/p/cpu", "unit": "cores", "step": 10, "points": [[1, 0.25], [2, 0.5], [3, 0.75]]},
            {"name": "pod/a/q/cpu", "unit": "cores", "step": 10, "points": []},
        ]});
        let series = series_of(&answer);
        assert_eq!(
            trend_cells(&series, "pod/a/p/cpu", cores),
            ["750m".to_string(), "250m/500m/750m".into(), "▁▅█".into()]
        );
        assert_eq!(trend_cells(&series, "pod/a/q/cpu", cores)[0], "-");
        assert_eq!(trend_cells(&series, "pod/a/missing/cpu", cores)[1], "-");
        assert_eq!(mebibytes(52_428_800.0), "50Mi");
    }

    #[test]
    fn job_series_names_split_into_job_and_phase() {
        assert_eq!(
            job_of("job/team/pytorchjobs.kubeflow.org/j/pods-Running", "team"),
            Some((("pytorchjobs.kubeflow.org", "j"), "Running"))
        );
        assert_eq!(job_of("job/teamb/pytorchjobs.kubeflow.org/j/pods-Running", "team"), None);
        assert_eq!(kind_of("pytorchjobs.kubeflow.org"), "PyTorchJob");
    }
}
