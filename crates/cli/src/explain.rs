//! `explain JOB`: why a job is pending, from its PodGroup's Unschedulable
//! condition.

use crate::printer::emit;
use crate::support::{rt, s, server_error, Conn};
use anyhow::{bail, Result};
use clap::Args;
use ringleader_client::Client;
use ringleader_server::ResourceType;
use serde_json::Value;

/// `explain JOB`: why a job is pending.
#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The job's name (any job kind).
    pub job: String,
    /// Namespace.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    #[command(flatten)]
    pub conn: Conn,
}
/// The job object of a name, whatever its kind.
async fn find_job(client: &Client, ns: &str, name: &str) -> Result<(&'static ResourceType, Value)> {
    for t in ringleader_registry::resources::job_types() {
        match client.get(t, ns, name).await {
            Ok(v) => return Ok((t, v)),
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(server_error(e)),
        }
    }
    bail!("no job named {name:?} in namespace {ns}")
}
async fn pending_reason(client: &Client, ns: &str, job: &str) -> Option<String> {
    let t = ringleader_registry::resources::find("podgroups")?;
    let pg = client.get(t, ns, job).await.ok()?;
    pg.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| s(c, "/type") == "Unschedulable")
        .map(|c| s(c, "/message").to_string())
}

pub fn run(args: ExplainArgs) -> Result<()> {
    let client = args.conn.client()?;
    let name = args.job.clone();
    rt()?.block_on(async {
        let (t, job) = find_job(&client, &args.namespace, &name).await?;
        let phase = s(&job, "/status/ringleader/phase");
        let why = match pending_reason(&client, &args.namespace, &name).await {
            Some(r) => format!("pending: {r}"),
            None if phase.is_empty() || phase == "Pending" => "waiting for the next scheduling pass".to_string(),
            None => "not pending: every pod is bound".to_string(),
        };
        let phase = if phase.is_empty() { "Pending" } else { phase };
        emit(&format!("{} {}/{}: {phase}\n{why}\n", t.kind, args.namespace, name))
    })
}
