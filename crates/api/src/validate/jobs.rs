//! Structural rules of each job kind: names, roles, replicas, restart
//! policies, gang sizes, run policies, Volcano policies, queues and pod groups.

use super::containers::check_template;
use super::errors::Errors;
use super::names;
use super::quantity::is_quantity;
use crate::error::FieldError;
use crate::kinds::kubeflow::RunPolicy;
use crate::kinds::volcano::{LifecyclePolicy, NetworkTopology, PartitionPolicy};
use crate::kinds::Resource;
use crate::path;
use crate::roles::SINGLETON_ROLES;

/// Restart policies of Kubeflow replica specs.
const REPLICA_RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never", "ExitCode"];
const VOLCANO_ACTIONS: &[&str] =
    &["RestartJob", "RestartTask", "RestartPod", "AbortJob", "CompleteJob", "TerminateJob"];
const VOLCANO_EVENTS: &[&str] = &["PodFailed", "PodEvicted", "PodPending", "TaskCompleted", "TaskFailed", "*"];
const VOLCANO_PLUGINS: &[&str] = &["env", "svc", "ssh", "pytorch", "tensorflow", "mpi", "hcclrank"];

/// Replica types each Kubeflow-style kind accepts.
fn replica_types(resource: &Resource) -> Option<&'static [&'static str]> {
    match resource {
        Resource::AscendJob(_) => Some(&["Master", "Scheduler", "Chief", "Worker"]),
        Resource::PyTorchJob(_) => Some(&["Master", "Worker"]),
        Resource::TfJob(_) => Some(&["Chief", "Master", "PS", "Worker", "Evaluator"]),
        Resource::MpiJob(_) => Some(&["Launcher", "Worker"]),
        _ => None,
    }
}

pub use super::quantity::MAX_JOB_PODS;

/// Metadata rules for every kind.
pub fn check_metadata(resource: &Resource, errs: &mut Errors) {
    let meta = resource.metadata();
    match meta.name.as_deref() {
        None | Some("") => errs.push(FieldError::missing("metadata.name", "a name is required")),
        // Job kinds name their pods after themselves, and platform names
        // become namespaces and job names: both are labels.
        Some(name) if (resource.is_job() || resource.is_platform()) && !names::is_dns1123_label(name) => {
            errs.push(FieldError::new("metadata.name", format!("{name:?}"), names::LABEL_RULE))
        }
        Some(name) if !resource.is_job() && !resource.is_platform() && !names::is_dns1123_subdomain(name) => {
            errs.push(FieldError::new("metadata.name", format!("{name:?}"), names::SUBDOMAIN_RULE))
        }
        Some(_) => {}
    }
    if let Some(ns) = meta.namespace.as_deref() {
        if !names::is_dns1123_label(ns) {
            errs.push(FieldError::new("metadata.namespace", format!("{ns:?}"), names::LABEL_RULE));
        }
    }
}

/// Role rules shared by every job kind.
pub fn check_roles(resource: &Resource, errs: &mut Errors) {
    let roles = resource.roles();
    if resource.is_job() && roles.is_empty() {
        let field = match resource {
            Resource::AscendJob(_) => "spec.replicaSpecs",
            Resource::PyTorchJob(_) => "spec.pytorchReplicaSpecs",
            Resource::TfJob(_) => "spec.tfReplicaSpecs",
            Resource::MpiJob(_) => "spec.mpiReplicaSpecs",
            Resource::VolcanoJob(_) => "spec.tasks",
            _ => "spec",
        };
        errs.push(FieldError::missing(field, "a job needs at least one role with a pod template"));
        return;
    }
    let total: i64 = roles.iter().map(|r| i64::from(r.replicas.unwrap_or(1).max(0))).sum();
    if total > MAX_JOB_PODS {
        errs.push(FieldError::new(
            roles.last().map(|r| r.replicas_field.clone()).unwrap_or_default(),
            total,
            format!("a job may create at most {MAX_JOB_PODS} pods in all"),
        ));
    }
    let mut task_names = std::collections::BTreeSet::new();
    for role in &roles {
        if let Some(allowed) = replica_types(resource) {
            if !allowed.contains(&role.name) {
                errs.push(FieldError::new(
                    role.field.clone(),
                    role.name,
                    format!("unknown replica type; allowed: {}", allowed.join(", ")),
                ));
            }
        }
        if let Resource::VolcanoJob(_) = resource {
            if !names::is_dns1123_label(role.name) {
                errs.push(FieldError::new(
                    path::key(&role.field, "name"),
                    format!("{:?}", role.name),
                    names::LABEL_RULE,
                ));
            } else if !task_names.insert(role.name) {
                errs.push(FieldError::new(
                    path::key(&role.field, "name"),
                    format!("{:?}", role.name),
                    "task names must be unique",
                ));
            }
        }
        let replicas_field = role.replicas_field.clone();
        let replicas = role.replicas.unwrap_or(1);
        if replicas < 0 {
            errs.push(FieldError::new(replicas_field.clone(), replicas, "replicas must be 0 or more"));
        }
        if SINGLETON_ROLES.contains(&role.name) && replicas > 1 {
            errs.push(FieldError::new(
                replicas_field.clone(),
                replicas,
                format!("{} replicas must be at most 1", role.name),
            ));
        }
        if let Some(min) = role.min_available {
            if min < 0 || min > replicas {
                errs.push(FieldError::new(
                    path::key(&role.field, "minAvailable"),
                    min,
                    format!("allowed: 0 to the task's replicas ({replicas})"),
                ));
            }
        }
        if let Some(rp) = role.restart_policy {
            if !REPLICA_RESTART_POLICIES.contains(&rp) {
                errs.push(FieldError::new(
                    path::key(&role.field, "restartPolicy"),
                    rp,
                    "allowed: Always, OnFailure, Never, ExitCode",
                ));
            }
        }
        if replicas > 0 && !resource.name().is_empty() {
            let last = format!("{}-{}", role.pod_prefix, replicas - 1);
            if last.len() > 63 {
                errs.push(FieldError::new(
                    "metadata.name",
                    resource.name(),
                    format!("pod name {last:?} would have {} characters; pod names must be at most 63, so shorten the job or role name", last.len()),
                ));
            }
        }
        let template_field = path::key(&role.field, "template");
        check_template(role.template, &template_field, errs);
        let pod_rp = role.template.spec.as_ref().and_then(|s| s.restart_policy.as_deref());
        match (resource, pod_rp) {
            (Resource::Deployment(_), Some(rp)) if rp != "Always" => errs.push(FieldError::new(
                path::key(&path::key(&template_field, "spec"), "restartPolicy"),
                rp,
                "a Deployment's pods must use restartPolicy Always",
            )),
            (Resource::BatchJob(_), rp) if !matches!(rp, Some("OnFailure") | Some("Never")) => {
                errs.push(FieldError::new(
                    path::key(&path::key(&template_field, "spec"), "restartPolicy"),
                    rp.unwrap_or(""),
                    "a batch/v1 Job's pods need restartPolicy OnFailure or Never",
                ))
            }
            _ => {}
        }
    }
}

/// Kind-specific spec rules.
pub fn check_spec(resource: &Resource, errs: &mut Errors) {
    let total: i64 = resource.roles().iter().map(|r| i64::from(r.replicas.unwrap_or(1).max(0))).sum();
    match resource {
        Resource::AscendJob(o) => {
            check_run_policy(&o.spec.run_policy, total, errs);
            if let Some(sp) = o.spec.success_policy.as_deref() {
                if !matches!(sp, "" | "AllWorkers") {
                    errs.push(FieldError::new(
                        "spec.successPolicy",
                        sp,
                        "allowed: empty (one pod succeeding succeeds the job) or AllWorkers",
                    ));
                }
            }
        }
        Resource::PyTorchJob(o) => {
            check_run_policy(&o.spec.run_policy, total, errs);
            if let Some(e) = &o.spec.elastic_policy {
                let min = e.min_replicas.unwrap_or(1);
                if min < 1 {
                    errs.push(FieldError::new("spec.elasticPolicy.minReplicas", min, "must be at least 1"));
                }
                if let Some(max) = e.max_replicas {
                    if max < min {
                        errs.push(FieldError::new(
                            "spec.elasticPolicy.maxReplicas",
                            max,
                            format!("must be at least minReplicas ({min})"),
                        ));
                    }
                }
                if let Some(b) = e.rdzv_backend.as_deref() {
                    if !matches!(b, "c10d" | "etcd" | "etcd-v2") {
                        errs.push(FieldError::new("spec.elasticPolicy.rdzvBackend", b, "allowed: c10d, etcd, etcd-v2"));
                    }
                }
                if let Some(p) = e.rdzv_port {
                    if !(1..=65535).contains(&p) {
                        errs.push(FieldError::new("spec.elasticPolicy.rdzvPort", p, "allowed: 1 to 65535"));
                    }
                }
            }
        }
        Resource::TfJob(o) => {
            check_run_policy(&o.spec.run_policy, total, errs);
            if let Some(sp) = o.spec.success_policy.as_deref() {
                if !matches!(sp, "" | "AllWorkers" | "ChiefWorker") {
                    errs.push(FieldError::new("spec.successPolicy", sp, "allowed: empty, ChiefWorker or AllWorkers"));
                }
            }
        }
        Resource::MpiJob(o) => {
            check_run_policy(&o.spec.run_policy, total, errs);
            if !o.spec.mpi_replica_specs.contains_key("Launcher") {
                errs.push(FieldError::missing("spec.mpiReplicaSpecs.Launcher", "an MPIJob needs exactly one Launcher"));
            }
            if let Some(s) = o.spec.slots_per_worker {
                if s < 1 {
                    errs.push(FieldError::new("spec.slotsPerWorker", s, "must be at least 1"));
                }
            }
            if let Some(m) = o.spec.mpi_implementation.as_deref() {
                if !matches!(m, "OpenMPI" | "Intel" | "MPICH") {
                    errs.push(FieldError::new("spec.mpiImplementation", m, "allowed: OpenMPI, Intel, MPICH"));
                }
            }
        }
        Resource::VolcanoJob(o) => {
            if let Some(m) = o.spec.min_available {
                if m < 0 || i64::from(m) > total {
                    errs.push(FieldError::new(
                        "spec.minAvailable",
                        m,
                        format!("allowed: 0 to the total replicas ({total})"),
                    ));
                }
            }
            if let Some(m) = o.spec.min_success {
                if m < 1 || i64::from(m) > total {
                    errs.push(FieldError::new(
                        "spec.minSuccess",
                        m,
                        format!("allowed: 1 to the total replicas ({total})"),
                    ));
                }
            }
            if let Some(r) = o.spec.max_retry {
                if r < 0 {
                    errs.push(FieldError::new("spec.maxRetry", r, "must be 0 or more"));
                }
            }
            for name in o.spec.plugins.keys() {
                if !VOLCANO_PLUGINS.contains(&name.as_str()) {
                    errs.push(FieldError::new(
                        path::key("spec.plugins", name),
                        name,
                        format!("unknown job plugin; allowed: {}", VOLCANO_PLUGINS.join(", ")),
                    ));
                }
            }
            check_policies(&o.spec.policies, "spec.policies", errs);
            for (i, t) in o.spec.tasks.iter().enumerate() {
                let tf = path::index("spec.tasks", i);
                check_policies(&t.policies, &path::key(&tf, "policies"), errs);
                if let Some(pp) = &t.partition_policy {
                    check_partitions(pp, t.replicas.unwrap_or(1), &path::key(&tf, "partitionPolicy"), errs);
                }
            }
            if let Some(nt) = &o.spec.network_topology {
                check_network_topology(nt, "spec.networkTopology", errs);
            }
        }
        Resource::Deployment(d) => {
            // replicas is checked with the roles.
            if d.spec.is_none() {
                errs.push(FieldError::missing("spec", "a Deployment needs a spec with a pod template"));
            }
        }
        Resource::BatchJob(j) => match &j.spec {
            None => errs.push(FieldError::missing("spec", "a Job needs a spec with a pod template")),
            Some(s) => {
                for (field, v) in [
                    ("spec.parallelism", s.parallelism),
                    ("spec.completions", s.completions),
                    ("spec.backoffLimit", s.backoff_limit),
                ] {
                    if let Some(v) = v.filter(|v| *v < 0) {
                        errs.push(FieldError::new(field, v, "must be 0 or more"));
                    }
                }
            }
        },
        Resource::Queue(q) => {
            if let Some(w) = q.spec.weight {
                if w < 1 {
                    errs.push(FieldError::new("spec.weight", w, "must be at least 1"));
                }
            }
            for (section, map) in [("spec.capability", &q.spec.capability), ("spec.deserved", &q.spec.deserved)] {
                check_quantities(section, map, errs);
            }
            if let Some(g) = &q.spec.guarantee {
                check_quantities("spec.guarantee.resource", &g.resource, errs);
            }
            super::platform::check_queue(&q.spec, errs);
        }
        Resource::PodGroup(p) => {
            if let Some(m) = p.spec.min_member {
                if m < 0 {
                    errs.push(FieldError::new("spec.minMember", m, "must be 0 or more"));
                }
            }
            for (task, m) in &p.spec.min_task_member {
                if *m < 0 {
                    errs.push(FieldError::new(path::key("spec.minTaskMember", task), m, "must be 0 or more"));
                }
            }
            if let Some(nt) = &p.spec.network_topology {
                check_network_topology(nt, "spec.networkTopology", errs);
            }
        }
        Resource::ConfigMap(_) | Resource::PriorityClass(_) => {}
        Resource::Secret(secret) => check_secret(secret, errs),
        Resource::ResourceGroup(_)
        | Resource::Workspace(_)
        | Resource::TrainingJob(_)
        | Resource::Run(_)
        | Resource::Dataset(_)
        | Resource::Image(_)
        | Resource::StorageMount(_)
        | Resource::Script(_)
        | Resource::ScriptRun(_)
        | Resource::AuditRecord(_)
        | Resource::PlatformNode(_) => super::platform::check(resource, errs),
        Resource::CheckRun(c) => super::check::check(resource.name(), &c.spec, errs),
        Resource::Workload(w) => check_workload(&w.spec, errs),
        Resource::Node(n) => {
            let sources = [n.spec.profile.is_some(), n.spec.topology_text.is_some(), n.spec.npu_smi_text.is_some()];
            if sources.iter().filter(|s| **s).count() != 1 {
                errs.push(FieldError::missing(
                    "spec.profile",
                    "a Node needs exactly one of spec.profile (a built-in profile name), spec.topologyText (nvidia-smi topo -m output) or spec.npuSmiText (npu-smi info output)",
                ));
            }
            for (i, t) in n.spec.taints.iter().enumerate() {
                if !matches!(t.effect.as_str(), "NoExecute" | "NoSchedule" | "PreferNoSchedule") {
                    errs.push(FieldError::new(
                        path::key(&path::index("spec.taints", i), "effect"),
                        format!("{:?}", t.effect),
                        "Unsupported value: supported values: \"NoExecute\", \"NoSchedule\", \"PreferNoSchedule\"",
                    ));
                }
                if !names::is_qualified_name(&t.key) {
                    errs.push(FieldError::new(
                        path::key(&path::index("spec.taints", i), "key"),
                        format!("{:?}", t.key),
                        names::QUALIFIED_NAME_RULE,
                    ));
                }
            }
        }
    }
}

fn check_workload(spec: &crate::kinds::cluster::WorkloadSpec, errs: &mut Errors) {
    if spec.priority.is_some() && spec.priority_class_name.is_some() {
        errs.push(FieldError::new(
            "spec.priority",
            spec.priority.unwrap_or_default(),
            "a Workload takes priority or priorityClassName, not both",
        ));
    }
    if spec.pods.is_empty() {
        errs.push(FieldError::missing("spec.pods", "a Workload needs at least one pod with its node"));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, pod) in spec.pods.iter().enumerate() {
        let field = path::index("spec.pods", i);
        if pod.name.is_empty() {
            errs.push(FieldError::missing(path::key(&field, "name"), "a running pod needs its name"));
        } else if !seen.insert(pod.name.as_str()) {
            errs.push(FieldError::new(path::key(&field, "name"), &pod.name, "pod names must be unique"));
        }
        if pod.node.as_deref().is_none_or(str::is_empty) {
            errs.push(FieldError::missing(path::key(&field, "node"), "a running pod needs the node it runs on"));
        }
    }
}

fn check_run_policy(rp: &RunPolicy, total: i64, errs: &mut Errors) {
    if let Some(c) = rp.clean_pod_policy.as_deref() {
        if !matches!(c, "All" | "Running" | "None") {
            errs.push(FieldError::new("spec.runPolicy.cleanPodPolicy", c, "allowed: All, Running, None"));
        }
    }
    for (field, v) in [
        ("spec.runPolicy.backoffLimit", rp.backoff_limit.map(i64::from)),
        ("spec.runPolicy.ttlSecondsAfterFinished", rp.ttl_seconds_after_finished.map(i64::from)),
        ("spec.runPolicy.activeDeadlineSeconds", rp.active_deadline_seconds),
    ] {
        if let Some(v) = v.filter(|v| *v < 0) {
            errs.push(FieldError::new(field, v, "must be 0 or more"));
        }
    }
    if let Some(m) = rp.scheduling_policy.as_ref().and_then(|s| s.min_available) {
        if m < 1 || i64::from(m) > total {
            errs.push(FieldError::new(
                "spec.runPolicy.schedulingPolicy.minAvailable",
                m,
                format!("allowed: 1 to the total replicas ({total})"),
            ));
        }
    }
}

fn check_policies(policies: &[LifecyclePolicy], field: &str, errs: &mut Errors) {
    for (i, p) in policies.iter().enumerate() {
        let pf = path::index(field, i);
        match p.action.as_deref() {
            Some(a) if VOLCANO_ACTIONS.contains(&a) => {}
            Some(a) => errs.push(FieldError::new(
                path::key(&pf, "action"),
                a,
                format!("allowed: {}", VOLCANO_ACTIONS.join(", ")),
            )),
            None => errs.push(FieldError::missing(
                path::key(&pf, "action"),
                format!("an action is required; allowed: {}", VOLCANO_ACTIONS.join(", ")),
            )),
        }
        let events: Vec<(String, &str)> = p
            .event
            .iter()
            .map(|e| (path::key(&pf, "event"), e.as_str()))
            .chain(p.events.iter().enumerate().map(|(j, e)| (path::index(&path::key(&pf, "events"), j), e.as_str())))
            .collect();
        for (ef, e) in &events {
            if !VOLCANO_EVENTS.contains(e) {
                errs.push(FieldError::new(ef.clone(), e, format!("allowed: {}", VOLCANO_EVENTS.join(", "))));
            }
        }
        match p.exit_code {
            Some(0) => errs.push(FieldError::new(
                path::key(&pf, "exitCode"),
                0,
                "exit code 0 is success and cannot trigger a policy",
            )),
            Some(c) if !events.is_empty() => errs.push(FieldError::new(
                path::key(&pf, "exitCode"),
                c,
                "a policy takes either event(s) or exitCode, not both",
            )),
            None if events.is_empty() => {
                errs.push(FieldError::missing(pf.clone(), "a policy needs event, events or exitCode"))
            }
            _ => {}
        }
    }
}

fn check_partitions(pp: &PartitionPolicy, replicas: i32, field: &str, errs: &mut Errors) {
    let total = pp.total_partitions.unwrap_or(0);
    let size = pp.partition_size.unwrap_or(0);
    if total < 1 {
        errs.push(FieldError::new(path::key(field, "totalPartitions"), total, "must be at least 1"));
    }
    if size < 1 {
        errs.push(FieldError::new(path::key(field, "partitionSize"), size, "must be at least 1"));
    }
    if total >= 1 && size >= 1 && i64::from(total) * i64::from(size) != i64::from(replicas) {
        errs.push(FieldError::new(
            path::key(field, "partitionSize"),
            size,
            format!("totalPartitions × partitionSize must equal the task's replicas ({total} × {size} ≠ {replicas})"),
        ));
    }
    if let Some(m) = pp.min_partitions {
        if m < 0 || m > total.max(0) {
            errs.push(FieldError::new(
                path::key(field, "minPartitions"),
                m,
                format!("allowed: 0 to totalPartitions ({total})"),
            ));
        }
    }
    if let Some(nt) = &pp.network_topology {
        check_network_topology(nt, &path::key(field, "networkTopology"), errs);
    }
}

fn check_network_topology(nt: &NetworkTopology, field: &str, errs: &mut Errors) {
    if let Some(m) = nt.mode.as_deref() {
        if !matches!(m, "hard" | "soft") {
            errs.push(FieldError::new(path::key(field, "mode"), m, "allowed: hard, soft"));
        }
    }
    if let Some(t) = nt.highest_tier_allowed {
        if t < 1 {
            errs.push(FieldError::new(path::key(field, "highestTierAllowed"), t, "must be at least 1"));
        }
    }
}

fn check_quantities(
    field: &str,
    map: &std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    errs: &mut Errors,
) {
    for (k, q) in map {
        if !is_quantity(&q.0) {
            errs.push(FieldError::new(path::key(field, k), &q.0, "not a Kubernetes quantity (e.g. 8, 500m, 64Gi)"));
        }
    }
}

/// What kube-apiserver checks of a Secret's type and the keys it needs.
fn check_secret(secret: &k8s_openapi::api::core::v1::Secret, errs: &mut Vec<FieldError>) {
    let kind = secret.type_.as_deref().unwrap_or("Opaque");
    let data = secret.data.as_ref();
    let string_data = secret.string_data.as_ref();
    let key = |k: &str| -> Option<Vec<u8>> {
        data.and_then(|d| d.get(k))
            .map(|b| b.0.clone())
            .or_else(|| string_data.and_then(|d| d.get(k)).map(|s| s.as_bytes().to_vec()))
    };
    let needs_json = match kind {
        "kubernetes.io/dockerconfigjson" => Some(".dockerconfigjson"),
        "kubernetes.io/dockercfg" => Some(".dockercfg"),
        _ => None,
    };
    if let Some(k) = needs_json {
        match key(k) {
            None => errs.push(FieldError::missing(path::key("data", k), format!("a Secret of type {kind} needs it"))),
            Some(bytes) => {
                if let Err(e) = serde_json::from_slice::<serde_json::Value>(&bytes) {
                    errs.push(FieldError::new(
                        path::key("data", k),
                        "<secret contents redacted>",
                        format!("must be JSON: {e}"),
                    ));
                }
            }
        }
    }
    for k in data.into_iter().flat_map(|d| d.keys()).chain(string_data.into_iter().flat_map(|d| d.keys())) {
        let ok = !k.is_empty() && k.len() <= 253 && k.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b));
        if !ok {
            errs.push(FieldError::new(
                path::key("data", k),
                k,
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            ));
        }
    }
}
