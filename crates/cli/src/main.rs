//! The `ringleader` command: a thin shell over the library crates.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod bench;
mod plan;
mod profiles;
mod sim;
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Validate(args) => validate::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Profiles(args) => profiles::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Bench(args) => bench::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
