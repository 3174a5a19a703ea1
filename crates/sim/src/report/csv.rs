//! Per-seed curves as CSV, for plotting elsewhere.

use std::fmt::Write;

use crate::replay::saturation::SaturationRun;
use crate::replay::time::TimeRun;

/// `policy,seed,arrived_percent,allocation_percent,fragmentation_percent` rows.
pub fn saturation_csv(runs: &[SaturationRun]) -> String {
    let mut out = String::from("policy,seed,arrived_percent,allocation_percent,fragmentation_percent\n");
    for r in runs {
        for p in &r.curve {
            let _ = writeln!(
                out,
                "{},{},{},{:.4},{:.4}",
                r.policy.name(),
                r.seed,
                p.arrived_percent,
                p.allocation_percent,
                p.fragmentation_percent
            );
        }
    }
    out
}

/// `policy,seed,time_s,utilisation_percent` rows.
pub fn time_csv(runs: &[TimeRun]) -> String {
    let mut out = String::from("policy,seed,time_s,utilisation_percent\n");
    for r in runs {
        for &(t, u) in &r.utilisation {
            let _ = writeln!(out, "{},{},{},{:.4}", r.policy.name(), r.seed, t, u);
        }
    }
    out
}
