//! Device telemetry through the agent into a real store: a node whose
//! hardware was detected publishes the figures a (scripted) `nvidia-smi`
//! prints, writes again only when they move, withdraws them when the tool
//! fails; a virtual node publishes none and clears stale ones. Every wait
//! polls with a deadline.

mod common;

use common::wait_for;

use ringleader_agent::config::Hardware;
use ringleader_agent::detect::{CommandRunner, RunError};
use ringleader_agent::telemetry::{self, parse::NVIDIA_SMI_FIELDS};
use ringleader_agent::{node_object, AgentConfig, VirtualNode};
use ringleader_store::{ObjectKey, Store};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const HGX_H100: &str = include_str!("../../topology/tests/data/hgx-h100.topo");

/// `nvidia-smi` answering the telemetry query with text the test sets, counting its runs.
#[derive(Clone)]
struct Smi(Arc<Mutex<(Result<String, RunError>, u64)>>);

impl Smi {
    fn new(out: String) -> Smi {
        Smi(Arc::new(Mutex::new((Ok(out), 0))))
    }
    fn set(&self, out: Result<String, RunError>) {
        if let Ok(mut g) = self.0.lock() {
            g.0 = out;
        }
    }
    fn runs(&self) -> u64 {
        self.0.lock().map(|g| g.1).unwrap_or(0)
    }
}

impl CommandRunner for Smi {
    fn output(&self, program: &str, args: &[&str]) -> Result<String, RunError> {
        let query = format!("--query-gpu={NVIDIA_SMI_FIELDS}");
        if program != "nvidia-smi" || args != [query.as_str(), "--format=csv,noheader,nounits"] {
            return Err(RunError::NotFound);
        }
        let mut g = self.0.lock().map_err(|e| RunError::Failed(e.to_string()))?;
        g.1 += 1;
        g.0.clone()
    }
}

/// Eight H100s at `util` percent; GPU 7 has no power reading.
fn listing(util: u32) -> String {
    (0..8)
        .map(|i| {
            let power = if i == 7 { "[N/A]".to_string() } else { format!("{}.5", 100 + i) };
            format!("{i}, GPU-{i:08x}, {util}, {}, 81559, {}, {power}\n", 1024 * (i + 1), 30 + i)
        })
        .collect()
}

fn node_key(name: &str) -> ObjectKey {
    ObjectKey::new("ringleader.io/v1alpha1", "Node", "", name)
}

fn telemetry_of(store: &Store, node: &str) -> Option<Value> {
    let n = store.get(&node_key(node)).ok()??.object;
    n.pointer("/status/deviceTelemetry").cloned()
}

fn config(dir: &tempfile::TempDir, node: VirtualNode) -> AgentConfig {
    let mut c = AgentConfig::new(dir.path().join("data"), vec![node])
        .with_runtime(ringleader_agent::Runtime::Simulated)
        .with_heartbeat_interval(Duration::from_millis(100));
    c.flush_interval = Duration::from_millis(10);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detected_node_publishes_moving_figures_and_withdraws_them_on_failure() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("store")).unwrap();
    let smi = Smi::new(listing(10));
    let node = VirtualNode::new("gpu-0", "", "127.0.1.1").with_hardware(Hardware::TopologyText(HGX_H100.into()));
    let mut cfg = config(&dir, node);
    let sampler = telemetry::nvidia_smi_sampler(Box::new(smi.clone()));
    cfg.device_telemetry = Some(telemetry::spawn(sampler, Duration::from_millis(20)).unwrap());
    let agent = ringleader_agent::start(store.clone(), cfg).await.unwrap();

    let t = wait_for("figures in the node's status", || telemetry_of(&store, "gpu-0")).await;
    let t = t.as_array().expect("a list").clone();
    assert_eq!(t.len(), 8);
    assert_eq!(t[0]["id"], 0);
    assert_eq!(t[0]["utilizationPercent"], 10.0);
    assert_eq!(t[2]["memoryUsedBytes"], 3072u64 << 20);
    assert_eq!(t[2]["memoryTotalBytes"], 81559u64 << 20);
    assert_eq!(t[2]["temperatureC"], 32.0);
    assert_eq!(t[2]["powerW"], 102.5);
    assert!(t[7].get("powerW").is_none(), "[N/A] is absent, not zero: {}", t[7]);
    let first_at = t[0]["at"].as_f64().expect("at");

    // Jitter: readings go on, the node is not rewritten.
    smi.set(Ok(listing(12)));
    let runs = smi.runs();
    wait_for("three more readings", || (smi.runs() >= runs + 3).then_some(())).await;
    assert_eq!(telemetry_of(&store, "gpu-0").unwrap()[0]["at"].as_f64(), Some(first_at), "no write for jitter");

    // A real move is written.
    smi.set(Ok(listing(95)));
    wait_for("the busy GPUs", || {
        (telemetry_of(&store, "gpu-0")?[3]["utilizationPercent"].as_f64()? == 95.0).then_some(())
    })
    .await;

    // The tool fails: the figures are withdrawn, not left standing.
    smi.set(Err(RunError::Failed("exit status: 9: NVIDIA-SMI has failed".into())));
    wait_for("the figures withdrawn", || telemetry_of(&store, "gpu-0").is_none().then_some(())).await;
    smi.set(Ok(listing(50)));
    wait_for("the figures back", || {
        (telemetry_of(&store, "gpu-0")?[0]["utilizationPercent"].as_f64()? == 50.0).then_some(())
    })
    .await;
    agent.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_virtual_node_publishes_none_and_clears_stale_figures() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("store")).unwrap();
    let node = VirtualNode::new("v-0", "hgx-h100-8", "127.0.1.2");
    // Left by an earlier agent that detected real devices.
    let mut old = node_object(&node);
    old["status"] = json!({"deviceTelemetry": [{"id": 0, "utilizationPercent": 80.0, "at": 1.0}]});
    store.create(old).unwrap();
    let agent = ringleader_agent::start(store.clone(), config(&dir, node)).await.unwrap();
    assert_eq!(telemetry_of(&store, "v-0"), None, "registration clears what is not this agent's");
    let beat =
        |s: &Store| s.get(&node_key("v-0")).ok().flatten().and_then(|n| n.object["status"]["lastHeartbeat"].as_f64());
    let first = beat(&store).expect("registered with a heartbeat");
    wait_for("a few heartbeats", || (beat(&store)? > first + 0.25).then_some(())).await;
    assert_eq!(telemetry_of(&store, "v-0"), None, "virtual devices report no figures");
    agent.stop().await.unwrap();
}
