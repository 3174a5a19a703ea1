//! Cluster-wide env settings of `ringleader up` (and `demo`): which
//! PyTorchJob env convention the controller follows (Kubeflow or AI Hub,
//! seed 003) and whether it injects the NCCL auto-settings into GPU pods.
//! They are flags because they configure the controller for every job, as
//! `--scheduler-conf` configures the scheduler; see docs/cluster-env.md.

use clap::Args;
use ringleader_controller::env::{NcclNetwork, PyTorchFlavor};
use ringleader_controller::EnvOptions;

/// The env flags of `up`.
#[derive(Args, Clone, Debug)]
pub struct EnvFlags {
    /// PyTorchJob env convention: `kubeflow` (training-operator) or `aihub`
    /// (AI Hub: `WORLD_SIZE` counts GPUs, `PET_NPROC_PER_NODE` is the pod's
    /// GPU count, `RANK` the node index).
    #[arg(long = "env-variant", value_name = "VARIANT", default_value = "kubeflow", value_parser = ["kubeflow", "aihub"])]
    pub env_variant: String,
    /// Set `NCCL_SOCKET_IFNAME` and `NCCL_IB_DISABLE` in GPU pods (a value
    /// the pod sets itself wins): `rdma` (IB/RoCE on: the RDMA interface,
    /// `NCCL_IB_DISABLE=0`) or `ethernet` (the Ethernet interface,
    /// `NCCL_IB_DISABLE=1`). Default: not set.
    #[arg(long = "nccl-auto", value_name = "NETWORK", value_parser = ["rdma", "ethernet"])]
    pub nccl_auto: Option<String>,
    /// `NCCL_SOCKET_IFNAME` with `--nccl-auto rdma` (AI Hub: `front1`).
    #[arg(long = "nccl-rdma-interface", value_name = "IFNAME", default_value = "front1")]
    pub nccl_rdma_interface: String,
    /// `NCCL_SOCKET_IFNAME` with `--nccl-auto ethernet` (AI Hub: the prefix `en`).
    #[arg(long = "nccl-ethernet-interface", value_name = "IFNAME", default_value = "en")]
    pub nccl_ethernet_interface: String,
}

impl Default for EnvFlags {
    fn default() -> Self {
        EnvFlags {
            env_variant: "kubeflow".to_string(),
            nccl_auto: None,
            nccl_rdma_interface: "front1".to_string(),
            nccl_ethernet_interface: "en".to_string(),
        }
    }
}

impl EnvFlags {
    /// Sets the controller's env options from the flags; a bad value
    /// (possible when the struct is built by hand, not by clap) names the flag.
    pub fn apply(&self, opts: &mut EnvOptions) -> anyhow::Result<()> {
        opts.pytorch_flavor = match self.env_variant.as_str() {
            "kubeflow" => PyTorchFlavor::Kubeflow,
            "aihub" => PyTorchFlavor::AiHub,
            other => anyhow::bail!("--env-variant {other:?}: must be kubeflow or aihub"),
        };
        let rdma = match self.nccl_auto.as_deref() {
            None => {
                opts.nccl = None;
                return Ok(());
            }
            Some("rdma") => true,
            Some("ethernet") => false,
            Some(other) => anyhow::bail!("--nccl-auto {other:?}: must be rdma or ethernet"),
        };
        for (flag, value) in [
            ("--nccl-rdma-interface", &self.nccl_rdma_interface),
            ("--nccl-ethernet-interface", &self.nccl_ethernet_interface),
        ] {
            if value.is_empty() || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
                anyhow::bail!("{flag} {value:?}: must be an interface name (non-empty, no spaces)");
            }
        }
        opts.nccl = Some(NcclNetwork {
            rdma,
            rdma_interface: self.nccl_rdma_interface.clone(),
            ethernet_interface: self.nccl_ethernet_interface.clone(),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_map_to_env_options_and_bad_values_name_the_flag() {
        let mut opts = EnvOptions::default();
        EnvFlags::default().apply(&mut opts).expect("defaults");
        assert_eq!(opts.pytorch_flavor, PyTorchFlavor::Kubeflow);
        assert!(opts.nccl.is_none());
        let flags = EnvFlags { env_variant: "aihub".into(), nccl_auto: Some("rdma".into()), ..EnvFlags::default() };
        flags.apply(&mut opts).expect("aihub");
        assert_eq!(opts.pytorch_flavor, PyTorchFlavor::AiHub);
        assert_eq!(opts.nccl, Some(NcclNetwork::ai_hub(true)));
        let bad = EnvFlags { env_variant: "horovod".into(), ..EnvFlags::default() };
        let text = bad.apply(&mut opts).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("--env-variant") && text.contains("horovod"), "{text}");
        let bad = EnvFlags {
            nccl_auto: Some("ethernet".into()),
            nccl_ethernet_interface: "en 0".into(),
            ..EnvFlags::default()
        };
        let text = bad.apply(&mut opts).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("--nccl-ethernet-interface") && text.contains("en 0"), "{text}");
    }
}
