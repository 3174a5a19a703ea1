//! `ringleader sim`: replay a cluster trace to compare node-order policies.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use ringleader_sim::load::{load_nodes, load_pods};
use ringleader_sim::replay::saturation::SaturationConfig;
use ringleader_sim::report::{csv, json, svg, table};
use ringleader_sim::run::{parse_policies, parse_seeds, run_saturation, run_time, summarize};
use ringleader_sim::Experiment;

/// Arguments of `ringleader sim`.
#[derive(clap::Args)]
pub struct SimArgs {
    #[command(subcommand)]
    trace: SimTrace,
}

#[derive(clap::Subcommand)]
enum SimTrace {
    /// Replay the openb trace (Alibaba cluster-trace-gpu-v2023 CSVs).
    Openb(OpenbArgs),
    /// Replay job YAMLs with arrival times on a cluster file, through the gang scheduler.
    Jobs(JobsArgs),
}

#[derive(clap::Args)]
struct JobsArgs {
    /// Cluster file: `ringleader.io/v1alpha1` Node documents.
    #[arg(long)]
    cluster: PathBuf,
    /// Job files or directories; `ringleader.io/arrival-time` and
    /// `ringleader.io/duration` annotations (seconds) give arrival and run time.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
    files: Vec<PathBuf>,
    /// Output format on stdout.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Output,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Output {
    /// Summary table.
    Table,
    /// `{"results":[…]}` document.
    Json,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    /// Arrivals only, each pod tried once (the FGD paper's protocol).
    Saturation,
    /// Arrivals and departures by trace time, with a FIFO queue.
    Time,
}

#[derive(clap::Args)]
struct OpenbArgs {
    /// Node list CSV (`sn,cpu_milli,memory_mib,gpu,model`).
    #[arg(long)]
    nodes: PathBuf,
    /// Pod list CSV (`name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,…]`).
    #[arg(long)]
    pods: PathBuf,
    /// Policies, comma-separated, or `all`: random, dotprod, clustering,
    /// gpupacking, bestfit, fgd, ringleader.
    #[arg(long, default_value = "all")]
    policy: String,
    /// Seeds: `42-51`, `1,3,5` or a mix.
    #[arg(long, default_value = "42")]
    seeds: String,
    /// Saturation: total GPU request to reach, × cluster GPU capacity.
    #[arg(long, default_value_t = 1.3)]
    inflate: f64,
    /// Output format on stdout.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Output,
    /// Also write per-seed curves to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Also write the allocation curves as SVG (saturation mode).
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Replay mode.
    #[arg(long, value_enum, default_value = "saturation")]
    mode: Mode,
}

/// Runs `ringleader sim`; returns the process exit code.
pub fn run(args: SimArgs) -> anyhow::Result<u8> {
    match args.trace {
        SimTrace::Openb(a) => openb(a),
        SimTrace::Jobs(a) => jobs(a),
    }
}

fn jobs(a: JobsArgs) -> anyhow::Result<u8> {
    use ringleader_sim::jobs::{replay_jobs, timed_jobs};
    let cluster = match ringleader_scheduler::cluster::Cluster::from_documents(&ringleader_api::document::load_all(
        std::slice::from_ref(&a.cluster),
    )?) {
        Ok(c) => c,
        Err(errs) => {
            for e in errs {
                eprintln!("{e}");
            }
            return Ok(1);
        }
    };
    let reports = ringleader_api::check_documents(&ringleader_api::document::load_all(&a.files)?);
    let mut invalid = false;
    for r in reports.iter().filter(|r| !r.valid) {
        invalid = true;
        for e in &r.errors {
            eprintln!("{}[{}] {}: {e}", r.path, r.index, r.object());
        }
    }
    if invalid {
        return Ok(1);
    }
    let jobs: Vec<_> =
        reports.iter().filter_map(|r| r.resource.as_ref().and_then(ringleader_api::Job::from_resource)).collect();
    let timed = timed_jobs(jobs).map_err(anyhow::Error::msg)?;
    let replay = replay_jobs(cluster, &timed);
    match a.output {
        Output::Json => {
            let out = serde_json::json!({
                "jobs": replay.jobs,
                "mean_wait_seconds": replay.mean_wait(),
                "p99_wait_seconds": replay.p99_wait(),
                "never_placed": replay.never_placed(),
                "mean_utilisation": replay.mean_utilisation(),
                "utilisation": replay.utilisation,
            });
            println!("{}", serde_json::to_string_pretty(&out)?);
        }
        Output::Table => {
            let show = |t: Option<u64>| t.map(|t| t.to_string()).unwrap_or_else(|| "-".into());
            println!("{:<40} {:>5} {:>8} {:>8} {:>8} {:>8}", "JOB", "PODS", "ARRIVAL", "START", "WAIT", "END");
            for j in &replay.jobs {
                println!(
                    "{:<40} {:>5} {:>8} {:>8} {:>8} {:>8}",
                    j.job,
                    j.pods,
                    j.arrival,
                    show(j.start),
                    show(j.wait()),
                    show(j.end)
                );
            }
            println!();
            println!(
                "mean wait {:.1} s, p99 wait {} s, mean utilisation {:.1}%, never placed: {}",
                replay.mean_wait(),
                replay.p99_wait(),
                100.0 * replay.mean_utilisation(),
                if replay.never_placed().is_empty() { "none".to_string() } else { replay.never_placed().join(", ") }
            );
        }
    }
    Ok(0)
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn openb(a: OpenbArgs) -> anyhow::Result<u8> {
    if !(a.inflate.is_finite() && a.inflate > 0.0) {
        bail!("--inflate must be a positive number, got {}", a.inflate);
    }
    let policies = parse_policies(&a.policy).map_err(anyhow::Error::msg)?;
    if policies.is_empty() {
        bail!("--policy names no policy");
    }
    let seeds = parse_seeds(&a.seeds).map_err(anyhow::Error::msg)?;
    let cluster = load_nodes(&a.nodes)?;
    let workload = load_pods(&a.pods, &cluster)?;
    if cluster.gpu_capacity_milli() == 0 {
        bail!("{}: the cluster has no GPUs", a.nodes.display());
    }
    let exp = Experiment::new(cluster, workload);

    let jobs = (policies.len() * seeds.len()) as u64;
    let bar = (jobs > 1 && std::io::stderr().is_terminal()).then(|| indicatif::ProgressBar::new(jobs));
    let tick = || {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    let title = a.pods.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    match a.mode {
        Mode::Saturation => {
            let runs = run_saturation(&exp, &policies, &seeds, SaturationConfig { inflate: a.inflate }, &tick);
            if let Some(b) = &bar {
                b.finish_and_clear();
            }
            let summaries = summarize(&runs);
            match a.output {
                Output::Table => print!("{}", table::saturation_table(&summaries)),
                Output::Json => println!("{}", json::saturation_json(&summaries)),
            }
            if let Some(path) = &a.csv {
                write(path, &csv::saturation_csv(&runs))?;
            }
            if let Some(path) = &a.plot {
                let t = format!("GPU allocation vs arrived load: {title} (seeds {})", a.seeds);
                write(path, &svg::allocation_svg(&summaries, &t))?;
            }
        }
        Mode::Time => {
            if a.plot.is_some() {
                bail!("--plot draws allocation curves of saturation mode; use --csv for time mode");
            }
            let runs = run_time(&exp, &policies, &seeds, &tick)?;
            if let Some(b) = &bar {
                b.finish_and_clear();
            }
            match a.output {
                Output::Table => print!("{}", table::time_table(&runs)),
                Output::Json => println!("{}", json::time_json(&runs)),
            }
            if let Some(path) = &a.csv {
                write(path, &csv::time_csv(&runs))?;
            }
        }
    }
    Ok(0)
}
