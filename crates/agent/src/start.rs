//! Starting and stopping the agent: the nodes registered, the sandbox
//! chosen, the loop ([`crate::agent`]) and its writer running until stopped,
//! and the [`AgentHandle`] that stops it and counts its writes.

use crate::config::{AgentConfig, Runtime, VirtualNode};
use crate::error::AgentError;
use crate::{agent, node, runtime, telemetry, writer};
use ringleader_api::time;
use ringleader_store::Cluster;
use ringleader_store::{Selector, StoreError};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// How often the agent samples pods' CPU and memory and reads device
/// telemetry, for a heartbeat interval.
pub fn sampling_interval(heartbeat: std::time::Duration) -> std::time::Duration {
    agent::usage_interval(heartbeat)
}

/// What the agent has written so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentStats {
    /// Store transactions committed.
    pub batches: u64,
    /// Writes in them (each a pod or node patch, create or delete).
    pub writes: u64,
    /// Writes that failed for a reason other than the object being gone.
    pub failures: u64,
}

/// A running agent.
pub struct AgentHandle {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<(), AgentError>>,
    counters: Arc<writer::Counters>,
}

impl AgentHandle {
    /// Counters of the agent's store writes.
    pub fn stats(&self) -> AgentStats {
        AgentStats {
            batches: self.counters.batches.load(Ordering::Relaxed),
            writes: self.counters.writes.load(Ordering::Relaxed),
            failures: self.counters.failures.load(Ordering::Relaxed),
        }
    }

    /// Stops the agent, queued writes flushed. Pods under their shims run
    /// on (their objects stay Running) for the next agent to adopt; pods
    /// attached to the agent (no shim) are killed, for its restart rule.
    pub async fn stop(self) -> Result<(), AgentError> {
        let _ = self.stop.send(true);
        join(self.task).await
    }

    /// Waits for the agent to end by itself (it only does on error).
    pub async fn wait(self) -> Result<(), AgentError> {
        join(self.task).await
    }
}

async fn join(task: JoinHandle<Result<(), AgentError>>) -> Result<(), AgentError> {
    task.await.map_err(|e| AgentError::Task(e.to_string()))?
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, AgentError> + Send + 'static,
) -> Result<T, AgentError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| AgentError::Task(e.to_string()))?
}

/// Registers the nodes (create, or merge-patch the agent's fields of an
/// existing Node), lists nodes and pods, applies the restart rule to pods
/// left Running, and starts following the store. Returns once the agent is
/// running.
pub async fn start(cluster: impl Cluster, config: AgentConfig) -> Result<AgentHandle, AgentError> {
    start_shared(Arc::new(cluster), config).await
}

/// [`start`] with a cluster shared with others.
pub async fn start_shared(store: Arc<dyn Cluster>, mut config: AgentConfig) -> Result<AgentHandle, AgentError> {
    config.validate()?;
    // Pods run in their sandbox and get its paths in their env: a relative
    // data dir would name paths that do not exist from there.
    config.data_dir = std::path::absolute(&config.data_dir)
        .map_err(|source| AgentError::Io { path: config.data_dir.to_string_lossy().into_owned(), source })?;
    for n in &config.nodes {
        let dir = config.data_dir.join("nodes").join(&n.name);
        std::fs::create_dir_all(&dir)
            .map_err(|source| AgentError::Io { path: dir.to_string_lossy().into_owned(), source })?;
    }
    let sandboxing = runtime::isolate::resolve(&config)?;
    let shim = match config.runtime {
        Runtime::Process => runtime::shim::resolve(&config, sandboxing.as_ref()),
        Runtime::Simulated | Runtime::Cri => None,
    };
    let mut cri = match config.runtime {
        Runtime::Cri => Some(
            crate::cri_runtime::connect(&config.cri_endpoint, &config.data_dir).await.map_err(AgentError::Runtime)?,
        ),
        _ => None,
    };
    let nodes = config.nodes.clone();
    let s = store.clone();
    // Figures a previous agent with `--detect` published are not this one's to stand by.
    let clear_telemetry = config.device_telemetry.is_none();
    let mut info = node::system_info_patch(match config.runtime {
        Runtime::Process => "process",
        Runtime::Simulated => "simulated",
        Runtime::Cri => "containerd",
    });
    // Written either way: an agent restarted without a pod network must not
    // leave its predecessor's `true` behind.
    let pod_network = config.runtime == Runtime::Cri && config.pod_network;
    writer::merge(&mut info, serde_json::json!({"status": {"podNetwork": pod_network}}));
    if let Some(endpoint) = &config.endpoint {
        writer::merge(&mut info, serde_json::json!({"status": {"agentEndpoint": endpoint}}));
    }
    let feeds = blocking(move || {
        for n in &nodes {
            register(s.as_ref(), n, &info, clear_telemetry)?;
        }
        let node_sel = Selector::kind(node::API_VERSION, node::KIND);
        let (node_list, node_version) = s.list(&node_sel)?;
        let node_watch = s.watch(&node_sel, node_version)?;
        let pod_sel = Selector::kind("v1", "Pod");
        let (pod_list, pod_version) = s.list(&pod_sel)?;
        let pod_watch = s.watch(&pod_sel, pod_version)?;
        // Files a running pod took from a ConfigMap follow its changes, as a
        // ConfigMap volume does; a pod starting later reads the ConfigMap itself.
        let config_watch = s.watch(&Selector::kind("v1", "ConfigMap"), pod_version)?;
        Ok(agent::Feeds { nodes: node_list, pods: pod_list, node_watch, pod_watch, config_watch })
    })
    .await?;

    if let Some(rt) = cri.as_mut() {
        // Containers of pods that are gone (deleted, or bound elsewhere
        // while no agent ran) go before any pod starts.
        let ours: std::collections::HashSet<&str> = config.nodes.iter().map(|n| n.name.as_str()).collect();
        let live = feeds
            .pods
            .iter()
            .filter(|p| p.object.pointer("/spec/nodeName").and_then(|v| v.as_str()).is_some_and(|n| ours.contains(n)))
            .filter(|p| {
                !matches!(p.object.pointer("/status/phase").and_then(|v| v.as_str()), Some("Succeeded" | "Failed"))
            })
            .filter_map(|p| p.object.pointer("/metadata/uid").and_then(|v| v.as_str()).map(str::to_string))
            .collect();
        crate::cri_runtime::remove_orphans(rt, &ours, &live).await;
    }
    let counters = Arc::new(writer::Counters::default());
    let (write_tx, write_rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(writer::run(store.clone(), write_rx, config.flush_interval, counters.clone()));
    let (exit_tx, exit_rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut agent =
        agent::Agent::new(config, write_tx, exit_tx, store).with_sandboxing(sandboxing).with_shim(shim).with_cri(cri);
    agent.initial(&feeds.nodes, &feeds.pods);
    tracing::info!(pods = feeds.pods.len(), "agent running");
    let task = tokio::spawn(async move {
        let result = agent.run(feeds.node_watch, feeds.pod_watch, feeds.config_watch, exit_rx, stop_rx).await;
        // Dropping the agent drops the last write sender: the writer flushes and ends.
        if let Err(e) = writer.await {
            tracing::error!(error = %e, "store writer failed");
        }
        result
    });
    Ok(AgentHandle { stop: stop_tx, task, counters })
}

/// Creates the node's object, or re-registers it keeping what others own.
fn register(
    store: &dyn Cluster,
    n: &VirtualNode,
    info: &serde_json::Value,
    clear_telemetry: bool,
) -> Result<(), AgentError> {
    let key = node::node_key(&n.name);
    let now = time::now();
    if store.get(&key)?.is_none() {
        let mut obj = node::node_object(n);
        writer::merge(&mut obj, node::heartbeat_patch(now));
        writer::merge(&mut obj, info.clone());
        match store.create(obj) {
            Ok(_) => return Ok(()),
            Err(StoreError::AlreadyExists(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let existing = store.get(&key)?;
    let mut patch = node::registration_patch(n);
    writer::merge(&mut patch, info.clone());
    if !existing.as_ref().is_some_and(|s| node::is_stopped(&s.object)) {
        writer::merge(&mut patch, node::heartbeat_patch(now));
    }
    let stale =
        existing.as_ref().is_some_and(|s| s.object.pointer(&format!("/status/{}", telemetry::STATUS_FIELD)).is_some());
    if clear_telemetry && stale {
        // Set after the merges above, which drop nulls: the store's merge patch removes the field.
        patch["status"][telemetry::STATUS_FIELD] = serde_json::Value::Null;
    }
    store.patch(&key, &patch, None)?;
    Ok(())
}

/// Runs the agent until `shutdown` turns true (or is dropped), then stops it.
pub async fn run(
    cluster: impl Cluster,
    config: AgentConfig,
    shutdown: watch::Receiver<bool>,
) -> Result<(), AgentError> {
    run_shared(Arc::new(cluster), config, shutdown).await
}

/// [`run`] with a cluster shared with others.
pub async fn run_shared(
    store: Arc<dyn Cluster>,
    config: AgentConfig,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), AgentError> {
    let mut handle = start_shared(store, config).await?;
    loop {
        if *shutdown.borrow() {
            return handle.stop().await;
        }
        tokio::select! {
            changed = shutdown.changed() => {
                if changed.is_err() {
                    return handle.stop().await;
                }
            }
            result = &mut handle.task => {
                return result.map_err(|e| AgentError::Task(e.to_string()))?;
            }
        }
    }
}
