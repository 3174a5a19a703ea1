//! Node filters a pod must pass before devices are even considered:
//! nodeSelector, required node affinity, taints, and the chip family it asks for.

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, PodSpec, Taint, Toleration};
use ringleader_api::ascend as keys;
use ringleader_api::{DeviceKind, DeviceRequest, Job};
use ringleader_topology::{Profile, Vendor};
use std::collections::BTreeMap;

/// Why a node was filtered out, grouped across nodes in explanations.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Filtered {
    /// nodeSelector label missing or different.
    Selector,
    /// Required node affinity not satisfied.
    Affinity,
    /// The node has no device of the requested kind.
    NoResource(String),
    /// The node's `huawei.com/schedule_policy` differs from the job's.
    SchedulePolicy(String),
    /// The session keeps the node away from this job (reserved for another
    /// job, or not among a VIP job's nodes); the text says why.
    Gated(String),
    /// A `NoSchedule` or `NoExecute` taint the pod does not tolerate.
    Taint(String),
}

impl std::fmt::Display for Filtered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Filtered::Selector => f.write_str("node(s) didn't match node selector"),
            Filtered::Affinity => f.write_str("node(s) didn't match Pod's node affinity"),
            Filtered::NoResource(r) => write!(f, "Insufficient {r}"),
            Filtered::SchedulePolicy(p) => write!(f, "node(s) didn't match huawei.com/schedule_policy {p}"),
            Filtered::Gated(why) => f.write_str(why),
            Filtered::Taint(t) => write!(f, "node(s) had untolerated taint {{{t}}}"),
        }
    }
}

/// Whether the pod spec's nodeSelector and required node affinity accept these labels.
pub fn labels_match(spec: Option<&PodSpec>, labels: &BTreeMap<String, String>) -> Result<(), Filtered> {
    let Some(spec) = spec else { return Ok(()) };
    if let Some(sel) = &spec.node_selector {
        if sel.iter().any(|(k, v)| labels.get(k) != Some(v)) {
            return Err(Filtered::Selector);
        }
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| na.required_during_scheduling_ignored_during_execution.as_ref());
    if let Some(req) = required {
        // Terms are ORed; expressions inside a term are ANDed.
        let ok = req.node_selector_terms.iter().any(|term| {
            term.match_expressions.iter().flatten().all(|e| requirement_holds(e, labels))
                && (term.match_expressions.as_ref().is_some_and(|m| !m.is_empty())
                    || term.match_fields.as_ref().is_some_and(|m| !m.is_empty()))
        });
        if !ok {
            return Err(Filtered::Affinity);
        }
    }
    Ok(())
}

/// Whether the pod spec may be placed on `node`: its nodeSelector and
/// required node affinity accept the node's labels, and it tolerates the
/// node's `NoSchedule` and `NoExecute` taints (`PreferNoSchedule` ones do
/// not keep it away).
pub fn node_admits(spec: Option<&PodSpec>, node: &crate::cluster::Node) -> Result<(), Filtered> {
    labels_match(spec, &node.labels)?;
    let tolerations = spec.and_then(|s| s.tolerations.as_deref()).unwrap_or_default();
    match node.taints.iter().find(|t| t.effect != "PreferNoSchedule" && !tolerates(tolerations, t)) {
        Some(t) => Err(Filtered::Taint(match &t.value {
            Some(v) if !v.is_empty() => format!("{}: {}", t.key, v),
            _ => t.key.clone(),
        })),
        None => Ok(()),
    }
}

/// Whether the node has no `PreferNoSchedule` taint the pod does not
/// tolerate: such nodes are tried first (the taint is a preference, not a
/// filter).
pub fn welcome(spec: Option<&PodSpec>, node: &crate::cluster::Node) -> bool {
    let tolerations = spec.and_then(|s| s.tolerations.as_deref()).unwrap_or_default();
    node.taints.iter().all(|t| t.effect != "PreferNoSchedule" || tolerates(tolerations, t))
}

/// Whether one of `tolerations` tolerates `taint`, by Kubernetes' rules: an
/// empty key with `Exists` tolerates every taint; else the keys are equal,
/// the values too under `Equal` (the default operator), and the effects
/// are equal or the toleration names none.
pub fn tolerates(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates_one(t, taint))
}

/// [`tolerates`] for one toleration.
pub fn tolerates_one(t: &Toleration, taint: &Taint) -> bool {
    let effect_ok = t.effect.as_deref().is_none_or(|e| e.is_empty() || e == taint.effect);
    let key = t.key.as_deref().unwrap_or_default();
    let exists = t.operator.as_deref() == Some("Exists");
    if key.is_empty() {
        return exists && effect_ok;
    }
    let value_ok = exists || t.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default();
    key == taint.key && value_ok && effect_ok
}

fn requirement_holds(e: &NodeSelectorRequirement, labels: &BTreeMap<String, String>) -> bool {
    let value = labels.get(&e.key);
    let values = e.values.as_deref().unwrap_or_default();
    let as_int = |s: &str| s.parse::<i64>().ok();
    match e.operator.as_str() {
        "In" => value.is_some_and(|v| values.contains(v)),
        "NotIn" => value.is_none_or(|v| !values.contains(v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => {
            matches!((value.and_then(|v| as_int(v)), values.first().and_then(|v| as_int(v))), (Some(a), Some(b)) if a > b)
        }
        "Lt" => {
            matches!((value.and_then(|v| as_int(v)), values.first().and_then(|v| as_int(v))), (Some(a), Some(b)) if a < b)
        }
        _ => false,
    }
}

/// ACK's opt-in node label for topology-aware GPU scheduling: only nodes
/// labelled `ack.node.gpu.schedule=topology` publish `aliyun.com/gpu`.
pub const ACK_SCHEDULE_LABEL: &str = "ack.node.gpu.schedule";

/// Whether the node serves the device request at all (its profile's
/// resource; ACK's `aliyun.com/gpu` only where the node opted in).
pub fn serves(node: &crate::cluster::Node, req: &DeviceRequest) -> Result<(), Filtered> {
    let profile = &node.profile;
    let ok = match &req.kind {
        DeviceKind::Whole => match req.resource.as_str() {
            "nvidia.com/gpu" => profile.vendor == Vendor::Nvidia,
            "aliyun.com/gpu" => {
                profile.vendor == Vendor::Nvidia
                    && node.labels.get(ACK_SCHEDULE_LABEL).map(String::as_str) == Some("topology")
            }
            r => profile.resource_name == r,
        },
        DeviceKind::StaticVnpu { .. } => {
            profile.vnpu.is_some()
                && req.resource.strip_prefix(profile.resource_name.as_str()).is_some_and(|t| t.starts_with('-'))
        }
        DeviceKind::DynamicVnpu => profile.vendor == Vendor::Huawei && profile.vnpu.is_some(),
        DeviceKind::GpuShare { .. } | DeviceKind::GpuMem { .. } => profile.vendor == Vendor::Nvidia,
    };
    if ok {
        Ok(())
    } else {
        Err(Filtered::NoResource(req.resource.clone()))
    }
}

/// Whether the job's `huawei.com/schedule_policy` (if any) is this profile's.
pub fn policy_matches(profile: &Profile, job: &Job) -> Result<(), Filtered> {
    match (job.annotations.get(keys::SCHEDULE_POLICY), profile.schedule_policy) {
        (Some(want), Some(have)) if want == have.as_str() => Ok(()),
        (Some(want), _) => Err(Filtered::SchedulePolicy(want.clone())),
        (None, _) => Ok(()),
    }
}
