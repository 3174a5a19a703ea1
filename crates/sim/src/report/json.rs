//! The `-o json` document.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::replay::time::TimeRun;
use crate::run::PolicySummary;

#[derive(Serialize)]
struct Report<T> {
    results: Vec<T>,
}

#[derive(Serialize)]
struct SaturationEntry {
    policy: &'static str,
    seeds: Vec<u64>,
    allocation: BTreeMap<u32, f64>,
    fragmentation: BTreeMap<u32, f64>,
    seconds_per_seed: f64,
    micros_per_pod: f64,
}

#[derive(Serialize)]
struct TimeEntry {
    policy: &'static str,
    seeds: Vec<u64>,
    mean_queue_delay_s: f64,
    p99_queue_delay_s: f64,
    never_placed: f64,
    mean_utilisation: f64,
    seconds_per_seed: f64,
    micros_per_pod: f64,
}

fn round(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// Saturation summaries as `{"results":[{"policy":…,"seeds":[…],"allocation":{"90":…},…}]}`;
/// allocation and fragmentation are percent, mean over seeds, keyed by
/// arrived GPU request in percent of capacity.
pub fn saturation_json(summaries: &[PolicySummary]) -> String {
    let results = summaries
        .iter()
        .map(|s| SaturationEntry {
            policy: s.policy.name(),
            seeds: s.seeds.clone(),
            allocation: s.allocation.iter().map(|(&k, v)| (k, round(v.mean))).collect(),
            fragmentation: s.fragmentation.iter().map(|(&k, v)| (k, round(v.mean))).collect(),
            seconds_per_seed: round(s.seconds_per_seed),
            micros_per_pod: round(s.micros_per_pod),
        })
        .collect();
    serde_json::to_string_pretty(&Report { results }).unwrap_or_default()
}

/// Time-replay results, averaged per policy over seeds.
pub fn time_json(runs: &[TimeRun]) -> String {
    let mut order = Vec::new();
    for r in runs {
        if !order.contains(&r.policy) {
            order.push(r.policy);
        }
    }
    let results = order
        .into_iter()
        .map(|p| {
            let mine: Vec<&TimeRun> = runs.iter().filter(|r| r.policy == p).collect();
            let n = mine.len().max(1) as f64;
            let mean = |f: fn(&TimeRun) -> f64| round(mine.iter().map(|r| f(r)).sum::<f64>() / n);
            TimeEntry {
                policy: p.name(),
                seeds: mine.iter().map(|r| r.seed).collect(),
                mean_queue_delay_s: mean(|r| r.mean_queue_delay_s),
                p99_queue_delay_s: mean(|r| r.p99_queue_delay_s),
                never_placed: mean(|r| r.never_placed as f64),
                mean_utilisation: mean(|r| r.mean_utilisation_percent),
                seconds_per_seed: mean(|r| r.seconds),
                micros_per_pod: mean(|r| r.micros_per_pod),
            }
        })
        .collect();
    serde_json::to_string_pretty(&Report { results }).unwrap_or_default()
}
