//! The platform's verbs (seeds 003 and 004): `run JOB` starts a run of a
//! saved TrainingJob, `stop RUN` stops one (the record stays, the devices
//! are freed), `clone JOB NEW` copies a job under a new name, `runs JOB`
//! lists a job's runs, `queue lock|unlock QUEUE` closes a queue to new runs
//! (running ones go on). Each is one API call a user could make with
//! kubectl; the platform controller does the rest.

use crate::printer::emit;
use crate::support::{print_table, rt, server_error, Conn};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use ringleader_client::Client;
use ringleader_registry::resources;
use ringleader_server::ResourceType;
use serde_json::{json, Value};

/// The platform group's objects.
const GROUP: &str = "platform.ringleader.io/v1alpha1";

fn kind(plural: &str) -> Result<&'static ResourceType> {
    resources::find(plural).with_context(|| format!("the API has no resource {plural}"))
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

#[derive(Args)]
pub struct RunArgs {
    /// The TrainingJob to run.
    pub job: String,
    #[arg(short, long, default_value = "default")]
    pub namespace: String,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args)]
pub struct StopArgs {
    /// The run to stop (`ringleader runs JOB` lists them).
    pub run: String,
    #[arg(short, long, default_value = "default")]
    pub namespace: String,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args)]
pub struct CloneArgs {
    /// The TrainingJob to copy.
    pub job: String,
    /// The copy's name.
    pub new: String,
    #[arg(short, long, default_value = "default")]
    pub namespace: String,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args)]
pub struct RunsArgs {
    /// The TrainingJob whose runs to list.
    pub job: String,
    #[arg(short, long, default_value = "default")]
    pub namespace: String,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Args)]
pub struct QueueArgs {
    #[command(subcommand)]
    pub action: QueueAction,
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Subcommand)]
pub enum QueueAction {
    /// No new runs are scheduled from the queue; running ones go on (Volcano's Closed).
    Lock { queue: String },
    /// Open the queue again.
    Unlock { queue: String },
}

/// The name of a job's run number `n`.
pub fn run_name(job: &str, n: u64) -> String {
    format!("{job}-r{n}")
}

/// The next run number: one past the highest of the job's runs (their names
/// say it), so a deleted run's number is not given again while a later one exists.
pub fn next_run(job: &str, runs: &[Value]) -> u64 {
    let prefix = format!("{job}-r");
    runs.iter()
        .filter(|r| s(r, "/spec/trainingJob") == job)
        .filter_map(|r| s(r, "/metadata/name").strip_prefix(&prefix).and_then(|n| n.parse::<u64>().ok()))
        .max()
        .unwrap_or(0)
        + 1
}

async fn runs_of(client: &Client, ns: &str, job: &str) -> Result<Vec<Value>> {
    let runs = client.list(kind("runs")?, Some(ns), None).await.map_err(server_error)?.items;
    Ok(runs.into_iter().filter(|r| s(r, "/spec/trainingJob") == job).collect())
}

pub fn run(args: RunArgs) -> Result<()> {
    let client = args.conn.client()?;
    rt()?.block_on(async {
        // The job must exist: a run of nothing would only fail later. The run
        // is owned by it: deleting the job deletes its runs (and their jobs).
        let job = client.get(kind("trainingjobs")?, &args.namespace, &args.job).await.map_err(server_error)?;
        let owner = json!([{"apiVersion": GROUP, "kind": "TrainingJob", "name": args.job,
                            "uid": s(&job, "/metadata/uid"), "blockOwnerDeletion": true}]);
        // Two `run`s racing pick the same number: the second create is refused
        // (AlreadyExists) and tried again with the next.
        for _ in 0..5 {
            let n = next_run(&args.job, &runs_of(&client, &args.namespace, &args.job).await?);
            let name = run_name(&args.job, n);
            let run = json!({
                "apiVersion": GROUP, "kind": "Run",
                "metadata": {"name": name, "namespace": args.namespace, "ownerReferences": owner,
                             "labels": {"platform.ringleader.io/training-job": args.job}},
                "spec": {"trainingJob": args.job},
            });
            match client.create(kind("runs")?, &args.namespace, &run).await {
                Ok(_) => return emit(&format!("run/{name} created\n")),
                Err(e) if e.reason() == Some("AlreadyExists") => continue,
                Err(e) => return Err(server_error(e)),
            }
        }
        bail!("could not pick a run number for {}: other runs were created at the same time; try again", args.job)
    })
}

pub fn stop(args: StopArgs) -> Result<()> {
    let client = args.conn.client()?;
    rt()?.block_on(async {
        let patch = json!({"spec": {"stop": true}});
        client.patch_merge(kind("runs")?, &args.namespace, &args.run, &patch).await.map_err(server_error)?;
        emit(&format!("run/{} stopping (its record is kept; its devices are freed)\n", args.run))
    })
}

/// The copy of a TrainingJob `job` named `new`: its spec, labels and
/// annotations, none of its status or identity.
pub fn cloned(job: &Value, new: &str) -> Value {
    let mut meta = json!({"name": new, "namespace": s(job, "/metadata/namespace")});
    for field in ["labels", "annotations"] {
        if let Some(v) = job.pointer(&format!("/metadata/{field}")).filter(|v| v.is_object()) {
            meta[field] = v.clone();
        }
    }
    if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        a.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
    json!({"apiVersion": GROUP, "kind": "TrainingJob", "metadata": meta,
           "spec": job.get("spec").cloned().unwrap_or_else(|| json!({}))})
}

pub fn clone(args: CloneArgs) -> Result<()> {
    let client = args.conn.client()?;
    rt()?.block_on(async {
        let t = kind("trainingjobs")?;
        let job = client.get(t, &args.namespace, &args.job).await.map_err(server_error)?;
        client.create(t, &args.namespace, &cloned(&job, &args.new)).await.map_err(server_error)?;
        emit(&format!("trainingjob/{} created from {}\n", args.new, args.job))
    })
}

pub fn runs(args: RunsArgs) -> Result<()> {
    let client = args.conn.client()?;
    rt()?.block_on(async {
        let mut runs = runs_of(&client, &args.namespace, &args.job).await?;
        runs.sort_by_key(|r| {
            s(r, "/metadata/name").trim_start_matches(&format!("{}-r", args.job)).parse::<u64>().unwrap_or(0)
        });
        let rows: Vec<Vec<String>> = runs
            .iter()
            .map(|r| {
                let pods = r.pointer("/status/pods").and_then(Value::as_array).map_or(0, Vec::len);
                vec![
                    s(r, "/metadata/name").to_string(),
                    match s(r, "/status/state") {
                        "" => "creating".to_string(),
                        st => st.to_string(),
                    },
                    s(r, "/status/job/kind").to_string(),
                    pods.to_string(),
                    s(r, "/status/startTime").to_string(),
                    s(r, "/status/completionTime").to_string(),
                ]
            })
            .collect();
        if rows.is_empty() {
            return emit(&format!("No runs of trainingjob/{} in namespace {}.\n", args.job, args.namespace));
        }
        print_table(&["NAME", "STATE", "KIND", "PODS", "STARTED", "FINISHED"], &rows);
        Ok(())
    })
}

pub fn queue(args: QueueArgs) -> Result<()> {
    let client = args.conn.client()?;
    let (queue, state) = match &args.action {
        QueueAction::Lock { queue } => (queue, "Closed"),
        QueueAction::Unlock { queue } => (queue, "Open"),
    };
    rt()?.block_on(async {
        let patch = json!({"status": {"state": state}});
        client.patch_merge_status(kind("queues")?, "", queue, &patch).await.map_err(server_error)?;
        emit(&format!("queue/{queue} {}\n", if state == "Closed" { "locked" } else { "unlocked" }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_numbered_past_the_highest_of_the_job() {
        let run = |name: &str, job: &str| json!({"metadata": {"name": name}, "spec": {"trainingJob": job}});
        assert_eq!(next_run("bert", &[]), 1);
        let runs = [run("bert-r1", "bert"), run("bert-r3", "bert"), run("bert-x-r9", "bert-x"), run("bert-rx", "bert")];
        assert_eq!(next_run("bert", &runs), 4, "r2 was deleted: numbers are not reused below the highest");
        assert_eq!(run_name("bert", 4), "bert-r4");
    }

    #[test]
    fn a_clone_copies_the_spec_not_the_identity_or_status() {
        let job = json!({"apiVersion": GROUP, "kind": "TrainingJob",
            "metadata": {"name": "bert", "namespace": "ws-a", "uid": "u1", "resourceVersion": "7",
                         "labels": {"team": "nlp"},
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "x"}},
            "spec": {"framework": "PyTorchDDP", "queue": "q1"}, "status": {"runs": 2}});
        let c = cloned(&job, "bert-2");
        assert_eq!(
            c["metadata"],
            json!({"name": "bert-2", "namespace": "ws-a", "labels": {"team": "nlp"}, "annotations": {"note": "x"}})
        );
        assert_eq!(c["spec"], job["spec"]);
        assert!(c.get("status").is_none());
    }
}
