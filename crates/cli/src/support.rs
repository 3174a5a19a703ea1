//! What every command shares, and nothing else: the connection to the API
//! (`--server`, `--kubeconfig`, `--data-dir`), resource type names, server
//! refusals printed as kubectl prints them, tables, events in order, and the
//! stop signal. Commands use each other only through this module.

use anyhow::{anyhow, Context, Result};
use clap::Args;
use ringleader_client::{Client, ClientError};
use ringleader_server::{resolve, ResourceType};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where the API is and who we are.
#[derive(Args, Clone, Debug)]
pub struct Conn {
    /// API server URL (default: the one `ringleader up` wrote into the data directory).
    #[arg(long, env = "RINGLEADER_SERVER", global = true)]
    pub server: Option<String>,
    /// Kubeconfig to connect with: its current context's server, CA and token
    /// (default: $KUBECONFIG, unless --data-dir or RINGLEADER_DATA_DIR is given).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// Data directory of `ringleader up` (its kubeconfig, or its token, CA and
    /// address, are read from it) [default: ringleader-data].
    #[arg(long, env = "RINGLEADER_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
}

/// The data directory used when none is given.
pub const DEFAULT_DATA_DIR: &str = "ringleader-data";

impl Conn {
    /// The data directory (given or default).
    pub fn data_dir(&self) -> PathBuf {
        self.data_dir.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR))
    }

    /// A client, from the first of: `--server` (with the data directory's
    /// token and CA); `--kubeconfig`; `$KUBECONFIG` when no data directory
    /// was named (ringleader's own setting wins over the generic one); the
    /// data directory's kubeconfig; its `server` file and token.
    pub fn client(&self) -> Result<Client> {
        let dir = self.data_dir();
        if let Some(url) = &self.server {
            return Ok(Client::from_data_dir(url, &dir)?);
        }
        if let Some(path) = &self.kubeconfig {
            return Ok(Client::from_kubeconfig(path)?);
        }
        if self.data_dir.is_none() {
            if let Some(path) = env_kubeconfig() {
                return Ok(Client::from_kubeconfig(&path)?);
            }
        }
        let own = ringleader_client::kubeconfig::path(&dir);
        if own.is_file() {
            return Ok(Client::from_kubeconfig(&own)?);
        }
        let url = std::fs::read_to_string(server_file(&dir))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "http://127.0.0.1:8470".to_string());
        Ok(Client::from_data_dir(&url, &dir)?)
    }
}

/// The first existing file of `$KUBECONFIG` (a `:`-separated list, as
/// kubectl reads it; ringleader does not merge several).
fn env_kubeconfig() -> Option<PathBuf> {
    let list = std::env::var_os("KUBECONFIG")?;
    std::env::split_paths(&list).find(|p| !p.as_os_str().is_empty() && p.is_file())
}

pub(crate) fn rt() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

pub(crate) fn types(name: &str) -> Result<Vec<&'static ResourceType>> {
    resolve(name).ok_or_else(|| {
        anyhow!("unknown resource type {name:?}: use jobs, pods, nodes, queues, podgroups, events, configmaps or a kind name")
    })
}
/// `Error from server (NotFound): pods "x" not found`.
#[derive(Debug)]
pub struct ServerError {
    /// The Status reason (`NotFound`, `AlreadyExists`, `Invalid` …).
    pub reason: String,
    /// The Status message, then its field causes one per line.
    pub message: String,
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Error from server ({}): {}", self.reason, self.message)
    }
}

impl std::error::Error for ServerError {}

/// A client failure as the error the CLI reports: server refusals keep
/// their reason and field causes.
pub(crate) fn server_error(e: ClientError) -> anyhow::Error {
    let ClientError::Status { status, message, reason, .. } = &e else { return anyhow!(e) };
    let causes: Vec<String> = status
        .pointer("/details/causes")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .map(|c| {
                    format!(
                        "  {}: {}",
                        c.get("field").and_then(Value::as_str).unwrap_or(""),
                        c.get("message").and_then(Value::as_str).unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let message = if causes.is_empty() { message.clone() } else { format!("{message}\n{}", causes.join("\n")) };
    if reason.is_empty() {
        return anyhow!(message);
    }
    anyhow::Error::new(ServerError { reason: reason.clone(), message })
}

/// The stderr line of a failed command: kubectl's `Error from server (…)` or `error: …`.
pub fn error_line(e: &anyhow::Error) -> String {
    match e.downcast_ref::<ServerError>() {
        Some(server) => server.to_string(),
        None => format!("error: {e:#}"),
    }
}

/// The string at JSON pointer `p`, or "".
pub fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

// Ages are the server Table's, so `describe` and `get` agree.
pub(crate) use ringleader_server::table::{human_duration, since};

/// When an event last happened (Unix seconds; 0 when it does not say).
fn last_seen(e: &Value) -> f64 {
    ["/lastTimestamp", "/eventTime", "/firstTimestamp", "/metadata/creationTimestamp"]
        .iter()
        .find_map(|p| ringleader_api::time::parse_rfc3339(s(e, p)))
        .unwrap_or(0.0)
}

/// Events oldest first, by last occurrence (ties in write order).
pub(crate) fn sort_events(events: &mut [Value]) {
    let version = |e: &Value| s(e, "/metadata/resourceVersion").parse::<u64>().unwrap_or(0);
    events.sort_by(|a, b| last_seen(a).total_cmp(&last_seen(b)).then_with(|| version(a).cmp(&version(b))));
}

/// Who reported an event.
pub(crate) fn source(e: &Value) -> &str {
    match s(e, "/source/component") {
        "" => s(e, "/reportingComponent"),
        c => c,
    }
}

/// A table as text, header first, no newline after the last row.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    crate::printer::table_text(Some(&header), rows).trim_end_matches('\n').to_string()
}

/// Prints rows aligned as kubectl does.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    println!("{}", table(header, rows));
}

/// Where `up` writes its API address for the other commands.
pub fn server_file(data_dir: &Path) -> PathBuf {
    data_dir.join("server")
}

/// Ctrl-C or SIGTERM (what `kill`, systemd and container runtimes send).
pub async fn stop_signal() -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.context("cannot watch Ctrl-C")?,
        _ = term.recv() => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(ns: &str, kind: &str, name: &str, reason: &str, last: &str, version: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Event",
               "metadata": {"name": format!("{name}.abc"), "namespace": ns, "resourceVersion": version},
               "involvedObject": {"kind": kind, "name": name}, "type": "Normal", "reason": reason,
               "message": format!("{reason} of {name} "), "count": 2,
               "firstTimestamp": "2026-11-23T09:00:00Z", "lastTimestamp": last,
               "source": {"component": "ringleader-scheduler"}})
    }

    #[test]
    fn events_sort_oldest_first_by_last_occurrence_then_write_order() {
        let mut events = vec![
            event("default", "PyTorchJob", "demo", "PyTorchJobCreated", "2026-11-23T09:59:55Z", "9"),
            event("default", "Pod", "demo-master-0", "Scheduled", "2026-11-23T09:55:00Z", "7"),
            event("team", "PodGroup", "demo", "Unschedulable", "2026-11-23T09:55:00Z", "3"),
        ];
        sort_events(&mut events);
        let order: Vec<&str> = events.iter().map(|e| s(e, "/involvedObject/kind")).collect();
        assert_eq!(order, ["PodGroup", "Pod", "PyTorchJob"]);
        assert_eq!(source(&events[0]), "ringleader-scheduler");
    }

    #[test]
    fn server_refusals_print_as_kubectl_prints_them() {
        let status = |code: u16, reason: &str, message: &str, causes: Value| ClientError::Status {
            code,
            reason: reason.into(),
            message: message.into(),
            status: json!({"kind": "Status", "details": {"causes": causes}}),
        };
        let e = server_error(status(404, "NotFound", r#"pods "x" not found"#, json!([])));
        assert_eq!(error_line(&e), r#"Error from server (NotFound): pods "x" not found"#);
        let causes = json!([{"field": "spec.replicas", "message": "Invalid value: -1"}]);
        let e = server_error(status(422, "Invalid", r#"Pod "x" is invalid"#, causes));
        assert_eq!(
            error_line(&e),
            "Error from server (Invalid): Pod \"x\" is invalid\n  spec.replicas: Invalid value: -1"
        );
        let e = server_error(status(502, "", "HTTP 502: bad gateway", Value::Null));
        assert_eq!(error_line(&e), "error: HTTP 502: bad gateway");
        assert_eq!(error_line(&anyhow!("-o x: unknown")), "error: -o x: unknown");
    }
}
