//! Running policies × seeds in parallel and summarising over seeds.

use std::collections::BTreeMap;

use rayon::prelude::*;
use ringleader_scheduler::nodeorder::Policy;

use crate::replay::saturation::{self, SaturationConfig, SaturationRun};
use crate::replay::time::{self, TimeReplayError, TimeRun};
use crate::replay::Experiment;

/// Arrived-load percentages every summary reports.
pub const REPORT_POINTS: [u32; 5] = [90, 100, 110, 120, 130];

/// Parses `42-51`, `1,3,5` or a mix (`1,4-6`) into seeds, in the given order.
pub fn parse_seeds(text: &str) -> Result<Vec<u64>, String> {
    let mut seeds = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let number = |s: &str| s.trim().parse::<u64>().map_err(|_| format!("invalid seed `{s}` in `{text}`"));
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(format!("empty seed range `{part}`"));
                }
                if b - a >= 100_000 {
                    return Err(format!("seed range `{part}` is too long"));
                }
                seeds.extend(a..=b);
            }
            None => seeds.push(number(part)?),
        }
    }
    if seeds.is_empty() {
        return Err(format!("no seeds in `{text}`"));
    }
    Ok(seeds)
}

/// Parses `fgd,bestfit` (or `all`) into policies.
pub fn parse_policies(text: &str) -> Result<Vec<Policy>, String> {
    if text.trim().eq_ignore_ascii_case("all") {
        return Ok(Policy::ALL.to_vec());
    }
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<Policy>().map_err(|e| e.to_string()))
        .collect()
}

/// Runs every policy on every seed (in parallel); `tick` is called after each
/// run. Results come back in policy-major, seed-minor order.
pub fn run_saturation(
    exp: &Experiment,
    policies: &[Policy],
    seeds: &[u64],
    config: SaturationConfig,
    tick: &(dyn Fn() + Sync),
) -> Vec<SaturationRun> {
    let jobs: Vec<(Policy, u64)> = policies.iter().flat_map(|&p| seeds.iter().map(move |&s| (p, s))).collect();
    jobs.par_iter()
        .map(|&(p, s)| {
            let r = saturation::replay(exp, p, s, config);
            tick();
            r
        })
        .collect()
}

/// Time replays of every policy and seed, in parallel.
pub fn run_time(
    exp: &Experiment,
    policies: &[Policy],
    seeds: &[u64],
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<TimeRun>, TimeReplayError> {
    let jobs: Vec<(Policy, u64)> = policies.iter().flat_map(|&p| seeds.iter().map(move |&s| (p, s))).collect();
    jobs.par_iter()
        .map(|&(p, s)| {
            let r = time::replay(exp, p, s);
            tick();
            r
        })
        .collect()
}

/// Mean, minimum, maximum and standard deviation of one figure over seeds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    /// Mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Population standard deviation.
    pub stddev: f64,
}

impl Spread {
    /// The spread of `values` (all zero when empty).
    pub fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        Spread {
            mean,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            stddev: var.sqrt(),
        }
    }
}

/// One policy's saturation results over its seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicySummary {
    /// The policy.
    pub policy: Policy,
    /// Seeds run.
    pub seeds: Vec<u64>,
    /// Allocation % per reported arrived-load percent.
    pub allocation: BTreeMap<u32, Spread>,
    /// Fragmentation % per reported arrived-load percent.
    pub fragmentation: BTreeMap<u32, Spread>,
    /// Mean allocation curve, one point per integer percent reached by every seed.
    pub curve: Vec<(u32, f64)>,
    /// Mean wall time per seed, seconds.
    pub seconds_per_seed: f64,
    /// Mean scheduling time per pod, microseconds.
    pub micros_per_pod: f64,
}

/// Groups runs by policy (first-seen order) and averages over seeds.
pub fn summarize(runs: &[SaturationRun]) -> Vec<PolicySummary> {
    let mut order: Vec<Policy> = Vec::new();
    for r in runs {
        if !order.contains(&r.policy) {
            order.push(r.policy);
        }
    }
    order
        .into_iter()
        .map(|policy| {
            let mine: Vec<&SaturationRun> = runs.iter().filter(|r| r.policy == policy).collect();
            let n = mine.len().max(1) as f64;
            let mut allocation = BTreeMap::new();
            let mut fragmentation = BTreeMap::new();
            for pct in REPORT_POINTS {
                let points: Vec<_> = mine.iter().filter_map(|r| r.at(pct)).collect();
                if points.len() == mine.len() && !points.is_empty() {
                    let a: Vec<f64> = points.iter().map(|p| p.allocation_percent).collect();
                    let f: Vec<f64> = points.iter().map(|p| p.fragmentation_percent).collect();
                    allocation.insert(pct, Spread::of(&a));
                    fragmentation.insert(pct, Spread::of(&f));
                }
            }
            let top = mine.iter().map(|r| r.curve.last().map_or(0, |p| p.arrived_percent)).min().unwrap_or(0);
            let curve = (0..=top)
                .filter_map(|pct| {
                    let v: Vec<f64> = mine.iter().filter_map(|r| r.at(pct)).map(|p| p.allocation_percent).collect();
                    (v.len() == mine.len() && !v.is_empty()).then(|| (pct, v.iter().sum::<f64>() / v.len() as f64))
                })
                .collect();
            PolicySummary {
                policy,
                seeds: mine.iter().map(|r| r.seed).collect(),
                allocation,
                fragmentation,
                curve,
                seconds_per_seed: mine.iter().map(|r| r.seconds).sum::<f64>() / n,
                micros_per_pod: mine.iter().map(|r| r.micros_per_pod).sum::<f64>() / n,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_seed_ranges_and_lists() {
        assert_eq!(parse_seeds("42-45"), Ok(vec![42, 43, 44, 45]));
        assert_eq!(parse_seeds("1, 7,3-4"), Ok(vec![1, 7, 3, 4]));
        assert!(parse_seeds("5-3").is_err());
        assert!(parse_seeds("x").is_err());
        assert!(parse_seeds("").is_err());
    }

    #[test]
    fn parses_policy_lists() {
        assert_eq!(parse_policies("fgd,BestFit"), Ok(vec![Policy::Fgd, Policy::BestFit]));
        assert_eq!(parse_policies("all").map(|p| p.len()), Ok(7));
        assert!(parse_policies("fgd,tetris").is_err());
    }

    #[test]
    fn spread_of_values() {
        let s = Spread::of(&[1.0, 3.0]);
        assert_eq!((s.mean, s.min, s.max, s.stddev), (2.0, 1.0, 3.0, 1.0));
    }
}
