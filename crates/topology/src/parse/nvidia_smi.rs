//! `nvidia-smi topo -m` matrix → [`TopoMatrix`] → [`Profile`].
//!
//! The header names the device columns (`GPU0`…, `NIC0`… or `mlx5_0`…)
//! followed by `CPU Affinity`, `NUMA Affinity` and `GPU NUMA ID` where the
//! driver prints them. Rows follow until `Legend:`; a `NIC Legend:` maps
//! `NIC0` to `mlx5_0`.

use super::ansi::strip_ansi;
use super::error::ParseError;
use crate::devset::DeviceSet;
use crate::profile::{AllocatorKind, Device, GroupKind, Link, LinkKind, LinkSpeeds, Nic, Profile, Vendor};

const ALLOWED: &str = "X, SYS, NODE, PHB, PXB, PIX, NV#";

/// The parsed matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopoMatrix {
    /// GPU column names (`GPU0`…), in order.
    pub gpus: Vec<String>,
    /// NIC names, resolved through the NIC legend (`mlx5_0`), in column order.
    pub nics: Vec<String>,
    /// GPU-to-GPU connections.
    pub gpu_links: Vec<Vec<LinkKind>>,
    /// For each NIC, its connection to each GPU.
    pub nic_links: Vec<Vec<LinkKind>>,
    /// `CPU Affinity` per GPU (e.g. `0-19,40-59`), when printed.
    pub cpu_affinity: Vec<Option<String>>,
    /// `NUMA Affinity` per GPU, when printed and numeric.
    pub numa_affinity: Vec<Option<u32>>,
}

fn merge_header(tokens: Vec<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let rest = &tokens[i..];
        let (name, used) = match rest {
            ["GPU", "NUMA", "ID", ..] => ("GPU NUMA ID".to_string(), 3),
            ["CPU", "Affinity", ..] => ("CPU Affinity".to_string(), 2),
            ["NUMA", "Affinity", ..] => ("NUMA Affinity".to_string(), 2),
            [t, ..] => ((*t).to_string(), 1),
            [] => break,
        };
        out.push(name);
        i += used;
    }
    out
}

fn is_affinity(col: &str) -> bool {
    matches!(col, "CPU Affinity" | "NUMA Affinity" | "GPU NUMA ID")
}

/// Parses the text of `nvidia-smi topo -m`.
pub fn parse_topo(text: &str) -> Result<TopoMatrix, ParseError> {
    let lines: Vec<String> = text.lines().map(strip_ansi).collect();
    let (header_at, header) =
        lines.iter().enumerate().find(|(_, l)| l.split_whitespace().next() == Some("GPU0")).ok_or_else(|| {
            ParseError::new(0, "", "no header line starting with GPU0 (is this `nvidia-smi topo -m` output?)")
        })?;
    let cols = merge_header(header.split_whitespace().collect());
    let devs: Vec<String> = cols.iter().take_while(|c| !is_affinity(c)).cloned().collect();
    let extra: Vec<String> = cols[devs.len()..].to_vec();
    if let Some(bad) = extra.iter().find(|c| !is_affinity(c)) {
        return Err(ParseError::new(header_at + 1, bad.clone(), "device column after the affinity columns"));
    }
    let gpu_cols: Vec<usize> = (0..devs.len()).filter(|&i| is_gpu(&devs[i])).collect();
    if gpu_cols.len() > crate::alloc::gpu::MAX_GPUS {
        return Err(ParseError::new(
            header_at + 1,
            devs[gpu_cols[crate::alloc::gpu::MAX_GPUS]].clone(),
            format!("more than {} GPUs", crate::alloc::gpu::MAX_GPUS),
        ));
    }
    let n = devs.len();
    let mut rows: Vec<Option<Vec<LinkKind>>> = vec![None; n];
    let mut cpu_aff: Vec<Option<String>> = vec![None; n];
    let mut numa_aff: Vec<Option<u32>> = vec![None; n];
    let mut legend_at = lines.len();
    for (li, line) in lines.iter().enumerate().skip(header_at + 1) {
        let lineno = li + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if trimmed.starts_with("Legend") {
            legend_at = li;
            break;
        }
        let mut tokens = trimmed.split_whitespace();
        let Some(name) = tokens.next() else { continue };
        let Some(r) = devs.iter().position(|d| d == name) else {
            return Err(ParseError::new(
                lineno,
                name,
                format!("row name is not a header column (columns: {})", devs.join(", ")),
            ));
        };
        if rows[r].is_some() {
            return Err(ParseError::new(lineno, name, "row appears twice"));
        }
        let mut row = Vec::with_capacity(n);
        for (c, col) in devs.iter().enumerate() {
            let tok = tokens.next().ok_or_else(|| {
                ParseError::new(lineno, name, format!("row has {c} link entries, the header has {n} devices"))
            })?;
            let kind = LinkKind::from_code(tok)
                .filter(|k| !matches!(k, LinkKind::Hccs | LinkKind::Die | LinkKind::Ub))
                .ok_or_else(|| {
                    ParseError::new(
                        lineno,
                        tok,
                        format!("unknown connection code in column {col} (allowed: {ALLOWED})"),
                    )
                })?;
            row.push(kind);
        }
        for col in &extra {
            let Some(tok) = tokens.next() else { break };
            match col.as_str() {
                "CPU Affinity" => cpu_aff[r] = (tok != "N/A").then(|| tok.to_string()),
                "NUMA Affinity" => numa_aff[r] = tok.parse().ok(),
                _ => {}
            }
        }
        rows[r] = Some(row);
    }
    let mut full = Vec::with_capacity(n);
    for (i, row) in rows.into_iter().enumerate() {
        let row = row.ok_or_else(|| ParseError::new(0, devs[i].clone(), "a header column has no row"))?;
        full.push(row);
    }
    for i in 0..n {
        for j in 0..n {
            let (a, b) = (full[i][j], full[j][i]);
            if (i == j) != (a == LinkKind::SelfLink) {
                return Err(ParseError::new(
                    0,
                    a.code(),
                    format!("{}–{}: X must appear exactly on the diagonal", devs[i], devs[j]),
                ));
            }
            if a != b {
                return Err(ParseError::new(
                    0,
                    format!("{a} vs {b}"),
                    format!("matrix not symmetric at {}–{}", devs[i], devs[j]),
                ));
            }
        }
    }
    let legend = nic_legend(&lines[legend_at..]);
    let nic_cols: Vec<usize> = (0..n).filter(|i| !gpu_cols.contains(i)).collect();
    Ok(TopoMatrix {
        gpus: gpu_cols.iter().map(|&i| devs[i].clone()).collect(),
        nics: nic_cols
            .iter()
            .map(|&i| legend.iter().find(|(k, _)| *k == devs[i]).map_or_else(|| devs[i].clone(), |(_, v)| v.clone()))
            .collect(),
        gpu_links: gpu_cols.iter().map(|&i| gpu_cols.iter().map(|&j| full[i][j]).collect()).collect(),
        nic_links: nic_cols.iter().map(|&i| gpu_cols.iter().map(|&j| full[i][j]).collect()).collect(),
        cpu_affinity: gpu_cols.iter().map(|&i| cpu_aff[i].clone()).collect(),
        numa_affinity: gpu_cols.iter().map(|&i| numa_aff[i]).collect(),
    })
}

fn is_gpu(col: &str) -> bool {
    col.strip_prefix("GPU").is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

fn nic_legend(lines: &[String]) -> Vec<(String, String)> {
    let start = lines.iter().position(|l| l.trim() == "NIC Legend:").map_or(lines.len(), |p| p + 1);
    lines[start..]
        .iter()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .collect()
}

/// Parses `nvidia-smi topo -m` text into a profile named `name`; `speeds`
/// gives the GPU generation's NVLink and PCIe figures.
pub fn profile_from_topo(name: &str, text: &str, speeds: LinkSpeeds, chip: &str) -> Result<Profile, ParseError> {
    let m = parse_topo(text)?;
    let n = m.gpus.len();
    let links = m
        .gpu_links
        .iter()
        .map(|row| row.iter().map(|&kind| Link { kind, mbps: speeds.bandwidth(kind) }).collect())
        .collect();
    let devices: Vec<Device> = m
        .gpus
        .iter()
        .enumerate()
        .map(|(i, g)| Device {
            id: g.trim_start_matches("GPU").parse().unwrap_or(i as u32),
            name: g.clone(),
            numa: m.numa_affinity[i],
            bus_id: None,
        })
        .collect();
    let mut numas: Vec<u32> = devices.iter().filter_map(|d| d.numa).collect();
    numas.sort_unstable();
    numas.dedup();
    let groups = numas
        .iter()
        .map(|&z| {
            DeviceSet::from_indices(devices.iter().enumerate().filter(|(_, d)| d.numa == Some(z)).map(|(i, _)| i))
        })
        .collect::<Vec<_>>();
    let p = Profile {
        name: name.to_string(),
        description: format!("{n} GPUs parsed from nvidia-smi topo -m"),
        vendor: Vendor::Nvidia,
        chip: chip.to_string(),
        resource_name: "nvidia.com/gpu".into(),
        schedule_policy: None,
        accelerator_type: None,
        devices,
        group_kind: if groups.is_empty() { GroupKind::None } else { GroupKind::Socket },
        groups,
        links,
        nics: m
            .nics
            .iter()
            .zip(&m.nic_links)
            .map(|(name, links)| Nic { name: name.clone(), links: links.clone() })
            .collect(),
        vnpu: None,
        allocator: AllocatorKind::Gpu,
    };
    p.validate().map_err(|e| ParseError::new(0, "", e.to_string()))?;
    Ok(p)
}
