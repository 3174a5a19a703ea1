//! `ringleader bench e2e`: the seed's scheduling-time table measured the way
//! a user sees it — jobs submitted through the API of a whole embedded
//! control plane (store, API server, manager, agent with the simulated
//! runtime), timed from the first submission until every pod reports
//! Running on the pods watch.

use super::jobs::ascend_job;
use super::scenario::{scenario, Scenario};
use crate::plane::{self, UpArgs};
use anyhow::{bail, Context, Result};
use futures_util::StreamExt;
use ringleader_client::Client;
use ringleader_registry::resources;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// The jobs the scenarios submit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum JobKind {
    /// MindCluster `AscendJob`s on Atlas 800T A2 nodes, as in the seed's table.
    Ascend,
    /// Kubeflow `PyTorchJob`s on HGX H100 nodes.
    Pytorch,
}

impl JobKind {
    fn profile(self) -> &'static str {
        match self {
            JobKind::Ascend => "atlas-800t-a2",
            JobKind::Pytorch => "hgx-h100-8",
        }
    }

    fn kind(self) -> &'static str {
        match self {
            JobKind::Ascend => "AscendJob",
            JobKind::Pytorch => "PyTorchJob",
        }
    }

    /// A job of `pods` pods (one master, the rest workers), `devices` each.
    fn job(self, name: &str, pods: usize, devices: u32) -> Value {
        match self {
            JobKind::Ascend => ascend_job(name, "default", pods, devices, "huawei.com/Ascend910"),
            JobKind::Pytorch => job(name, pods, devices),
        }
    }
}

/// One scenario's shape: nodes, and the jobs with how they are submitted.
struct Plan {
    name: String,
    kind: JobKind,
    nodes: usize,
    jobs: Vec<Value>,
    /// Time between submissions; `None`: all at once, concurrently.
    pacing: Option<Duration>,
}

/// The scenarios by name, in report order.
fn plans(kind: JobKind, steady_seconds: u64) -> Vec<Plan> {
    let mut out = Vec::new();
    for n in [100usize, 500, 1000, 2000, 5000] {
        // One gang of n pods, one 8-device pod per 8-device node.
        let jobs = vec![kind.job("single", n, 8)];
        out.push(Plan { name: format!("single-job-{n}"), kind, nodes: n, jobs, pacing: None });
    }
    out.push(Plan {
        name: "concurrent-100".into(),
        kind,
        nodes: 100,
        // The seed's "single-node single-chip jobs".
        jobs: (0..100).map(|i| kind.job(&format!("job-{i}"), 1, 1)).collect(),
        pacing: None,
    });
    let steady = (steady_seconds * 5) as usize;
    out.push(Plan {
        name: "steady-5-per-second".into(),
        kind,
        nodes: steady,
        jobs: (0..steady).map(|i| kind.job(&format!("steady-{i}"), 1, 1)).collect(),
        pacing: Some(Duration::from_millis(200)),
    });
    out
}

/// A PyTorchJob of `pods` pods (one master, the rest workers) with `gpus`
/// GPUs each, as a user writes it. (A Volcano Job would do for the small
/// sizes, but vcjobs stop at 1,000 pods.)
fn job(name: &str, pods: usize, gpus: u32) -> Value {
    let role = |replicas: usize| {
        json!({
            "replicas": replicas,
            "restartPolicy": "Never",
            "template": {"spec": {"containers": [{
                "name": "pytorch",
                "image": "bench",
                "command": ["sleep", "infinity"],
                "resources": {"limits": {"nvidia.com/gpu": gpus}, "requests": {"nvidia.com/gpu": gpus}},
            }]}},
        })
    };
    let mut specs = json!({"Master": role(1)});
    if pods > 1 {
        specs["Worker"] = role(pods - 1);
    }
    json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "runPolicy": {"schedulingPolicy": {"minAvailable": pods, "queue": "default"}},
            "pytorchReplicaSpecs": specs,
        },
    })
}

/// `nodes` nodes of `profile` and the default queue.
fn cluster_yaml(nodes: usize, profile: &str) -> String {
    let mut s = String::from(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 1}\n",
    );
    for i in 0..nodes {
        s.push_str(&format!(
            "---\napiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: bench-{i}}}\nspec: {{profile: {profile}}}\n"
        ));
    }
    s
}

/// What one run measured.
pub struct Measured {
    /// First submission to the last pod Running.
    pub seconds: f64,
    /// Pods that reached Running.
    pub pods: usize,
    /// Per job, submission to all of its pods Running (seconds).
    pub job_latencies: Vec<f64>,
}

/// Runs the named scenarios (all when `wanted` accepts all).
pub async fn run(
    wanted: impl Fn(&str) -> bool,
    kind: JobKind,
    steady_seconds: u64,
    verbose: bool,
) -> Result<Vec<Scenario>> {
    let mut results = Vec::new();
    for plan in plans(kind, steady_seconds).into_iter().filter(|p| wanted(&p.name)) {
        if verbose {
            eprintln!("bench e2e: {} ({} nodes, {} jobs)…", plan.name, plan.nodes, plan.jobs.len());
        }
        let m = measure(&plan).await.with_context(|| plan.name.clone())?;
        let mut s = scenario(plan.name.clone(), plan.nodes, (m.seconds, m.pods));
        if plan.jobs.len() > 1 {
            s.job_latency_p50 = Some(percentile(&m.job_latencies, 0.50));
            s.job_latency_p99 = Some(percentile(&m.job_latencies, 0.99));
        }
        results.push(s);
    }
    Ok(results)
}

fn percentile(xs: &[f64], q: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

async fn measure(plan: &Plan) -> Result<Measured> {
    let dir = tempfile::tempdir()?;
    let mut args = UpArgs::defaults(dir.path())?;
    args.pods.name = "simulated".into();
    // Heartbeats are not what is measured; keep them out of the way.
    args.heartbeat_timeout = 3600.0;
    args.heartbeat_interval = 600.0;
    let plane = plane::start_with(&args, &cluster_yaml(plan.nodes, plan.kind.profile()), "bench cluster").await?;
    let client = plane.client()?;
    let result = drive(&client, plan).await;
    plane.stop().await?;
    result
}

async fn drive(client: &Client, plan: &Plan) -> Result<Measured> {
    let node_t = resources::find("nodes").context("nodes type")?;
    let pod_t = resources::find("pods").context("pods type")?;
    let job_t = resources::job_types().find(|t| t.kind == plan.kind.kind()).context("job type")?;
    // Every node registered and ready before the clock starts.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let nodes = client.list(node_t, None, None).await?;
        let ready = nodes.items.iter().filter(|n| n.pointer("/status/ready") == Some(&Value::Bool(true))).count();
        if ready == plan.nodes {
            break;
        }
        if Instant::now() > deadline {
            bail!("only {ready} of {} nodes registered", plan.nodes);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // And the control plane idle: registration's writes all handled, so the
    // clock measures the jobs alone.
    let mut last = client.list(node_t, None, None).await?.resource_version;
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_millis(500) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = client.list(node_t, None, None).await?.resource_version;
        if now != last {
            (last, quiet_since) = (now, Instant::now());
        }
        if Instant::now() > deadline {
            bail!("the control plane did not settle after registering {} nodes", plan.nodes);
        }
    }
    let total: usize = plan.jobs.iter().map(pods_of).sum();
    let version = client.list(pod_t, None, None).await?.resource_version;
    let mut watch = client.watch(pod_t, None, Some(version)).await?;

    let start = Instant::now();
    let mut submitter = {
        let (client, jobs, pacing) = (client.clone(), plan.jobs.clone(), plan.pacing);
        tokio::spawn(async move { submit(&client, job_t, jobs, pacing, start).await })
    };
    let mut submitted = None;
    let mut stages = std::env::var_os("RINGLEADER_BENCH_STAGES").map(|_| Stages::default());
    // Watch until every pod is Running; per job, the time its last pod got there.
    let mut running: HashSet<String> = HashSet::new();
    let mut per_job: HashMap<String, (usize, f64)> = HashMap::new();
    let limit = Duration::from_secs(600).max(plan.pacing.unwrap_or_default() * plan.jobs.len() as u32 * 2);
    while running.len() < total {
        let next = tokio::select! {
            r = &mut submitter, if submitted.is_none() => {
                // A refused submission ends the run now, not at the time limit.
                submitted = Some(r.context("submitter")??);
                continue;
            }
            next = tokio::time::timeout_at((start + limit).into(), watch.next()) => next,
        };
        let Ok(next) = next else {
            bail!("only {} of {total} pods Running after {} s", running.len(), limit.as_secs());
        };
        let Some(event) = next else { bail!("the pods watch ended with {} of {total} Running", running.len()) };
        let event = event?;
        let o = &event.object;
        if let Some(stages) = stages.as_mut() {
            stages.see(o, start.elapsed().as_secs_f64());
        }
        if o.pointer("/status/phase").and_then(Value::as_str) != Some("Running") {
            continue;
        }
        let name = o.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
        if running.insert(name) {
            let job =
                o.pointer("/metadata/ownerReferences/0/name").and_then(Value::as_str).unwrap_or_default().to_string();
            let e = per_job.entry(job).or_default();
            e.0 += 1;
            e.1 = start.elapsed().as_secs_f64();
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let submitted = match submitted {
        Some(s) => s,
        None => submitter.await.context("submitter")??,
    };
    if let Some(stages) = &stages {
        let (first, last) = submitted.values().fold((f64::MAX, 0f64), |(a, b), &(s, e)| (a.min(s), b.max(e)));
        eprintln!("  0 submitted  first {first:>8.3} s  last {last:>8.3} s  (acknowledged)");
        stages.print();
    }
    let job_latencies = plan
        .jobs
        .iter()
        .filter_map(|j| {
            let name = j.pointer("/metadata/name").and_then(Value::as_str)?;
            let (n, done) = per_job.get(name)?;
            (*n == pods_of(j)).then(|| done - submitted.get(name).map_or(0.0, |t| t.0))
        })
        .collect();
    Ok(Measured { seconds, pods: running.len(), job_latencies })
}

/// When pods first and last reached each stage of their life (set
/// `RINGLEADER_BENCH_STAGES` to print them): where the time goes.
#[derive(Default)]
struct Stages {
    seen: BTreeMap<&'static str, (f64, f64, usize)>,
}

impl Stages {
    fn see(&mut self, pod: &Value, t: f64) {
        let stage = if pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running") {
            "4 running"
        } else if pod.pointer("/metadata/annotations/ringleader.io~1start").is_some() {
            "3 released"
        } else if pod.pointer("/spec/nodeName").is_some() {
            "2 bound"
        } else {
            "1 created"
        };
        let e = self.seen.entry(stage).or_insert((t, t, 0));
        e.1 = t;
        e.2 += 1;
    }

    fn print(&self) {
        for (stage, (first, last, n)) in &self.seen {
            eprintln!("  {stage:<12} first {first:>8.3} s  last {last:>8.3} s  ({n} events)");
        }
    }
}

fn pods_of(job: &Value) -> usize {
    let specs = ["/spec/pytorchReplicaSpecs", "/spec/replicaSpecs"].iter().find_map(|p| job.pointer(p)?.as_object());
    specs.into_iter().flatten().filter_map(|(_, r)| r.get("replicas").and_then(Value::as_u64)).sum::<u64>() as usize
}

/// Submits the jobs (all at once, or one per `pacing`); returns each job's
/// submission and acknowledgement times in seconds after `start`.
async fn submit(
    client: &Client,
    job_t: &'static ringleader_server::ResourceType,
    jobs: Vec<Value>,
    pacing: Option<Duration>,
    start: Instant,
) -> Result<BTreeMap<String, (f64, f64)>> {
    let name = |j: &Value| j.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    let send = |j: &Value| {
        let t = start.elapsed().as_secs_f64();
        let name = name(j);
        let client = client.clone();
        let j = j.clone();
        async move {
            client.create(job_t, "default", &j).await?;
            anyhow::Ok((name, (t, start.elapsed().as_secs_f64())))
        }
    };
    let mut at = BTreeMap::new();
    match pacing {
        None => {
            for r in futures_util::future::join_all(jobs.iter().map(send)).await {
                let (n, t) = r?;
                at.insert(n, t);
            }
        }
        Some(every) => {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            for j in &jobs {
                tick.tick().await;
                let (n, t) = send(j).await?;
                at.insert(n, t);
            }
        }
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_names_are_the_issue_s() {
        let names: Vec<String> = plans(JobKind::Ascend, 60).into_iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "single-job-100",
                "single-job-500",
                "single-job-1000",
                "single-job-2000",
                "single-job-5000",
                "concurrent-100",
                "steady-5-per-second"
            ]
        );
        let steady = plans(JobKind::Ascend, 60).pop().expect("steady");
        assert_eq!(steady.jobs.len(), 300, "5 jobs a second for 60 s");
        assert_eq!(steady.pacing, Some(Duration::from_millis(200)));
    }

    #[test]
    fn bench_jobs_validate_like_user_yaml() {
        // Through the checks the API server applies, from one chip to the largest gang.
        for kind in [JobKind::Ascend, JobKind::Pytorch] {
            for (n, devices) in [(1, 1), (3, 8), (5000, 8)] {
                let job = kind.job("x", n, devices);
                assert_eq!(pods_of(&job), n);
                let resource = ringleader_api::Resource::from_value(&job).expect("a job");
                let errors = ringleader_api::validate::validate(&resource);
                assert!(errors.is_empty(), "{kind:?} {n} pods: {errors:?}");
            }
        }
    }

    #[test]
    fn percentiles() {
        let xs = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(percentile(&xs, 0.5), 3.0);
        assert_eq!(percentile(&xs, 0.99), 5.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn small_gangs_of_both_kinds_are_measured_through_the_api() {
        for kind in [JobKind::Ascend, JobKind::Pytorch] {
            let plan = Plan { name: "t".into(), kind, nodes: 4, jobs: vec![kind.job("g", 4, 8)], pacing: None };
            let m = measure(&plan).await.expect("measured");
            assert_eq!(m.pods, 4, "{kind:?}");
            assert!(m.seconds > 0.0);
            assert_eq!(m.job_latencies.len(), 1);
        }
    }
}
