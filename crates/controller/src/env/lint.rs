//! Warnings about env settings that slow training down or reference nothing
//! (`spec/jobs.md` "NCCL settings", after seed 003's table). `ringleader
//! validate` prints them; `--strict` turns them into errors.

use super::context::EnvOptions;
use super::pods::static_env;
use crate::expand::{expand, ExpandOptions};
use crate::extras::JobExtras;
use ringleader_api::devices::{classify, Family};
use ringleader_api::kinds::kubeflow::{ElasticPolicy, RdzvConf};
use ringleader_api::model::{Job, JobKind};
use ringleader_api::path::{index, key};
use ringleader_api::Resource;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;

/// One warning: where, what, and what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvWarning {
    /// Field path, e.g. `spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].env[2].value`.
    pub field: String,
    /// The offending value (or the undefined variable's name).
    pub value: String,
    /// Why it matters and what to do.
    pub advice: String,
}

impl fmt::Display for EnvWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {:?}: {}", self.field, self.value, self.advice)
    }
}

/// What the linter knows about the cluster beyond the job.
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    /// The cluster network is RDMA (IB/RoCE). `None`: decide from the job
    /// (an `rdma/…` resource request).
    pub rdma_network: Option<bool>,
    /// GPU model the job runs on, when known (`NCCL_P2P_DISABLE=1` is
    /// required on GPUs without P2P, e.g. RTX 4090). `None`: read the
    /// `nvidia.com/gpu.product` node selector.
    pub gpu_model: Option<String>,
    /// Kind-specific fields of the typed object; `None`: assume every
    /// plugin and rendezvous variable may be injected.
    pub extras: Option<JobExtras>,
}

/// Variables a container has without anyone declaring them: the shell's,
/// the image's usual ones, and those launchers set per process.
const AMBIENT: &[&str] = &[
    "PATH",
    "HOME",
    "HOSTNAME",
    "PWD",
    "OLDPWD",
    "USER",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "RANDOM",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "LOCAL_RANK",
    "KUBERNETES_SERVICE_HOST",
    // Set by ringleader's node agent on every process it starts.
    "RINGLEADER_NODE",
    "RINGLEADER_POD",
    "RINGLEADER_NAMESPACE",
    "RINGLEADER_POD_IP",
    "RINGLEADER_HOSTS",
    // Set by the agent when the pod's ServiceAccount token is mounted.
    "RINGLEADER_SERVICE_ACCOUNT_DIR",
    "KUBERNETES_SERVICE_PORT_HTTPS",
    "KUBERNETES_PORT",
    "KUBERNETES_SERVICE_PORT",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMIX_RANK",
    "IFS",
    "UID",
];

/// Warnings for the job's env and commands, with default [`LintOptions`].
/// Kind-specific fields the [`Job`] model lacks (Volcano plugins, PyTorch
/// rendezvous) are guessed generously, so that no variable a plugin may
/// inject is reported as undefined; [`env_warnings_for_resource`] knows them.
pub fn env_warnings(job: &Job) -> Vec<EnvWarning> {
    env_warnings_with(job, &LintOptions::default())
}

/// Warnings for a typed job object (exact about plugins and rendezvous).
pub fn env_warnings_for_resource(resource: &Resource) -> Vec<EnvWarning> {
    let Some(job) = Job::from_resource(resource) else { return Vec::new() };
    let opts = LintOptions { extras: Some(JobExtras::from_resource(resource)), ..LintOptions::default() };
    env_warnings_with(&job, &opts)
}

/// Extras that make every injectable variable count as defined.
fn generous_extras(job: &Job) -> JobExtras {
    let mut extras = JobExtras { slots_per_worker: 1, ..JobExtras::default() };
    if job.kind == JobKind::PyTorchJob && job.fault.elastic.is_some() {
        extras.pytorch_elastic = Some(ElasticPolicy {
            rdzv_id: Some(String::new()),
            rdzv_conf: vec![RdzvConf::default()],
            max_restarts: Some(0),
            ..ElasticPolicy::default()
        });
    }
    if job.kind == JobKind::VolcanoJob {
        for plugin in ["env", "svc", "pytorch"] {
            extras.volcano_plugins.insert(plugin.to_string(), Vec::new());
        }
    }
    extras
}

/// Base field path of role `i`'s pod template.
fn template_path(job: &Job, i: usize) -> String {
    let Some(role) = job.roles.get(i) else { return String::new() };
    let specs = match job.kind {
        JobKind::PyTorchJob => "spec.pytorchReplicaSpecs",
        JobKind::TfJob => "spec.tfReplicaSpecs",
        JobKind::MpiJob => "spec.mpiReplicaSpecs",
        JobKind::AscendJob => "spec.replicaSpecs",
        JobKind::VolcanoJob => return key(&index("spec.tasks", i), "template"),
        JobKind::Deployment | JobKind::BatchJob => return "spec.template".to_string(),
    };
    key(&key(specs, &role.name), "template")
}

fn requests_rdma(job: &Job) -> bool {
    job.roles.iter().any(|r| {
        r.template.spec.as_ref().is_some_and(|s| {
            s.containers.iter().any(|c| {
                c.resources.as_ref().and_then(|res| res.limits.as_ref().or(res.requests.as_ref())).is_some_and(|l| {
                    l.keys().any(|k| k.starts_with("rdma/") || k.contains("hostdev") || k.contains("/roce"))
                })
            })
        })
    })
}

fn gpu_model(job: &Job) -> Option<String> {
    job.roles
        .iter()
        .find_map(|r| r.template.spec.as_ref()?.node_selector.as_ref()?.get("nvidia.com/gpu.product").cloned())
}

/// Warnings for the job's env and commands.
pub fn env_warnings_with(job: &Job, opts: &LintOptions) -> Vec<EnvWarning> {
    let rdma = opts.rdma_network.unwrap_or_else(|| requests_rdma(job));
    let model = opts.gpu_model.clone().or_else(|| gpu_model(job)).unwrap_or_default();
    let no_p2p = ["4090", "4080", "3090"].iter().any(|m| model.contains(m));
    let extras = opts.extras.clone().unwrap_or_else(|| generous_extras(job));
    let expansion = expand(job, &extras, &ExpandOptions::default());
    let injected = static_env(job, &extras, &expansion.pods, &EnvOptions::default());
    let mut out = Vec::new();
    for (ri, role) in job.roles.iter().enumerate() {
        let Some(spec) = role.template.spec.as_ref() else { continue };
        let mut defined: BTreeSet<String> = AMBIENT.iter().map(|s| s.to_string()).collect();
        for p in expansion.pods.iter().filter(|p| p.role == role.name) {
            if let Some(e) = injected.get(&p.name) {
                defined.extend(e.env.iter().map(|v| v.name.clone()));
            }
        }
        match role.device.as_ref().and_then(|d| classify(&d.resource)) {
            Some((Family::Gpu, _)) => {
                defined.extend(["CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"].map(String::from))
            }
            Some((Family::Ascend, _)) => {
                defined.extend(["ASCEND_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES"].map(String::from))
            }
            None => {}
        }
        if job.kind == JobKind::AscendJob {
            defined.insert("HCCL_IF_IP".to_string());
        }
        // Set at release, once the table of the placed gang exists.
        if crate::ranktable::gets_rank_table(job) {
            defined.insert("RANK_TABLE_FILE".to_string());
        }
        if job.kind == JobKind::PyTorchJob {
            // torchrun exports these to every process it starts.
            defined.extend(["RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"].map(String::from));
        }
        let base = key(&template_path(job, ri), "spec");
        for (ci, c) in spec.containers.iter().enumerate() {
            let cpath = index(&key(&base, "containers"), ci);
            let env = c.env.as_deref().unwrap_or_default();
            let mut container_defined = defined.clone();
            container_defined.extend(env.iter().map(|e| e.name.clone()));
            let opaque = c.env_from.as_ref().is_some_and(|f| !f.is_empty());
            for (ei, e) in env.iter().enumerate() {
                let vpath = key(&index(&key(&cpath, "env"), ei), "value");
                let Some(value) = e.value.as_deref() else { continue };
                if let Some(advice) = value_advice(&e.name, value.trim(), rdma, no_p2p) {
                    out.push(EnvWarning { field: vpath.clone(), value: format!("{}={}", e.name, value), advice });
                }
                if !opaque {
                    for var in references(value, true) {
                        if !container_defined.contains(&var) {
                            out.push(undefined(&vpath, &var));
                        }
                    }
                }
            }
            if opaque {
                continue;
            }
            for (field, list) in [("command", c.command.as_deref()), ("args", c.args.as_deref())] {
                for (i, text) in list.unwrap_or_default().iter().enumerate() {
                    let assigned = shell_assignments(text);
                    for var in references(text, false) {
                        if !container_defined.contains(&var) && !assigned.contains(&var) {
                            out.push(undefined(&index(&key(&cpath, field), i), &var));
                        }
                    }
                }
            }
        }
    }
    out
}

fn undefined(field: &str, var: &str) -> EnvWarning {
    EnvWarning {
        field: field.to_string(),
        value: var.to_string(),
        advice: format!(
            "references ${var}, which is never defined in the pod (its env, the env ringleader injects, or the usual shell variables); define it or check the spelling — an unset variable expands to an empty string"
        ),
    }
}

fn value_advice(name: &str, value: &str, rdma: bool, no_p2p: bool) -> Option<String> {
    match (name, value) {
        ("NCCL_DEBUG", v) if v.eq_ignore_ascii_case("INFO") => Some(
            "NCCL_DEBUG=INFO keeps printing large amounts of NCCL logs after training starts and hides useful messages; set it only while debugging".to_string(),
        ),
        ("NCCL_P2P_DISABLE", "1") if !no_p2p => Some(
            "NCCL_P2P_DISABLE=1 forces GPU-to-GPU and GPU-to-NIC traffic through the CPU and PCIe; do not set it on GPUs that support P2P (only GPUs without P2P, such as RTX 4090, need it)".to_string(),
        ),
        ("CUDA_LAUNCH_BLOCKING", "1") => Some(
            "CUDA_LAUNCH_BLOCKING=1 synchronises CPU and GPU after every kernel and leaves the GPU waiting for launches; set it only while debugging".to_string(),
        ),
        ("PYTORCH_NO_CUDA_MEMORY_CACHING", "1") => Some(
            "PYTORCH_NO_CUDA_MEMORY_CACHING=1 turns off PyTorch's GPU memory pool, making every allocation a costly system call; set it only while debugging OOMs".to_string(),
        ),
        ("NCCL_IB_DISABLE", "1") if rdma => Some(
            "NCCL_IB_DISABLE=1 on an RDMA (IB/RoCE) network makes NCCL use the NICs as plain Ethernet: about 30 Gbps instead of 100 Gbps; leave it unset and let ringleader set it".to_string(),
        ),
        _ => None,
    }
}

/// Variables a string references: `$(VAR)` (Kubernetes expansion in env
/// values and command/args) always; `${VAR}` and `$VAR` (shell) in commands,
/// and in env values only when `k8s_only` is false. Skips `$$` escapes and
/// text inside a quoted heredoc (`<<'EOF'`), which the shell does not expand.
pub fn references(text: &str, k8s_only: bool) -> Vec<String> {
    let text = strip_quoted_heredocs(text);
    let b = text.as_bytes();
    let mut out = Vec::new();
    let ident = |s: usize| -> usize {
        let mut e = s;
        while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_') {
            e += 1;
        }
        e
    };
    let valid = |s: &str| s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'$' {
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'$') => i += 2,
            Some(b'(') => {
                let e = ident(i + 2);
                if b.get(e) == Some(&b')') && valid(&text[i + 2..e]) {
                    out.push(text[i + 2..e].to_string());
                }
                i = e.max(i + 2);
            }
            Some(b'{') if !k8s_only => {
                let e = ident(i + 2);
                if valid(&text[i + 2..e]) {
                    out.push(text[i + 2..e].to_string());
                }
                i = e.max(i + 2);
            }
            Some(_) if !k8s_only => {
                let e = ident(i + 1);
                if valid(&text[i + 1..e]) {
                    out.push(text[i + 1..e].to_string());
                }
                i = e.max(i + 1);
            }
            _ => i += 1,
        }
    }
    out.dedup();
    out
}

fn strip_quoted_heredocs(text: &str) -> String {
    let mut out = String::new();
    let mut end_marker: Option<String> = None;
    for line in text.lines() {
        if let Some(m) = &end_marker {
            if line.trim() == m {
                end_marker = None;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if let Some(pos) = line.find("<<") {
            let rest = line[pos + 2..].trim_start_matches('-').trim_start();
            if let Some(q) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') {
                let m: String = rest[1..].chars().take_while(|c| *c != q).collect();
                if !m.is_empty() {
                    end_marker = Some(m);
                }
            }
        }
    }
    out
}

/// Names a shell script assigns (`NAME=…`, `export NAME=…`, `for NAME in`, `read NAME`).
fn shell_assignments(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for word in text.split(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '|' || c == '(') {
        if let Some((name, _)) = word.split_once('=') {
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                out.insert(name.to_string());
            }
        }
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    for w in words.windows(2) {
        if w[0] == "for" || w[0] == "read" {
            out.insert(w[1].trim_end_matches(';').to_string());
        }
    }
    out
}
