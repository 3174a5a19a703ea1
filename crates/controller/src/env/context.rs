//! What env computation works with: one env var, a pod's env, the options
//! (PyTorch flavour, NCCL network, SSH keys), and the context every kind's
//! rules read (the job, its pods, their placement).

use crate::expand::PodPlan;
use crate::extras::JobExtras;
use crate::placement::Placement;
use ringleader_api::devices::{classify, Family};
use ringleader_api::model::{Job, Role};
use serde::Serialize;
use std::collections::BTreeMap;

/// One env var.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvVar {
    /// Name.
    pub name: String,
    /// Value.
    pub value: String,
}

/// What one pod gets: env vars in injection order, and files by absolute path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PodEnv {
    /// Env vars in the order they are appended.
    pub env: Vec<EnvVar>,
    /// File path inside the pod → content.
    pub files: BTreeMap<String, String>,
}

impl PodEnv {
    /// Appends a var.
    pub fn push(&mut self, name: &str, value: impl Into<String>) {
        self.env.push(EnvVar { name: name.to_string(), value: value.into() });
    }

    /// Sets a var: replaces the value in place when present, appends otherwise.
    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        let value = value.into();
        match self.env.iter_mut().find(|e| e.name == name) {
            Some(e) => e.value = value,
            None => self.env.push(EnvVar { name: name.to_string(), value }),
        }
    }

    /// The value of a var, if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.env.iter().find(|e| e.name == name).map(|e| e.value.as_str())
    }

    /// Merges `other` into `self`: vars by [`PodEnv::set`], files replaced.
    pub fn merge(&mut self, other: PodEnv) {
        for e in other.env {
            self.set(&e.name, e.value);
        }
        self.files.extend(other.files);
    }

    /// `NAME=value` lines, then each file as `--- <path>` and its content:
    /// the golden-file format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for e in &self.env {
            out.push_str(&format!("{}={}\n", e.name, e.value));
        }
        for (path, content) in &self.files {
            out.push_str(&format!("--- {path}\n{content}"));
            if !content.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }
}

/// Which PyTorchJob env convention to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PyTorchFlavor {
    /// Kubeflow training-operator.
    #[default]
    Kubeflow,
    /// AI Hub (seed 003): `WORLD_SIZE` = total GPUs, `RANK` = node index.
    AiHub,
}

/// The cluster network NCCL should use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NcclNetwork {
    /// Whether the IB/RoCE (RDMA) network is on.
    pub rdma: bool,
    /// Interface name(s) of the RDMA-capable NICs (AI Hub: `front1`).
    pub rdma_interface: String,
    /// Interface name prefix of the Ethernet NICs (AI Hub: `en`).
    pub ethernet_interface: String,
}

impl NcclNetwork {
    /// AI Hub's defaults (seed 003): `front1` with IB on, `en` without.
    pub fn ai_hub(rdma: bool) -> NcclNetwork {
        NcclNetwork { rdma, rdma_interface: "front1".to_string(), ethernet_interface: "en".to_string() }
    }
}

/// An SSH key pair shared by the pods of a job (MPIJob, Volcano `ssh`
/// plugin). The caller generates it: this crate has no randomness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshKeys {
    /// Private key (`id_rsa`).
    pub private_key: String,
    /// Public key (`id_rsa.pub`, also `authorized_keys`).
    pub public_key: String,
}

/// Options of env computation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EnvOptions {
    /// PyTorchJob convention.
    pub pytorch_flavor: PyTorchFlavor,
    /// Use pod addresses instead of DNS names for peers (nodes without DNS).
    pub use_addresses: bool,
    /// Network for the NCCL auto-settings; `None`: do not set them.
    pub nccl: Option<NcclNetwork>,
    /// ClusterD service address (`MINDX_SERVER_IP`); omitted when `None`.
    pub mindx_server_ip: Option<String>,
    /// Key pair for MPIJob and the Volcano `ssh` plugin; no SSH files when `None`.
    pub ssh: Option<SshKeys>,
}

/// Annotation of a job: its PyTorch env convention, `kubeflow` or `aihub`,
/// over the cluster's (`up --env-variant`); a platform TrainingJob's
/// `spec.envVariant` becomes it.
pub const ENV_VARIANT_ANNOTATION: &str = "ringleader.io/env-variant";
/// Annotation of a job: its NCCL auto-settings, `rdma`, `ethernet` or
/// `off`, over the cluster's (`up --nccl-auto`); a platform TrainingJob's
/// `spec.ibNetwork` / `spec.ncclAuto` become it.
pub const NCCL_AUTO_ANNOTATION: &str = "ringleader.io/nccl-auto";

/// The cluster's options with a job's own settings (its annotations
/// [`ENV_VARIANT_ANNOTATION`] and [`NCCL_AUTO_ANNOTATION`]) over them; a
/// value neither names is ignored (the API validates the platform's).
pub fn per_job<'a>(job: &Job, opts: &'a EnvOptions) -> std::borrow::Cow<'a, EnvOptions> {
    let variant = match job.annotations.get(ENV_VARIANT_ANNOTATION).map(String::as_str) {
        Some("aihub") => Some(PyTorchFlavor::AiHub),
        Some("kubeflow") => Some(PyTorchFlavor::Kubeflow),
        _ => None,
    };
    let nccl = match job.annotations.get(NCCL_AUTO_ANNOTATION).map(String::as_str) {
        Some(network @ ("rdma" | "ethernet")) => {
            let rdma = network == "rdma";
            Some(Some(match &opts.nccl {
                Some(net) => NcclNetwork { rdma, ..net.clone() },
                None => NcclNetwork::ai_hub(rdma),
            }))
        }
        Some("off") => Some(None),
        _ => None,
    };
    if variant.is_none() && nccl.is_none() {
        return std::borrow::Cow::Borrowed(opts);
    }
    let mut own = opts.clone();
    if let Some(v) = variant {
        own.pytorch_flavor = v;
    }
    if let Some(n) = nccl {
        own.nccl = n;
    }
    std::borrow::Cow::Owned(own)
}

/// Everything an env module reads.
pub(crate) struct Ctx<'a> {
    pub job: &'a Job,
    pub extras: &'a JobExtras,
    pub pods: &'a [PodPlan],
    /// The cluster's options with the job's own over them ([`per_job`]).
    pub opts: std::borrow::Cow<'a, EnvOptions>,
    pub placement: Option<&'a Placement>,
    /// Pods with devices, counted once: every pod's env needs it, and
    /// counting per pod made a large job's env quadratic.
    pub device_pods: std::cell::OnceCell<u32>,
}

impl<'a> Ctx<'a> {
    pub fn new(
        job: &'a Job,
        extras: &'a JobExtras,
        pods: &'a [PodPlan],
        opts: &'a EnvOptions,
        placement: Option<&'a Placement>,
    ) -> Ctx<'a> {
        Ctx { job, extras, pods, opts: per_job(job, opts), placement, device_pods: std::cell::OnceCell::new() }
    }

    /// How many pods of the job have devices.
    pub fn device_pods(&self) -> u32 {
        *self.device_pods.get_or_init(|| self.pods.iter().filter(|p| self.device_count(p) > 0).count() as u32)
    }

    pub fn role(&self, pod: &PodPlan) -> Option<&'a Role> {
        self.job.roles.iter().find(|r| r.name == pod.role)
    }

    /// Pods of a role, in index order.
    pub fn pods_of(&self, role: &str) -> Vec<&'a PodPlan> {
        self.pods.iter().filter(|p| p.role == role).collect()
    }

    /// Devices a pod of this role asks for (whole devices only).
    pub fn device_count(&self, pod: &PodPlan) -> u32 {
        self.role(pod).and_then(|r| r.device.as_ref()).map(|d| d.count).unwrap_or(0)
    }

    pub fn family(&self, pod: &PodPlan) -> Option<Family> {
        let d = self.role(pod)?.device.as_ref()?;
        classify(&d.resource).map(|(f, _)| f)
    }

    /// The pod's address when it is placed and has one (a pod on a pod
    /// network has none until its sandbox runs).
    pub fn address(&self, pod_name: &str) -> Option<String> {
        let p = self.placement?.pod(pod_name)?;
        (!p.pod_ip.is_empty()).then(|| p.pod_ip.clone())
    }

    /// `dns` unless addresses were asked for and the pod is placed.
    pub fn peer(&self, pod_name: &str, dns: String) -> String {
        if self.opts.use_addresses {
            if let Some(a) = self.address(pod_name) {
                return a;
            }
        }
        dns
    }

    /// Port of the first container port named `name` over the job's templates.
    pub fn named_port(&self, name: &str) -> Option<i32> {
        self.job.roles.iter().find_map(|r| {
            r.template.spec.as_ref()?.containers.iter().find_map(|c| {
                c.ports.as_ref()?.iter().find(|p| p.name.as_deref() == Some(name)).map(|p| p.container_port)
            })
        })
    }

    /// The port `pod_name` listens on: the one [`crate::ports::assign`]
    /// chose on its address, else `wanted` (declared or default).
    pub fn port_of(&self, pod_name: &str, wanted: i32) -> i32 {
        self.placement.and_then(|p| p.pod(pod_name)?.port).map(i32::from).unwrap_or(wanted)
    }

    /// Whether any pod of the job has a chosen port: placed values naming
    /// ports must then be rewritten even without addresses.
    pub fn ports_chosen(&self) -> bool {
        self.placement.is_some_and(|pl| self.pods.iter().any(|p| pl.pod(&p.name).is_some_and(|x| x.port.is_some())))
    }

    pub fn host_network(&self, pod: &PodPlan) -> bool {
        self.role(pod).and_then(|r| r.template.spec.as_ref()?.host_network).unwrap_or(false)
    }
}

/// SSH files under `dir`: the key pair and `authorized_keys`, plus an ssh
/// `config` when `config` is given.
pub(crate) fn ssh_files(keys: &SshKeys, dir: &str, config: Option<String>, env: &mut PodEnv) {
    let dir = dir.trim_end_matches('/');
    env.files.insert(format!("{dir}/id_rsa"), keys.private_key.clone());
    env.files.insert(format!("{dir}/id_rsa.pub"), keys.public_key.clone());
    env.files.insert(format!("{dir}/authorized_keys"), keys.public_key.clone());
    if let Some(c) = config {
        env.files.insert(format!("{dir}/config"), c);
    }
}
