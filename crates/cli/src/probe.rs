//! `ringleader probe`: the probe workload as a job's command. `probe
//! allreduce` runs a ring all-reduce across the job's ranks (rendezvous from
//! an MPI hostfile, `RANK_TABLE_FILE`, or `MASTER_ADDR`/`RANK`/…) and prints
//! the collective-check table on rank 0's process; `probe worker` is the
//! MPIJob worker side a hostfile launcher drives. `probe collective`,
//! `probe network` and `probe server` are the probes of a CheckRun: each
//! prints its table and one `ringleader-check {json}` line the manager
//! reads into the CheckRun's report.

use anyhow::Context;
use ringleader_probe::{parse_size, size_sweep, Collective, Config, Hosts, NetConfig, Options, WorkerConfig};
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct ProbeArgs {
    #[command(subcommand)]
    command: ProbeCommand,
}

#[derive(clap::Subcommand)]
enum ProbeCommand {
    /// Ring all-reduce across the job's ranks; rank 0's process (or the
    /// launcher) prints `data_size(Bytes) | aveg_time(us) | alg_bandwidth(GB/s) | check_result`.
    Allreduce(AllreduceArgs),
    /// Wait for one launcher run on RINGLEADER_POD_IP:PORT (the MPIJob worker side), then exit.
    Worker(WorkerArgs),
    /// The collective check: the operations of --ops at every size, one
    /// table each, bus bandwidth by operation in the report line.
    Collective(CollectiveArgs),
    /// The network check: bandwidth and latency over TCP from rank 0 to each other process.
    Network(NetworkArgs),
    /// The server check's facts about this machine (/proc, nvidia-smi, npu-smi).
    Server,
}

#[derive(clap::Args)]
struct CollectiveArgs {
    /// Operations, comma-separated: all_reduce, all_gather, reduce_scatter, all_to_all.
    #[arg(long, default_value = "all_reduce")]
    ops: String,
    #[command(flatten)]
    run: AllreduceArgs,
}

#[derive(clap::Args)]
struct NetworkArgs {
    /// Bandwidth message size.
    #[arg(long, default_value = "1MiB")]
    size: String,
    /// Timed round trips and messages per pair.
    #[arg(long, default_value_t = 10)]
    iters: u32,
    /// Untimed ones first.
    #[arg(long, default_value_t = 1)]
    warmup: u32,
    /// Seconds to wait for peers and for any one transfer.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

#[derive(clap::Args)]
struct AllreduceArgs {
    /// Bytes per rank (4096, 4KiB, 64MiB, 1GiB); the smallest size with --max-size.
    #[arg(long, default_value = "64MiB")]
    size: String,
    /// Sweep sizes ×2 from --size up to this.
    #[arg(long)]
    max_size: Option<String>,
    /// Timed iterations per size (after --warmup untimed ones).
    #[arg(long, default_value_t = 10)]
    iters: u32,
    /// Untimed iterations first (checked like the others).
    #[arg(long, default_value_t = 1)]
    warmup: u32,
    /// MPI hostfile: launch on its workers (default: $OMPI_MCA_orte_default_hostfile).
    #[arg(long)]
    hostfile: Option<PathBuf>,
    /// Workers' control port in hostfile mode.
    #[arg(long, default_value_t = ringleader_probe::DEFAULT_WORKER_PORT)]
    worker_port: u16,
    /// Ranks per process in env mode (default: $LOCAL_WORLD_SIZE, else 1).
    #[arg(long)]
    ranks_per_process: Option<usize>,
    /// Seconds to wait for peers to show up and for any one transfer.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Test hook: the process owning this rank corrupts a chunk, so the check must fail.
    #[arg(long, hide = true)]
    inject_fault: Option<usize>,
}

#[derive(clap::Args)]
struct WorkerArgs {
    /// Control port (the k-th worker on one address takes PORT+k).
    #[arg(long, default_value_t = ringleader_probe::DEFAULT_WORKER_PORT)]
    port: u16,
    /// Give up after this many seconds without a launcher (default: wait forever).
    #[arg(long)]
    wait: Option<u64>,
}

/// Exit code: 0 when every check passed, 1 when a check failed; errors
/// (rendezvous, peers, bad env) come back as `Err`.
pub fn run(args: ProbeArgs) -> anyhow::Result<u8> {
    let report = match args.command {
        ProbeCommand::Allreduce(a) => {
            let config = Config::from_env(&options(a, vec![Collective::AllReduce])?).context("probe allreduce")?;
            ringleader_probe::allreduce(&config).context("probe allreduce")?
        }
        ProbeCommand::Collective(c) => {
            let ops = c
                .ops
                .split(',')
                .map(|o| {
                    Collective::parse(o).with_context(|| {
                        format!("--ops {o:?}: allowed: all_reduce, all_gather, reduce_scatter, all_to_all")
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let config = Config::from_env(&options(c.run, ops)?).context("probe collective")?;
            let report = ringleader_probe::allreduce(&config).context("probe collective")?;
            if report.is_global() {
                print!("{}", report.tables());
                println!("{}{}", ringleader_probe::REPORT_PREFIX, report.check_rows());
            }
            println!("{}", report.summary());
            return Ok(if report.success() { 0 } else { 1 });
        }
        ProbeCommand::Network(n) => return network(n),
        ProbeCommand::Server => {
            let mut facts = ringleader_probe::proc_facts(std::path::Path::new("/proc"));
            ringleader_probe::driver_facts(&mut facts);
            println!(
                "cpus {} ({}), memory {} KiB ({} KiB available), load {}",
                facts.cpus, facts.cpu_model, facts.mem_total_kib, facts.mem_available_kib, facts.load1
            );
            println!("{}{}", ringleader_probe::REPORT_PREFIX, serde_json::json!({"facts": facts}));
            return Ok(0);
        }
        ProbeCommand::Worker(w) => {
            let mut config = WorkerConfig::from_env(w.port).context("probe worker")?;
            config.wait = w.wait.map(Duration::from_secs);
            ringleader_probe::worker(&config).context("probe worker")?
        }
    };
    if report.is_global() {
        print!("{}", report.table());
    }
    println!("{}", report.summary());
    Ok(if report.success() { 0 } else { 1 })
}

fn options(a: AllreduceArgs, ops: Vec<Collective>) -> anyhow::Result<Options> {
    let min = parse_size(&a.size)?;
    let max = a.max_size.as_deref().map(parse_size).transpose()?;
    Ok(Options {
        sizes: size_sweep(min, max),
        iters: a.iters,
        warmup: a.warmup,
        hostfile: a.hostfile,
        ranks_per_process: a.ranks_per_process,
        worker_port: a.worker_port,
        timeout: Duration::from_secs(a.timeout),
        fault_rank: a.inject_fault,
        ops,
    })
}

/// `probe network` from the env a CheckRun gives its pods:
/// `MASTER_ADDR`, `MASTER_PORT`, `RANK`, `WORLD_SIZE` (processes).
fn network(n: NetworkArgs) -> anyhow::Result<u8> {
    let var = |k: &str| std::env::var(k).with_context(|| format!("probe network: env {k} is not set"));
    let num = |k: &str| -> anyhow::Result<u64> {
        let v = var(k)?;
        v.trim().parse().with_context(|| format!("probe network: env {k}={v:?} is not a number"))
    };
    let hosts = match std::env::var("RINGLEADER_HOSTS") {
        Ok(path) => Hosts::from_file(std::path::Path::new(&path))?,
        Err(_) => Hosts::default(),
    };
    let bind_ip = match std::env::var("RINGLEADER_POD_IP") {
        Ok(v) => Some(v.parse().with_context(|| format!("probe network: env RINGLEADER_POD_IP={v:?}"))?),
        Err(_) => None,
    };
    let config = NetConfig {
        rank: usize::try_from(num("RANK")?)?,
        world: usize::try_from(num("WORLD_SIZE")?)?,
        master: var("MASTER_ADDR")?,
        port: u16::try_from(num("MASTER_PORT")?).context("probe network: MASTER_PORT above 65535")?,
        bind_ip,
        hosts,
        name: std::env::var("RINGLEADER_NODE").unwrap_or_else(|_| "probe".into()),
        bytes: parse_size(&n.size)?,
        iters: n.iters,
        warmup: n.warmup,
        timeout: Duration::from_secs(n.timeout),
    };
    let pairs = ringleader_probe::network(&config).context("probe network")?;
    if config.rank != 0 {
        println!("network: answered rank 0");
        return Ok(0);
    }
    println!("from | to | transport | bytes | bandwidth(GB/s) | latency(us) | check_result");
    for p in &pairs {
        println!(
            "{} | {} | {} | {} | {:.4} | {:.2} | {}",
            p.from,
            p.to,
            p.transport,
            p.bytes,
            p.bandwidth_gbps,
            p.latency_us,
            if p.pass { "success" } else { "fail" }
        );
    }
    println!("{}{}", ringleader_probe::REPORT_PREFIX, serde_json::json!({"pairs": pairs}));
    Ok(if pairs.iter().all(|p| p.pass) { 0 } else { 1 })
}
