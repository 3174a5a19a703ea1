//! Terminal summary tables.

use std::fmt::Write;

use crate::replay::time::TimeRun;
use crate::run::{PolicySummary, Spread};

fn cell(s: Option<&Spread>) -> String {
    match s {
        Some(s) => format!("{:6.2} ({:6.2}–{:6.2})", s.mean, s.min, s.max),
        None => format!("{:>22}", "n/a"),
    }
}

/// Allocation at 100% and 130% arrived load per policy: mean (min–max over seeds).
pub fn saturation_table(summaries: &[PolicySummary]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<11} {:>5}  {:<22}  {:<22}  {:>8}  {:>8}  {:>7}",
        "policy", "seeds", "alloc% @100 (min–max)", "alloc% @130 (min–max)", "frag%@130", "s/seed", "µs/pod"
    );
    for s in summaries {
        let frag = s.fragmentation.get(&130).map_or(f64::NAN, |f| f.mean);
        let _ = writeln!(
            out,
            "{:<11} {:>5}  {}  {}  {:>8.2}  {:>8.3}  {:>7.1}",
            s.policy.name(),
            s.seeds.len(),
            cell(s.allocation.get(&100)),
            cell(s.allocation.get(&130)),
            frag,
            s.seconds_per_seed,
            s.micros_per_pod
        );
    }
    out
}

/// Queueing delay, unplaced pods and utilisation per policy (mean over seeds).
pub fn time_table(runs: &[TimeRun]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<11} {:>5}  {:>14}  {:>13}  {:>12}  {:>10}  {:>7}",
        "policy", "seeds", "mean delay s", "p99 delay s", "never placed", "mean util%", "µs/pod"
    );
    let mut order = Vec::new();
    for r in runs {
        if !order.contains(&r.policy) {
            order.push(r.policy);
        }
    }
    for p in order {
        let mine: Vec<&TimeRun> = runs.iter().filter(|r| r.policy == p).collect();
        let n = mine.len().max(1) as f64;
        let mean = |f: fn(&TimeRun) -> f64| mine.iter().map(|r| f(r)).sum::<f64>() / n;
        let _ = writeln!(
            out,
            "{:<11} {:>5}  {:>14.1}  {:>13.1}  {:>12.1}  {:>10.2}  {:>7.1}",
            p.name(),
            mine.len(),
            mean(|r| r.mean_queue_delay_s),
            mean(|r| r.p99_queue_delay_s),
            mean(|r| r.never_placed as f64),
            mean(|r| r.mean_utilisation_percent),
            mean(|r| r.micros_per_pod)
        );
    }
    out
}
