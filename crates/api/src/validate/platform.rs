//! Rules of the platform kinds (`platform.ringleader.io`) and of a Queue's
//! platform fields, from `spec/platform.md`: display names, lengths, enums,
//! framework roles, launchers, mounts, timeouts.

use super::errors::Errors;
use super::names;
use super::quantity::is_quantity;
use crate::error::FieldError;
use crate::kinds::platform::{self as p, InstanceSpec, Mount, TrainingJobSpec};
use crate::kinds::volcano::QueueSpec;
use crate::kinds::Resource;
use crate::path;
use std::collections::BTreeSet;

/// Longest user name a token is issued for (crates/auth/src/identity.rs).
const MAX_USER_CHARS: usize = 253;

/// What a display name may be.
pub const DISPLAY_NAME_RULE: &str =
    "a display name is 1 to 20 letters (Chinese included), digits and '_', not starting with '_'";

/// Programs a training command may start with; `bash`/`sh` need `-c` after them.
const LAUNCHERS: &[&str] =
    &["python", "python3", "torchrun", "mpirun", "mpiexec", "deepspeed", "msrun", "horovodrun", "accelerate"];
const LAUNCHER_RULE: &str = "the command must start with a launcher: /bin/bash -c, bash -c, /bin/sh -c, sh -c, python, python3, torchrun, mpirun, mpiexec, deepspeed, msrun, horovodrun or accelerate";

/// Most devices one instance may ask for (as the API server's admission).
const MAX_DEVICES: i64 = 1024;

/// Whether `s` is a display name: letters (any script), digits and `_`,
/// 1–20 characters, not starting with `_`.
pub fn is_display_name(s: &str) -> bool {
    let n = s.chars().count();
    (1..=p::MAX_SHORT_NAME).contains(&n)
        && !s.starts_with('_')
        && s.chars().all(|c| c.is_alphabetic() || c.is_ascii_digit() || c == '_')
}

/// The roles a framework takes: (name, required, at most one).
fn framework_roles(framework: &str) -> &'static [(&'static str, bool, bool)] {
    match framework {
        // A Master alone is single-machine training (seed 003), as Kubeflow
        // runs a PyTorchJob with no Worker replicas.
        "PyTorchDDP" | "PyTorchDeepSpeed" => &[("Master", false, true), ("Worker", false, false)],
        "TensorFlowPS" => {
            &[("Chief", false, true), ("PS", false, false), ("Worker", true, false), ("Evaluator", false, true)]
        }
        "MPI" => &[("Launcher", true, true), ("Worker", true, false)],
        "MindSpore" => &[("Scheduler", false, true), ("Worker", true, false)],
        _ => &[],
    }
}

/// Every rule of one platform object.
pub fn check(resource: &Resource, errs: &mut Errors) {
    match resource {
        Resource::ResourceGroup(o) => {
            let s = &o.spec;
            display_name(s.display_name.as_deref(), errs);
            description(s.description.as_deref(), "spec.description", errs);
            one_of(&s.accelerator, "spec.accelerator", p::ACCELERATORS, true, errs);
            if let Some(policies) = &s.policies {
                let mut seen = BTreeSet::new();
                for (i, policy) in policies.iter().enumerate() {
                    let field = path::index("spec.policies", i);
                    if !p::POLICIES.contains(&policy.as_str()) {
                        errs.push(FieldError::new(field, quoted(policy), allowed(p::POLICIES)));
                    } else if !seen.insert(policy) {
                        errs.push(FieldError::new(field, quoted(policy), "each policy may be listed once"));
                    }
                }
            }
            object_names(&s.nodes.names, "spec.nodes.names", errs);
            if let Some(sel) = &s.nodes.selector {
                for (k, v) in &sel.match_labels {
                    let field = path::key("spec.nodes.selector.matchLabels", k);
                    if !names::is_qualified_name(k) {
                        errs.push(FieldError::new(
                            field,
                            quoted(k),
                            format!("label key {}", names::QUALIFIED_NAME_RULE),
                        ));
                    } else if !names::is_label_value(v) {
                        errs.push(FieldError::new(field, quoted(v), names::LABEL_VALUE_RULE));
                    }
                }
            }
        }
        Resource::Workspace(o) => {
            let s = &o.spec;
            display_name(s.display_name.as_deref(), errs);
            description(s.description.as_deref(), "spec.description", errs);
            if let Some(rg) = &s.resource_group {
                object_name(rg, "spec.resourceGroup", errs);
            } else if !s.queues.is_empty() {
                errs.push(FieldError::missing(
                    "spec.resourceGroup",
                    "a workspace with queues names the resource group they come from",
                ));
            }
            object_names(&s.queues, "spec.queues", errs);
            let mut users = BTreeSet::new();
            for (i, m) in s.members.iter().enumerate() {
                let field = path::index("spec.members", i);
                if m.user.is_empty() {
                    errs.push(FieldError::missing(path::key(&field, "user"), "a member needs a user name"));
                } else if m.user.chars().count() > MAX_USER_CHARS
                    || m.user.chars().any(|c| c.is_control() || c.is_whitespace())
                {
                    // The rule `ringleader token create --user` applies: a member no
                    // token can be issued for could never sign in.
                    errs.push(FieldError::new(
                        path::key(&field, "user"),
                        quoted(&m.user),
                        format!(
                            "a user name is 1-{MAX_USER_CHARS} characters without whitespace or control characters"
                        ),
                    ));
                } else if !users.insert(m.user.as_str()) {
                    errs.push(FieldError::new(
                        path::key(&field, "user"),
                        quoted(&m.user),
                        "each user may be a member once",
                    ));
                }
                one_of(&m.role, &path::key(&field, "role"), p::MEMBER_ROLES, true, errs);
            }
        }
        Resource::TrainingJob(o) => {
            short_name(resource.name(), "a training job name", errs);
            training_job(&o.spec, errs);
        }
        Resource::Run(o) => {
            if o.spec.training_job.is_empty() {
                errs.push(FieldError::missing("spec.trainingJob", "a run names its TrainingJob"));
            } else {
                object_name(&o.spec.training_job, "spec.trainingJob", errs);
            }
        }
        Resource::Dataset(o) => {
            let s = &o.spec;
            short_name(resource.name(), "a dataset name", errs);
            description(s.description.as_deref(), "spec.description", errs);
            if let Some(v) = &s.visibility {
                one_of(v, "spec.visibility", p::VISIBILITIES, true, errs);
            }
            one_of(&s.data_type, "spec.type", p::DATASET_TYPES, true, errs);
            match (&s.source.path, &s.source.bucket) {
                (None, None) => errs.push(FieldError::missing(
                    "spec.source",
                    "a dataset needs source.path (a node directory) or source.bucket",
                )),
                (Some(dir), _) => absolute(dir, "spec.source.path", errs),
                _ => {}
            }
        }
        Resource::Image(o) => {
            let s = &o.spec;
            if s.image.is_empty() {
                errs.push(FieldError::missing("spec.image", "an image reference (repo/name:tag) is required"));
            } else if s.image.chars().any(char::is_whitespace) {
                errs.push(FieldError::new("spec.image", quoted(&s.image), "an image reference has no spaces"));
            }
            description(s.description.as_deref(), "spec.description", errs);
            let ns = o.metadata.namespace.as_deref().unwrap_or("default");
            if s.preset && ns != p::PRESET_NAMESPACE {
                errs.push(FieldError::new(
                    "spec.preset",
                    "true",
                    format!("preset images live in namespace {}; a workspace's images are custom", p::PRESET_NAMESPACE),
                ));
            }
        }
        Resource::StorageMount(o) => {
            let s = &o.spec;
            if s.node_directory.is_empty() {
                errs.push(FieldError::missing("spec.nodeDirectory", "a node directory starting with '/' is required"));
            } else {
                absolute(&s.node_directory, "spec.nodeDirectory", errs);
            }
            object_names(&s.nodes, "spec.nodes", errs);
        }
        Resource::Script(o) => {
            if o.spec.content.trim().is_empty() {
                errs.push(FieldError::missing("spec.content", "a script needs its shell text"));
            }
            description(o.spec.description.as_deref(), "spec.description", errs);
            if let Some(t) = o.spec.timeout_seconds.filter(|t| *t < p::MIN_SCRIPT_TIMEOUT) {
                errs.push(FieldError::new(
                    "spec.timeoutSeconds",
                    t,
                    format!("must be at least {} (the default)", p::MIN_SCRIPT_TIMEOUT),
                ));
            }
        }
        Resource::ScriptRun(o) => {
            if o.spec.script.is_empty() {
                errs.push(FieldError::missing("spec.script", "a script run names its Script"));
            } else {
                object_name(&o.spec.script, "spec.script", errs);
            }
            if o.spec.nodes.is_empty() {
                errs.push(FieldError::missing("spec.nodes", "a script run needs at least one node"));
            }
            object_names(&o.spec.nodes, "spec.nodes", errs);
        }
        Resource::AuditRecord(o) => {
            let s = &o.spec;
            if s.user.is_empty() {
                errs.push(FieldError::missing("spec.user", "an audit record names its user"));
            }
            one_of(&s.verb, "spec.verb", p::AUDIT_VERBS, true, errs);
            if s.resource.is_empty() {
                errs.push(FieldError::missing("spec.resource", "an audit record names the group/Kind"));
            }
            if s.name.is_empty() {
                errs.push(FieldError::missing("spec.name", "an audit record names the object"));
            }
            if crate::time::parse_rfc3339(&s.time).is_none() {
                errs.push(FieldError::new("spec.time", quoted(&s.time), "an RFC 3339 time is required"));
            }
        }
        Resource::PlatformNode(o) => {
            one_of(&o.spec.source, "spec.source", p::NODE_SOURCES, true, errs);
            if let Some(g) = &o.spec.resource_group {
                object_name(g, "spec.resourceGroup", errs);
            }
        }
        _ => {}
    }
}

/// A Queue's platform fields: resource group, workspace, quota.
pub fn check_queue(s: &QueueSpec, errs: &mut Errors) {
    if let Some(rg) = &s.resource_group {
        object_name(rg, "spec.resourceGroup", errs);
    }
    if let Some(ws) = &s.workspace {
        object_name(ws, "spec.workspace", errs);
    }
    if let Some(q) = &s.quota {
        instance(&q.instance_spec, "spec.quota.instanceSpec", errs);
        if q.instance_count < 1 {
            errs.push(FieldError::new("spec.quota.instanceCount", q.instance_count, "must be at least 1"));
        }
        if s.resource_group.is_none() {
            errs.push(FieldError::missing(
                "spec.resourceGroup",
                "a queue with a quota belongs to a resource group whose nodes provide it",
            ));
        }
    }
}

fn training_job(s: &TrainingJobSpec, errs: &mut Errors) {
    display_name(s.display_name.as_deref(), errs);
    description(s.description.as_deref(), "spec.description", errs);
    if s.queue.is_empty() {
        errs.push(FieldError::missing("spec.queue", "a training job names the queue its runs go to"));
    } else {
        object_name(&s.queue, "spec.queue", errs);
    }
    if s.image.is_empty() {
        errs.push(FieldError::missing("spec.image", "a training job needs a container image"));
    }
    let framework_ok = one_of(&s.framework, "spec.framework", p::FRAMEWORKS, true, errs);
    let command = s.command.trim();
    if command.is_empty() {
        errs.push(FieldError::missing("spec.command", LAUNCHER_RULE));
    } else if !starts_with_launcher(command) {
        errs.push(FieldError::new("spec.command", quoted(&shorten(command)), LAUNCHER_RULE));
    }
    let mut env_names = BTreeSet::new();
    for (i, e) in s.env.iter().enumerate() {
        let field = path::key(&path::index("spec.env", i), "name");
        if !is_env_name(&e.name) {
            errs.push(FieldError::new(
                field,
                quoted(&e.name),
                "an environment variable name is letters, digits, '_', '-' and '.', not starting with a digit",
            ));
        } else if !env_names.insert(e.name.as_str()) {
            errs.push(FieldError::new(field, quoted(&e.name), "each variable may be set once"));
        }
    }
    roles(s, framework_ok, errs);
    mounts(&s.mounts, errs);
    if let Some(v) = &s.visibility {
        one_of(v, "spec.visibility", p::VISIBILITIES, true, errs);
    }
    if let Some(tb) = &s.tensorboard_path {
        absolute(tb, "spec.tensorboardPath", errs);
    }
    if let Some(vip) = &s.vip {
        if vip.nodes.is_empty() {
            errs.push(FieldError::missing("spec.vip.nodes", "a VIP job names the machines it runs on"));
        }
        object_names(&vip.nodes, "spec.vip.nodes", errs);
        one_of(&vip.on_busy, "spec.vip.onBusy", p::ON_BUSY, true, errs);
    }
    ai_hub_settings(s, errs);
}

/// AI Hub's per-job settings (seed 003).
fn ai_hub_settings(s: &TrainingJobSpec, errs: &mut Errors) {
    if let Some(c) = &s.category {
        one_of(c, "spec.category", p::CATEGORIES, true, errs);
    }
    if let Some(project) = &s.project {
        let n = project.chars().count();
        if n == 0 || n > p::MAX_PROJECT_CHARS || project.chars().any(char::is_control) {
            errs.push(FieldError::new(
                "spec.project",
                quoted(&shorten(project)),
                format!("a project name is 1 to {} characters, without control characters", p::MAX_PROJECT_CHARS),
            ));
        }
    }
    if let Some(t) = s.estimated_run_time_seconds {
        if t == 0 || t > p::MAX_ESTIMATED_RUN_TIME_SECONDS {
            errs.push(FieldError::new(
                "spec.estimatedRunTimeSeconds",
                t.to_string(),
                format!("seconds from 1 to {} (a year)", p::MAX_ESTIMATED_RUN_TIME_SECONDS),
            ));
        }
    }
    if let Some(gb) = s.shared_memory_gb {
        if gb == 0 || gb > p::MAX_SHARED_MEMORY_GB {
            errs.push(FieldError::new(
                "spec.sharedMemoryGB",
                gb.to_string(),
                format!("GiB of /dev/shm per pod, from 1 to {}", p::MAX_SHARED_MEMORY_GB),
            ));
        }
    }
    if let Some(policy) = &s.image_pull_policy {
        one_of(policy, "spec.imagePullPolicy", p::PULL_POLICIES, true, errs);
    }
    if let Some(v) = &s.env_variant {
        one_of(v, "spec.envVariant", p::ENV_VARIANTS, true, errs);
    }
    if s.nccl_auto == Some(true) && s.ib_network.is_none() {
        errs.push(FieldError::missing(
            "spec.ibNetwork",
            "ncclAuto: true sets NCCL to the IB network or to Ethernet: say which with ibNetwork: true or false",
        ));
    }
}

fn roles(s: &TrainingJobSpec, framework_ok: bool, errs: &mut Errors) {
    if s.roles.is_empty() {
        errs.push(FieldError::missing("spec.roles", "a training job needs at least one role (e.g. Worker)"));
        return;
    }
    let allowed = framework_roles(&s.framework);
    let allowed_names: Vec<&str> = allowed.iter().map(|(n, _, _)| *n).collect();
    let mut seen = BTreeSet::new();
    for (i, role) in s.roles.iter().enumerate() {
        let field = path::index("spec.roles", i);
        let rule = allowed.iter().find(|(n, _, _)| *n == role.name);
        if framework_ok && rule.is_none() {
            errs.push(FieldError::new(
                path::key(&field, "name"),
                quoted(&role.name),
                format!("{} takes roles {}", s.framework, allowed_names.join(", ")),
            ));
        } else if !seen.insert(role.name.as_str()) {
            errs.push(FieldError::new(path::key(&field, "name"), quoted(&role.name), "each role may be listed once"));
        }
        if role.count < 1 {
            errs.push(FieldError::new(path::key(&field, "count"), role.count, "must be at least 1"));
        } else if rule.is_some_and(|(_, _, single)| *single) && role.count > 1 {
            errs.push(FieldError::new(
                path::key(&field, "count"),
                role.count,
                format!("{} takes exactly 1 pod", role.name),
            ));
        }
        if role.count > super::quantity::MAX_JOB_PODS {
            errs.push(FieldError::new(
                path::key(&field, "count"),
                role.count,
                format!("at most {} pods a job", super::quantity::MAX_JOB_PODS),
            ));
        }
        let rf = path::key(&field, "resources");
        instance(&role.resources, &rf, errs);
        if s.framework == "MindSpore" && role.resources.gpu.is_some_and(|g| g > 0) {
            errs.push(FieldError::new(
                path::key(&rf, "gpu"),
                role.resources.gpu.unwrap_or_default(),
                "MindSpore runs on Ascend: ask for npu",
            ));
        }
    }
    if framework_ok {
        for (name, required, _) in allowed {
            if *required && !s.roles.iter().any(|r| r.name == *name) {
                errs.push(FieldError::missing("spec.roles", format!("{} needs a {name} role", s.framework)));
            }
        }
    }
}

fn instance(spec: &InstanceSpec, field: &str, errs: &mut Errors) {
    for (name, v) in [("gpu", spec.gpu), ("npu", spec.npu)] {
        if let Some(n) = v.filter(|n| !(0..=MAX_DEVICES).contains(n)) {
            errs.push(FieldError::new(path::key(field, name), n, format!("allowed: 0 to {MAX_DEVICES}")));
        }
    }
    if spec.gpu.is_some_and(|g| g > 0) && spec.npu.is_some_and(|n| n > 0) {
        errs.push(FieldError::new(
            path::key(field, "npu"),
            spec.npu.unwrap_or_default(),
            "an instance takes gpu or npu, not both",
        ));
    }
    for (name, q) in [("cpu", &spec.cpu), ("memory", &spec.memory)] {
        if let Some(q) = q.as_ref().filter(|q| !is_quantity(&q.0)) {
            errs.push(FieldError::new(
                path::key(field, name),
                quoted(&q.0),
                "must be a quantity, e.g. \"8\", \"500m\" or \"64Gi\"",
            ));
        }
    }
}

fn mounts(mounts: &[Mount], errs: &mut Errors) {
    if mounts.len() > p::MAX_MOUNTS {
        errs.push(FieldError::new(
            "spec.mounts",
            format!("{} mounts", mounts.len()),
            format!("a training job has at most {} mounts", p::MAX_MOUNTS),
        ));
    }
    let mut paths = BTreeSet::new();
    for (i, m) in mounts.iter().enumerate() {
        let field = path::index("spec.mounts", i);
        match (&m.dataset, &m.storage) {
            (Some(d), None) => object_name(d, &path::key(&field, "dataset"), errs),
            (None, Some(st)) => {
                object_name(st, &path::key(&field, "storage"), errs);
                if m.path.is_none() {
                    errs.push(FieldError::missing(
                        path::key(&field, "path"),
                        "a storage mount needs the path in the pod",
                    ));
                }
            }
            _ => errs.push(FieldError::missing(field.clone(), "a mount names exactly one of dataset or storage")),
        }
        if let Some(at) = m.effective_path() {
            let pf = path::key(&field, "path");
            absolute(at, &pf, errs);
            if !paths.insert(at) {
                errs.push(FieldError::new(pf, quoted(at), "two mounts cannot share a path"));
            }
        }
    }
}

fn starts_with_launcher(command: &str) -> bool {
    let mut words = command.split_whitespace();
    let Some(first) = words.next() else { return false };
    let program = first.rsplit('/').next().unwrap_or(first);
    match program {
        "bash" | "sh" => words.next() == Some("-c"),
        other => LAUNCHERS.contains(&other),
    }
}

fn is_env_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn display_name(value: Option<&str>, errs: &mut Errors) {
    if let Some(v) = value.filter(|v| !is_display_name(v)) {
        errs.push(FieldError::new("spec.displayName", quoted(v), DISPLAY_NAME_RULE));
    }
}

fn description(value: Option<&str>, field: &str, errs: &mut Errors) {
    if let Some(v) = value {
        let n = v.chars().count();
        if n > p::MAX_DESCRIPTION {
            errs.push(FieldError::new(
                field,
                format!("{n} characters"),
                format!("a description has at most {} characters", p::MAX_DESCRIPTION),
            ));
        }
    }
}

/// Training job and dataset names: 1–20 characters (and a DNS label, which
/// the metadata rules check).
fn short_name(name: &str, what: &str, errs: &mut Errors) {
    if name.chars().count() > p::MAX_SHORT_NAME {
        errs.push(FieldError::new(
            "metadata.name",
            quoted(name),
            format!("{what} has 1 to {} characters", p::MAX_SHORT_NAME),
        ));
    }
}

/// Checks `value` is one of `allowed` (an empty value is missing when
/// `required`); answers whether it is.
fn one_of(value: &str, field: &str, allowed: &[&str], required: bool, errs: &mut Errors) -> bool {
    if value.is_empty() && required {
        errs.push(FieldError::missing(field, format!("required; {}", self::allowed(allowed))));
        return false;
    }
    if !allowed.contains(&value) {
        errs.push(FieldError::new(field, quoted(value), self::allowed(allowed)));
        return false;
    }
    true
}

fn allowed(values: &[&str]) -> String {
    format!("allowed: {}", values.join(", "))
}

/// A reference to another object by its name (a DNS-1123 label).
fn object_name(name: &str, field: &str, errs: &mut Errors) {
    if !names::is_dns1123_label(name) {
        errs.push(FieldError::new(field, quoted(name), names::LABEL_RULE));
    }
}

fn object_names(list: &[String], field: &str, errs: &mut Errors) {
    let mut seen = BTreeSet::new();
    for (i, name) in list.iter().enumerate() {
        let f = path::index(field, i);
        if !names::is_dns1123_subdomain(name) {
            errs.push(FieldError::new(f, quoted(name), names::SUBDOMAIN_RULE));
        } else if !seen.insert(name) {
            errs.push(FieldError::new(f, quoted(name), "listed twice"));
        }
    }
}

fn absolute(dir: &str, field: &str, errs: &mut Errors) {
    if !dir.starts_with('/') {
        errs.push(FieldError::new(field, quoted(dir), "must be an absolute path starting with '/'"));
    }
}

fn quoted(s: &str) -> String {
    format!("{s:?}")
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= 64 {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(64).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use crate::kinds::Resource;
    use serde_json::{json, Value};

    fn errors(v: Value) -> Vec<(String, String)> {
        match Resource::from_value(&v) {
            Ok(r) => crate::validate::validate(&r).into_iter().map(|e| (e.field, e.message)).collect(),
            Err(e) => vec![(e.field, e.message)],
        }
    }

    fn object(kind: &str, name: &str, spec: Value) -> Value {
        json!({"apiVersion": "platform.ringleader.io/v1alpha1", "kind": kind,
            "metadata": {"name": name, "namespace": "ws-a"}, "spec": spec})
    }

    fn job(spec: Value) -> Value {
        let mut base = json!({"queue": "q1", "image": "pytorch/pytorch:2.3", "framework": "PyTorchDDP",
            "command": "torchrun train.py", "roles": [{"name": "Worker", "count": 2, "resources": {"gpu": 8}}]});
        if let (Some(b), Some(extra)) = (base.as_object_mut(), spec.as_object()) {
            for (k, v) in extra {
                b.insert(k.clone(), v.clone());
            }
        }
        object("TrainingJob", "train-a", base)
    }

    /// Each case: an object, and the field its one error names (None: valid).
    fn cases() -> Vec<(&'static str, Value, Option<&'static str>)> {
        let rg = |spec: Value| object("ResourceGroup", "rg-a", spec);
        vec![
            (
                "rg ok",
                rg(json!({"displayName": "训练池_1", "accelerator": "Ascend", "policies": ["Gang", "DRF"]})),
                None,
            ),
            (
                "rg display name underscore",
                rg(json!({"displayName": "_pool", "accelerator": "NVIDIA"})),
                Some("spec.displayName"),
            ),
            (
                "rg display name long",
                rg(json!({"displayName": "a".repeat(21), "accelerator": "NVIDIA"})),
                Some("spec.displayName"),
            ),
            (
                "rg display name dash",
                rg(json!({"displayName": "a-b", "accelerator": "NVIDIA"})),
                Some("spec.displayName"),
            ),
            ("rg accelerator", rg(json!({"accelerator": "AMD"})), Some("spec.accelerator")),
            ("rg accelerator missing", rg(json!({})), Some("spec.accelerator")),
            ("rg policy", rg(json!({"accelerator": "NVIDIA", "policies": ["Spread"]})), Some("spec.policies[0]")),
            (
                "rg policy twice",
                rg(json!({"accelerator": "NVIDIA", "policies": ["Gang", "Gang"]})),
                Some("spec.policies[1]"),
            ),
            (
                "rg description",
                rg(json!({"accelerator": "NVIDIA", "description": "x".repeat(301)})),
                Some("spec.description"),
            ),
            ("rg description 300 Chinese", rg(json!({"accelerator": "NVIDIA", "description": "说".repeat(300)})), None),
            (
                "rg name not a label",
                object("ResourceGroup", "RG.a", json!({"accelerator": "NVIDIA"})),
                Some("metadata.name"),
            ),
            (
                "ws ok",
                object(
                    "Workspace",
                    "ws-a",
                    json!({"resourceGroup": "rg-a", "queues": ["q1"],
                "members": [{"user": "alice", "role": "admin"}, {"user": "bob", "role": "member"}]}),
                ),
                None,
            ),
            (
                "ws role",
                object("Workspace", "ws-a", json!({"members": [{"user": "alice", "role": "owner"}]})),
                Some("spec.members[0].role"),
            ),
            (
                "ws member name with a space",
                object("Workspace", "ws-a", json!({"members": [{"user": "Bad Name!", "role": "member"}]})),
                Some("spec.members[0].user"),
            ),
            (
                "ws member twice",
                object(
                    "Workspace",
                    "ws-a",
                    json!({"members": [{"user": "a", "role": "admin"}, {"user": "a", "role": "member"}]}),
                ),
                Some("spec.members[1].user"),
            ),
            (
                "ws queues without group",
                object("Workspace", "ws-a", json!({"queues": ["q1"]})),
                Some("spec.resourceGroup"),
            ),
            ("job ok", job(json!({})), None),
            (
                "job ai hub settings ok",
                job(json!({"category": "training", "project": "视觉", "estimatedRunTimeSeconds": 3600,
                           "sharedMemoryGB": 16, "imagePullPolicy": "Always", "ssh": true, "ibNetwork": true,
                           "ncclAuto": true, "envVariant": "aihub"})),
                None,
            ),
            ("job category", job(json!({"category": "fun"})), Some("spec.category")),
            ("job shm zero", job(json!({"sharedMemoryGB": 0})), Some("spec.sharedMemoryGB")),
            ("job shm huge", job(json!({"sharedMemoryGB": 4096})), Some("spec.sharedMemoryGB")),
            ("job pull policy", job(json!({"imagePullPolicy": "Sometimes"})), Some("spec.imagePullPolicy")),
            ("job env variant", job(json!({"envVariant": "horovod"})), Some("spec.envVariant")),
            ("job run time", job(json!({"estimatedRunTimeSeconds": 0})), Some("spec.estimatedRunTimeSeconds")),
            ("job project", job(json!({"project": "x".repeat(65)})), Some("spec.project")),
            ("job nccl without ib", job(json!({"ncclAuto": true})), Some("spec.ibNetwork")),
            (
                "job name 21",
                object("TrainingJob", &"a".repeat(21), job(json!({}))["spec"].clone()),
                Some("metadata.name"),
            ),
            ("job framework", job(json!({"framework": "Caffe"})), Some("spec.framework")),
            (
                "job role for framework",
                job(json!({"roles": [{"name": "Worker"}, {"name": "PS"}]})),
                Some("spec.roles[1].name"),
            ),
            ("job role count", job(json!({"roles": [{"name": "Worker", "count": 0}]})), Some("spec.roles[0].count")),
            (
                "job role count too large",
                job(json!({"roles": [{"name": "Worker", "count": 200_000}]})),
                Some("spec.roles[0].count"),
            ),
            (
                "job master count",
                job(json!({"roles": [{"name": "Master", "count": 2}, {"name": "Worker"}]})),
                Some("spec.roles[0].count"),
            ),
            (
                "job missing worker",
                job(json!({"framework": "MPI", "command": "mpirun -np 2 x", "roles": [{"name": "Launcher"}]})),
                Some("spec.roles"),
            ),
            (
                "job tf ok",
                job(json!({"framework": "TensorFlowPS", "command": "python train.py",
                "roles": [{"name": "PS"}, {"name": "Worker", "count": 2}, {"name": "Chief"}, {"name": "Evaluator"}]})),
                None,
            ),
            (
                "job mindspore gpu",
                job(json!({"framework": "MindSpore", "roles": [{"name": "Worker", "resources": {"gpu": 1}}]})),
                Some("spec.roles[0].resources.gpu"),
            ),
            ("job command", job(json!({"command": "./train.sh"})), Some("spec.command")),
            ("job bash without -c", job(json!({"command": "bash train.sh"})), Some("spec.command")),
            ("job bash -c ok", job(json!({"command": "/bin/bash -c 'python a.py'"})), None),
            ("job visibility", job(json!({"visibility": "public"})), Some("spec.visibility")),
            (
                "job memory",
                job(json!({"roles": [{"name": "Worker", "resources": {"memory": "lots"}}]})),
                Some("spec.roles[0].resources.memory"),
            ),
            (
                "job gpu negative",
                job(json!({"roles": [{"name": "Worker", "resources": {"gpu": -1}}]})),
                Some("spec.roles[0].resources.gpu"),
            ),
            (
                "job mounts 11",
                job(
                    json!({"mounts": (0..11).map(|i| json!({"storage": "s", "path": format!("/m{i}")})).collect::<Vec<_>>()}),
                ),
                Some("spec.mounts"),
            ),
            (
                "job mount both",
                job(json!({"mounts": [{"dataset": "d", "storage": "s", "path": "/x"}]})),
                Some("spec.mounts[0]"),
            ),
            ("job mount path", job(json!({"mounts": [{"dataset": "d", "path": "data"}]})), Some("spec.mounts[0].path")),
            (
                "job datasets share /data",
                job(json!({"mounts": [{"dataset": "d1"}, {"dataset": "d2"}]})),
                Some("spec.mounts[1].path"),
            ),
            ("job storage needs path", job(json!({"mounts": [{"storage": "s"}]})), Some("spec.mounts[0].path")),
            ("job vip onBusy", job(json!({"vip": {"nodes": ["n1"], "onBusy": "preempt"}})), Some("spec.vip.onBusy")),
            ("job vip ok", job(json!({"vip": {"nodes": ["n1"], "onBusy": "kill"}})), None),
            ("job env name", job(json!({"env": [{"name": "1X", "value": "v"}]})), Some("spec.env[0].name")),
            ("job display name Chinese", job(json!({"displayName": "训练任务一"})), None),
            ("run ok", object("Run", "train-a-r1", json!({"trainingJob": "train-a"})), None),
            ("run missing job", object("Run", "train-a-r1", json!({})), Some("spec.trainingJob")),
            (
                "dataset ok",
                object("Dataset", "imagenet", json!({"type": "image", "source": {"path": "/datasets/imagenet"}})),
                None,
            ),
            (
                "dataset name 21",
                object("Dataset", &"d".repeat(21), json!({"type": "image", "source": {"path": "/d"}})),
                Some("metadata.name"),
            ),
            (
                "dataset type",
                object("Dataset", "d", json!({"type": "video", "source": {"path": "/d"}})),
                Some("spec.type"),
            ),
            (
                "dataset relative",
                object("Dataset", "d", json!({"type": "text", "source": {"path": "d"}})),
                Some("spec.source.path"),
            ),
            ("dataset no source", object("Dataset", "d", json!({"type": "text"})), Some("spec.source")),
            ("image ok", object("Image", "torch", json!({"image": "reg/torch:2.3", "version": "2.3"})), None),
            (
                "image preset outside",
                object("Image", "torch", json!({"image": "reg/torch:2.3", "preset": true})),
                Some("spec.preset"),
            ),
            ("image missing", object("Image", "torch", json!({})), Some("spec.image")),
            ("storage ok", object("StorageMount", "pfs", json!({"nodeDirectory": "/mnt/pfs", "nodes": ["n1"]})), None),
            (
                "storage relative",
                object("StorageMount", "pfs", json!({"nodeDirectory": "mnt/pfs"})),
                Some("spec.nodeDirectory"),
            ),
            ("script ok", object("Script", "check", json!({"content": "nvidia-smi"})), None),
            (
                "script timeout",
                object("Script", "check", json!({"content": "x", "timeoutSeconds": 599})),
                Some("spec.timeoutSeconds"),
            ),
            ("script empty", object("Script", "check", json!({"content": " "})), Some("spec.content")),
            ("scriptrun nodes", object("ScriptRun", "check-1", json!({"script": "check"})), Some("spec.nodes")),
            (
                "audit verb",
                object(
                    "AuditRecord",
                    "a1",
                    json!({"user": "u", "verb": "get", "resource": "platform.ringleader.io/Run",
                "name": "x", "time": "2025-01-01T00:00:00Z"}),
                ),
                Some("spec.verb"),
            ),
            (
                "audit time",
                object(
                    "AuditRecord",
                    "a1",
                    json!({"user": "u", "verb": "create", "resource": "Run",
                "name": "x", "time": "yesterday"}),
                ),
                Some("spec.time"),
            ),
        ]
    }

    #[test]
    fn each_rule_names_its_field() {
        for (case, v, want) in cases() {
            let errs = errors(v);
            match want {
                None => assert!(errs.is_empty(), "{case}: {errs:?}"),
                Some(field) => {
                    assert_eq!(errs.len(), 1, "{case}: {errs:?}");
                    assert_eq!(errs[0].0, field, "{case}: {errs:?}");
                    assert!(!errs[0].1.is_empty(), "{case}");
                }
            }
        }
    }

    #[test]
    fn queue_quota_and_bindings() {
        let q = |spec: Value| {
            json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": "q1"}, "spec": spec})
        };
        let ok = q(json!({"resourceGroup": "rg-a", "workspace": "ws-a",
            "quota": {"instanceSpec": {"npu": 8, "cpu": "192", "memory": "1536Gi"}, "instanceCount": 2}}));
        assert!(errors(ok).is_empty());
        let bad = q(
            json!({"resourceGroup": "rg-a", "quota": {"instanceSpec": {"gpu": 8, "memory": "x"}, "instanceCount": 0}}),
        );
        let fields: Vec<String> = errors(bad).into_iter().map(|e| e.0).collect();
        assert_eq!(fields, vec!["spec.quota.instanceSpec.memory", "spec.quota.instanceCount"]);
        let orphan = q(json!({"quota": {"instanceSpec": {"gpu": 1}, "instanceCount": 1}}));
        assert_eq!(errors(orphan)[0].0, "spec.resourceGroup");
        let bad_ws = q(json!({"workspace": "WS A"}));
        assert_eq!(errors(bad_ws)[0].0, "spec.workspace");
    }

    #[test]
    fn display_names() {
        for ok in ["训练池", "pool_1", "A1", &"字".repeat(20)] {
            assert!(super::is_display_name(ok), "{ok}");
        }
        for bad in ["", "_a", "a b", "a-b", "a.b", &"字".repeat(21)] {
            assert!(!super::is_display_name(bad), "{bad}");
        }
    }
}
