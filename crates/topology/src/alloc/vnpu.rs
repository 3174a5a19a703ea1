//! vNPU allocation: which template a request gets (the 310P dynamic table of
//! spec/ascend.md with `vnpu-dvpp` / `vnpu-level` and downgrade; on 910 and
//! 910B the chip's own templates, as ascend-for-volcano picks them), which
//! `npu-core` counts a chip accepts, and which chip a vNPU goes on (the least
//! free chip that fits).

use super::{
    Allocation, DeviceState, DeviceUse, NoFit, NodeScore, VnpuDvpp, VnpuLevel, VnpuPlacement, VnpuRequest, VnpuScore,
};
use crate::devset::DeviceSet;
use crate::profile::{DvppShare, Profile, VnpuFamily, VnpuSpec, VnpuTemplate};

/// Templates to try for a dynamic request, first choice first; every entry
/// after the first is a downgrade. Empty when no template matches.
pub fn dynamic_templates(spec: &VnpuSpec, cores: u32, dvpp: VnpuDvpp, level: VnpuLevel) -> Vec<&VnpuTemplate> {
    let names: Vec<&str> = if spec.family == VnpuFamily::Ascend310P {
        match (cores, dvpp, level) {
            (1, _, _) => vec!["vir01"],
            (2, VnpuDvpp::Null, VnpuLevel::Low) => vec!["vir02_1c"],
            (2, VnpuDvpp::Null, VnpuLevel::High) => vec!["vir02", "vir02_1c"],
            (4, VnpuDvpp::Yes, _) => vec!["vir04_4c_dvpp"],
            (4, VnpuDvpp::No, _) => vec!["vir04_3c_ndvpp"],
            (4, VnpuDvpp::Null, VnpuLevel::Low) => vec!["vir04_3c"],
            (4, VnpuDvpp::Null, VnpuLevel::High) => vec!["vir04", "vir04_3c"],
            _ => Vec::new(),
        }
    } else {
        // 910 / 910B: the templates with exactly this many cores whose DVPP use
        // matches, lowest spec first; `high` starts from the top and downgrades.
        let want = match dvpp {
            VnpuDvpp::Yes => DvppShare::All,
            VnpuDvpp::No => DvppShare::NoDvpp,
            VnpuDvpp::Null => DvppShare::Proportional,
        };
        let mut names: Vec<&str> =
            spec.templates.iter().filter(|t| t.aicore == cores && t.dvpp == want).map(|t| t.name.as_str()).collect();
        match level {
            VnpuLevel::Low => names.truncate(1),
            VnpuLevel::High => names.reverse(),
        }
        names
    };
    names.into_iter().filter_map(|n| spec.template(n)).collect()
}

/// The `npu-core` counts a chip takes below a whole chip: the AI cores of its
/// templates (310P: 1, 2, 4; 910B3: 5, 10; 910B1/B2/B2C: 6, 12), ascending.
pub fn dynamic_core_counts(spec: &VnpuSpec) -> Vec<u32> {
    let mut cores: Vec<u32> = spec.templates.iter().map(|t| t.aicore).filter(|&c| c < spec.aicore).collect();
    cores.sort_unstable();
    cores.dedup();
    cores
}

/// Whether `huawei.com/npu-core: cores` is a valid request on this chip: a
/// template's AI cores, or whole chips (a positive multiple of the chip's cores).
pub fn dynamic_cores_allowed(spec: &VnpuSpec, cores: u32) -> bool {
    (cores > 0 && spec.aicore > 0 && cores.is_multiple_of(spec.aicore)) || dynamic_core_counts(spec).contains(&cores)
}

/// The allowed `npu-core` counts in words, with the template each one gets:
/// `5 (vir05_1c_16g), 10 (vir10_3c_32g) or a multiple of 20 (whole chips)`.
pub fn dynamic_cores_text(spec: &VnpuSpec) -> String {
    let parts: Vec<String> = dynamic_core_counts(spec)
        .into_iter()
        .map(|c| {
            let names: Vec<&str> = spec.templates.iter().filter(|t| t.aicore == c).map(|t| t.name.as_str()).collect();
            format!("{c} ({})", names.join(" / "))
        })
        .collect();
    format!("{} or a multiple of {} (whole chips)", parts.join(", "), spec.aicore)
}

/// The template a static vNPU resource suffix names: a template name
/// (`vir04_3c`) or the suffix of `huawei.com/Ascend310P-4c.3cpu` /
/// `huawei.com/Ascend910-6c.1cpu.16g` (`4c.3cpu`, `6c.1cpu.16g`, `4c.4cpu.dvpp`, `4c.3cpu.ndvpp`, `2c`).
pub fn static_template<'a>(spec: &'a VnpuSpec, suffix: &str) -> Option<&'a VnpuTemplate> {
    if let Some(t) = spec.template(suffix) {
        return Some(t);
    }
    let (mut cores, mut cpu, mut mem, mut dvpp) = (None, None, None, DvppShare::Proportional);
    for part in suffix.split('.') {
        if let Some(v) = part.strip_suffix("cpu") {
            cpu = Some(v.parse::<u32>().ok()?);
        } else if part == "dvpp" || part == "m" {
            dvpp = DvppShare::All;
        } else if part == "ndvpp" || part == "nm" {
            dvpp = DvppShare::NoDvpp;
        } else if let Some(v) = part.strip_suffix('c') {
            cores = Some(v.parse::<u32>().ok()?);
        } else if let Some(v) = part.strip_suffix('g') {
            mem = Some(v.parse::<u32>().ok()?);
        } else {
            return None;
        }
    }
    let cores = cores?;
    let matches: Vec<&VnpuTemplate> = spec
        .templates
        .iter()
        .filter(|t| t.aicore == cores && t.dvpp == dvpp)
        .filter(|t| (cpu.is_none() || cpu == Some(t.aicpu)) && (mem.is_none() || mem == Some(t.mem_gib)))
        .collect();
    // Without a CPU count the plain template (`virNN`, as many CPUs as named by the chip's default) is meant.
    if cpu.is_none() {
        let plain = format!("vir{cores:02}");
        if let Some(t) = matches.iter().find(|t| t.name == plain) {
            return Some(t);
        }
    }
    matches.first().copied()
}

fn dvpp_units(spec: &VnpuSpec, t: &VnpuTemplate) -> u32 {
    match t.dvpp {
        DvppShare::Proportional => t.aicore,
        DvppShare::All => spec.aicore,
        DvppShare::NoDvpp => 0,
    }
}

/// Whether template `t` fits on a chip with this use.
pub fn fits(spec: &VnpuSpec, used: &DeviceUse, t: &VnpuTemplate) -> bool {
    let room = used.aicore + t.aicore <= spec.aicore
        && used.aicpu + t.aicpu <= spec.aicpu
        && used.mem_gib + t.mem_gib <= spec.mem_gib
        && used.dvpp + dvpp_units(spec, t) <= spec.aicore;
    // 310P group rule: a chip cut into 3 groups takes only 1–2-core templates, into 4 or more only 1-core.
    let groups_ok = spec.family != VnpuFamily::Ascend310P
        || match used.groups {
            0..=2 => true,
            3 => t.aicore <= 2,
            _ => t.aicore == 1,
        };
    room && groups_ok
}

/// The use of a chip after adding template `t` (for callers keeping state).
pub fn add(spec: &VnpuSpec, used: &DeviceUse, t: &VnpuTemplate) -> DeviceUse {
    DeviceUse {
        aicore: used.aicore + t.aicore,
        aicpu: used.aicpu + t.aicpu,
        mem_gib: used.mem_gib + t.mem_gib,
        dvpp: used.dvpp + dvpp_units(spec, t),
        groups: used.groups + 1,
        gpu_milli: used.gpu_milli,
        gpu_mem_mib: used.gpu_mem_mib,
    }
}

fn free_cores(spec: &VnpuSpec, state: &DeviceState, chips: DeviceSet) -> u32 {
    chips.iter().map(|i| spec.aicore - state.usage(i).aicore.min(spec.aicore)).sum()
}

/// Places a vNPU on a node.
pub fn allocate(profile: &Profile, state: &DeviceState, req: &VnpuRequest) -> Result<Allocation, NoFit> {
    let spec = profile
        .vnpu
        .as_ref()
        .ok_or_else(|| NoFit::Unsupported { what: "vNPU".into(), profile: profile.name.clone() })?;
    let chips = profile.all().minus(state.allocated).minus(state.unhealthy);
    let allowed = || spec.templates.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ");
    let candidates: Vec<&VnpuTemplate> = match req {
        VnpuRequest::Dynamic { cores, .. } if *cores > 0 && cores % spec.aicore == 0 => {
            // Whole chips through npu-core: only chips with nothing cut from them.
            let k = cores / spec.aicore;
            let idle = DeviceSet::from_indices(chips.iter().filter(|&i| state.usage(i).is_idle()));
            let chosen =
                idle.lowest(k).ok_or_else(|| NoFit::Insufficient { resource: profile.resource_name.clone() })?;
            let score = VnpuScore { downgraded: false, free_cores_after: free_cores(spec, state, chips.minus(chosen)) };
            return Ok(Allocation::new(profile, chosen, NodeScore::Vnpu(score)));
        }
        VnpuRequest::Dynamic { cores, dvpp, level } => {
            let c = dynamic_templates(spec, *cores, *dvpp, *level);
            if c.is_empty() {
                let labels = format!("vnpu-dvpp {dvpp:?}, vnpu-level {level:?}").to_lowercase();
                return Err(NoFit::NoTemplate {
                    request: format!("npu-core {cores} ({labels}) on {}", profile.chip),
                    allowed: format!("npu-core {}", dynamic_cores_text(spec)),
                });
            }
            c
        }
        VnpuRequest::Static { template } => match static_template(spec, template) {
            Some(t) => vec![t],
            None => return Err(NoFit::NoTemplate { request: format!("static vNPU {template}"), allowed: allowed() }),
        },
    };
    for (n, t) in candidates.iter().enumerate() {
        // Least free resource that fits: fewest free cores, then AI CPUs, then memory; lowest index on ties.
        let best = chips.iter().filter(|&i| fits(spec, &state.usage(i), t)).min_by_key(|&i| {
            let u = state.usage(i);
            (spec.aicore - u.aicore, spec.aicpu - u.aicpu, spec.mem_gib - u.mem_gib, i)
        });
        if let Some(chip) = best {
            let downgraded = n > 0;
            let score = VnpuScore { downgraded, free_cores_after: free_cores(spec, state, chips) - t.aicore };
            let mut a = Allocation::new(profile, DeviceSet::from_indices([chip]), NodeScore::Vnpu(score));
            a.vnpu = Some(VnpuPlacement { chip, template: t.name.clone(), downgraded, slot: state.usage(chip).groups });
            return Ok(a);
        }
    }
    Err(NoFit::NoVnpuChip { template: candidates.first().map_or_else(String::new, |t| t.name.clone()) })
}
