//! The vendor tools' figures as text → [`DeviceFigures`]: the CSV of
//! `nvidia-smi --query-gpu=…` and the table of `npu-smi info`. A field a
//! tool cannot read (`[N/A]`, `N/A`, `NA`, `[Not Supported]`, `ERR!` …) is
//! absent, never zero; a line that is not the tool's format is an error
//! naming the line, the text and what was expected.

use super::figures::DeviceFigures;
use ringleader_topology::parse::npu_smi;

/// One MiB: both tools print memory in MiB (labelled `MiB` by
/// `nvidia-smi`, `MB` by `npu-smi`).
const MIB: u64 = 1024 * 1024;

/// Fields of the telemetry query, in order.
pub const NVIDIA_SMI_FIELDS: &str = "index,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw";
/// Fields of the discovery query, in order (the name last: it is free text).
pub const NVIDIA_SMI_INVENTORY_FIELDS: &str = "index,uuid,memory.total,name";

/// Why a tool's output was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message} (found {text:?})")]
pub struct FiguresError {
    /// 1-based line of the output (0: the output as a whole).
    pub line: usize,
    /// The offending text.
    pub text: String,
    /// What was expected.
    pub message: String,
}

fn error(line: usize, text: &str, message: impl Into<String>) -> FiguresError {
    FiguresError { line, text: text.to_string(), message: message.into() }
}

/// Whether a field is one of the placeholders the tools print for a figure
/// they cannot read.
fn unreadable(field: &str) -> bool {
    let f = field.trim();
    f.is_empty()
        || f.starts_with('[')
        || matches!(f.to_ascii_uppercase().as_str(), "N/A" | "NA" | "-" | "ERR!" | "UNKNOWN")
}

/// A figure, when it is a finite number within `min..=max`; placeholders
/// and out-of-range values (a tool's garbage) are absent.
fn figure(field: &str, min: f64, max: f64) -> Option<f64> {
    if unreadable(field) {
        return None;
    }
    field.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= min && *v <= max)
}

fn mib(field: &str) -> Option<u64> {
    figure(field, 0.0, (u64::MAX / MIB) as f64).map(|v| (v * MIB as f64).round() as u64)
}

/// `nvidia-smi` prints this instead of a CSV line for a GPU it cannot open
/// (fallen off the bus, driver error): that GPU is left out of the reading.
fn lost_gpu_line(line: &str) -> bool {
    line.starts_with("Unable to determine the device handle")
}

/// The rows of a `--format=csv,noheader,nounits` answer with their line
/// numbers, blank and lost-GPU lines skipped; a row with fewer than `least`
/// fields (or other than `least` when `exact`) is an error naming `fields`.
fn csv_rows<'a>(
    text: &'a str,
    least: usize,
    exact: bool,
    fields: &str,
) -> impl Iterator<Item = Result<(usize, Vec<&'a str>), FiguresError>> + 'a {
    let fields = fields.to_string();
    text.lines().enumerate().filter_map(move |(i, raw)| {
        let line = raw.trim();
        if line.is_empty() || lost_gpu_line(line) {
            return None;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() < least || (exact && f.len() != least) {
            return Some(Err(error(
                i + 1,
                line,
                format!("expected {least} comma-separated fields ({fields}), found {}", f.len()),
            )));
        }
        Some(Ok((i + 1, f)))
    })
}

fn index(lineno: usize, field: &str) -> Result<u32, FiguresError> {
    field.parse().map_err(|_| error(lineno, field, "index must be a GPU index (a non-negative integer)"))
}

/// Parses the output of `nvidia-smi --query-gpu=`[`NVIDIA_SMI_FIELDS`]
/// `--format=csv,noheader,nounits`: one line per GPU, e.g.
/// `0, GPU-5e8f…, 37, 1024, 81559, 34, 71.23`.
pub fn nvidia_smi_query(text: &str) -> Result<Vec<DeviceFigures>, FiguresError> {
    let mut out = Vec::new();
    for row in csv_rows(text, 7, true, NVIDIA_SMI_FIELDS) {
        let (lineno, f) = row?;
        out.push(DeviceFigures {
            id: index(lineno, f[0])?,
            utilization_percent: figure(f[2], 0.0, 100.0),
            memory_used_bytes: mib(f[3]),
            memory_total_bytes: mib(f[4]),
            temperature_c: figure(f[5], -273.0, 1000.0),
            power_w: figure(f[6], 0.0, 1e6),
        });
    }
    Ok(out)
}

/// One GPU of the discovery query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventoryGpu {
    /// GPU index.
    pub index: u32,
    /// `GPU-…` UUID (empty when unreadable).
    pub uuid: String,
    /// Total memory, MiB (0 when unreadable).
    pub memory_mib: u64,
    /// Product name (empty when unreadable).
    pub name: String,
    /// Why it must not be used: a field reads `[GPU is lost]` or an error.
    pub problem: Option<String>,
}

/// Parses `nvidia-smi --query-gpu=`[`NVIDIA_SMI_INVENTORY_FIELDS`]
/// `--format=csv,noheader,nounits`.
pub fn nvidia_smi_inventory(text: &str) -> Result<Vec<InventoryGpu>, FiguresError> {
    let mut out = Vec::new();
    // The product name may itself hold commas: everything from the fourth field on.
    for row in csv_rows(text, 4, false, NVIDIA_SMI_INVENTORY_FIELDS) {
        let (lineno, f) = row?;
        let name = f[3..].join(", ");
        let problem = f[1..3]
            .iter()
            .chain(std::iter::once(&name.as_str()))
            .find(|v| {
                let l = v.to_ascii_lowercase();
                v.starts_with('[') && (l.contains("lost") || l.contains("error"))
            })
            .map(|v| format!("nvidia-smi: {v}"));
        let text_or_empty = |v: &str| if unreadable(v) { String::new() } else { v.to_string() };
        out.push(InventoryGpu {
            index: index(lineno, f[0])?,
            uuid: text_or_empty(f[1]),
            memory_mib: figure(f[2], 0.0, u64::MAX as f64).map_or(0, |v| v as u64),
            name: text_or_empty(&name),
            problem,
        });
    }
    Ok(out)
}

/// The figures of one chip's two rows.
#[derive(Debug, Default)]
struct ChipRows {
    power_w: Option<f64>,
    temperature_c: Option<f64>,
    aicore: Option<f64>,
    /// `used / total` pairs of the chip row: DDR memory, then HBM where printed.
    pairs: Vec<(Option<u64>, Option<u64>)>,
}

/// `used / total` pairs of a figures cell, in MiB → bytes.
fn pairs(tokens: &[&str]) -> Vec<(Option<u64>, Option<u64>)> {
    tokens.windows(3).filter(|w| w[1] == "/").map(|w| (mib(w[0]), mib(w[2]))).collect()
}

/// Parses `npu-smi info`: per chip, power and temperature from its NPU row
/// (`| 0  910B3 | OK | 93.5  36  0 / 0 |`), AI-core use and memory from its
/// chip row (`| 0 | 0000:C1:00.0 | 0  0 / 0  3161 / 65536 |`). Memory is
/// the HBM where the chip has it, else its DDR. IDs are the Node's (as
/// discovery numbers the chips), so the table must also be one the
/// scheduler's parser accepts.
pub fn npu_smi_info(text: &str) -> Result<Vec<DeviceFigures>, FiguresError> {
    let topology_error = |e: ringleader_topology::parse::ParseError| FiguresError {
        line: e.line,
        text: e.token.clone(),
        message: e.message.clone(),
    };
    let info = npu_smi::parse_info(text).map_err(topology_error)?;
    let (profile, _) = npu_smi::profile_from_info(&info).map_err(topology_error)?;
    let rows = npu_rows(text)?;
    if rows.len() != profile.devices.len() {
        return Err(error(
            0,
            "",
            format!("{} chip rows with figures, but the table lists {} chips", rows.len(), profile.devices.len()),
        ));
    }
    Ok(profile
        .devices
        .iter()
        .zip(rows)
        .map(|(d, r)| {
            let hbm = r.pairs.get(1).copied().filter(|(_, total)| total.is_some_and(|t| t > 0));
            let ddr = r.pairs.first().copied().filter(|(_, total)| total.is_some_and(|t| t > 0));
            let (used, total) = hbm.or(ddr).unwrap_or((None, None));
            DeviceFigures {
                id: d.id,
                utilization_percent: r.aicore,
                memory_used_bytes: used,
                memory_total_bytes: total,
                temperature_c: r.temperature_c,
                power_w: r.power_w,
            }
        })
        .collect())
}

/// The figures of every chip, in table order; rows are told apart as the
/// scheduler's parser tells them (`npu_smi::parse_info`), which has already
/// accepted the table.
fn npu_rows(text: &str) -> Result<Vec<ChipRows>, FiguresError> {
    let mut out = Vec::new();
    let mut pending: Option<ChipRows> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if !line.starts_with('|') {
            continue;
        }
        let inner = line.trim_start_matches('|').trim_end_matches('|');
        let cells: Vec<&str> = inner.split('|').map(str::trim).collect();
        let first = cells.first().copied().unwrap_or("");
        if first.starts_with("npu-smi") || first.starts_with("NPU") || first.starts_with("Chip") {
            continue;
        }
        if cells.get(1).is_some_and(|s| s.starts_with("Process")) || first.starts_with("No running") {
            break;
        }
        let Some(figures) = cells.get(2) else {
            return Err(error(i + 1, line, "table row must have 3 cells: NPU/Chip | Health/Bus-Id | figures"));
        };
        let tokens: Vec<&str> = figures.split_whitespace().collect();
        let names_chip = first.split_whitespace().nth(1).is_some_and(|t| t.parse::<u32>().is_err());
        if names_chip {
            pending = Some(ChipRows {
                power_w: tokens.first().and_then(|t| figure(t, 0.0, 1e6)),
                temperature_c: tokens.get(1).and_then(|t| figure(t, -273.0, 1000.0)),
                ..ChipRows::default()
            });
        } else {
            let mut chip = pending.take().ok_or_else(|| error(i + 1, first, "chip row without a preceding NPU row"))?;
            chip.aicore = tokens.first().and_then(|t| figure(t, 0.0, 100.0));
            chip.pairs = pairs(&tokens);
            out.push(chip);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NPU_910: &str = include_str!("../../tests/data/npu-smi-910-8.txt");
    const NPU_910B: &str = include_str!("../../../topology/tests/data/npu-smi-910b-8.txt");
    const NPU_DUO: &str = include_str!("../../../topology/tests/data/npu-smi-300i-duo.txt");
    const GIB: u64 = 1024 * MIB;

    /// As an H100 box prints it on driver 550: GPU 2 has no power reading,
    /// GPU 3's utilisation is unsupported, GPU 4 fell off the bus.
    const H100_QUERY: &str = "\
0, GPU-5e8f3b1a-7c2d-4e9f-8a1b-2c3d4e5f6a70, 37, 1024, 81559, 34, 71.23
1, GPU-5e8f3b1a-7c2d-4e9f-8a1b-2c3d4e5f6a71, 0, 4, 81559, 30, 68.91
2, GPU-5e8f3b1a-7c2d-4e9f-8a1b-2c3d4e5f6a72, 100, 80000, 81559, 71, [N/A]
3, GPU-5e8f3b1a-7c2d-4e9f-8a1b-2c3d4e5f6a73, [Not Supported], 4, 81559, N/A, 69.00
Unable to determine the device handle for GPU 0000:9D:00.0: Unknown Error
";

    #[test]
    fn nvidia_smi_query_reads_each_gpu_and_leaves_unreadable_fields_out() {
        let f = nvidia_smi_query(H100_QUERY).expect("parses");
        assert_eq!(f.iter().map(|d| d.id).collect::<Vec<_>>(), [0, 1, 2, 3], "the lost GPU is left out");
        assert_eq!(
            f[0],
            DeviceFigures {
                id: 0,
                utilization_percent: Some(37.0),
                memory_used_bytes: Some(1024 * MIB),
                memory_total_bytes: Some(81559 * MIB),
                temperature_c: Some(34.0),
                power_w: Some(71.23),
            }
        );
        assert_eq!(f[1].utilization_percent, Some(0.0), "a real zero stays zero");
        assert_eq!(f[2].power_w, None, "[N/A] is absent, not zero");
        assert_eq!(f[2].utilization_percent, Some(100.0));
        assert_eq!((f[3].utilization_percent, f[3].temperature_c), (None, None));
        assert_eq!(f[3].power_w, Some(69.0));
        assert_eq!(nvidia_smi_query("").expect("empty"), Vec::new());
    }

    #[test]
    fn nvidia_smi_query_refuses_other_text_naming_the_line() {
        let e = nvidia_smi_query("0, GPU-x, 1, 2, 3, 4, 5\nNVIDIA-SMI has failed because it couldn't communicate")
            .expect_err("refused");
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("expected 7 comma-separated fields"), "{e}");
        let e = nvidia_smi_query("x, GPU-x, 1, 2, 3, 4, 5").expect_err("refused");
        assert!(e.to_string().contains("index must be a GPU index") && e.text == "x", "{e}");
        // Out-of-range figures are a tool's garbage: absent.
        let f = nvidia_smi_query("0, GPU-x, 250, -4, 81559, 40, NaN").expect("parses");
        assert_eq!((f[0].utilization_percent, f[0].memory_used_bytes, f[0].power_w), (None, None, None));
    }

    #[test]
    fn nvidia_smi_inventory_reads_names_and_flags_lost_gpus() {
        let text = "0, GPU-aaaa, 81559, NVIDIA H100 80GB HBM3\n1, [GPU is lost], [GPU is lost], [GPU is lost]\n\
                    2, GPU-cccc, [N/A], Tesla V100-SXM2-16GB, rev. B\n";
        let g = nvidia_smi_inventory(text).expect("parses");
        assert_eq!(g[0].name, "NVIDIA H100 80GB HBM3");
        assert_eq!((g[0].memory_mib, g[0].problem.as_deref()), (81559, None));
        assert_eq!(g[1].problem.as_deref(), Some("nvidia-smi: [GPU is lost]"));
        assert_eq!(g[1].uuid, "");
        assert_eq!((g[2].memory_mib, g[2].name.as_str()), (0, "Tesla V100-SXM2-16GB, rev. B"));
        let e = nvidia_smi_inventory("0, GPU-aaaa").expect_err("short");
        assert!(e.to_string().contains("line 1") && e.to_string().contains("4 comma-separated"), "{e}");
    }

    #[test]
    fn npu_smi_910_figures_follow_the_node_ids() {
        let f = npu_smi_info(NPU_910).expect("parses");
        assert_eq!(f.iter().map(|d| d.id).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
        assert_eq!(f[0].power_w, Some(70.4));
        assert_eq!(f[0].temperature_c, Some(40.0));
        assert_eq!(f[0].utilization_percent, Some(0.0));
        // The 910 has HBM: its figures are the HBM's.
        assert_eq!((f[2].memory_used_bytes, f[2].memory_total_bytes), (Some(1024 * MIB), Some(32 * GIB)));
        assert_eq!(f[7].temperature_c, Some(47.0));
    }

    #[test]
    fn npu_smi_910b_reads_hbm_and_a_busy_core() {
        let busy = NPU_910B.replacen(
            "| 0                         | 0000:C1:00.0  | 0           0    / 0          3161 / 65536         |",
            "| 0                         | 0000:C1:00.0  | 87          0    / 0          60001 / 65536        |",
            1,
        );
        assert_ne!(busy, NPU_910B, "the fixture row was found");
        let f = npu_smi_info(&busy).expect("parses");
        assert_eq!(f[0].utilization_percent, Some(87.0));
        assert_eq!((f[0].memory_used_bytes, f[0].memory_total_bytes), (Some(60001 * MIB), Some(65536 * MIB)));
        assert_eq!(f[1].memory_used_bytes, Some(3162 * MIB));
        assert_eq!(f[5].power_w, Some(94.0), "an Alarm chip still reports");
    }

    #[test]
    fn npu_smi_duo_has_no_power_reading_and_ddr_memory() {
        let f = npu_smi_info(NPU_DUO).expect("parses");
        assert_eq!(f.len(), 8);
        assert_eq!(f.iter().map(|d| d.id).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
        assert!(f.iter().all(|d| d.power_w.is_none()), "NA is absent, not zero");
        assert_eq!(f[1].temperature_c, Some(51.0));
        assert_eq!((f[1].memory_used_bytes, f[1].memory_total_bytes), (Some(1701 * MIB), Some(44280 * MIB)));
    }

    #[test]
    fn npu_smi_na_fields_are_absent_and_bad_tables_refused() {
        let na = NPU_910B.replacen("| 93.5        36  ", "| N/A         N/A ", 1);
        assert_ne!(na, NPU_910B);
        let f = npu_smi_info(&na).expect("parses");
        assert_eq!((f[0].power_w, f[0].temperature_c), (None, None));
        assert_eq!(f[1].power_w, Some(93.6));
        let e = npu_smi_info("| nothing here |").expect_err("refused");
        assert!(e.to_string().contains("line 1") && e.to_string().contains("3 cells"), "{e}");
        let e = npu_smi_info("NVIDIA-SMI has failed\n").expect_err("refused");
        assert!(e.to_string().contains("no NPU rows"), "{e}");
    }
}
