//! CheckRuns (`ringleader.io/v1alpha1`): one-click checks run as probe
//! pods. Each node of a check gets one batch/v1 Job (one pod, never
//! restarted, pinned by `kubernetes.io/hostname`) in `platform-system`
//! running `ringleader probe server|network|collective`; the collective and
//! network probes meet at the first node's address on a port the controller
//! picks. When the probes end, the report line each printed
//! ([`ringleader_probe::REPORT_PREFIX`]) is read from the pod's log and
//! judged into the CheckRun's status: the server items with method,
//! criterion, advice and result (and consistency against a baseline node),
//! the network pairs, or the nccl-tests rows. `spec.terminate` (or
//! deleting the CheckRun) deletes the jobs, and with them their pods.

use super::node_job::{file_tail, node_job, node_jobs_of};
use super::object::{dns_label, key_of, name, objects, status_op};
use crate::cache::{annotation, at, str_at, Cache};
use crate::pods;
use ringleader_api::kinds::check::{CheckItem, CheckReport, CheckRunSpec, CollectiveRow, NetworkPair};
use ringleader_controller::lifecycle::PodPhase;
use ringleader_store::Op;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::ops::RangeInclusive;

/// API version of a CheckRun.
pub const API: &str = ringleader_api::kinds::check::API_VERSION;
/// Label of a CheckRun's jobs and pods: the CheckRun.
pub const CHECK_RUN_LABEL: &str = "ringleader.io/check-run";
/// Rendezvous ports of collective and network checks: below the job
/// controller's fallback ports (28000–28999) and Linux's ephemeral range.
pub const PORTS: RangeInclusive<u16> = 27000..=27999;
/// How long a probe waits for its peers and any one transfer, seconds.
pub const PROBE_TIMEOUT: u64 = 60;
/// How much of a probe's log is searched for its report line.
const LOG_BYTES: usize = 256 << 10;
/// Phases after which nothing more happens.
const FINAL: &[&str] = &["Succeeded", "Failed", "Terminated"];

/// The name of the job of the `index`-th node of a CheckRun.
pub fn job_name(check_run: &str, index: usize) -> String {
    dns_label(check_run, &format!("-chk{index}"))
}

/// The probe command of a check's `rank`-th node.
pub fn command(spec: &CheckRunSpec) -> Vec<String> {
    let s = |v: &str| v.to_string();
    match spec.check_type.as_str() {
        "collective" => vec![
            s("ringleader"),
            s("probe"),
            s("collective"),
            s("--ops"),
            spec.effective_operations().join(","),
            s("--size"),
            spec.effective_min_bytes().to_string(),
            s("--max-size"),
            spec.effective_max_bytes().to_string(),
            s("--iters"),
            spec.effective_iterations().to_string(),
            s("--warmup"),
            spec.effective_warmup().to_string(),
            s("--ranks-per-process"),
            spec.effective_devices_per_node().to_string(),
            s("--timeout"),
            PROBE_TIMEOUT.to_string(),
        ],
        "network" => vec![
            s("ringleader"),
            s("probe"),
            s("network"),
            s("--size"),
            spec.effective_min_bytes().to_string(),
            s("--iters"),
            spec.effective_iterations().to_string(),
            s("--warmup"),
            spec.effective_warmup().to_string(),
            s("--timeout"),
            PROBE_TIMEOUT.to_string(),
        ],
        _ => vec![s("ringleader"), s("probe"), s("server")],
    }
}

/// The job probing `node` as the `index`-th node of `cr`; `master` is the
/// first node's address and `port` the rendezvous port (transfer checks).
pub fn job(cr: &Value, spec: &CheckRunSpec, index: usize, node: &str, master: &str, port: Option<u16>) -> Value {
    let processes = spec.nodes.len();
    let world = match spec.check_type.as_str() {
        "collective" => processes * spec.effective_devices_per_node() as usize,
        _ => processes,
    };
    let mut env = vec![json!({"name": "RINGLEADER_CHECK_RUN", "value": name(cr)})];
    if let Some(port) = port {
        for (k, v) in [
            ("MASTER_ADDR", master.to_string()),
            ("MASTER_PORT", port.to_string()),
            ("RANK", index.to_string()),
            ("WORLD_SIZE", world.to_string()),
        ] {
            env.push(json!({"name": k, "value": v}));
        }
    }
    let container = json!({"name": "probe", "image": "ringleader/probe", "command": command(spec), "env": env});
    node_job(cr, job_name(name(cr), index), CHECK_RUN_LABEL, node, container)
}

/// The payload of the last report line of a log.
pub fn report_line(log: &str) -> Option<Value> {
    log.lines().rev().find_map(|l| serde_json::from_str(l.trim().strip_prefix(ringleader_probe::REPORT_PREFIX)?).ok())
}

/// The last `LOG_BYTES` of a file.
fn read_log(path: &str) -> Option<String> {
    file_tail(path, LOG_BYTES)
}

/// The last few lines of a log, for a failure message.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

/// What the controller reads beside the CheckRun.
pub struct Inputs<'a> {
    /// ringleader.io Nodes.
    pub nodes: &'a [Value],
    /// Its jobs, by name.
    pub jobs: &'a HashMap<String, &'a Value>,
    /// Each job's newest pod, by job uid.
    pub pods: &'a HashMap<String, &'a Value>,
    /// Rendezvous ports held by other unfinished checks.
    pub taken_ports: &'a BTreeSet<u16>,
    /// Reads a pod's log (by its log path).
    pub read_log: &'a dyn Fn(&str) -> Option<String>,
    /// Now, RFC 3339.
    pub now: &'a str,
}

fn delete_jobs(jobs: &HashMap<String, &Value>) -> Vec<Op> {
    let mut names: Vec<&String> = jobs.keys().collect();
    names.sort();
    names.into_iter().filter_map(|n| jobs.get(n)).map(|j| Op::Delete { key: key_of(j), expected: None }).collect()
}

/// The writes of one CheckRun.
pub fn decide(cr: &Value, inp: &Inputs) -> Vec<Op> {
    let phase = str_at(cr, &["status", "phase"]).unwrap_or_default();
    let start = str_at(cr, &["status", "startTime"]).unwrap_or_default().to_string();
    if FINAL.contains(&phase) {
        // A terminated check's probes go; a finished one's stay for their logs.
        return if phase == "Terminated" { delete_jobs(inp.jobs) } else { Vec::new() };
    }
    let spec: CheckRunSpec = match cr.get("spec").map(|s| serde_json::from_value(s.clone())) {
        Some(Ok(s)) => s,
        _ => return finish(cr, "Failed", "spec does not parse", None, &start, inp.now),
    };
    if spec.terminate {
        let mut ops = delete_jobs(inp.jobs);
        ops.extend(finish(cr, "Terminated", "terminated: its probe pods were stopped", None, &start, inp.now));
        return ops;
    }
    let mut addresses = Vec::with_capacity(spec.nodes.len());
    for n in &spec.nodes {
        match inp.nodes.iter().find(|o| name(o) == n) {
            Some(o) => addresses.push(str_at(o, &["spec", "address"]).unwrap_or(n).to_string()),
            None => return finish(cr, "Failed", &format!("node {n} not found"), None, &start, inp.now),
        }
    }
    let transfers = matches!(spec.check_type.as_str(), "collective" | "network");
    let port = match at(cr, &["status", "port"]).and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()) {
        Some(p) => Some(p),
        None if transfers => match PORTS.clone().find(|p| !inp.taken_ports.contains(p)) {
            Some(p) => Some(p),
            None => return finish(cr, "Failed", "every check port (27000-27999) is in use", None, &start, inp.now),
        },
        None => None,
    };
    let mut ops = Vec::new();
    let mut states = Vec::with_capacity(spec.nodes.len());
    let mut logs: Vec<Option<String>> = Vec::with_capacity(spec.nodes.len());
    for (i, node) in spec.nodes.iter().enumerate() {
        let master = addresses.first().map(String::as_str).unwrap_or_default();
        let Some(j) = inp.jobs.get(&job_name(name(cr), i)) else {
            ops.push(Op::Create(job(cr, &spec, i, node, master, port)));
            states.push(PodPhase::Pending);
            logs.push(None);
            continue;
        };
        let pod = str_at(j, &["metadata", "uid"]).and_then(|uid| inp.pods.get(uid).copied());
        let state = pod.map(pods::phase_of).unwrap_or(PodPhase::Pending);
        let done = matches!(state, PodPhase::Succeeded | PodPhase::Failed);
        logs.push(if done {
            pod.and_then(|p| annotation(p, super::run::LOG_PATH)).and_then(inp.read_log)
        } else {
            None
        });
        states.push(state);
    }
    let start = if start.is_empty() { inp.now.to_string() } else { start };
    let done = states.iter().filter(|s| matches!(s, PodPhase::Succeeded | PodPhase::Failed)).count();
    let nodes_done = format!("{done}/{}", states.len());
    // A probe that failed before printing its report ends the check; one
    // that printed it (a failed comparison) is judged with the others.
    let silent = (0..states.len())
        .find(|&i| states[i] == PodPhase::Failed && logs[i].as_deref().and_then(report_line).is_none());
    if let Some(i) = silent {
        let why = logs[i].as_deref().map(tail).unwrap_or_default();
        let mut ops = delete_unfinished(inp, cr, &states);
        let msg = format!("the probe on node {} failed: {why}", spec.nodes[i]);
        ops.extend(status_op(
            cr,
            json!({"phase": "Failed", "message": msg, "startTime": start, "finishTime": inp.now,
                   "nodesDone": nodes_done, "port": port}),
        ));
        return ops;
    }
    if done < states.len() {
        let running = states.iter().any(|s| *s != PodPhase::Pending);
        let phase = if running { "Running" } else { "Pending" };
        let message = format!("{nodes_done} node(s) done");
        ops.extend(status_op(
            cr,
            json!({"phase": phase, "message": message, "startTime": start, "nodesDone": nodes_done, "port": port}),
        ));
        return ops;
    }
    let (report, pass) = match judge(&spec, inp.nodes, &logs) {
        Ok(r) => r,
        Err(why) => {
            ops.extend(finish(cr, "Failed", &why, None, &start, inp.now));
            return ops;
        }
    };
    let phase = if pass { "Succeeded" } else { "Failed" };
    let message = report.summary.clone();
    ops.extend(status_op(
        cr,
        json!({"phase": phase, "message": message, "startTime": start, "finishTime": inp.now,
               "nodesDone": nodes_done, "port": port, "report": report}),
    ));
    ops
}

/// Deletes the jobs whose pods have not ended (the others wait for a peer
/// that will never come).
fn delete_unfinished(inp: &Inputs, cr: &Value, states: &[PodPhase]) -> Vec<Op> {
    states
        .iter()
        .enumerate()
        .filter(|(_, s)| !matches!(s, PodPhase::Succeeded | PodPhase::Failed))
        .filter_map(|(i, _)| inp.jobs.get(&job_name(name(cr), i)))
        .map(|j| Op::Delete { key: key_of(j), expected: None })
        .collect()
}

fn finish(cr: &Value, phase: &str, message: &str, report: Option<&CheckReport>, start: &str, now: &str) -> Vec<Op> {
    let start = if start.is_empty() { now } else { start };
    let mut wanted = json!({"phase": phase, "message": message, "startTime": start, "finishTime": now});
    if let Some(r) = report {
        wanted["report"] = json!(r);
    }
    status_op(cr, wanted).into_iter().collect()
}

/// The report from the probes' logs, and whether everything passed.
pub fn judge(spec: &CheckRunSpec, nodes: &[Value], logs: &[Option<String>]) -> Result<(CheckReport, bool), String> {
    let line = |i: usize| -> Result<Value, String> {
        logs.get(i).and_then(|l| l.as_deref()).and_then(report_line).ok_or_else(|| {
            format!("the probe on node {} printed no report", spec.nodes.get(i).cloned().unwrap_or_default())
        })
    };
    match spec.check_type.as_str() {
        "collective" => {
            let rows: Vec<CollectiveRow> = serde_json::from_value(line(0)?.get("rows").cloned().unwrap_or_default())
                .map_err(|e| format!("the collective report does not parse: {e}"))?;
            let pass = !rows.is_empty() && rows.iter().all(|r| r.check_result == "success");
            let best = rows.iter().max_by(|a, b| a.alg_bandwidth.total_cmp(&b.alg_bandwidth));
            let summary = match best {
                Some(b) => format!(
                    "{} rows, check_result {}; max alg_bandwidth {:.4} GB/s ({} at {} bytes), bus_bandwidth {:.4} GB/s",
                    rows.len(),
                    if pass { "success" } else { "fail" },
                    b.alg_bandwidth,
                    b.operation,
                    b.data_size,
                    b.bus_bandwidth
                ),
                None => "no rows".to_string(),
            };
            Ok((CheckReport { rows, summary, ..CheckReport::default() }, pass))
        }
        "network" => {
            let pairs: Vec<NetworkPair> = serde_json::from_value(line(0)?.get("pairs").cloned().unwrap_or_default())
                .map_err(|e| format!("the network report does not parse: {e}"))?;
            let pass = !pairs.is_empty() && pairs.iter().all(|p| p.pass);
            let min_bw = pairs.iter().map(|p| p.bandwidth_gbps).fold(f64::INFINITY, f64::min);
            let max_lat = pairs.iter().map(|p| p.latency_us).fold(0.0, f64::max);
            let transports: BTreeSet<&str> = pairs.iter().map(|p| p.transport.as_str()).collect();
            let summary = format!(
                "{} pair(s) over {}: min bandwidth {:.4} GB/s, max latency {:.2} us",
                pairs.len(),
                transports.into_iter().collect::<Vec<_>>().join(","),
                if min_bw.is_finite() { min_bw } else { 0.0 },
                max_lat
            );
            Ok((CheckReport { pairs, summary, ..CheckReport::default() }, pass))
        }
        _ => {
            let mut facts = Vec::with_capacity(spec.nodes.len());
            for (i, n) in spec.nodes.iter().enumerate() {
                facts.push((n.clone(), line(i)?.get("facts").cloned().unwrap_or_default()));
            }
            let items = server_items(spec, nodes, &facts);
            let passed = items.iter().filter(|i| i.pass).count();
            let summary = format!("{passed}/{} items passed on {} node(s)", items.len(), facts.len());
            let pass = passed == items.len();
            Ok((CheckReport { items, summary, ..CheckReport::default() }, pass))
        }
    }
}

/// One fact of a node's report, as compared across nodes.
type Fact = fn(&Value) -> String;

fn gib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / (1u64 << 20) as f64)
}

/// The server items of every node, then the consistency items.
pub fn server_items(spec: &CheckRunSpec, nodes: &[Value], facts: &[(String, Value)]) -> Vec<CheckItem> {
    let mut items = Vec::new();
    let u = |f: &Value, k: &str| f.get(k).and_then(Value::as_u64).unwrap_or(0);
    let s = |f: &Value, k: &str| f.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    for (node, f) in facts {
        let item = |name: &str, method: &str, criterion: &str, advice: &str, result: String, pass: bool| CheckItem {
            node: node.clone(),
            name: name.into(),
            method: method.into(),
            criterion: criterion.into(),
            advice: advice.into(),
            result,
            pass,
        };
        let cpus = u(f, "cpus");
        items.push(item(
            "cpu",
            "count the processor entries of /proc/cpuinfo",
            "at least 1 CPU online",
            "check the BIOS and kernel CPU settings (offline CPUs are not listed)",
            format!("{cpus} CPUs: {}", s(f, "cpu_model")),
            cpus >= 1,
        ));
        let (total, avail) = (u(f, "mem_total_kib"), u(f, "mem_available_kib"));
        items.push(item(
            "memory",
            "MemTotal and MemAvailable of /proc/meminfo",
            "MemAvailable at least 10% of MemTotal",
            "find what holds the memory (stray processes, page cache pinned by tmpfs) or add memory",
            format!("{} GiB total, {} GiB available", gib(total), gib(avail)),
            total > 0 && avail * 10 >= total,
        ));
        let load = f.get("load1").and_then(Value::as_f64).unwrap_or(0.0);
        items.push(item(
            "cpu-load",
            "1-minute load average of /proc/loadavg",
            "below the CPU count",
            "find what keeps the CPUs busy (top) before running jobs here",
            format!("{load:.2} on {cpus} CPUs"),
            load < cpus.max(1) as f64,
        ));
        let node_obj = nodes.iter().find(|n| name(n) == node);
        let detected = node_obj.is_some_and(|n| {
            str_at(n, &["spec", "topologyText"]).is_some() || str_at(n, &["spec", "npuSmiText"]).is_some()
        });
        let profile = node_obj.and_then(|n| str_at(n, &["spec", "profile"])).unwrap_or_default();
        let driver = [s(f, "nvidia_driver"), s(f, "npu_driver")].into_iter().find(|d| !d.is_empty());
        let (result, pass) = match (&driver, detected) {
            (Some(d), _) => (d.clone(), true),
            (None, true) => ("not present".to_string(), false),
            (None, false) => (format!("not present; the node's devices are virtual (profile {profile})"), true),
        };
        items.push(item(
            "driver",
            "nvidia-smi --query-gpu=driver_version, else npu-smi info",
            "a node whose devices were detected (not a profile) answers nvidia-smi or npu-smi",
            "install or reload the driver (nvidia-smi / npu-smi must answer), then re-run",
            result,
            pass,
        ));
        let unhealthy: Vec<String> = node_obj
            .and_then(|n| at(n, &["status", "unhealthyDevices"]))
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|d| d.to_string()).collect())
            .unwrap_or_default();
        items.push(item(
            "chip-health",
            "the node agent's device health (Node status.unhealthyDevices)",
            "no unhealthy device",
            "replace or reset the devices listed; the scheduler does not use them meanwhile",
            if unhealthy.is_empty() {
                "none unhealthy".to_string()
            } else {
                format!("unhealthy: {}", unhealthy.join(","))
            },
            unhealthy.is_empty(),
        ));
        // HBM: what the agent's device telemetry read (NVML, nvidia-smi or
        // npu-smi); virtual devices report nothing and are not judged.
        let memory: Vec<(u64, u64, u64)> = node_obj
            .and_then(|n| at(n, &["status", "deviceTelemetry"]))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|d| {
                let total = d.get("memoryTotalBytes").and_then(Value::as_u64)?;
                let id = d.get("id").and_then(Value::as_u64).unwrap_or_default();
                Some((id, d.get("memoryUsedBytes").and_then(Value::as_u64).unwrap_or_default(), total))
            })
            .collect();
        let gib_of = |b: u64| format!("{:.1}", b as f64 / (1u64 << 30) as f64);
        let (result, pass) = match (memory.is_empty(), detected) {
            (false, _) => (
                memory
                    .iter()
                    .map(|(id, used, total)| format!("device {id}: {} of {} GiB used", gib_of(*used), gib_of(*total)))
                    .collect::<Vec<_>>()
                    .join(", "),
                memory.iter().all(|(_, _, total)| *total > 0),
            ),
            (true, true) => ("not reported".to_string(), false),
            (true, false) => (format!("not reported; the node's devices are virtual (profile {profile})"), true),
        };
        items.push(item(
            "hbm",
            "device memory from the node agent's telemetry (Node status.deviceTelemetry: NVML, nvidia-smi or npu-smi)",
            "every detected device reports its memory size",
            "a device whose memory the driver cannot read is failing: check it with nvidia-smi -q / npu-smi info -t memory",
            result,
            pass,
        ));
    }
    let compared: [(&str, Fact); 3] = [
        ("cpu-count", |f| f.get("cpus").and_then(Value::as_u64).unwrap_or(0).to_string()),
        ("cpu-model", |f| f.get("cpu_model").and_then(Value::as_str).unwrap_or_default().to_string()),
        ("memory-total", |f| gib(f.get("mem_total_kib").and_then(Value::as_u64).unwrap_or(0))),
    ];
    match spec.baseline_node.as_ref().and_then(|b| facts.iter().find(|(n, _)| n == b)) {
        Some((base, bf)) => {
            for (node, f) in facts.iter().filter(|(n, _)| n != base) {
                for (what, value) in &compared {
                    let (mine, theirs) = (value(f), value(bf));
                    items.push(CheckItem {
                        node: node.clone(),
                        name: format!("consistency:{what}"),
                        method: format!("compare with the baseline node {base}"),
                        criterion: "the same as the baseline".into(),
                        advice: "make the node's hardware and configuration match the baseline's".into(),
                        result: if mine == theirs {
                            format!("{mine} (same)")
                        } else {
                            format!("{mine}; baseline {theirs}")
                        },
                        pass: mine == theirs,
                    });
                }
            }
        }
        None if facts.len() > 1 => {
            // Without a baseline the values are tabulated, not judged.
            for (what, value) in &compared {
                let table: Vec<String> = facts.iter().map(|(n, f)| format!("{n}: {}", value(f))).collect();
                items.push(CheckItem {
                    node: "*".into(),
                    name: format!("consistency:{what}"),
                    method: "tabulate across the nodes (no baseline node given)".into(),
                    criterion: "none without a baseline node".into(),
                    advice: "name a baseline node to judge".into(),
                    result: table.join("; "),
                    pass: true,
                });
            }
        }
        None => {}
    }
    items
}

/// The writes of every CheckRun in the cache.
pub fn pass_ops(cache: &Cache, now: f64) -> Vec<Op> {
    let runs: Vec<&Value> = cache.of_kind(API, "CheckRun").map(|o| &o.object).collect();
    if runs.is_empty() {
        return Vec::new();
    }
    let nodes = objects(cache, super::api::NODE_API, "Node");
    let taken_ports: BTreeSet<u16> = runs
        .iter()
        .filter(|r| !FINAL.contains(&str_at(r, &["status", "phase"]).unwrap_or_default()))
        .filter_map(|r| at(r, &["status", "port"]).and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()))
        .collect();
    let now = ringleader_api::time::rfc3339(now);
    let mut ops = Vec::new();
    for cr in runs {
        let (jobs, pods) = node_jobs_of(cache, str_at(cr, &["metadata", "uid"]));
        // Its own port is not taken from itself.
        let own = at(cr, &["status", "port"]).and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok());
        let others: BTreeSet<u16> = taken_ports.iter().copied().filter(|p| Some(*p) != own).collect();
        let inputs =
            Inputs { nodes: &nodes, jobs: &jobs, pods: &pods, taken_ports: &others, read_log: &read_log, now: &now };
        ops.extend(decide(cr, &inputs));
    }
    ops
}

/// Uids of the CheckRuns: they own their probe jobs.
pub fn owner_uids(cache: &Cache) -> impl Iterator<Item = String> + '_ {
    cache.of_kind(API, "CheckRun").filter_map(|o| str_at(&o.object, &["metadata", "uid"]).map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_api::{validate, Resource};

    fn cr(spec: Value) -> Value {
        json!({"apiVersion": API, "kind": "CheckRun", "metadata": {"name": "c1", "uid": "cr-uid"}, "spec": spec})
    }

    fn nodes() -> Vec<Value> {
        vec![
            json!({"metadata": {"name": "a"}, "spec": {"profile": "hgx-h100-8", "address": "127.0.9.1"},
                   "status": {"deviceTelemetry": [{"id": 0, "memoryUsedBytes": 1073741824u64, "memoryTotalBytes": 85899345920u64}]}}),
            json!({"metadata": {"name": "b"}, "spec": {"profile": "hgx-h100-8", "address": "127.0.9.2"},
                   "status": {"unhealthyDevices": [3]}}),
        ]
    }

    fn inputs<'a>(
        nodes: &'a [Value],
        jobs: &'a HashMap<String, &'a Value>,
        pods: &'a HashMap<String, &'a Value>,
        taken: &'a BTreeSet<u16>,
        log: &'a dyn Fn(&str) -> Option<String>,
    ) -> Inputs<'a> {
        Inputs { nodes, jobs, pods, taken_ports: taken, read_log: log, now: "2025-01-01T00:00:00Z" }
    }

    #[test]
    fn a_collective_check_makes_one_valid_probe_job_per_node_meeting_at_the_first() {
        let c = cr(json!({"type": "collective", "nodes": ["a", "b"], "operations": ["all_reduce", "all_to_all"],
                          "devicesPerNode": 2, "minBytes": 1024, "maxBytes": 4096}));
        let (jobs, pods, taken) = (HashMap::new(), HashMap::new(), BTreeSet::from([27000]));
        let n = nodes();
        let ops = decide(&c, &inputs(&n, &jobs, &pods, &taken, &|_: &str| None));
        let created: Vec<&Value> =
            ops.iter().filter_map(|o| if let Op::Create(v) = o { Some(v) } else { None }).collect();
        assert_eq!(created.len(), 2);
        let pod = &created[1]["spec"]["template"]["spec"];
        assert_eq!(created[1]["metadata"]["name"], "c1-chk1");
        assert_eq!(pod["nodeSelector"][super::super::script::HOSTNAME_LABEL], "b");
        let env = pod["containers"][0]["env"].as_array().cloned().unwrap_or_default();
        let get = |k: &str| env.iter().find(|e| e["name"] == k).map(|e| e["value"].clone());
        assert_eq!(get("MASTER_ADDR"), Some(json!("127.0.9.1")));
        assert_eq!(get("MASTER_PORT"), Some(json!("27001")), "27000 is another check's");
        assert_eq!((get("RANK"), get("WORLD_SIZE")), (Some(json!("1")), Some(json!("4"))));
        let cmd: Vec<&str> =
            pod["containers"][0]["command"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        assert_eq!(&cmd[..5], &["ringleader", "probe", "collective", "--ops", "all_reduce,all_to_all"]);
        assert!(cmd.windows(2).any(|w| w == ["--ranks-per-process", "2"]));
        let r = Resource::from_value(created[0]).expect("typed");
        assert!(validate(&r).is_empty(), "{:?}", validate(&r));
        let Some(Op::Patch { patch, .. }) = ops.last() else { panic!("{ops:?}") };
        assert_eq!(patch["status"]["phase"], "Pending");
        assert_eq!(patch["status"]["port"], 27001);
    }

    fn done_pods(phases: &[&str]) -> (Vec<Value>, Vec<Value>) {
        let jobs = (0..phases.len())
            .map(|i| {
                json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": format!("c1-chk{i}"), "namespace": super::super::SYSTEM_NAMESPACE, "uid": format!("j{i}")}})
            })
            .collect();
        let pods = phases
            .iter()
            .enumerate()
            .map(|(i, p)| {
                json!({"metadata": {"annotations": {super::super::run::LOG_PATH: format!("/log/{i}")}},
                                 "status": {"phase": p}})
            })
            .collect();
        (jobs, pods)
    }

    fn run_with(c: &Value, phases: &[&str], log: &dyn Fn(&str) -> Option<String>) -> Vec<Op> {
        let (jobs, pods) = done_pods(phases);
        let jobs_map: HashMap<String, &Value> =
            jobs.iter().map(|j| (j["metadata"]["name"].as_str().unwrap_or_default().to_string(), j)).collect();
        let pods_map: HashMap<String, &Value> = pods.iter().enumerate().map(|(i, p)| (format!("j{i}"), p)).collect();
        let n = nodes();
        let taken = BTreeSet::new();
        decide(c, &inputs(&n, &jobs_map, &pods_map, &taken, log))
    }

    #[test]
    fn the_report_line_of_rank_zero_becomes_the_rows() {
        let c = cr(json!({"type": "collective", "nodes": ["a", "b"]}));
        let line = |_: &str| {
            Some(format!(
                "table\n{}{}\nsummary\n",
                ringleader_probe::REPORT_PREFIX,
                json!({"rows": [
                {"operation": "all_reduce", "data_size": 1024, "aveg_time_us": 10.0, "alg_bandwidth": 0.1024,
                 "bus_bandwidth": 0.1024, "check_result": "success"}]})
            ))
        };
        let ops = run_with(&c, &["Succeeded", "Succeeded"], &line);
        let Some(Op::Patch { patch, .. }) = ops.last() else { panic!("{ops:?}") };
        let st = &patch["status"];
        assert_eq!(st["phase"], "Succeeded");
        assert_eq!(st["report"]["rows"][0]["data_size"], 1024);
        assert_eq!(st["nodesDone"], "2/2");
        assert!(st["message"].as_str().unwrap_or_default().contains("max alg_bandwidth 0.1024"), "{st}");
        // Still running: Running, no report.
        let ops = run_with(&c, &["Running", "Succeeded"], &line);
        let Some(Op::Patch { patch, .. }) = ops.last() else { panic!("{ops:?}") };
        assert_eq!(patch["status"]["phase"], "Running");
        assert!(patch["status"].get("report").is_none());
    }

    #[test]
    fn a_probe_failing_without_a_report_fails_the_check_and_stops_the_others() {
        let c = cr(json!({"type": "network", "nodes": ["a", "b"]}));
        let ops = run_with(&c, &["Running", "Failed"], &|_: &str| Some("error: rendezvous: timed out\n".into()));
        assert!(ops.iter().any(|o| matches!(o, Op::Delete { key, .. } if key.name == "c1-chk0")), "{ops:?}");
        let Some(Op::Patch { patch, .. }) = ops.last() else { panic!("{ops:?}") };
        assert_eq!(patch["status"]["phase"], "Failed");
        assert!(patch["status"]["message"].as_str().unwrap_or_default().contains("node b failed: error: rendezvous"));
    }

    #[test]
    fn terminate_deletes_the_jobs_and_ends_terminated() {
        let c = cr(json!({"type": "collective", "nodes": ["a", "b"], "terminate": true}));
        let ops = run_with(&c, &["Running", "Running"], &|_: &str| None);
        assert_eq!(ops.iter().filter(|o| matches!(o, Op::Delete { .. })).count(), 2);
        let Some(Op::Patch { patch, .. }) = ops.last() else { panic!("{ops:?}") };
        assert_eq!(patch["status"]["phase"], "Terminated");
        assert_eq!(patch["status"]["finishTime"], "2025-01-01T00:00:00Z");
    }

    #[test]
    fn server_items_judge_real_facts_and_the_baseline() {
        let c = cr(json!({"type": "server", "nodes": ["a", "b"], "baselineNode": "a"}));
        let facts = |cpus: u64, model: &str| {
            json!({"facts": {"cpus": cpus, "cpu_model": model, "mem_total_kib": 1048576,
            "mem_available_kib": 524288, "load1": 0.5, "nvidia_driver": null, "npu_driver": null}})
        };
        let log = move |p: &str| {
            let f = if p.ends_with('0') { facts(8, "Xeon") } else { facts(4, "Xeon") };
            Some(format!("{}{f}\n", ringleader_probe::REPORT_PREFIX))
        };
        let ops = run_with(&c, &["Succeeded", "Succeeded"], &log);
        let Some(Op::Patch { patch, .. }) = ops.last() else { panic!("{ops:?}") };
        let items: Vec<CheckItem> = serde_json::from_value(patch["status"]["report"]["items"].clone()).expect("items");
        let find = |node: &str, name: &str| {
            items.iter().find(|i| i.node == node && i.name == name).cloned().unwrap_or_default()
        };
        assert!(find("a", "cpu").pass && find("a", "cpu").result == "8 CPUs: Xeon");
        assert_eq!(find("a", "memory").result, "1.0 GiB total, 0.5 GiB available");
        let driver = find("a", "driver");
        assert!(driver.pass && driver.result.contains("not present; the node's devices are virtual"), "{driver:?}");
        assert!(!find("b", "chip-health").pass && find("b", "chip-health").result == "unhealthy: 3");
        assert!(
            find("a", "hbm").pass && find("a", "hbm").result == "device 0: 1.0 of 80.0 GiB used",
            "{:?}",
            find("a", "hbm")
        );
        assert!(
            find("b", "hbm").pass
                && find("b", "hbm").result.starts_with("not reported; the node's devices are virtual")
        );
        let cpus = find("b", "consistency:cpu-count");
        assert!(!cpus.pass && cpus.result == "4; baseline 8", "{cpus:?}");
        assert!(find("b", "consistency:cpu-model").pass);
        assert_eq!(patch["status"]["phase"], "Failed");
        assert_eq!(patch["status"]["report"]["summary"], "13/15 items passed on 2 node(s)");
        for i in &items {
            assert!(!i.method.is_empty() && !i.criterion.is_empty() && !i.advice.is_empty(), "{i:?}");
        }
    }

    #[test]
    fn a_missing_node_fails_and_a_final_check_writes_nothing() {
        let c = cr(json!({"type": "server", "nodes": ["ghost"]}));
        let ops = run_with(&c, &[], &|_: &str| None);
        let Some(Op::Patch { patch, .. }) = ops.last() else { panic!("{ops:?}") };
        assert_eq!(patch["status"]["message"], "node ghost not found");
        let mut done = c.clone();
        done["status"] = json!({"phase": "Succeeded"});
        assert!(run_with(&done, &["Succeeded"], &|_: &str| None).is_empty());
    }
}
