//! `ringleader bench scheduler`: engine time of the scheduler on the seed's
//! scenarios (MindCluster's published scheduling-time table) and a mixed
//! load, without API or runtime in the way; `ringleader bench e2e`: the
//! same table through the whole control plane ([`e2e`]);
//! `ringleader bench api`: list latency over 50,000 pods ([`api`]);
//! `ringleader bench kube`: one gang job through a real kube-apiserver
//! ([`kube`]).

mod api;
mod e2e;
mod jobs;
mod kube;
mod scenario;

use ringleader_scheduler::conf::SchedulerConf;
use ringleader_scheduler::place::{place_job, plan};
use ringleader_scheduler::scenarios::{a2_cluster, mixed_cluster, mixed_jobs, npu_job};
use ringleader_scheduler::session::{self, Snapshot};
use scenario::{scenario, Scenario};
use serde::Serialize;
use std::time::Instant;

#[derive(clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: BenchWhat,
}

#[derive(clap::Subcommand)]
enum BenchWhat {
    /// Scheduler engine time per scenario.
    Scheduler {
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
        output: Output,
        /// Runs per scenario; the fastest is reported.
        #[arg(long, default_value_t = 3)]
        runs: u32,
        /// Only this scenario (repeatable); a trailing `*` matches a prefix, as in `session-*`.
        #[arg(long = "scenario")]
        scenarios: Vec<String>,
    },
    /// Submission through the API to all pods Running, on an embedded
    /// control plane with the simulated runtime.
    E2e {
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
        output: Output,
        /// Only this scenario (repeatable); a trailing `*` matches a prefix.
        #[arg(long = "scenario")]
        scenarios: Vec<String>,
        /// Length of the steady-5-per-second scenario.
        #[arg(long, default_value_t = 60)]
        steady_seconds: u64,
        /// Jobs to submit: AscendJobs on Atlas 800T A2 nodes (the seed's), or PyTorchJobs on H100 nodes.
        #[arg(long, value_enum, default_value = "ascend")]
        jobs: e2e::JobKind,
    },
    /// List latency over a large collection (50,000 pods): limit=500 paging,
    /// kubectl's Table list, an unpaged list.
    Api(api::BenchApiArgs),
    /// One gang AscendJob of N pods through a real kube-apiserver, from the
    /// create to every pod Running (a manager and agents must be running).
    Kube(kube::BenchKubeArgs),
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Output {
    Table,
    Json,
}

/// Whether `name` is among the `--scenario` filters (all when none given).
fn matches(filters: &[String], name: &str) -> bool {
    filters.is_empty()
        || filters.iter().any(|s| match s.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == s,
        })
}

pub fn run(args: BenchArgs) -> anyhow::Result<u8> {
    let (output, runs, scenarios) = match args.what {
        BenchWhat::Scheduler { output, runs, scenarios } => (output, runs, scenarios),
        BenchWhat::Api(args) => return api::run(args),
        BenchWhat::Kube(args) => return kube::run(args),
        BenchWhat::E2e { output, scenarios, steady_seconds, jobs } => {
            let rt = tokio::runtime::Runtime::new()?;
            let results = rt.block_on(e2e::run(
                |n| matches(&scenarios, n),
                jobs,
                steady_seconds,
                matches!(output, Output::Table),
            ))?;
            print(output, &results)?;
            return Ok(0);
        }
    };
    // The 10,000-node session takes a minute on the per-node path; a filter
    // lets one scenario be measured (or profiled) on its own.
    let wanted = |name: &str| matches(&scenarios, name);
    let mut results = Vec::new();
    for n in [100usize, 500, 1000, 2000, 5000] {
        if !wanted(&format!("single-job-{n}")) {
            continue;
        }
        // One job of n single-chip pods on n nodes with one free chip each.
        let job = npu_job("single", n as u32, 1);
        let placed = best_of(runs, || {
            let mut cluster = a2_cluster(n, 1);
            let t = Instant::now();
            let placed = place_job(&mut cluster, &job, 0).map(|p| p.len()).unwrap_or(0);
            (t.elapsed().as_secs_f64(), placed)
        });
        results.push(scenario(format!("single-job-{n}"), n, placed));
    }
    // 100 single-chip jobs submitted at once onto 100 such nodes.
    let jobs: Vec<_> = (0..100).map(|i| npu_job(&format!("job-{i}"), 1, 1)).collect();
    if wanted("concurrent-100") {
        let placed = best_of(runs, || {
            let mut cluster = a2_cluster(100, 1);
            let t = Instant::now();
            let (p, _) = plan(&mut cluster, &jobs, 0);
            (t.elapsed().as_secs_f64(), p.len())
        });
        results.push(scenario("concurrent-100".to_string(), 100, placed));
    }
    // Mixed jobs on mixed hardware; the growth from 100 to 10,000 nodes.
    for (nodes, pods) in [(100usize, 500u32), (1000, 5000), (10_000, 50_000)] {
        if !wanted(&format!("mixed-{nodes}x{pods}")) {
            continue;
        }
        let jobs = mixed_jobs(pods);
        let placed = best_of(if nodes >= 10_000 { 1 } else { runs }, || {
            let mut cluster = mixed_cluster(nodes);
            let t = Instant::now();
            let (p, _) = plan(&mut cluster, &jobs, 0);
            (t.elapsed().as_secs_f64(), p.len())
        });
        results.push(scenario(format!("mixed-{nodes}x{pods}"), nodes, placed));
    }
    // The same loads through a full session (enqueue, allocate, backfill,
    // preempt, reclaim, with queue and priority bookkeeping).
    let conf = SchedulerConf::default();
    for (name, nodes, jobs) in [
        ("session-single-job-5000", 5000usize, vec![npu_job("single", 5000, 1)]),
        ("session-concurrent-100", 100, (0..100).map(|i| npu_job(&format!("job-{i}"), 1, 1)).collect()),
        ("session-mixed-1000x5000", 1000, mixed_jobs(5000)),
        ("session-mixed-10000x50000", 10_000, mixed_jobs(50_000)),
    ] {
        if !wanted(name) {
            continue;
        }
        let placed = best_of(if nodes >= 10_000 { 1 } else { runs }, || {
            let snapshot = Snapshot {
                cluster: if name.contains("mixed") { mixed_cluster(nodes) } else { a2_cluster(nodes, 1) },
                pending: jobs.clone(),
                ..Snapshot::default()
            };
            let t = Instant::now();
            let outcome = session::run(snapshot, &conf, 0);
            (t.elapsed().as_secs_f64(), outcome.bindings.len())
        });
        results.push(scenario(name.to_string(), nodes, placed));
    }
    print(output, &results)?;
    Ok(0)
}

fn print(output: Output, results: &[Scenario]) -> anyhow::Result<()> {
    match output {
        Output::Json => {
            #[derive(Serialize)]
            struct Out<'a> {
                scenarios: &'a [Scenario],
            }
            println!("{}", serde_json::to_string_pretty(&Out { scenarios: results })?);
        }
        Output::Table => {
            let latency = results.iter().any(|s| s.job_latency_p50.is_some());
            print!("{:<27} {:>7} {:>7} {:>12} {:>12}", "SCENARIO", "NODES", "PODS", "SECONDS", "PODS/S");
            println!("{}", if latency { format!(" {:>12} {:>12}", "JOB-P50(S)", "JOB-P99(S)") } else { String::new() });
            for s in results {
                print!("{:<27} {:>7} {:>7} {:>12.6} {:>12.0}", s.name, s.nodes, s.pods, s.seconds, s.pods_per_second);
                match (s.job_latency_p50, s.job_latency_p99) {
                    (Some(a), Some(b)) => println!(" {a:>12.3} {b:>12.3}"),
                    _ => println!(),
                }
            }
        }
    }
    Ok(())
}

/// Runs `f` `runs` times and keeps the fastest (seconds, pods placed).
fn best_of(runs: u32, mut f: impl FnMut() -> (f64, usize)) -> (f64, usize) {
    (0..runs.max(1)).map(|_| f()).min_by(|a, b| a.0.total_cmp(&b.0)).unwrap_or((0.0, 0))
}
