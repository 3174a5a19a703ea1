//! `ringleader plan --cluster FILE -f JOB.yaml ...`: runs one scheduling
//! session over the cluster file (Nodes, Volcano Queues, PriorityClasses and
//! running Workloads) with the jobs as pending, submitted in the order given,
//! and prints the placements, the evictions and what stays pending, and why.

use anyhow::Context;
use ringleader_api::document::load_all;
use ringleader_api::{check_documents, Job, Report, Resource};
use ringleader_scheduler::conf::SchedulerConf;
use ringleader_scheduler::place::{self, Pending, PodPlacement};
use ringleader_scheduler::session::{self, Eviction, Snapshot};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct PlanArgs {
    /// Cluster file: `ringleader.io/v1alpha1` Node and Workload documents,
    /// Volcano `Queue` and `scheduling.k8s.io/v1` `PriorityClass` documents.
    #[arg(long)]
    cluster: PathBuf,
    /// Scheduler configuration (Volcano format: actions and plugin tiers).
    /// Default: the built-in one without DRF, so jobs of equal priority in
    /// one queue are tried in the order given.
    #[arg(long = "scheduler-conf")]
    scheduler_conf: Option<PathBuf>,
    /// Job files, directories or `-`: the pending jobs, submitted in the order given.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
    files: Vec<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Output,
    /// `predicate-time` of the first pod (default: now, in Unix milliseconds).
    #[arg(long)]
    now: Option<u64>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Output {
    Table,
    Json,
}

/// Prints a document's errors; true when there were any.
fn report_errors(reports: &[Report]) -> bool {
    let mut bad = false;
    for r in reports.iter().filter(|r| !r.valid) {
        bad = true;
        for e in &r.errors {
            eprintln!("{}[{}] {}: {e}", r.path, r.index, r.object());
        }
    }
    bad
}

pub fn run(args: PlanArgs) -> anyhow::Result<u8> {
    let cluster_docs = load_all(std::slice::from_ref(&args.cluster)).context("reading the cluster file")?;
    let cluster_reports = check_documents(&cluster_docs);
    let job_reports = check_documents(&load_all(&args.files)?);
    if report_errors(&cluster_reports) | report_errors(&job_reports) {
        return Ok(1);
    }
    let conf = match &args.scheduler_conf {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            match SchedulerConf::from_yaml(&text) {
                Ok(conf) => conf,
                Err(e) => {
                    eprintln!("{}: {e}", path.display());
                    return Ok(1);
                }
            }
        }
        None => SchedulerConf::default().without("drf"),
    };
    let objects: Vec<Resource> = cluster_reports.iter().filter_map(|r| r.resource.clone()).collect();
    let reports: Vec<&Report> = cluster_reports.iter().filter(|r| r.resource.is_some()).collect();
    let jobs: Vec<Job> = job_reports.iter().filter_map(|r| r.resource.as_ref().and_then(Job::from_resource)).collect();
    let snapshot = match Snapshot::from_resources(&objects, jobs) {
        Ok(s) => s,
        Err(errs) => {
            for (i, e) in errs {
                if let Some(r) = reports.get(i) {
                    eprintln!("{}[{}] {}: {e}", r.path, r.index, r.object());
                }
            }
            return Ok(1);
        }
    };
    if snapshot.cluster.nodes.is_empty() {
        anyhow::bail!("{}: no ringleader.io/v1alpha1 Node documents", args.cluster.display());
    }
    let now = args.now.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    });
    let outcome = session::run(snapshot, &conf, now);
    let (placements, pending, evictions) = (outcome.bindings, outcome.pending, outcome.evictions);
    match args.output {
        Output::Json => {
            #[derive(serde::Serialize)]
            struct Out<'a> {
                placements: &'a [PodPlacement],
                pending: &'a [Pending],
                evictions: &'a [Eviction],
            }
            let out = Out { placements: &placements, pending: &pending, evictions: &evictions };
            println!("{}", serde_json::to_string_pretty(&out)?);
        }
        Output::Table => print_table(&placements, &pending, &evictions),
    }
    Ok(0)
}

fn print_table(placements: &[PodPlacement], pending: &[Pending], evictions: &[Eviction]) {
    let rows: Vec<[String; 4]> = placements
        .iter()
        .map(|p| {
            let devices = p.devices.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
            let ann = p
                .annotations
                .iter()
                // The Ascend handshake repeats the chips; JSON shows it whole.
                .filter(|(k, _)| {
                    ![place::PREDICATE_TIME, place::handshake::ASCEND_REAL, place::handshake::KLT_DEV]
                        .contains(&k.as_str())
                        && k.as_str() != place::handshake::ASCEND_910_CONFIGURATION
                })
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ");
            [p.pod.clone(), p.node.clone(), if devices.is_empty() { "-".into() } else { devices }, ann]
        })
        .collect();
    let header = ["POD", "NODE", "DEVICES", "ANNOTATIONS"];
    let width = |c: usize| rows.iter().map(|r| r[c].len()).chain([header[c].len()]).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    println!("{:w0$}  {:w1$}  {:w2$}  {}", header[0], header[1], header[2], header[3]);
    for r in &rows {
        println!("{:w0$}  {:w1$}  {:w2$}  {}", r[0], r[1], r[2], r[3]);
    }
    if !evictions.is_empty() {
        println!();
        println!("EVICTED");
        for e in evictions {
            println!("{} ({} on {}): {}", e.pod, e.job, e.node, e.reason);
        }
    }
    if !pending.is_empty() {
        println!();
        println!("PENDING");
        for p in pending {
            println!("{}: {}", p.job, p.reason);
        }
    }
}
