//! `ringleader bench api`: list latency at scale. Fills a store with N pods
//! (50,000 by default) across namespaces, serves it over HTTPS as `up` does,
//! and times what clients do against a large collection: a `limit=500` list
//! paged to the end, the same as kubectl asks for it (`as=Table`, limit=500
//! pages, all namespaces), and, when kubectl is on PATH, `kubectl get pods
//! -A` itself through a kubeconfig like the one `up` writes (first with an
//! empty discovery cache, then with the cache it left).

use anyhow::{bail, Context, Result};
use ringleader_client::kubeconfig::Kubeconfig;
use ringleader_client::{TlsFiles, Token};
use ringleader_observability::Metrics;
use ringleader_server::ServerState;
use ringleader_store::{Op, Store};
use serde::Serialize;
use serde_json::{json, Value};
use std::time::Instant;

#[derive(clap::Args, Debug, Clone)]
pub struct BenchApiArgs {
    /// Pods to fill the store with.
    #[arg(long, default_value_t = 50_000)]
    pub pods: usize,
    /// Namespaces the pods are spread over.
    #[arg(long, default_value_t = 50)]
    pub namespaces: usize,
    /// Page size, as kubectl's default `--chunk-size`.
    #[arg(long, default_value_t = 500)]
    pub limit: usize,
    /// Output as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One timed scenario.
#[derive(Debug, Serialize)]
pub struct Timing {
    pub name: String,
    pub pages: usize,
    pub items: usize,
    pub seconds: f64,
}

/// What kubectl sends for `get` (a Table, or a plain list if not served).
const TABLE_ACCEPT: &str =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

fn pod(ns: &str, i: usize) -> Value {
    let name = format!("worker-{i:06}");
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"app": "bench", "ringleader.io/job": format!("job-{}", i / 8), "rank": (i % 8).to_string()},
        },
        "spec": {
            "nodeName": format!("node-{:04}", i / 8 % 6250),
            "schedulerName": "ringleader",
            "containers": [{
                "name": "pytorch",
                "image": "pytorch/pytorch:2.4.0",
                "command": ["torchrun", "train.py"],
                "env": [{"name": "RANK", "value": (i % 8).to_string()}],
                "resources": {"limits": {"nvidia.com/gpu": "1"}},
            }],
        },
        "status": {
            "phase": "Running",
            "podIP": format!("10.{}.{}.{}", i / 65_536 % 256, i / 256 % 256, i % 256),
            "startTime": "2026-11-24T10:00:00Z",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{
                "name": "pytorch", "ready": true, "restartCount": 0, "started": true,
                "image": "pytorch/pytorch:2.4.0", "imageID": "",
                "state": {"running": {"startedAt": "2026-11-24T10:00:01Z"}},
            }],
        },
    })
}

/// Fills the store in transactions of a few thousand writes.
fn fill(store: &Store, pods: usize, namespaces: usize) -> Result<()> {
    let namespaces = namespaces.max(1);
    let mut batch = Vec::with_capacity(5000);
    for i in 0..pods {
        batch.push(Op::Create(pod(&format!("team-{:03}", i % namespaces), i)));
        if batch.len() == 5000 {
            store.batch(std::mem::take(&mut batch))?;
        }
    }
    store.batch(batch)?;
    Ok(())
}

/// Pages through `path` with `limit`; returns pages and items seen.
async fn page_all(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    path: &str,
    limit: usize,
    accept: &str,
) -> Result<(usize, usize)> {
    let (mut pages, mut items, mut next) = (0, 0, String::new());
    loop {
        let url = format!("{base}{path}?limit={limit}&continue={next}");
        let resp = http.get(&url).bearer_auth(token).header("accept", accept).send().await?;
        let status = resp.status();
        let body: Value = resp.json().await.with_context(|| format!("{url}: not JSON"))?;
        if !status.is_success() {
            bail!("{url}: {status}: {body}");
        }
        pages += 1;
        let key = if body["kind"] == "Table" { "rows" } else { "items" };
        items += body[key].as_array().map_or(0, Vec::len);
        match body["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => next = t.to_string(),
            _ => return Ok((pages, items)),
        }
        if pages > 1_000_000 {
            bail!("{path}: the continue chain does not end");
        }
    }
}

async fn timed(name: &str, f: impl std::future::Future<Output = Result<(usize, usize)>>) -> Result<Timing> {
    let start = Instant::now();
    let (pages, items) = f.await?;
    Ok(Timing { name: name.to_string(), pages, items, seconds: start.elapsed().as_secs_f64() })
}

pub fn run(args: BenchApiArgs) -> Result<u8> {
    let rt = tokio::runtime::Runtime::new()?;
    let timings = rt.block_on(measure(&args))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&timings)?);
    } else {
        println!("{:<44} {:>7} {:>8} {:>9}", "SCENARIO", "PAGES", "ITEMS", "SECONDS");
        for t in &timings {
            println!("{:<44} {:>7} {:>8} {:>9.3}", t.name, t.pages, t.items, t.seconds);
        }
    }
    let short = timings.iter().find(|t| t.items != args.pods && t.name != "fill store");
    match short {
        Some(t) => bail!("{}: saw {} items, expected {}", t.name, t.items, args.pods),
        None => Ok(0),
    }
}

async fn measure(args: &BenchApiArgs) -> Result<Vec<Timing>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("store"))?;
    let start = Instant::now();
    let s = store.clone();
    let (pods, namespaces) = (args.pods, args.namespaces);
    tokio::task::spawn_blocking(move || fill(&s, pods, namespaces)).await??;
    let mut timings =
        vec![Timing { name: "fill store".into(), pages: 0, items: args.pods, seconds: start.elapsed().as_secs_f64() }];

    let token = Token::load_or_create(dir.path())?;
    let state = ServerState::new(store, token.clone(), Metrics::new());
    let tls = TlsFiles::load_or_create(dir.path(), &["127.0.0.1".to_string()])?;
    let config = std::sync::Arc::new(tls.server_config()?);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("https://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(ringleader_server::serve_tls(listener, state, config, async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(tls.ca_pem.as_bytes())?)
        .build()?;
    let token = token.as_str().to_string();
    let limit = args.limit;
    let name = format!("list limit={limit} (JSON)");
    timings.push(timed(&name, page_all(&http, &base, &token, "/api/v1/pods", limit, "application/json")).await?);
    let name = format!("kubectl-style Table list limit={limit}");
    timings.push(timed(&name, page_all(&http, &base, &token, "/api/v1/pods", limit, TABLE_ACCEPT)).await?);
    let name = "list without limit (JSON)";
    timings.push(timed(name, page_all(&http, &base, &token, "/api/v1/pods", 0, "application/json")).await?);
    if which("kubectl") {
        let kubeconfig = dir.path().join("kubeconfig");
        Kubeconfig::single(&base, Some(&tls.ca_pem), &token).write(&kubeconfig)?;
        let cache = dir.path().join("kube-cache");
        let kubectl = |chunk: usize| {
            let mut cmd = tokio::process::Command::new("kubectl");
            cmd.arg("--kubeconfig").arg(&kubeconfig).arg("--cache-dir").arg(&cache);
            cmd.args(["get", "pods", "-A", "--no-headers", "-v=6"]).arg(format!("--chunk-size={chunk}"));
            cmd.kill_on_drop(true);
            cmd
        };
        // The first run also fills kubectl's discovery cache.
        for (name, chunk) in [("kubectl get pods -A (cold cache)", limit), ("kubectl get pods -A", limit)] {
            let start = Instant::now();
            let out = kubectl(chunk).output().await?;
            let seconds = start.elapsed().as_secs_f64();
            let log = KubectlLog::read(&out)?;
            timings.push(Timing { name: name.into(), pages: log.pages, items: log.rows, seconds });
            if name == "kubectl get pods -A" {
                // kubectl's own -v=6 log: how long the server took to answer
                // each page, and how long kubectl's client-side rate limiter
                // (5 requests/s, burst 10) held the requests back.
                let server = "  of which server answering (kubectl -v=6)";
                timings.push(Timing { name: server.into(), pages: log.pages, items: log.rows, seconds: log.server });
                let waited = "  of which kubectl client-side throttling";
                timings.push(Timing { name: waited.into(), pages: log.pages, items: log.rows, seconds: log.throttled });
            }
        }
        let name = "kubectl get pods -A --chunk-size=0";
        let start = Instant::now();
        let out = kubectl(0).output().await?;
        let seconds = start.elapsed().as_secs_f64();
        let log = KubectlLog::read(&out)?;
        timings.push(Timing { name: name.into(), pages: log.pages, items: log.rows, seconds });
        let server = "  of which server answering (kubectl -v=6)";
        timings.push(Timing { name: server.into(), pages: log.pages, items: log.rows, seconds: log.server });
    }
    let _ = stop.send(());
    server.await??;
    Ok(timings)
}

/// Whether a program is on PATH.
fn which(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// What one `kubectl get pods -A -v=6` printed and logged.
struct KubectlLog {
    rows: usize,
    /// Pod list requests answered.
    pages: usize,
    /// Seconds the server took to answer them (kubectl's `milliseconds=`).
    server: f64,
    /// Seconds kubectl's client-side rate limiter delayed requests.
    throttled: f64,
}

impl KubectlLog {
    fn read(out: &std::process::Output) -> Result<KubectlLog> {
        let log = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            bail!("kubectl get pods -A failed: {log}");
        }
        let rows = out.stdout.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count();
        let (mut pages, mut server, mut throttled) = (0, 0.0, 0.0);
        for line in log.lines() {
            if line.contains("\"Response\"") && (line.contains("/api/v1/pods?") || line.contains("/api/v1/pods\"")) {
                pages += 1;
                server += field(line, "milliseconds=").and_then(|ms| ms.parse::<f64>().ok()).unwrap_or(0.0) / 1000.0;
            } else if line.contains("Waited before sending request") {
                throttled += field(line, "delay=\"").and_then(duration_seconds).unwrap_or(0.0);
            }
        }
        Ok(KubectlLog { rows, pages, server, throttled })
    }
}

/// The text after `key` up to the next space or quote.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = &line[line.find(key)? + key.len()..];
    Some(rest.split([' ', '"']).next().unwrap_or(rest))
}

/// A Go duration as kubectl logs it (`176.43ms`, `1.2s`, `950µs`) in seconds.
fn duration_seconds(text: &str) -> Option<f64> {
    for (unit, scale) in [("ms", 1e-3), ("µs", 1e-6), ("us", 1e-6), ("ns", 1e-9), ("s", 1.0)] {
        if let Some(n) = text.strip_suffix(unit) {
            return n.parse::<f64>().ok().map(|n| n * scale);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kubectl_durations_and_fields() {
        assert_eq!(duration_seconds("176.5ms"), Some(0.1765));
        assert_eq!(duration_seconds("2s"), Some(2.0));
        assert_eq!(duration_seconds("950µs"), Some(0.00095));
        assert_eq!(duration_seconds("soon"), None);
        let line = r#"I1125 round_trippers.go:632] "Response" verb="GET" url="https://x/api/v1/pods?limit=500" status="200 OK" milliseconds=20"#;
        assert_eq!(field(line, "milliseconds="), Some("20"));
        let wait = r#"I1125 request.go:683] "Waited before sending request" delay="176.438679ms" reason="client-side throttling""#;
        assert_eq!(field(wait, "delay=\""), Some("176.438679ms"));
    }
}
