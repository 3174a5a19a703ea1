//! MindCluster rules (`spec/ascend.md`, "Validation rules"): chip counts per
//! server type, vNPU, ring-controller, acjob containers and ports, labels.

use super::errors::Errors;
use crate::ascend::{self as keys, ServerType};
use crate::devices::{self, DeviceKind, Family};
use crate::error::FieldError;
use crate::kinds::Resource;
use crate::path;
use crate::roles::RoleSpec;
use std::collections::BTreeMap;

/// Label values with a closed set: (key, allowed values).
const LABEL_VALUES: &[(&str, &[&str])] = &[
    (keys::FAULT_SCHEDULING, keys::FAULT_SCHEDULING_VALUES),
    (keys::TOR_AFFINITY, keys::TOR_AFFINITY_VALUES),
    (keys::ELASTIC_SCHEDULING, &["on", "off"]),
    (keys::PODGROUP_SCHED_ENABLE, &["true", "false"]),
    (keys::NPU_310_STRATEGY, &["card", "chip"]),
    (keys::VNPU_LEVEL, &["low", "high"]),
    (keys::VNPU_DVPP, &["yes", "no", "null"]),
    (keys::RING_CONTROLLER, keys::RING_CONTROLLER_VALUES),
];

/// What one role asks of the NPU world, with the path of the resource entry.
struct NpuRole<'a> {
    role: &'a RoleSpec<'a>,
    resource: String,
    count: u32,
    kind: DeviceKind,
    field: String,
}

fn npu_roles<'a>(roles: &'a [RoleSpec<'a>]) -> Vec<NpuRole<'a>> {
    let mut out = Vec::new();
    for role in roles {
        let containers = role.template.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
        let cfield = path::key(&path::key(&path::key(&role.field, "template"), "spec"), "containers");
        for (i, c) in containers.iter().enumerate() {
            let limits = c.resources.as_ref().and_then(|r| r.limits.as_ref()).is_some_and(|l| !l.is_empty());
            for (name, q) in devices::container_requests(c) {
                if let Some((Family::Ascend, kind)) = devices::classify(name) {
                    let section = if limits { "limits" } else { "requests" };
                    out.push(NpuRole {
                        role,
                        resource: name.to_string(),
                        count: devices::whole_count(q).unwrap_or(0),
                        kind,
                        field: path::key(&path::key(&path::key(&path::index(&cfield, i), "resources"), section), name),
                    });
                }
            }
        }
    }
    out
}

/// All MindCluster rules for one job.
pub fn check(resource: &Resource, errs: &mut Errors) {
    let meta = resource.metadata();
    let empty = BTreeMap::new();
    let labels = meta.labels.as_ref().unwrap_or(&empty);
    let annotations = meta.annotations.as_ref().unwrap_or(&empty);
    for (key, allowed) in LABEL_VALUES {
        if let Some(v) = labels.get(*key) {
            if !allowed.contains(&v.as_str()) {
                errs.push(FieldError::new(
                    path::key("metadata.labels", key),
                    v,
                    format!("allowed: {}", allowed.join(", ")),
                ));
            }
        }
    }
    // The fault switch is read from a pod template too (seed 000's inference
    // Deployments put it there).
    for role in resource.roles() {
        let Some(v) = role.template.metadata.as_ref().and_then(|m| m.labels.as_ref()?.get(keys::FAULT_SCHEDULING))
        else {
            continue;
        };
        if !keys::FAULT_SCHEDULING_VALUES.contains(&v.as_str()) {
            errs.push(FieldError::new(
                path::key(
                    &path::key(&path::key(&path::key(&role.field, "template"), "metadata"), "labels"),
                    keys::FAULT_SCHEDULING,
                ),
                v,
                format!("allowed: {}", keys::FAULT_SCHEDULING_VALUES.join(", ")),
            ));
        }
    }
    if let Some(v) = annotations.get(keys::SCHEDULE_POLICY) {
        if !keys::SCHEDULE_POLICIES.contains(&v.as_str()) {
            errs.push(FieldError::new(
                path::key("metadata.annotations", keys::SCHEDULE_POLICY),
                v,
                format!("allowed: {}", keys::SCHEDULE_POLICIES.join(", ")),
            ));
        }
    }
    if let Some(v) = annotations.get(keys::RECOVER_POLICY_PATH) {
        if !matches!(v.as_str(), "pod" | "job") {
            errs.push(FieldError::new(
                path::key("metadata.annotations", keys::RECOVER_POLICY_PATH),
                v,
                "allowed: pod, job",
            ));
        }
    }
    if let Resource::Deployment(_) = resource {
        let template_label = resource
            .roles()
            .first()
            .and_then(|r| r.template.metadata.as_ref()?.labels.as_ref()?.get(keys::DISTRIBUTED).cloned());
        if labels.get(keys::DISTRIBUTED).map(String::as_str) == Some("true") {
            errs.push(FieldError::new(
                path::key("metadata.labels", keys::DISTRIBUTED),
                "true",
                "distributed: \"true\" is not allowed on a Deployment; use an AscendJob or vcjob",
            ));
        } else if template_label.as_deref() == Some("true") {
            errs.push(FieldError::new(
                path::key("spec.template.metadata.labels", keys::DISTRIBUTED),
                "true",
                "distributed: \"true\" is not allowed on a Deployment; use an AscendJob or vcjob",
            ));
        }
    }

    let roles = resource.roles();
    check_selectors(&roles, errs);
    check_mindie(resource, labels, &roles, errs);
    let npu = npu_roles(&roles);
    let total_pods = roles.iter().fold(0u32, |acc, r| acc.saturating_add(r.replicas.unwrap_or(1).max(0) as u32));
    if let Resource::VolcanoJob(_) = resource {
        if total_pods > keys::MAX_VCJOB_PODS {
            errs.push(FieldError::new(
                "spec.tasks",
                total_pods,
                format!("a vcjob may have at most {} pods", keys::MAX_VCJOB_PODS),
            ));
        }
    }
    if let Some(v) = annotations.get(keys::SCHEDULE_MIN_AVAILABLE) {
        match v.parse::<u32>() {
            Ok(n) if n >= 1 && n <= total_pods => {}
            _ => errs.push(FieldError::new(
                path::key("metadata.annotations", keys::SCHEDULE_MIN_AVAILABLE),
                v,
                format!("must be an integer from 1 to the total replicas ({total_pods})"),
            )),
        }
    }
    check_elastic(resource, labels, annotations, total_pods, errs);
    if let Resource::AscendJob(_) = resource {
        check_acjob(resource, labels, &roles, errs);
    }
    if npu.is_empty() {
        return;
    }

    let ring = labels.get(keys::RING_CONTROLLER).map(String::as_str);
    check_ring_controller(resource, ring, &roles, &npu, errs);

    // Whole cards and vNPU never mix in one job.
    let whole = npu.iter().find(|n| n.kind == DeviceKind::Whole);
    let vnpu = npu.iter().find(|n| n.kind != DeviceKind::Whole);
    if let (Some(w), Some(v)) = (whole, vnpu) {
        errs.push(FieldError::new(
            v.field.clone(),
            v.count,
            format!("whole-card ({}) and vNPU ({}) requests cannot be mixed in one job", w.resource, v.resource),
        ));
    }
    // Static and dynamic vNPUs never mix (seed 000: the device plugin's
    // presetVirtualDevice is one mode for the whole cluster); across jobs
    // only the scheduler knows, within one the request says it.
    let fixed = npu.iter().find(|n| matches!(n.kind, DeviceKind::StaticVnpu { .. }));
    let dynamic = npu.iter().find(|n| n.kind == DeviceKind::DynamicVnpu);
    if let (Some(f), Some(d)) = (fixed, dynamic) {
        errs.push(FieldError::new(
            d.field.clone(),
            d.count,
            format!(
                "static ({}) and dynamic ({}) vNPUs cannot be mixed: a cluster uses one vNPU mode",
                f.resource, d.resource
            ),
        ));
    }
    let npu_pods: u32 = {
        let mut seen = Vec::new();
        npu.iter()
            .filter(|n| {
                let new = !seen.contains(&n.role.field);
                seen.push(n.role.field.clone());
                new
            })
            .fold(0u32, |acc, n| acc.saturating_add(n.role.replicas.unwrap_or(1).max(0) as u32))
    };
    let distributed = npu_pods > 1;
    let acjob = matches!(resource, Resource::AscendJob(_));
    let accelerator = roles.iter().find_map(|r| selector(r, keys::ACCELERATOR_TYPE));
    let policy = annotations.get(keys::SCHEDULE_POLICY).map(String::as_str);
    let server = ServerType::of(accelerator.as_deref(), policy, ring);
    for n in &npu {
        let tmpl_annotations = n.role.template.metadata.as_ref().and_then(|m| m.annotations.as_ref());
        match &n.kind {
            DeviceKind::StaticVnpu { .. } => {
                if n.count != 1 {
                    errs.push(FieldError::new(n.field.clone(), n.count, "a static vNPU request must be exactly 1"));
                }
                if total_pods != 1 {
                    errs.push(FieldError::new(
                        n.role.replicas_field.clone(),
                        n.role.replicas.unwrap_or(1),
                        format!("static vNPU jobs run as a single pod on one node; the job has {total_pods} pods"),
                    ));
                }
            }
            DeviceKind::DynamicVnpu => {
                let chip = selector(n.role, super::vnpu::CHIP_NAME_SELECTOR);
                let label = |key: &str| {
                    let pod = n.role.template.metadata.as_ref().and_then(|m| m.labels.as_ref()?.get(key));
                    match (pod, labels.get(key)) {
                        (Some(v), _) => {
                            Some((path::key(&format!("{}.template.metadata.labels", n.role.field), key), v.as_str()))
                        }
                        (None, Some(v)) => Some((path::key("metadata.labels", key), v.as_str())),
                        (None, None) => None,
                    }
                };
                let req = super::vnpu::DynamicRequest {
                    field: &n.field,
                    cores: n.count,
                    chip_selector: chip.as_deref(),
                    family: ring,
                    dvpp: label(keys::VNPU_DVPP),
                    level: label(keys::VNPU_LEVEL),
                };
                super::vnpu::check(&req, errs);
            }
            DeviceKind::Whole if n.resource == keys::NPU => check_atlas350(n, policy, errs),
            DeviceKind::Whole => {
                if let Some(server) = server.filter(|_| n.resource == "huawei.com/Ascend910") {
                    if !server.allows(n.count, distributed, acjob) {
                        errs.push(FieldError::new(
                            n.field.clone(),
                            n.count,
                            format!("chips per pod allowed: {}", server.allowed_text(distributed, acjob)),
                        ));
                    }
                } else if n.count == 0 {
                    errs.push(FieldError::new(
                        n.field.clone(),
                        n.count,
                        "request at least 1 chip, or remove the resource",
                    ));
                }
            }
            DeviceKind::GpuShare { .. } | DeviceKind::GpuMem { .. } => {}
        }
        if n.kind != DeviceKind::Whole {
            for key in tmpl_annotations.into_iter().flat_map(|a| a.keys()) {
                if ["huawei.com/Ascend910", "huawei.com/Ascend310", "huawei.com/Ascend310P"].contains(&key.as_str()) {
                    errs.push(FieldError::new(
                        path::key(&format!("{}.template.metadata.annotations", n.role.field), key),
                        key,
                        "the huawei.com/AscendXXX pod annotation is for whole-card scheduling only, not with vNPU",
                    ));
                }
            }
        }
    }
    if let Some(v) = annotations.get(keys::SP_BLOCK) {
        let field = path::key("metadata.annotations", keys::SP_BLOCK);
        let per_pod = npu.iter().map(|n| n.count).max().unwrap_or(0);
        let total_chips = per_pod.saturating_mul(npu_pods);
        match v.parse::<u32>() {
            Ok(b) if b > 0 => {
                if npu_pods <= 1 && b != per_pod {
                    errs.push(FieldError::new(
                        field,
                        v,
                        format!("a single-node job's sp-block must equal its chips ({per_pod})"),
                    ));
                } else if npu_pods > 1 && (per_pod == 0 || b % per_pod != 0 || !total_chips.is_multiple_of(b)) {
                    errs.push(FieldError::new(
                        field,
                        v,
                        format!("sp-block must be a multiple of the chips per node ({per_pod}) and divide the job's total chips ({total_chips})"),
                    ));
                }
            }
            _ => errs.push(FieldError::new(field, v, "sp-block must be a positive integer (chips)")),
        }
    }
}

/// Atlas 350 (`huawei.com/npu`): MindCluster picks its handler only from
/// `huawei.com/schedule_policy` (without one the job has no NPU handler), and
/// each handler takes 1 to node-size cards per pod.
fn check_atlas350(n: &NpuRole<'_>, policy: Option<&str>, errs: &mut Errors) {
    let allowed = || keys::NPU_POLICIES.iter().map(|(p, _)| *p).collect::<Vec<_>>().join(", ");
    let field = path::key("metadata.annotations", keys::SCHEDULE_POLICY);
    match policy {
        None => errs.push(FieldError::missing(
            field,
            format!(
                "{} (Atlas 350) jobs need the annotation huawei.com/schedule_policy; allowed: {}",
                keys::NPU,
                allowed()
            ),
        )),
        Some(p) => match keys::NPU_POLICIES.iter().find(|(name, _)| *name == p) {
            None => errs.push(FieldError::new(
                field,
                p,
                format!("{} (Atlas 350) jobs allow the policies {}", keys::NPU, allowed()),
            )),
            Some((_, max)) if n.count == 0 || n.count > *max => errs.push(FieldError::new(
                n.field.clone(),
                n.count,
                format!("cards per pod allowed: 1 to {max} (Atlas 350, {p})"),
            )),
            Some(_) => {}
        },
    }
}

/// MindIE Service jobs (seed 001): `app` names the role and needs a `jobID`;
/// the controller and the coordinator are one pod each and use no NPU.
fn check_mindie(resource: &Resource, labels: &BTreeMap<String, String>, roles: &[RoleSpec<'_>], errs: &mut Errors) {
    let Some(app) = labels.get(keys::MINDIE_APP).filter(|a| a.starts_with("mindie-ms-")) else { return };
    let field = path::key("metadata.labels", keys::MINDIE_APP);
    if !keys::MINDIE_APPS.contains(&app.as_str()) {
        errs.push(FieldError::new(field, app, format!("allowed: {}", keys::MINDIE_APPS.join(", "))));
        return;
    }
    if !labels.contains_key(keys::MINDIE_JOB_ID) {
        errs.push(FieldError::missing(
            path::key("metadata.labels", keys::MINDIE_JOB_ID),
            "MindIE Service jobs need a jobID label shared by the controller, coordinator and servers",
        ));
    }
    if app == "mindie-ms-server" || !matches!(resource, Resource::AscendJob(_)) {
        return;
    }
    let total = roles.iter().fold(0i64, |acc, r| acc + i64::from(r.replicas.unwrap_or(1).max(0)));
    if total != 1 {
        let f = roles.first().map(|r| r.replicas_field.clone()).unwrap_or_else(|| "spec.replicaSpecs".into());
        errs.push(FieldError::new(f, total, format!("a MindIE Service {app} runs exactly 1 pod")));
    }
    for n in npu_roles(roles) {
        errs.push(FieldError::new(n.field, n.count, format!("a MindIE Service {app} uses no NPU")));
    }
}

fn selector(role: &RoleSpec<'_>, key: &str) -> Option<String> {
    role.template.spec.as_ref()?.node_selector.as_ref()?.get(key).cloned()
}

fn check_selectors(roles: &[RoleSpec<'_>], errs: &mut Errors) {
    let mut first_arch: Option<String> = None;
    for role in roles {
        let base = path::key(&path::key(&path::key(&role.field, "template"), "spec"), "nodeSelector");
        if let Some(arch) = selector(role, keys::HOST_ARCH) {
            let field = path::key(&base, keys::HOST_ARCH);
            if !keys::HOST_ARCH_VALUES.contains(&arch.as_str()) {
                errs.push(FieldError::new(field, &arch, format!("allowed: {}", keys::HOST_ARCH_VALUES.join(", "))));
            } else if let Some(first) = &first_arch {
                if *first != arch {
                    errs.push(FieldError::new(
                        field,
                        &arch,
                        format!("all pods of a distributed job must share one host-arch; another role selects {first}"),
                    ));
                }
            } else {
                first_arch = Some(arch);
            }
        }
        if let Some(at) = selector(role, keys::ACCELERATOR_TYPE) {
            if !keys::ACCELERATOR_TYPES.contains(&at.as_str()) {
                errs.push(FieldError::new(
                    path::key(&base, keys::ACCELERATOR_TYPE),
                    &at,
                    format!("allowed: {}", keys::ACCELERATOR_TYPES.join(", ")),
                ));
            }
        }
    }
}

fn check_ring_controller(
    resource: &Resource,
    ring: Option<&str>,
    roles: &[RoleSpec<'_>],
    npu: &[NpuRole<'_>],
    errs: &mut Errors,
) {
    let field = path::key("metadata.labels", keys::RING_CONTROLLER);
    let required = matches!(resource, Resource::AscendJob(_) | Resource::VolcanoJob(_));
    if ring.is_none() && required {
        errs.push(FieldError::missing(
            field.clone(),
            format!("jobs requesting NPUs need the label ring-controller.atlas on the job and its pod templates; allowed: {}", keys::RING_CONTROLLER_VALUES.join(", ")),
        ));
    }
    for role in roles {
        let tf = path::key(&format!("{}.template.metadata.labels", role.field), keys::RING_CONTROLLER);
        let tv =
            role.template.metadata.as_ref().and_then(|m| m.labels.as_ref()).and_then(|l| l.get(keys::RING_CONTROLLER));
        match (ring, tv) {
            (Some(job), Some(pod)) if job != pod => {
                errs.push(FieldError::new(tf, pod, format!("must match the job's ring-controller.atlas ({job})")))
            }
            (Some(_), None) if required && npu.iter().any(|n| n.role.field == role.field) => {
                errs.push(FieldError::missing(tf, "the pod template needs the job's ring-controller.atlas label too"))
            }
            (_, Some(pod)) if !keys::RING_CONTROLLER_VALUES.contains(&pod.as_str()) => {
                errs.push(FieldError::new(tf, pod, format!("allowed: {}", keys::RING_CONTROLLER_VALUES.join(", "))))
            }
            _ => {}
        }
    }
    // The chip family named by the label must be the one requested.
    if let Some(family) = ring.and_then(keys::ring_controller_resource) {
        for n in npu {
            let base = n.resource.as_str();
            // `ascend-npu` takes whole Atlas 350 cards only: the plugin maps
            // `npu-core` to a card handler for the 910/310 families alone.
            let matches = if family == keys::NPU {
                base == keys::NPU
            } else {
                base == keys::NPU_CORE
                    || base == family
                    || base.strip_prefix(family).is_some_and(|rest| rest.starts_with('-'))
            };
            if !matches {
                let hint = if base == keys::NPU {
                    format!("; {} (Atlas 350) jobs use ring-controller.atlas ascend-npu", keys::NPU)
                } else {
                    String::new()
                };
                errs.push(FieldError::new(
                    n.field.clone(),
                    n.count,
                    format!(
                        "ring-controller.atlas {} expects {family} resources, not {}{hint}",
                        ring.unwrap_or_default(),
                        n.resource
                    ),
                ));
            }
        }
    }
}

fn check_acjob(resource: &Resource, labels: &BTreeMap<String, String>, roles: &[RoleSpec<'_>], errs: &mut Errors) {
    let field = path::key("metadata.labels", keys::FRAMEWORK);
    let framework = labels.get(keys::FRAMEWORK).map(String::as_str);
    match framework {
        None => errs.push(FieldError::missing(
            field,
            format!("an AscendJob needs the label framework; allowed: {}", keys::FRAMEWORKS.join(", ")),
        )),
        Some(f) if !keys::FRAMEWORKS.contains(&f) => {
            errs.push(FieldError::new(field, f, format!("allowed: {}", keys::FRAMEWORKS.join(", "))))
        }
        Some(_) => {}
    }
    let coordinator = match framework {
        Some("pytorch") => Some("Master"),
        Some("mindspore") => Some("Scheduler"),
        Some("tensorflow") => Some("Chief"),
        _ => None,
    };
    let Resource::AscendJob(_) = resource else { return };
    for role in roles {
        if let Some(expected) = coordinator {
            if role.name != "Worker" && role.name != expected {
                errs.push(FieldError::new(
                    role.field.clone(),
                    role.name,
                    format!("a {} AscendJob has replica types {expected} and Worker", framework.unwrap_or_default()),
                ));
            }
        }
        let containers = role.template.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
        let cfield = path::key(&path::key(&path::key(&role.field, "template"), "spec"), "containers");
        match containers.iter().position(|c| c.name == keys::ACJOB_CONTAINER) {
            None if !containers.is_empty() => errs.push(FieldError::new(
                path::key(&path::index(&cfield, 0), "name"),
                &containers[0].name,
                "an AscendJob's main container must be named ascend",
            )),
            None => {}
            Some(i) => {
                let ports = containers[i].ports.as_deref().unwrap_or_default();
                // Ports may be omitted (the operator then uses ascendjob-port 2222), but
                // declared ones must carry the name the operator looks for.
                if !ports.is_empty() && !ports.iter().any(|p| p.name.as_deref() == Some(keys::ACJOB_PORT_NAME)) {
                    errs.push(FieldError::new(
                        path::key(&path::index(&path::key(&path::index(&cfield, i), "ports"), 0), "name"),
                        ports[0].name.clone().unwrap_or_default(),
                        "the ascend container's port must be named ascendjob-port (default port 2222)",
                    ));
                }
            }
        }
    }
}

fn check_elastic(
    resource: &Resource,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    total: u32,
    errs: &mut Errors,
) {
    if labels.get(keys::ELASTIC_SCHEDULING).map(String::as_str) != Some("on") {
        return;
    }
    if let Resource::VolcanoJob(o) = resource {
        let retry = o.spec.max_retry;
        if retry != Some(0) {
            errs.push(FieldError::new(
                "spec.maxRetry",
                retry.map(|r| r.to_string()).unwrap_or_else(|| "3 (default)".into()),
                "elastic training (elastic-scheduling: on) needs maxRetry: 0",
            ));
        }
    }
    if let Some(fs) = labels.get(keys::FAULT_SCHEDULING) {
        if fs != "grace" {
            errs.push(FieldError::new(
                path::key("metadata.labels", keys::FAULT_SCHEDULING),
                fs,
                "elastic training supports only fault-scheduling: grace",
            ));
        }
    }
    if let Some(v) = annotations.get(keys::MIN_REPLICAS) {
        match v.parse::<u32>() {
            Ok(n) if n >= 1 && n <= total => {}
            _ => errs.push(FieldError::new(
                path::key("metadata.annotations", keys::MIN_REPLICAS),
                v,
                format!("must be an integer from 1 to the job's replicas ({total})"),
            )),
        }
    }
}
