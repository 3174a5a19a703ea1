//! `ringleader probe`: the probe workload as a job's command. `probe
//! allreduce` runs a ring all-reduce across the job's ranks (rendezvous from
//! an MPI hostfile, `RANK_TABLE_FILE`, or `MASTER_ADDR`/`RANK`/…) and prints
//! the collective-check table on rank 0's process; `probe worker` is the
//! MPIJob worker side a hostfile launcher drives.

use anyhow::Context;
use ringleader_probe::{parse_size, size_sweep, Config, Options, WorkerConfig};
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
            let min = parse_size(&a.size)?;
            let max = a.max_size.as_deref().map(parse_size).transpose()?;
            let opts = Options {
                sizes: size_sweep(min, max),
                iters: a.iters,
                warmup: a.warmup,
                hostfile: a.hostfile,
                ranks_per_process: a.ranks_per_process,
                worker_port: a.worker_port,
                timeout: Duration::from_secs(a.timeout),
                fault_rank: a.inject_fault,
            };
            let config = Config::from_env(&opts).context("probe allreduce")?;
            ringleader_probe::allreduce(&config).context("probe allreduce")?
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
