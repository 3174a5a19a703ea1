//! The `ringleader` command: a thin shell over the library crates.
//!
//! One module per command (`apply`, `get`, `describe`, `up`, `bench`, …).
//! Commands never use each other: what several need lives in a helper module
//! — [`support`] (connection, errors, tables, stop signal), [`printer`] and
//! [`jsonpath`] (output), [`plane`] (the embedded control plane `up`, `demo`
//! and `bench e2e` start), [`devices`], [`warnings`], [`detect`],
//! [`isolation`], [`env_flags`], [`runtime_flags`], [`ssh_seed`], [`logging`].

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

// The API server builds and drops millions of small JSON nodes per large
// list; glibc's malloc spent a third of a 50,000-pod Table list in
// consolidating free chunks.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod accesskey;
mod agent;
mod apply;
mod backup;
mod bench;
mod check;
mod crds;
mod demo;
mod describe;
mod detect;
mod devices;
mod env_flags;
mod envcheck;
mod explain;
mod get;
mod isolation;
mod jsonpath;
mod logging;
mod logs;
mod manager;
mod node;
mod node_binding;
mod plan;
mod plane;
mod platform;
mod printer;
mod probe;
mod profiles;
mod remove;
mod runtime_flags;
mod sim;
mod ssh_seed;
mod support;
mod token;
mod top;
mod up;
mod validate;
mod version;
mod warnings;

#[derive(Parser)]
#[command(
    name = "ringleader",
    version,
    about = "Topology-aware gang scheduler and training-job platform for GPU and NPU clusters"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Diagnostics on stderr as text lines or one JSON object a line; `RUST_LOG` filters them.
    #[arg(long, global = true, value_enum, default_value_t = logging::LogFormat::Text)]
    log_format: logging::LogFormat,
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
    Up(plane::UpArgs),
    /// Run the node agent on this host for nodes of a remote control plane
    /// (`--kubeconfig FILE --node NAME --profile P`).
    Agent(agent::AgentArgs),
    /// Run the scheduler and job controller against a Kubernetes API server
    /// (Kubernetes mode): `ringleader manager --kubeconfig FILE`.
    Manager(manager::ManagerArgs),
    /// Start an embedded cluster, run the bundled example jobs, show what happened, stop.
    Demo(demo::DemoArgs),
    /// Create or update objects from files (validated first: all or nothing).
    Apply(apply::ApplyArgs),
    /// List objects: jobs, pods, nodes, queues, podgroups, events … (`get pods,nodes`, `-o jsonpath=…`).
    Get(get::GetArgs),
    /// Show one object in detail.
    Describe(describe::DescribeArgs),
    /// Print a pod's log (`-c`, `--previous`, `--tail`, `--since`, `-f`, `-l`).
    Logs(logs::LogsArgs),
    /// Delete objects by name, by file (`-f`), by selector (`-l`) or all of a type (`--all`).
    Delete(remove::DeleteArgs),
    /// Current figures and the last ten minutes of nodes, pods or jobs (`top nodes|pods|jobs`).
    Top(top::TopArgs),
    /// Why a job is pending.
    Explain(explain::ExplainArgs),
    /// Stop, start or inject faults into a virtual node; adopt, bind, unbind or remove it (platform).
    Node(node::NodeArgs),
    /// The probe workload: a real TCP ring all-reduce across a job's ranks.
    Probe(probe::ProbeArgs),
    /// One-click checks (server, network, collective) and their history.
    Check(check::CheckArgs),
    /// Inside a pod: the NCCL/HCCL/Gloo env against the pod's real network and rank table.
    Envcheck(envcheck::EnvcheckArgs),
    /// The client's version and the server's.
    Version(version::VersionArgs),
    /// Print the job kinds' CustomResourceDefinitions (`ringleader crds | kubectl apply -f -`).
    Crds(crds::CrdsArgs),
    /// Start a run of a saved TrainingJob (`ringleader run JOB`).
    Run(platform::RunArgs),
    /// Stop a run: its record stays, its devices are freed.
    Stop(platform::StopArgs),
    /// Copy a TrainingJob under a new name.
    Clone(platform::CloneArgs),
    /// List a TrainingJob's runs.
    Runs(platform::RunsArgs),
    /// Lock (no new runs scheduled, running ones go on) or unlock a queue.
    Queue(platform::QueueArgs),
    /// Copy a store online into a file (`backup --data-dir D OUT`; safe while `up` runs).
    Backup(backup::BackupArgs),
    /// Replace a stopped plane's store with a backup (`restore --data-dir D FILE`; the old one is kept aside).
    Restore(backup::RestoreArgs),
    /// Bearer tokens for users, node agents and the scheduler (`token create --user NAME`).
    Token(token::TokenArgs),
    /// Access key pairs (AK/SK) for signed API requests (`accesskey create --user NAME`, `sign`).
    Accesskey(accesskey::AccessKeyArgs),
    /// A shell completion script (`source <(ringleader completion bash)`).
    Completion {
        /// bash, zsh or fish.
        #[arg(value_enum)]
        shell: CompletionShell,
    },
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

/// The completion script of a shell.
fn completion(shell: CompletionShell) -> Vec<u8> {
    let shell = match shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    // Into memory first: the generator panics on a failed write, and stdout may be a closed pipe.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "ringleader", &mut script);
    script
}

fn main() -> ExitCode {
    // The agent re-executes this program as each pod's shim and each
    // sandboxed pod's init; both must run before anything starts a thread.
    ringleader_agent::runtime::shim::run_if_invoked();
    ringleader_agent::runtime::pod_init::run_if_invoked();
    let cli = Cli::parse();
    logging::init(cli.log_format, matches!(cli.command, Command::Up(_) | Command::Agent(_) | Command::Manager(_)));
    // `validate` documents 2 for sources it cannot read; every other command fails with 1, as kubectl.
    let failure = if matches!(cli.command, Command::Validate(_)) { 2 } else { 1 };
    let result = match cli.command {
        Command::Validate(args) => validate::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Profiles(args) => profiles::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Up(args) => up::run(args).map(|_| 0),
        Command::Demo(args) => demo::run(args).map(|_| 0),
        Command::Agent(args) => agent::run(args).map(|_| 0),
        Command::Manager(args) => manager::run(args).map(|_| 0),
        Command::Run(args) => platform::run(args).map(|_| 0),
        Command::Stop(args) => platform::stop(args).map(|_| 0),
        Command::Clone(args) => platform::clone(args).map(|_| 0),
        Command::Runs(args) => platform::runs(args).map(|_| 0),
        Command::Queue(args) => platform::queue(args).map(|_| 0),
        Command::Apply(args) => apply::run(args).map(|_| 0),
        Command::Get(args) => get::get(args).map(|_| 0),
        Command::Describe(args) => describe::run(args).map(|_| 0),
        Command::Logs(args) => logs::logs(args).map(|_| 0),
        Command::Delete(args) => remove::delete(args).map(|_| 0),
        Command::Top(args) => top::run(args).map(|_| 0),
        Command::Explain(args) => explain::run(args).map(|_| 0),
        Command::Node(args) => node::run(args).map(|_| 0),
        Command::Version(args) => version::version(args).map(|_| 0),
        Command::Crds(args) => crds::run(args).map(|_| 0),
        Command::Token(args) => token::run(args).map(|_| 0),
        Command::Accesskey(args) => accesskey::run(args).map(|_| 0),
        Command::Backup(args) => backup::backup(args).map(|_| 0),
        Command::Restore(args) => backup::restore(args).map(|_| 0),
        Command::Completion { shell } => {
            let script = completion(shell);
            printer::emit(&String::from_utf8_lossy(&script)).map(|_| 0)
        }
        Command::Probe(args) => probe::run(args),
        Command::Check(args) => check::run(args),
        Command::Envcheck(args) => envcheck::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        // The reader went away (`| head`): a quiet end, as for any filter.
        Err(err) if printer::is_closed_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{}", support::error_line(&err));
            ExitCode::from(failure)
        }
    }
}
