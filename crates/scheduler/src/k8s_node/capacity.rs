//! A profile from what a v1 Node says of its accelerators without a tool's
//! output: the device count of `status.capacity` and the model labels the
//! vendors' node labellers write. The closest built-in profile of that count
//! and model is chosen; failing that, a generic profile of that many devices
//! whose links are all the slowest level (PCIe across sockets), so the
//! allocators never assume a topology nobody published.

use super::invalid::Invalid;
use ringleader_topology::{builtin, builtins, AllocatorKind, Device, Link, LinkKind, LinkSpeeds, Profile, Vendor};
use std::collections::BTreeMap;

/// Ascend extended resources, by the chip family their device names start with.
pub(crate) const ASCEND_RESOURCES: [(&str, &str); 4] = [
    ("huawei.com/Ascend910", "Ascend910"),
    ("huawei.com/Ascend310P", "Ascend310P"),
    ("huawei.com/Ascend310", "Ascend310"),
    ("huawei.com/npu", "npu"),
];
/// NVIDIA's device plugin resource.
pub(crate) const NVIDIA_GPU: &str = "nvidia.com/gpu";
/// ACK's resource on nodes labelled `ack.node.gpu.schedule=topology`.
pub(crate) const ALIYUN_GPU: &str = "aliyun.com/gpu";

/// MindCluster's node labels, most specific first.
pub(crate) const ACCELERATOR_TYPE_LABEL: &str = "accelerator-type";
pub(crate) const NPU_CHIP_NAME_LABEL: &str = "node.kubernetes.io/npu.chip.name";
/// Model labels of NVIDIA's GPU Feature Discovery and of ACK.
pub(crate) const GPU_MODEL_LABELS: [&str; 2] = ["nvidia.com/gpu.product", "aliyun.accelerator/nvidia_name"];

/// A profile and one line saying how it was chosen.
pub(crate) struct Chosen {
    pub profile: Profile,
    pub choice: String,
}

/// The whole-device count of `status.capacity[resource]`: `None` when absent
/// or zero (ACK zeroes the resources of the modes a node is not in).
pub(crate) fn count(capacity: &BTreeMap<String, String>, resource: &str) -> Result<Option<u32>, Invalid> {
    let Some(q) = capacity.get(resource) else { return Ok(None) };
    let n: u32 = q.trim().parse().map_err(|_| {
        Invalid::node(
            format!("status.capacity[{resource:?}]"),
            q,
            "must be a whole number of devices (no suffix or fraction)",
        )
    })?;
    check_most(n, &format!("status.capacity[{resource:?}]"), q)?;
    Ok((n > 0).then_some(n))
}

/// A device count a node may have: a profile holds at most
/// [`ringleader_topology::devset::MAX_DEVICES`] devices (a larger count from a
/// hostile or broken Node would size link matrices by its square).
pub(crate) fn check_most(n: u32, field: &str, value: &str) -> Result<(), Invalid> {
    let most = ringleader_topology::devset::MAX_DEVICES;
    if n as usize > most {
        return Err(Invalid::node(field.to_string(), value, format!("at most {most} devices per node")));
    }
    Ok(())
}

/// The one accelerator resource of the node's capacity, if any.
pub(crate) fn accelerator(capacity: &BTreeMap<String, String>) -> Result<Option<(&'static str, u32)>, Invalid> {
    let mut found = Vec::new();
    for r in ASCEND_RESOURCES.iter().map(|(r, _)| *r).chain([NVIDIA_GPU, ALIYUN_GPU]) {
        if let Some(n) = count(capacity, r)? {
            found.push((r, n));
        }
    }
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        many => Err(Invalid::node(
            "status.capacity",
            many.iter().map(|(r, n)| format!("{r}={n}")).collect::<Vec<_>>().join(", "),
            "more than one accelerator resource on one node; ringleader models one device kind per node",
        )),
    }
}

/// `910B3` → `910B`, `310P3` → `310P`, `Ascend 910 (A3…)` → `910`, `950PR` → `950`.
fn ascend_family(chip: &str) -> String {
    let s: String = chip.trim().trim_start_matches("Ascend").trim().to_ascii_uppercase();
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    match s[digits.len()..].chars().next() {
        Some('B') if digits == "910" => format!("{digits}B"),
        Some('P') if digits == "310" => format!("{digits}P"),
        _ => digits,
    }
}

/// The Ascend profile for `count` chips of `resource`: by `accelerator-type`,
/// else by `node.kubernetes.io/npu.chip.name`, else the first built-in of that
/// resource and count, else a generic one.
pub(crate) fn ascend(resource: &str, count: u32, labels: &BTreeMap<String, String>) -> Result<Chosen, Invalid> {
    let n = count as usize;
    let of_resource: Vec<&Profile> =
        builtins().iter().filter(|p| p.vendor == Vendor::Huawei && p.resource_name == resource).collect();
    if let Some(t) = labels.get(ACCELERATOR_TYPE_LABEL) {
        if let Some(p) = of_resource.iter().find(|p| p.accelerator_type.as_deref() == Some(t.as_str())) {
            if p.len() != n {
                return Err(Invalid::node(
                    format!("metadata.labels[{ACCELERATOR_TYPE_LABEL:?}]"),
                    t,
                    format!(
                        "names built-in profile {} of {} chips, but status.capacity[{resource:?}] is {count}",
                        p.name,
                        p.len()
                    ),
                ));
            }
            return Ok(Chosen {
                profile: (*p).clone(),
                choice: format!("built-in {} (label {ACCELERATOR_TYPE_LABEL}={t})", p.name),
            });
        }
    }
    let sized: Vec<&&Profile> = of_resource.iter().filter(|p| p.len() == n).collect();
    if let Some(chip) = labels.get(NPU_CHIP_NAME_LABEL) {
        let fam = ascend_family(chip);
        if let Some(p) = sized.iter().find(|p| ascend_family(&p.chip) == fam) {
            return Ok(Chosen {
                profile: (**p).clone(),
                choice: format!("built-in {} ({count} × {resource}, label {NPU_CHIP_NAME_LABEL}={chip})", p.name),
            });
        }
    }
    if let Some(p) = sized.first() {
        return Ok(Chosen {
            profile: (**p).clone(),
            choice: format!("built-in {} (first built-in with {count} × {resource}; no model label matched)", p.name),
        });
    }
    let family = ASCEND_RESOURCES.iter().find(|(r, _)| *r == resource).map_or("npu", |(_, f)| *f);
    let chip = labels.get(NPU_CHIP_NAME_LABEL).map_or_else(|| family.to_string(), |c| format!("Ascend {c}"));
    let profile = generic(Vendor::Huawei, resource, &chip, &format!("{family}-"), n)?;
    Ok(Chosen { choice: format!("generic: {count} × {resource}, no built-in of that count"), profile })
}

/// Built-in GPU profiles and the words (upper case) a model label must contain to be that machine.
const GPU_MODELS: [(&str, &[&str]); 7] = [
    ("dgx-1-v100", &["V100", "SXM2"]),
    ("hgx-a100-8", &["A100", "SXM"]),
    ("a800-8", &["A800", "SXM"]),
    ("hgx-h100-8", &["H100", "SXM"]),
    ("hgx-h100-8", &["H100", "HBM3"]),
    ("pcie-4090-8", &["4090"]),
    ("pcie-l40s-8", &["L40S"]),
];

/// The GPU model label of the node, as (label, value).
pub(crate) fn gpu_model(labels: &BTreeMap<String, String>) -> Option<(&'static str, &str)> {
    GPU_MODEL_LABELS.iter().find_map(|l| labels.get(*l).map(|v| (*l, v.as_str())))
}

/// The GPU profile for `count` GPUs of `resource`: the built-in whose model
/// words the model label contains and whose GPU count matches, else a generic
/// one named after the model. The profile's resource becomes `resource`
/// (`aliyun.com/gpu` on ACK topology nodes) so pods requesting it match.
pub(crate) fn gpu(resource: &str, count: u32, labels: &BTreeMap<String, String>) -> Result<Chosen, Invalid> {
    let model = gpu_model(labels);
    if let Some((label, value)) = model {
        let upper = value.to_ascii_uppercase();
        let hit = GPU_MODELS
            .iter()
            .filter(|(_, words)| words.iter().all(|w| upper.contains(w)))
            .filter_map(|(name, _)| builtin(name))
            .find(|p| p.len() == count as usize);
        if let Some(p) = hit {
            let mut profile = p.clone();
            profile.resource_name = resource.to_string();
            return Ok(Chosen {
                choice: format!("built-in {} ({count} × {resource}, label {label}={value})", p.name),
                profile,
            });
        }
    }
    let chip = model.map_or("NVIDIA GPU", |(_, v)| v);
    let profile = generic(Vendor::Nvidia, resource, chip, "GPU", count as usize)?;
    let why = match model {
        Some((label, value)) => format!("no built-in of {count} GPUs matches label {label}={value}"),
        None => format!("no model label ({})", GPU_MODEL_LABELS.join(", ")),
    };
    Ok(Chosen { choice: format!("generic: {count} × {resource}, {why}"), profile })
}

/// A GPU profile from a full link matrix (ACK's `GPU_TOPOLOGY` annotation).
pub(crate) fn gpu_from_links(resource: &str, chip: &str, kinds: &[Vec<LinkKind>]) -> Result<Profile, String> {
    let n = kinds.len();
    let speeds = LinkSpeeds::default();
    let profile = Profile {
        name: format!("gpu-{n}-from-annotation"),
        description: format!("{n} GPUs, links from ACK's GPU_TOPOLOGY node annotation"),
        vendor: Vendor::Nvidia,
        chip: chip.to_string(),
        resource_name: resource.to_string(),
        schedule_policy: None,
        accelerator_type: None,
        devices: (0..n).map(|i| Device { id: i as u32, name: format!("GPU{i}"), numa: None, bus_id: None }).collect(),
        group_kind: ringleader_topology::profile::GroupKind::None,
        groups: Vec::new(),
        links: kinds
            .iter()
            .map(|row| row.iter().map(|&kind| Link { kind, mbps: speeds.bandwidth(kind) }).collect())
            .collect(),
        nics: Vec::new(),
        vnpu: None,
        allocator: AllocatorKind::Gpu,
    };
    profile.validate().map_err(|e| e.to_string())?;
    Ok(profile)
}

/// `n` devices, every pair linked at the SYS level, no groups.
fn generic(vendor: Vendor, resource: &str, chip: &str, prefix: &str, n: usize) -> Result<Profile, Invalid> {
    let speeds = LinkSpeeds::default();
    let sys = Link { kind: LinkKind::Sys, mbps: speeds.bandwidth(LinkKind::Sys) };
    let me = Link { kind: LinkKind::SelfLink, mbps: 0 };
    let profile = Profile {
        name: format!("generic-{}-{n}", resource.rsplit('/').next().unwrap_or(resource).to_ascii_lowercase()),
        description: format!("{n} × {chip} with no published topology: every pair treated as SYS"),
        vendor,
        chip: chip.to_string(),
        resource_name: resource.to_string(),
        schedule_policy: None,
        accelerator_type: None,
        devices: (0..n)
            .map(|i| Device { id: i as u32, name: format!("{prefix}{i}"), numa: None, bus_id: None })
            .collect(),
        group_kind: ringleader_topology::profile::GroupKind::None,
        groups: Vec::new(),
        links: (0..n).map(|i| (0..n).map(|j| if i == j { me } else { sys }).collect()).collect(),
        nics: Vec::new(),
        vnpu: None,
        allocator: if vendor == Vendor::Nvidia { AllocatorKind::Gpu } else { AllocatorKind::AscendMesh },
    };
    profile.validate().map_err(|e| {
        Invalid::node(format!("status.capacity[{resource:?}]"), n, format!("cannot model this many devices: {e}"))
    })?;
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families() {
        assert_eq!(ascend_family("910B3"), "910B");
        assert_eq!(ascend_family("Ascend 910B3"), "910B");
        assert_eq!(ascend_family("Ascend 910"), "910");
        assert_eq!(ascend_family("Ascend 910 (A3, 2 dies per card)"), "910");
        assert_eq!(ascend_family("310P3"), "310P");
        assert_eq!(ascend_family("Ascend 310"), "310");
        assert_eq!(ascend_family("950PR"), "950");
    }

    #[test]
    fn generic_profile_is_valid_and_flat() {
        let p = generic(Vendor::Nvidia, NVIDIA_GPU, "NVIDIA-A100-PCIE-40GB", "GPU", 4).unwrap();
        assert_eq!(p.len(), 4);
        assert_eq!(p.links[0][3].kind, LinkKind::Sys);
        assert_eq!(p.allocator, AllocatorKind::Gpu);
        assert!(generic(Vendor::Huawei, "huawei.com/Ascend910", "x", "Ascend910-", 0).is_err());
    }
}
