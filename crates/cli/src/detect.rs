//! `ringleader agent --detect`: the machine's devices as discovery finds
//! them (NVML and `nvidia-smi topo -m`, or `npu-smi info`), and their health
//! re-read as it changes, fed to the agent for every node it serves, with
//! their utilisation, memory, temperature and power.

use anyhow::{Context, Result};
use ringleader_agent::detect::{self, Detected};
use ringleader_agent::telemetry;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::watch;

/// How often device health is re-read.
const HEALTH_INTERVAL: Duration = Duration::from_secs(10);

/// Discovers this machine's hardware.
pub fn discover() -> Result<Detected> {
    detect::detect().context("--detect")
}

/// Reads the figures of the devices `detected` found at the agent's
/// sampling cadence (`None`: the hardware is no machine's own).
pub fn follow_telemetry(
    detected: &Detected,
    heartbeat: Duration,
) -> Result<Option<watch::Receiver<Option<telemetry::Reading>>>> {
    let Some(vendor) = telemetry::Vendor::of(&detected.hardware) else { return Ok(None) };
    let interval = ringleader_agent::sampling_interval(heartbeat);
    let rx = telemetry::spawn(telemetry::sampler(vendor), interval)
        .map_err(anyhow::Error::msg)
        .context("--detect: device telemetry")?;
    Ok(Some(rx))
}

/// Follows the health of the devices `detected` found, reporting the
/// unhealthy set for each of `nodes` (they share the machine).
pub fn follow_health(detected: Detected, nodes: Vec<String>) -> Result<watch::Receiver<BTreeMap<String, Vec<u32>>>> {
    let monitor = detected.into_monitor();
    let by_node = move |unhealthy: &[u32]| nodes.iter().map(|n| (n.clone(), unhealthy.to_vec())).collect();
    let (tx, rx) = watch::channel(by_node(monitor.current()));
    let mut updates = monitor.spawn(HEALTH_INTERVAL).context("--detect: device health")?;
    tokio::spawn(async move {
        while let Some(update) = updates.recv().await {
            for (id, why) in &update.reasons {
                tracing::warn!(device = id, %why, "device unhealthy");
            }
            if tx.send(by_node(&update.unhealthy)).is_err() {
                return;
            }
        }
    });
    Ok(rx)
}
