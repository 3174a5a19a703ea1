//! The `ringleader` command: a thin shell over the library crates.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod bench;
mod bench_e2e;
mod ctl;
mod demo;
mod describe;
mod plan;
mod probe;
mod profiles;
mod sim;
mod up;
mod validate;

#[derive(Parser)]
#[command(
    name = "ringleader",
    version,
    about = "Topology-aware gang scheduler and training-job platform for GPU and NPU clusters"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and validate job YAML/JSON (files, directories or `-` for stdin).
    Validate(validate::ValidateArgs),
    /// Place jobs onto a cluster file's nodes and exact devices, gang by gang.
    Plan(plan::PlanArgs),
    /// List the built-in hardware profiles, or show one.
    Profiles(profiles::ProfilesArgs),
    /// Measure the scheduler engine on the seed's scenarios.
    Bench(bench::BenchArgs),
    /// Replay a cluster trace to compare scheduling policies.
    Sim(sim::SimArgs),
    /// Start the whole control plane (store, API, scheduler, controllers,
    /// virtual nodes) in this process.
    Up(up::UpArgs),
    /// Start an embedded cluster, run the bundled example jobs, show what happened, stop.
    Demo(demo::DemoArgs),
    /// Create or update objects from files (validated first: all or nothing).
    Apply(ctl::ApplyArgs),
    /// List objects: jobs, pods, nodes, queues, podgroups, events …
    Get(ctl::GetArgs),
    /// Show one object in detail.
    Describe(ctl::NamedArgs),
    /// Print a pod's log.
    Logs(ctl::NamedArgs),
    /// Delete an object.
    Delete(ctl::NamedArgs),
    /// Per-device allocation of every node (`top nodes`).
    Top {
        /// Only `nodes`.
        #[arg(value_parser = ["nodes"])]
        what: String,
        #[command(flatten)]
        conn: ctl::Conn,
    },
    /// Why a job is pending.
    Explain(ctl::NamedArgs),
    /// Stop, start or inject faults into a virtual node.
    Node(ctl::NodeArgs),
    /// The probe workload: a real TCP ring all-reduce across a job's ranks.
    Probe(probe::ProbeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Validate(args) => validate::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Profiles(args) => profiles::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Up(args) => up::run(args).map(|_| 0),
        Command::Demo(args) => demo::run(args).map(|_| 0),
        Command::Apply(args) => ctl::apply(args).map(|_| 0),
        Command::Get(args) => ctl::get(args).map(|_| 0),
        Command::Describe(args) => ctl::describe(args).map(|_| 0),
        Command::Logs(args) => ctl::logs(args).map(|_| 0),
        Command::Delete(args) => ctl::delete(args).map(|_| 0),
        Command::Top { conn, .. } => ctl::top_nodes(conn).map(|_| 0),
        Command::Explain(args) => ctl::explain(args).map(|_| 0),
        Command::Node(args) => ctl::node(args).map(|_| 0),
        Command::Probe(args) => probe::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
