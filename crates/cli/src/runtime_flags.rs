//! The flags that choose how an agent runs pods, shared by `up` (its
//! embedded agent) and `agent`: the runtime, the CRI socket, device files,
//! the hostPath allow-list and image garbage collection.

use anyhow::Result;
use clap::Args;
use ringleader_agent::{AgentConfig, Runtime};
use std::path::PathBuf;

#[derive(Args, Clone, Debug)]
pub struct RuntimeFlags {
    /// `process` runs pods' commands as sandboxed host processes; `cri` runs
    /// them as containers of their images through the CRI runtime at
    /// `--cri-endpoint` (containerd); `auto` picks `cri` when that runtime
    /// answers, else `process`; `simulated` runs none (pods finish after their
    /// `ringleader.io/duration` annotation), for scale tests.
    #[arg(long = "runtime", default_value = "process", value_parser = ["auto", "process", "cri", "simulated"])]
    pub name: String,
    /// The CRI runtime's socket, as kubelet's `--container-runtime-endpoint`.
    #[arg(long, env = "RINGLEADER_CRI_ENDPOINT", default_value = ringleader_agent::config::DEFAULT_CRI_ENDPOINT)]
    pub cri_endpoint: String,
    /// Where the node's device files are (containers get their chips'
    /// `nvidiaN` / `davinciN` from here, at `/dev/<name>`).
    #[arg(long, default_value = "/dev")]
    pub device_dir: PathBuf,
    /// Where containers' `hostPath` volumes may lie (repeat; none given:
    /// anywhere but the host's system directories and the agent's files).
    #[arg(long = "allowed-host-path")]
    pub allowed_host_paths: Vec<PathBuf>,
    /// Percent of the image filesystem used past which images no container
    /// uses are removed (CRI runtime; kubelet's flag).
    #[arg(long, default_value_t = 85, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub image_gc_high_threshold: u8,
    /// `host`: every pod shares its node's network (peers reach it at the
    /// node's address); `cni`: containers get an address of their own on
    /// the CRI runtime's pod network (its CNI configuration), unless
    /// `hostNetwork: true`.
    #[arg(long, default_value = "host", value_parser = ["host", "cni"])]
    pub pod_network: String,
    /// Let containers share the node's PID and IPC namespaces when their
    /// pods ask (`hostPID`, `hostIPC`: ACK's topology-aware PyTorchJobs do);
    /// refused otherwise, as a container seeing the node's processes can
    /// signal them.
    #[arg(long)]
    pub allow_host_namespaces: bool,
    /// Where CDI specs are (repeat; default `/etc/cdi` and `/var/run/cdi`):
    /// GPUs a `nvidia.com/gpu` spec declares (`nvidia-ctk cdi generate`)
    /// go to containers as CDI devices `nvidia.com/gpu=N` (the runtime needs
    /// CDI on: containerd 1.7+), other chips as device nodes.
    #[arg(long = "cdi-spec-dir")]
    pub cdi_spec_dirs: Vec<PathBuf>,
    /// Percent the image garbage collection brings the filesystem down to.
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub image_gc_low_threshold: u8,
}

impl RuntimeFlags {
    /// The runtime named (`auto` asks the CRI socket).
    pub async fn resolve(&self) -> Result<Runtime> {
        ringleader_agent::runtime::cri::choose(&self.name, &self.cri_endpoint).await.map_err(anyhow::Error::msg)
    }

    /// Sets the agent's runtime-side configuration from the flags.
    pub fn apply(&self, runtime: Runtime, config: &mut AgentConfig) {
        config.runtime = runtime;
        config.cri_endpoint = self.cri_endpoint.clone();
        config.device_dir = self.device_dir.clone();
        config.allowed_host_paths = self.allowed_host_paths.clone();
        let low = self.image_gc_low_threshold.min(self.image_gc_high_threshold);
        config.image_gc_thresholds = (self.image_gc_high_threshold, low);
        config.pod_network = self.pod_network == "cni";
        config.allow_host_namespaces = self.allow_host_namespaces;
        if !self.cdi_spec_dirs.is_empty() {
            config.cdi_spec_dirs = self.cdi_spec_dirs.clone();
        }
    }
}
