//! `npu-smi info` table → [`NpuSmiInfo`] → a built-in Ascend profile with the
//! node's unhealthy chips.
//!
//! Each NPU takes two table rows per chip:
//! `| NPU Name | Health | Power(W) Temp(C) Hugepages-Usage |` then
//! `| Chip [Device] | Bus-Id | AICore(%) Memory-Usage(MB) [HBM-Usage(MB)] |`.
//! The process table that follows is skipped.

use super::error::ParseError;
use crate::devset::DeviceSet;
use crate::profile::Profile;

/// One chip (or A3 die / Duo chip) of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpuChip {
    /// NPU (card / module) ID.
    pub npu: u32,
    /// Chip index within the NPU.
    pub chip: u32,
    /// Logical device ID where printed (310P, A3), else `None`.
    pub device: Option<u32>,
    /// Chip name, e.g. `910B3`, `310P3`.
    pub name: String,
    /// Health as printed: `OK`, `Warning`, `Alarm`, `Critical`, …
    pub health: String,
    /// PCIe bus ID.
    pub bus_id: String,
    /// AI core utilisation, percent.
    pub aicore_pct: Option<u32>,
    /// Total (DDR) memory, MB.
    pub memory_total_mb: Option<u64>,
    /// Total HBM, MB (training chips).
    pub hbm_total_mb: Option<u64>,
}

impl NpuChip {
    /// Whether the chip may be used: `OK` and `Warning` are; `Alarm`, `Critical` and anything else are not.
    pub fn is_healthy(&self) -> bool {
        matches!(self.health.as_str(), "OK" | "Warning")
    }
}

/// The parsed table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpuSmiInfo {
    /// `npu-smi` version from the title line.
    pub version: Option<String>,
    /// Chips in table order.
    pub chips: Vec<NpuChip>,
}

fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(str::trim).collect()
}

fn num<T: std::str::FromStr>(lineno: usize, tok: &str, what: &str) -> Result<T, ParseError> {
    tok.parse().map_err(|_| ParseError::new(lineno, tok, format!("{what} must be a non-negative integer")))
}

/// Parses the text of `npu-smi info`.
pub fn parse_info(text: &str) -> Result<NpuSmiInfo, ParseError> {
    let mut version = None;
    let mut chips = Vec::new();
    let mut pending: Option<(usize, u32, String, String)> = None;
    for (li, raw) in text.lines().enumerate() {
        let lineno = li + 1;
        let line = raw.trim();
        if !line.starts_with('|') {
            continue;
        }
        let c = cells(line);
        let first = c.first().copied().unwrap_or("");
        if first.starts_with("npu-smi") {
            version = line.split("Version:").nth(1).and_then(|v| v.split_whitespace().next()).map(str::to_string);
            continue;
        }
        if c.get(1).is_some_and(|s| s.starts_with("Process")) || first.starts_with("No running") {
            break;
        }
        if first.starts_with("NPU") || first.starts_with("Chip") {
            continue;
        }
        if c.len() < 3 {
            return Err(ParseError::new(
                lineno,
                line,
                "table row must have 3 cells: NPU/Chip | Health/Bus-Id | figures",
            ));
        }
        let toks: Vec<&str> = first.split_whitespace().collect();
        let names_chip = toks.get(1).is_some_and(|t| t.parse::<u32>().is_err());
        if names_chip {
            // `| 0  910B3 | OK | power temp hugepages |`
            if let Some((at, ..)) = pending {
                return Err(ParseError::new(at, first, "NPU row without its Chip row"));
            }
            let npu = num(lineno, toks[0], "NPU ID")?;
            let health = c[1].split_whitespace().next().unwrap_or("").to_string();
            if health.is_empty() {
                return Err(ParseError::new(lineno, c[1], "Health is empty (expected OK, Warning, Alarm, Critical …)"));
            }
            pending = Some((lineno, npu, toks[1].to_string(), health));
        } else {
            // `| 0 [device] | 0000:C1:00.0 | aicore mem_used / mem_total [hbm_used / hbm_total] |`
            let (_, npu, name, health) = pending.take().ok_or_else(|| {
                ParseError::new(
                    lineno,
                    first,
                    "Chip row without a preceding NPU row (expected `| <npu id> <name> | <health> | …`)",
                )
            })?;
            let chip = num(lineno, toks.first().copied().unwrap_or(""), "Chip ID")?;
            let device = match toks.get(1) {
                Some(t) => Some(num(lineno, t, "Device ID")?),
                None => None,
            };
            let figs: Vec<&str> = c[2].split_whitespace().collect();
            let aicore_pct = figs.first().and_then(|t| t.parse().ok());
            let totals: Vec<Option<u64>> = figs.windows(3).filter(|w| w[1] == "/").map(|w| w[2].parse().ok()).collect();
            chips.push(NpuChip {
                npu,
                chip,
                device,
                name,
                health,
                bus_id: c[1].to_string(),
                aicore_pct,
                memory_total_mb: totals.first().copied().flatten(),
                hbm_total_mb: totals.get(1).copied().flatten(),
            });
        }
    }
    if let Some((at, _, name, _)) = pending {
        return Err(ParseError::new(at, name, "NPU row without its Chip row"));
    }
    if chips.is_empty() {
        return Err(ParseError::new(0, "", "no NPU rows found (is this `npu-smi info` output?)"));
    }
    Ok(NpuSmiInfo { version, chips })
}

/// Chip families `npu-smi` names.
fn family(name: &str, chips_per_npu: usize) -> Option<&'static str> {
    let n = name.trim_start_matches("Ascend");
    if n.starts_with("310P") {
        Some("310P")
    } else if n.starts_with("310") {
        Some("310")
    } else if n.starts_with("910") && (chips_per_npu == 2 || n.starts_with("910_93") || n.starts_with("910C")) {
        Some("A3")
    } else if n.len() > 4 && n.starts_with("910B") && n[4..].bytes().all(|b| b.is_ascii_digit()) {
        Some("910B")
    } else if n.starts_with("910") {
        Some("910")
    } else {
        None
    }
}

/// The built-in profile matching the table (chip family and count), with the
/// devices' IDs and bus IDs taken from it, and the set of unhealthy chips.
pub fn profile_from_info(info: &NpuSmiInfo) -> Result<(Profile, DeviceSet), ParseError> {
    let count = info.chips.len();
    let first = info.chips.first().ok_or_else(|| ParseError::new(0, "", "no NPU rows"))?;
    let per_npu = info.chips.iter().filter(|c| c.npu == first.npu).count();
    let fam = family(&first.name, per_npu).ok_or_else(|| {
        ParseError::new(
            0,
            first.name.clone(),
            "unknown chip name (known: 910, 910A, 910ProB, 910B1–4, Ascend910 A3, 310, 310P)",
        )
    })?;
    if let Some(other) = info.chips.iter().find(|c| family(&c.name, per_npu) != Some(fam)) {
        return Err(ParseError::new(
            0,
            other.name.clone(),
            format!("mixed chip families on one node ({} and {})", first.name, other.name),
        ));
    }
    let builtin = match (fam, count, per_npu) {
        ("910", 8, 1) => "atlas-800-910",
        ("910", 4, 1) => "atlas-800-910-half",
        ("910", 1 | 2, 1) => "atlas-300t",
        ("910B", 8, 1) => "atlas-800t-a2",
        ("910B", 16, 1) => "atlas-200t-a2-box16",
        ("A3", 16, 2) => "atlas-800t-a3",
        ("310", 16, 4) => "atlas-300i",
        ("310P", 8, 2) => "atlas-300i-duo",
        ("310P", 8, 1) => "atlas-inference-310p",
        _ => {
            return Err(ParseError::new(
                0,
                format!("{count} × {}", first.name),
                "no built-in layout for this chip count (910: 8, 4, 2; 910B: 8, 16; A3: 16 dies; 310: 16; 310P: 8)",
            ))
        }
    };
    let mut profile = crate::profiles::builtin(builtin)
        .cloned()
        .ok_or_else(|| ParseError::new(0, builtin, "built-in profile missing"))?;
    let mut unhealthy = DeviceSet::EMPTY;
    for (i, (dev, chip)) in profile.devices.iter_mut().zip(&info.chips).enumerate() {
        dev.id = if per_npu == 1 { chip.npu } else { chip.device.unwrap_or(i as u32) };
        dev.bus_id = Some(chip.bus_id.clone());
        if !chip.is_healthy() {
            unhealthy.insert(i);
        }
    }
    profile.chip = format!("Ascend {}", first.name.trim_start_matches("Ascend"));
    Ok((profile, unhealthy))
}
