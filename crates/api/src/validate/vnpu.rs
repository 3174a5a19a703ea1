//! Dynamic vNPU requests (`huawei.com/npu-core`) per chip type, as
//! ascend-for-volcano checks them: a chip takes the AI-core counts of its
//! templates or whole chips, and on 910B only a 910B4 10-core vNPU may set
//! `vnpu-dvpp` / `vnpu-level`. The template tables mirror ringleader-topology's
//! vNPU specs (a test there keeps the two equal).

use crate::error::FieldError;

/// One chip type's dynamic vNPU rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynamicVnpuChip {
    /// Chip type (`node.kubernetes.io/npu.chip.name`, or the family for 310P / 910).
    pub chip: &'static str,
    /// AI cores of one chip (whole-chip requests are multiples of it).
    pub aicore: u32,
    /// Below a whole chip: (AI cores, templates with that many cores).
    pub templates: &'static [(u32, &'static [&'static str])],
}

impl DynamicVnpuChip {
    /// Whether `npu-core: cores` is valid on this chip.
    pub fn allows(&self, cores: u32) -> bool {
        (cores > 0 && cores.is_multiple_of(self.aicore)) || self.templates.iter().any(|(c, _)| *c == cores)
    }

    /// The allowed counts in words, e.g. `5 (vir05_1c_16g), 10 (vir10_3c_32g) or a multiple of 20 (whole chips)`.
    pub fn allowed_text(&self) -> String {
        let parts: Vec<String> =
            self.templates.iter().map(|(c, names)| format!("{c} ({})", names.join(" / "))).collect();
        format!("{} or a multiple of {} (whole chips)", parts.join(", "), self.aicore)
    }

    fn is_910b(&self) -> bool {
        self.chip.starts_with("910B")
    }
}

const BIN0: &[(u32, &[&str])] = &[(6, &["vir06_1c_16g"]), (12, &["vir12_3c_32g"])];

/// Every chip type with dynamic vNPU.
pub const DYNAMIC_VNPU_CHIPS: &[DynamicVnpuChip] = &[
    DynamicVnpuChip {
        chip: "310P",
        aicore: 8,
        templates: &[
            (1, &["vir01"]),
            (2, &["vir02", "vir02_1c"]),
            (4, &["vir04", "vir04_3c", "vir04_3c_ndvpp", "vir04_4c_dvpp"]),
        ],
    },
    DynamicVnpuChip {
        chip: "910",
        aicore: 32,
        templates: &[(2, &["vir02"]), (4, &["vir04"]), (8, &["vir08"]), (16, &["vir16"])],
    },
    DynamicVnpuChip { chip: "910B1", aicore: 25, templates: BIN0 },
    DynamicVnpuChip { chip: "910B2", aicore: 24, templates: BIN0 },
    DynamicVnpuChip { chip: "910B2C", aicore: 24, templates: BIN0 },
    DynamicVnpuChip { chip: "910B3", aicore: 20, templates: &[(5, &["vir05_1c_16g"]), (10, &["vir10_3c_32g"])] },
    DynamicVnpuChip {
        chip: "910B4",
        aicore: 20,
        templates: &[(5, &["vir05_1c_8g"]), (10, &["vir10_3c_16g", "vir10_3c_16g_nm", "vir10_4c_16g_m"])],
    },
];

/// Node selector naming the chip type (MindCluster reads it from the node).
pub const CHIP_NAME_SELECTOR: &str = "node.kubernetes.io/npu.chip.name";

/// The chips a job may land on: the one its chip-name selector names, else
/// every chip of its family (`ascend-910b`, `ascend-310P`, `ascend-910`), else
/// all of them. Empty when the selector names a chip without dynamic vNPU.
pub fn candidate_chips(chip_selector: Option<&str>, family: Option<&str>) -> Vec<&'static DynamicVnpuChip> {
    if let Some(name) = chip_selector {
        // 310P nodes carry their model (`310P3`); the rule is the family's.
        let key = if name.starts_with("310P") { "310P" } else { name };
        return DYNAMIC_VNPU_CHIPS.iter().filter(|c| c.chip == key).collect();
    }
    let keep = |c: &&DynamicVnpuChip| match family {
        Some("ascend-910b") => c.is_910b(),
        Some("ascend-310P") => c.chip == "310P",
        Some("ascend-910") => c.chip == "910",
        _ => true,
    };
    DYNAMIC_VNPU_CHIPS.iter().filter(keep).collect()
}

fn allowed_on(chips: &[&DynamicVnpuChip]) -> String {
    match chips {
        [one] => format!("on {}: {}", one.chip, one.allowed_text()),
        _ => chips.iter().map(|c| format!("{}: {}", c.chip, c.allowed_text())).collect::<Vec<_>>().join("; "),
    }
}

/// What a dynamic vNPU role asks for.
pub struct DynamicRequest<'a> {
    /// Path of the `huawei.com/npu-core` entry.
    pub field: &'a str,
    /// AI cores requested.
    pub cores: u32,
    /// `node.kubernetes.io/npu.chip.name` selector, if any.
    pub chip_selector: Option<&'a str>,
    /// `ring-controller.atlas` value, if any.
    pub family: Option<&'a str>,
    /// (field, value) of the `vnpu-dvpp` label, if set.
    pub dvpp: Option<(String, &'a str)>,
    /// (field, value) of the `vnpu-level` label, if set.
    pub level: Option<(String, &'a str)>,
}

/// Checks one dynamic vNPU request against the chips it may run on.
pub fn check(req: &DynamicRequest<'_>, errs: &mut Vec<FieldError>) {
    let chips = candidate_chips(req.chip_selector, req.family);
    if chips.is_empty() {
        let names: Vec<&str> = DYNAMIC_VNPU_CHIPS.iter().map(|c| c.chip).collect();
        errs.push(FieldError::new(
            req.field,
            req.cores,
            format!(
                "dynamic vNPU is not available on chip {} ({CHIP_NAME_SELECTOR}); chips with dynamic vNPU: {}",
                req.chip_selector.unwrap_or_default(),
                names.join(", ")
            ),
        ));
        return;
    }
    let fitting: Vec<&DynamicVnpuChip> = chips.iter().copied().filter(|c| c.allows(req.cores)).collect();
    if fitting.is_empty() {
        errs.push(FieldError::new(
            req.field,
            req.cores,
            format!("dynamic vNPU AI cores allowed {}", allowed_on(&chips)),
        ));
        return;
    }
    // On 910B the DVPP and CPU-level labels only choose among the 910B4 10-core templates.
    let labels_usable = fitting.iter().any(|c| !c.is_910b() || (c.chip == "910B4" && req.cores == 10));
    if labels_usable {
        return;
    }
    let chip_names: Vec<&str> = fitting.iter().map(|c| c.chip).collect();
    if let Some((field, v)) = &req.dvpp {
        if *v != "null" {
            errs.push(FieldError::new(
                field.clone(),
                v,
                format!(
                    "npu-core {} on {} takes no vnpu-dvpp; allowed: null (only a 910B4 10-core vNPU takes yes or no)",
                    req.cores,
                    chip_names.join(", ")
                ),
            ));
        }
    }
    if let Some((field, v)) = &req.level {
        if *v != "low" {
            errs.push(FieldError::new(
                field.clone(),
                v,
                format!(
                    "npu-core {} on {} takes no vnpu-level; allowed: low (only a 910B4 10-core vNPU takes high)",
                    req.cores,
                    chip_names.join(", ")
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cores: u32, chip: Option<&str>, family: Option<&str>, dvpp: Option<&str>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let req = DynamicRequest {
            field: "f",
            cores,
            chip_selector: chip,
            family,
            dvpp: dvpp.map(|v| ("metadata.labels.vnpu-dvpp".to_string(), v)),
            level: None,
        };
        check(&req, &mut errs);
        errs
    }

    #[test]
    fn rule_table_per_chip() {
        let rule = |chip: &str, c: u32| match chip {
            "310P" => matches!(c, 1 | 2 | 4) || (c > 0 && c.is_multiple_of(8)),
            "910" => matches!(c, 2 | 4 | 8 | 16) || (c > 0 && c.is_multiple_of(32)),
            "910B1" => matches!(c, 6 | 12) || (c > 0 && c.is_multiple_of(25)),
            "910B2" | "910B2C" => matches!(c, 6 | 12) || (c > 0 && c.is_multiple_of(24)),
            _ => matches!(c, 5 | 10) || (c > 0 && c.is_multiple_of(20)),
        };
        for chip in DYNAMIC_VNPU_CHIPS {
            for c in 0..=128 {
                assert_eq!(chip.allows(c), rule(chip.chip, c), "{} {c}", chip.chip);
            }
        }
    }

    #[test]
    fn errors_name_value_and_allowed_for_the_chip() {
        let e = run(4, Some("910B3"), Some("ascend-910b"), None);
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].field.as_str(), e[0].value.as_str()), ("f", "4"));
        assert_eq!(
            e[0].message,
            "dynamic vNPU AI cores allowed on 910B3: 5 (vir05_1c_16g), 10 (vir10_3c_32g) or a multiple of 20 (whole chips)"
        );
        // The 310P rule no longer applies to 910B: 8 is neither a 910B3 template nor a whole chip.
        assert_eq!(run(8, Some("910B3"), None, None).len(), 1);
        assert!(run(40, Some("910B3"), None, None).is_empty());
        assert!(run(8, Some("310P3"), None, None).is_empty());
        // Family only: every 910B chip is named with its own counts.
        let e = run(7, None, Some("ascend-910b"), None);
        assert!(
            e[0].message.contains("910B1: 6 (vir06_1c_16g), 12 (vir12_3c_32g) or a multiple of 25"),
            "{}",
            e[0].message
        );
        assert!(e[0].message.contains("910B4: 5 (vir05_1c_8g)"), "{}", e[0].message);
        assert!(run(12, None, Some("ascend-910b"), None).is_empty());
        let e = run(3, Some("Ascend910"), None, None);
        assert!(e[0].message.starts_with("dynamic vNPU is not available on chip Ascend910"), "{}", e[0].message);
    }

    #[test]
    fn dvpp_only_for_910b4_ten_cores() {
        let e = run(5, Some("910B3"), None, Some("yes"));
        assert_eq!((e[0].field.as_str(), e[0].value.as_str()), ("metadata.labels.vnpu-dvpp", "yes"));
        assert!(e[0].message.contains("allowed: null"), "{}", e[0].message);
        assert!(run(5, Some("910B3"), None, Some("null")).is_empty());
        assert!(run(10, Some("910B4"), None, Some("no")).is_empty());
        assert_eq!(run(5, Some("910B4"), None, Some("yes")).len(), 1);
        // Without a chip selector a 10-core request may be a 910B4 one.
        assert!(run(10, None, Some("ascend-910b"), Some("yes")).is_empty());
        assert!(run(4, Some("310P3"), None, Some("yes")).is_empty());
    }
}
