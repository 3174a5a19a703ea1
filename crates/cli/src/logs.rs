//! `logs`: a pod's log (or each selected pod's) with kubectl's flags.

use crate::support::{rt, server_error, Conn};
use anyhow::{bail, Result};
use clap::Args;
use futures_util::StreamExt;
use ringleader_client::{ListOptions, LogOptions};
use ringleader_registry::resources::PODS;
use serde_json::Value;
use std::io::Write;

#[derive(Args, Debug)]
pub struct LogsArgs {
    /// The pod (`NAME` or `pod/NAME`); none with `-l`.
    pub pod: Option<String>,
    /// Namespace.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// Container (needed when the pod has several).
    #[arg(short = 'c', long)]
    pub container: Option<String>,
    /// Keep streaming until the container ends.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// The log of the container's previous run.
    #[arg(short = 'p', long)]
    pub previous: bool,
    /// Each line prefixed with its RFC 3339 time.
    #[arg(long)]
    pub timestamps: bool,
    /// Last N lines only (-1: all).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub tail: i64,
    /// Only lines newer than this: 30s, 5m, 2h, 1h30m.
    #[arg(long, value_parser = parse_since)]
    pub since: Option<u64>,
    /// Only lines at or after this RFC 3339 time.
    #[arg(long, conflicts_with = "since")]
    pub since_time: Option<String>,
    /// At most this many bytes.
    #[arg(long)]
    pub limit_bytes: Option<u64>,
    /// The logs of every pod a label selector matches.
    #[arg(short = 'l', long, conflicts_with = "pod")]
    pub selector: Option<String>,
    /// Each line prefixed with `[pod/NAME/CONTAINER]`.
    #[arg(long)]
    pub prefix: bool,
    #[command(flatten)]
    pub conn: Conn,
}

/// A Go duration as kubectl's `--since` takes it (`300ms` is refused: whole seconds only).
pub fn parse_since(text: &str) -> std::result::Result<u64, String> {
    let bad = || format!("{text:?}: not a duration; write e.g. 30s, 5m, 2h or 1h30m");
    let mut total = 0u64;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return Err(bad()),
        };
        let n: u64 = number.parse().map_err(|_| bad())?;
        total = n.checked_mul(unit).and_then(|s| total.checked_add(s)).ok_or_else(bad)?;
        number.clear();
    }
    if !number.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(total)
}

impl LogsArgs {
    fn options(&self) -> Result<LogOptions> {
        if self.tail < -1 {
            bail!("--tail {}: must be -1 (all) or a count of lines", self.tail);
        }
        if let Some(t) = &self.since_time {
            if ringleader_api::time::parse_rfc3339(t).is_none() {
                bail!("--since-time {t:?}: not an RFC 3339 time (e.g. 2026-11-23T10:00:00Z)");
            }
        }
        Ok(LogOptions {
            container: self.container.clone(),
            follow: self.follow,
            previous: self.previous,
            timestamps: self.timestamps,
            tail_lines: u64::try_from(self.tail).ok(),
            since_seconds: self.since,
            since_time: self.since_time.clone(),
            limit_bytes: self.limit_bytes,
        })
    }
}

pub fn logs(args: LogsArgs) -> Result<()> {
    let options = args.options()?;
    let pods = match (&args.pod, &args.selector) {
        (Some(p), None) => vec![p.strip_prefix("pod/").or(p.strip_prefix("pods/")).unwrap_or(p).to_string()],
        (None, Some(_)) => Vec::new(),
        _ => bail!("pod: required: `logs POD` or `logs -l SELECTOR`"),
    };
    let client = args.conn.client()?;
    rt()?.block_on(async {
        // (name, container) of each pod; the container only matters for --prefix.
        let pods: Vec<(String, String)> = match &args.selector {
            None if args.prefix && args.container.is_none() => {
                let mut named = Vec::new();
                for pod in pods {
                    let v = client.get(PODS, &args.namespace, &pod).await.map_err(server_error)?;
                    named.push((pod, first_container(&v)));
                }
                named
            }
            None => pods.into_iter().map(|p| (p, args.container.clone().unwrap_or_default())).collect(),
            Some(sel) => {
                let options = ListOptions { label_selector: Some(sel.clone()), field_selector: None };
                let list = client.list_with(PODS, Some(&args.namespace), &options).await.map_err(server_error)?;
                if list.items.is_empty() {
                    eprintln!("No resources found in {} namespace.", args.namespace);
                }
                list.items
                    .iter()
                    .map(|p| {
                        let name = p.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
                        (name, args.container.clone().unwrap_or_else(|| first_container(p)))
                    })
                    .collect()
            }
        };
        let mut streams = Vec::new();
        for (pod, container) in &pods {
            let stream = client.logs_with(&args.namespace, pod, &options).await.map_err(server_error)?;
            let prefix = args.prefix.then(|| format!("[pod/{pod}/{container}] "));
            streams.push(Prefixed::new(stream, prefix));
            if !args.follow {
                // One pod after the other, as kubectl prints them without -f.
                let Some(s) = streams.pop() else { continue };
                drain(s).await?;
            }
        }
        if args.follow {
            let mut merged = futures_util::stream::select_all(streams.into_iter().map(|s| Box::pin(s.into_stream())));
            while let Some(chunk) = merged.next().await {
                emit_bytes(&chunk?)?;
            }
        }
        Ok(())
    })
}

/// The container a prefix names: `-c`, else the pod's first.
fn first_container(pod: &Value) -> String {
    pod.pointer("/spec/containers/0/name").and_then(Value::as_str).unwrap_or("").to_string()
}

fn emit_bytes(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(())
}

async fn drain(s: Prefixed<impl futures_util::Stream<Item = ClientResult> + Unpin>) -> Result<()> {
    let mut stream = Box::pin(s.into_stream());
    while let Some(chunk) = stream.next().await {
        emit_bytes(&chunk?)?;
    }
    Ok(())
}

type ClientResult = std::result::Result<bytes::Bytes, ringleader_client::ClientError>;

/// A log stream whose whole lines get a prefix (chunks may split lines).
struct Prefixed<S> {
    inner: S,
    prefix: Option<String>,
}

impl<S: futures_util::Stream<Item = ClientResult> + Unpin> Prefixed<S> {
    fn new(inner: S, prefix: Option<String>) -> Self {
        Prefixed { inner, prefix }
    }

    fn into_stream(self) -> impl futures_util::Stream<Item = Result<Vec<u8>>> {
        futures_util::stream::unfold((self, Vec::new(), false), |(mut s, mut partial, done)| async move {
            if done {
                return None;
            }
            match s.inner.next().await {
                Some(Ok(chunk)) => {
                    let out = match &s.prefix {
                        None => chunk.to_vec(),
                        Some(p) => prefix_lines(p, &mut partial, &chunk),
                    };
                    Some((Ok(out), (s, partial, false)))
                }
                Some(Err(e)) => Some((Err(server_error(e)), (s, partial, true))),
                None if partial.is_empty() => None,
                None => {
                    let mut out = s.prefix.clone().unwrap_or_default().into_bytes();
                    out.append(&mut partial);
                    out.push(b'\n');
                    Some((Ok(out), (s, Vec::new(), true)))
                }
            }
        })
    }
}

/// The complete lines of `partial` + `chunk`, each after `prefix`; an unfinished last line stays in `partial`.
fn prefix_lines(prefix: &str, partial: &mut Vec<u8>, chunk: &[u8]) -> Vec<u8> {
    partial.extend_from_slice(chunk);
    let mut out = Vec::new();
    while let Some(pos) = partial.iter().position(|b| *b == b'\n') {
        out.extend_from_slice(prefix.as_bytes());
        out.extend(partial.drain(..=pos));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        logs: LogsArgs,
    }

    fn parse(args: &[&str]) -> std::result::Result<LogsArgs, String> {
        Cli::try_parse_from(std::iter::once("logs").chain(args.iter().copied()))
            .map(|c| c.logs)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn kubectls_log_flags_become_the_servers_parameters() {
        let args = parse(&[
            "demo-0",
            "-c",
            "main",
            "-p",
            "--timestamps",
            "--tail",
            "5",
            "--since",
            "1h30m",
            "--limit-bytes",
            "64",
        ]);
        let options = args.map_err(anyhow::Error::msg).and_then(|a| a.options()).map_err(|e| e.to_string());
        assert_eq!(
            options,
            Ok(LogOptions {
                container: Some("main".into()),
                follow: false,
                previous: true,
                timestamps: true,
                tail_lines: Some(5),
                since_seconds: Some(5400),
                since_time: None,
                limit_bytes: Some(64),
            })
        );
        let all =
            parse(&["demo-0", "-f"]).map_err(anyhow::Error::msg).and_then(|a| a.options()).map_err(|e| e.to_string());
        assert_eq!(all.map(|o| (o.follow, o.tail_lines)), Ok((true, None)));
    }

    #[test]
    fn bad_flags_are_refused_by_name() {
        assert!(parse(&["p", "--since", "5x"]).is_err_and(|e| e.contains("not a duration")));
        assert!(parse(&["p", "--since", "5m", "--since-time", "2026-11-23T10:00:00Z"]).is_err());
        assert!(parse(&["p", "-l", "app=x"]).is_err(), "a pod and -l");
        let bad_time = parse(&["p", "--since-time", "yesterday"]).map_err(anyhow::Error::msg).and_then(|a| a.options());
        assert!(bad_time.is_err_and(|e| e.to_string().contains("RFC 3339")));
        let bad_tail = parse(&["p", "--tail", "-5"]).map_err(anyhow::Error::msg).and_then(|a| a.options());
        assert!(bad_tail.is_err_and(|e| e.to_string().contains("--tail -5")));
        // `logs` has no --grace-period or --all: those are `delete` flags.
        assert!(parse(&["p", "--grace-period", "0"]).is_err());
    }

    #[test]
    fn durations_read_as_go_writes_them() {
        assert_eq!(parse_since("30s"), Ok(30));
        assert_eq!(parse_since("5m"), Ok(300));
        assert_eq!(parse_since("2h"), Ok(7200));
        assert_eq!(parse_since("1h30m10s"), Ok(5410));
        for bad in ["", "5", "m", "0s", "1d"] {
            assert!(parse_since(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prefixes_go_on_whole_lines_across_chunks() {
        let mut partial = Vec::new();
        let a = prefix_lines("[p] ", &mut partial, b"one\ntw");
        let b = prefix_lines("[p] ", &mut partial, b"o\nthree\n");
        assert_eq!(String::from_utf8_lossy(&a), "[p] one\n");
        assert_eq!(String::from_utf8_lossy(&b), "[p] two\n[p] three\n");
        assert!(partial.is_empty());
    }
}
