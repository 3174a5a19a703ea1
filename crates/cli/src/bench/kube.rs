//! `ringleader bench kube`: one gang AscendJob of N pods through a real
//! kube-apiserver, timed from the create to every pod Running (issue 14's
//! benchmark against Volcano + MindCluster's 400 s for 5,000 pods). A
//! `ringleader manager` and agents serving at least N Nodes must already run
//! against the kubeconfig (`scripts/k8s-gang-bench.sh` starts them all).
//! The driver only creates the job and follows its pods through a watch, so
//! what it measures is the manager, the agents and the apiserver together.

use super::jobs::ascend_job;
use anyhow::{bail, Context, Result};
use futures_util::StreamExt;
use ringleader_kube::kube;
use ringleader_kube::kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams, WatchEvent, WatchParams,
};
use ringleader_topology::profile::Vendor;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct BenchKubeArgs {
    /// kubeconfig of the kube-apiserver the manager and the agents use.
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: PathBuf,
    /// Pods of the job (one Master, the rest Workers), each taking a whole node.
    #[arg(long)]
    pods: usize,
    /// Ready Nodes to wait for before the job is created (default: --pods).
    #[arg(long)]
    nodes: Option<usize>,
    /// Hardware profile of the nodes: each pod requests all of its chips.
    #[arg(long, default_value = "atlas-800t-a2")]
    profile: String,
    /// Namespace of the job.
    #[arg(long, default_value = "default")]
    namespace: String,
    /// Seconds to wait for the Nodes to be Ready.
    #[arg(long, default_value_t = 600)]
    nodes_timeout: u64,
    /// Seconds to wait, from the create, for every pod to be Running.
    #[arg(long, default_value_t = 900)]
    timeout: u64,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Output,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Output {
    Table,
    Json,
}

/// What one run measured; seconds from just before the job's create.
#[derive(Serialize)]
struct Report {
    job: String,
    pods: usize,
    ready_nodes: usize,
    chips_per_pod: u32,
    /// The wait for the Nodes to be Ready, before the clock started.
    nodes_wait_seconds: f64,
    create_call_seconds: f64,
    first_pod_created: Option<f64>,
    all_pods_created: Option<f64>,
    first_pod_bound: Option<f64>,
    all_pods_bound: Option<f64>,
    first_pod_running: Option<f64>,
    all_pods_running: Option<f64>,
    /// Distinct nodes the pods were bound to (N when each has its own).
    distinct_nodes: usize,
    /// Volcano + MindCluster, 5,000 pods on 5,000 nodes (seed benchmarks).
    reference_seconds: f64,
}

/// When the watch first saw each pod, bound and Running.
#[derive(Default, Clone)]
struct Seen {
    created: Option<f64>,
    bound: Option<f64>,
    running: Option<f64>,
    node: Option<String>,
}

pub fn run(args: BenchKubeArgs) -> Result<u8> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let report = rt.block_on(bench(&args))?;
    match args.output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Output::Table => print_table(&report),
    }
    Ok(if report.all_pods_running.is_some() { 0 } else { 1 })
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

async fn bench(args: &BenchKubeArgs) -> Result<Report> {
    if args.pods == 0 {
        bail!("--pods 0: at least 1 pod is needed");
    }
    let profile = ringleader_topology::builtin(&args.profile).with_context(|| {
        format!(
            "--profile {:?}: not a built-in profile (allowed: {})",
            args.profile,
            ringleader_topology::builtin_names().join(", ")
        )
    })?;
    if profile.vendor != Vendor::Huawei {
        bail!(
            "--profile {:?}: an AscendJob needs an Ascend profile (vendor huawei), not {}",
            args.profile,
            profile.vendor
        );
    }
    let chips = u32::try_from(profile.devices.len()).unwrap_or(u32::MAX);
    let want_nodes = args.nodes.unwrap_or(args.pods);
    let client = ringleader_kube::setup::client(&args.kubeconfig).await?;

    let waited = Instant::now();
    let ready_nodes = wait_for_nodes(&client, want_nodes, Duration::from_secs(args.nodes_timeout)).await?;
    let nodes_wait_seconds = waited.elapsed().as_secs_f64();
    eprintln!("bench kube: {ready_nodes} Nodes Ready (waited {nodes_wait_seconds:.1} s)");
    ensure_default_queue(&client).await?;

    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let name = format!("bench-kube-{}-{stamp}", args.pods);
    let selector = format!("job-name={name}");
    let pods: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &args.namespace, &resource("", "v1", "Pod", "pods"));
    let jobs: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &args.namespace,
        &resource("mindxdl.gitee.com", "v1", "AscendJob", "ascendjobs"),
    );
    served(&jobs, "AscendJob").await?;
    // The watch starts from before the create, so no pod is missed.
    let listed = pods.list(&ListParams::default().labels(&selector)).await.context("listing pods")?;
    let mut version = listed.metadata.resource_version.unwrap_or_default();
    let job: DynamicObject =
        serde_json::from_value(ascend_job(&name, &args.namespace, args.pods, chips, &profile.resource_name))?;

    let t0 = Instant::now();
    jobs.create(&PostParams::default(), &job).await.with_context(|| format!("creating AscendJob {name}"))?;
    let create_call_seconds = t0.elapsed().as_secs_f64();
    eprintln!("bench kube: AscendJob {}/{name} created ({} pods × {chips} chips)", args.namespace, args.pods);

    let deadline = t0 + Duration::from_secs(args.timeout);
    let mut seen: HashMap<String, Seen> = HashMap::new();
    let mut progress = Instant::now();
    // SIGTERM or Ctrl-C ends the wait and reports what was measured so far.
    let mut stop = stop_signal()?;
    while running(&seen) < args.pods {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            eprintln!("bench kube: timed out after {} s", args.timeout);
            break;
        }
        if *stop.borrow() {
            eprintln!("bench kube: stopped by a signal");
            break;
        }
        let params = WatchParams::default().labels(&selector).timeout(left.as_secs().clamp(1, 290) as u32);
        let stream = match pods.watch(&params, &version).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("bench kube: watch failed ({e}); resuming");
                tokio::time::sleep(Duration::from_millis(500).min(left)).await;
                continue;
            }
        };
        let mut stream = std::pin::pin!(stream);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let next = tokio::select! {
                next = tokio::time::timeout(left, stream.next()) => next,
                _ = stop.changed() => break,
            };
            let event = match next {
                Err(_) | Ok(None) => break,
                Ok(Some(Err(e))) => {
                    eprintln!("bench kube: watch broke ({e}); resuming");
                    break;
                }
                Ok(Some(Ok(event))) => event,
            };
            let now = t0.elapsed().as_secs_f64();
            match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    if let Some(v) = o.metadata.resource_version.clone() {
                        version = v;
                    }
                    observe(&mut seen, &o, now);
                }
                WatchEvent::Deleted(o) => {
                    if let Some(v) = o.metadata.resource_version.clone() {
                        version = v;
                    }
                }
                WatchEvent::Bookmark(b) => version = b.metadata.resource_version,
                WatchEvent::Error(s) if s.code == 410 => {
                    // The version followed is gone: list again, and go on from there.
                    let list = pods.list(&ListParams::default().labels(&selector)).await.context("listing pods")?;
                    let now = t0.elapsed().as_secs_f64();
                    for o in &list.items {
                        observe(&mut seen, o, now);
                    }
                    version = list.metadata.resource_version.unwrap_or_default();
                    break;
                }
                WatchEvent::Error(s) => {
                    eprintln!("bench kube: watch error {} ({}); resuming", s.message, s.code);
                    break;
                }
            }
            if progress.elapsed() >= Duration::from_secs(5) {
                progress = Instant::now();
                let (c, b, r) = counts(&seen);
                eprintln!("bench kube: {now:7.1} s: {c} created, {b} bound, {r} Running of {}", args.pods);
            }
            if running(&seen) >= args.pods {
                break;
            }
        }
    }
    let times = |f: fn(&Seen) -> Option<f64>| -> (Option<f64>, Option<f64>) {
        let mut v: Vec<f64> = seen.values().filter_map(f).collect();
        v.sort_by(f64::total_cmp);
        let all = (v.len() >= args.pods).then(|| v.last().copied()).flatten();
        (v.first().copied(), all)
    };
    let (first_pod_created, all_pods_created) = times(|s| s.created);
    let (first_pod_bound, all_pods_bound) = times(|s| s.bound);
    let (first_pod_running, all_pods_running) = times(|s| s.running);
    let mut nodes: Vec<&str> = seen.values().filter_map(|s| s.node.as_deref()).collect();
    nodes.sort_unstable();
    nodes.dedup();
    Ok(Report {
        job: format!("{}/{name}", args.namespace),
        pods: args.pods,
        ready_nodes,
        chips_per_pod: chips,
        nodes_wait_seconds,
        create_call_seconds,
        first_pod_created,
        all_pods_created,
        first_pod_bound,
        all_pods_bound,
        first_pod_running,
        all_pods_running,
        distinct_nodes: nodes.len(),
        reference_seconds: 400.0,
    })
}

/// A flag that turns true on SIGTERM or SIGINT.
fn stop_signal() -> Result<tokio::sync::watch::Receiver<bool>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        let _ = tx.send(true);
    });
    Ok(rx)
}

fn observe(seen: &mut HashMap<String, Seen>, pod: &DynamicObject, now: f64) {
    let Some(name) = pod.metadata.name.clone() else { return };
    let s = seen.entry(name).or_default();
    s.created.get_or_insert(now);
    if let Some(node) = pod.data.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty()) {
        s.bound.get_or_insert(now);
        s.node.get_or_insert_with(|| node.to_string());
    }
    if pod.data.pointer("/status/phase").and_then(Value::as_str) == Some("Running") {
        s.running.get_or_insert(now);
    }
}

fn running(seen: &HashMap<String, Seen>) -> usize {
    seen.values().filter(|s| s.running.is_some()).count()
}

fn counts(seen: &HashMap<String, Seen>) -> (usize, usize, usize) {
    let bound = seen.values().filter(|s| s.bound.is_some()).count();
    (seen.len(), bound, running(seen))
}

fn node_ready(node: &DynamicObject) -> bool {
    node.data.pointer("/status/conditions").and_then(Value::as_array).into_iter().flatten().any(|c| {
        c.get("type").and_then(Value::as_str) == Some("Ready")
            && c.get("status").and_then(Value::as_str) == Some("True")
    })
}

/// Waits, through a watch, until `want` Nodes are Ready; returns how many are.
async fn wait_for_nodes(client: &kube::Client, want: usize, wait: Duration) -> Result<usize> {
    let nodes: Api<DynamicObject> = Api::all_with(client.clone(), &resource("", "v1", "Node", "nodes"));
    let deadline = Instant::now() + wait;
    let mut ready: HashMap<String, bool> = HashMap::new();
    let list = nodes.list(&ListParams::default()).await.context("listing Nodes")?;
    for n in &list.items {
        ready.insert(n.metadata.name.clone().unwrap_or_default(), node_ready(n));
    }
    let mut version = list.metadata.resource_version.unwrap_or_default();
    let count = |r: &HashMap<String, bool>| r.values().filter(|v| **v).count();
    let mut progress = Instant::now();
    while count(&ready) < want {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            bail!("{} of {want} Nodes Ready after {} s", count(&ready), wait.as_secs());
        }
        let params = WatchParams::default().timeout(left.as_secs().clamp(1, 290) as u32);
        let stream = nodes.watch(&params, &version).await.context("watching Nodes")?;
        let mut stream = std::pin::pin!(stream);
        while count(&ready) < want {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = match tokio::time::timeout(left, stream.next()).await {
                Err(_) | Ok(None) | Ok(Some(Err(_))) => break,
                Ok(Some(Ok(event))) => event,
            };
            match event {
                WatchEvent::Added(n) | WatchEvent::Modified(n) => {
                    version = n.metadata.resource_version.clone().unwrap_or(version);
                    ready.insert(n.metadata.name.clone().unwrap_or_default(), node_ready(&n));
                }
                WatchEvent::Deleted(n) => {
                    version = n.metadata.resource_version.clone().unwrap_or(version);
                    ready.remove(n.metadata.name.as_deref().unwrap_or_default());
                }
                WatchEvent::Bookmark(b) => version = b.metadata.resource_version,
                WatchEvent::Error(s) if s.code == 410 => {
                    let list = nodes.list(&ListParams::default()).await.context("listing Nodes")?;
                    ready = list
                        .items
                        .iter()
                        .map(|n| (n.metadata.name.clone().unwrap_or_default(), node_ready(n)))
                        .collect();
                    version = list.metadata.resource_version.unwrap_or_default();
                    break;
                }
                WatchEvent::Error(s) => bail!("watching Nodes: {} ({})", s.message, s.code),
            }
            if progress.elapsed() >= Duration::from_secs(5) {
                progress = Instant::now();
                eprintln!("bench kube: {} Nodes seen, {} Ready of {want}", ready.len(), count(&ready));
            }
        }
    }
    Ok(count(&ready))
}

/// The job's queue, as Volcano's installation creates it.
async fn ensure_default_queue(client: &kube::Client) -> Result<()> {
    let queues: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("scheduling.volcano.sh", "v1beta1", "Queue", "queues"));
    let queue: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": "default"}, "spec": {"weight": 1},
    }))?;
    // The manager installs the CRDs as it starts: a 404 is the CRD not
    // served yet (bounded retry).
    let deadline = Instant::now() + CRD_WAIT;
    loop {
        match queues.create(&PostParams::default(), &queue).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => return Err(e).context("creating Queue default (is `ringleader manager` running?)"),
        }
    }
}

/// Waits (at most [`CRD_WAIT`]) until `api`'s kind is served: the manager
/// installs the job CRDs as it starts.
async fn served(api: &Api<DynamicObject>, kind: &str) -> Result<()> {
    let deadline = Instant::now() + CRD_WAIT;
    loop {
        match api.list(&ListParams::default().limit(1)).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => {
                return Err(e).with_context(|| format!("{kind}s are not served (is `ringleader manager` running?)"))
            }
        }
    }
}

/// How long the CRDs may take to be served after the driver starts.
const CRD_WAIT: Duration = Duration::from_secs(60);

fn print_table(r: &Report) {
    let fmt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |s| format!("{s:.2} s"));
    println!("AscendJob {}: {} pods × {} chips, {} Nodes Ready", r.job, r.pods, r.chips_per_pod, r.ready_nodes);
    println!("  {:<28} {}", "create call", fmt(Some(r.create_call_seconds)));
    println!("  {:<28} {} (first {})", "all pods created", fmt(r.all_pods_created), fmt(r.first_pod_created));
    println!("  {:<28} {} (first {})", "all pods bound", fmt(r.all_pods_bound), fmt(r.first_pod_bound));
    println!("  {:<28} {} (first {})", "all pods Running", fmt(r.all_pods_running), fmt(r.first_pod_running));
    println!("  {:<28} {}", "distinct nodes", r.distinct_nodes);
    match r.all_pods_running {
        Some(s) => println!(
            "  {:<28} {:.0} s ({:.1}x faster)",
            "Volcano + MindCluster (seed)",
            r.reference_seconds,
            r.reference_seconds / s.max(1e-9)
        ),
        None => println!("  not every pod was Running: no comparison with the seed's {:.0} s", r.reference_seconds),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, node: Option<&str>, phase: &str) -> Result<DynamicObject> {
        let mut spec = json!({"containers": []});
        if let Some(n) = node {
            spec["nodeName"] = json!(n);
        }
        Ok(serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec, "status": {"phase": phase},
        }))?)
    }

    #[test]
    fn each_milestone_keeps_the_time_it_was_first_seen() -> Result<()> {
        let mut seen = HashMap::new();
        observe(&mut seen, &pod("a", None, "Pending")?, 1.0);
        observe(&mut seen, &pod("a", Some("n1"), "Pending")?, 2.0);
        observe(&mut seen, &pod("a", Some("n1"), "Running")?, 3.0);
        observe(&mut seen, &pod("a", Some("n1"), "Running")?, 9.0);
        observe(&mut seen, &pod("b", Some("n2"), "Running")?, 4.0);
        let a = &seen["a"];
        assert_eq!((a.created, a.bound, a.running), (Some(1.0), Some(2.0), Some(3.0)));
        assert_eq!(counts(&seen), (2, 2, 2));
        Ok(())
    }

    #[test]
    fn the_job_has_one_master_and_the_rest_workers_in_one_gang() {
        let job = ascend_job("j", "default", 5000, 8, "huawei.com/Ascend910");
        assert_eq!(job.pointer("/spec/replicaSpecs/Master/replicas"), Some(&json!(1)));
        assert_eq!(job.pointer("/spec/replicaSpecs/Worker/replicas"), Some(&json!(4999)));
        assert_eq!(job.pointer("/spec/runPolicy/schedulingPolicy/minAvailable"), Some(&json!(5000)));
        let limits = job.pointer("/spec/replicaSpecs/Worker/template/spec/containers/0/resources/limits");
        assert_eq!(limits, Some(&json!({"huawei.com/Ascend910": 8})));
        assert!(ascend_job("j", "default", 1, 8, "r").pointer("/spec/replicaSpecs/Worker").is_none());
    }
}
