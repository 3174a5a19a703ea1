//! One measured scenario, as every benchmark reports it (table or JSON).

use serde::Serialize;

/// One measured scenario.
#[derive(Serialize)]
pub struct Scenario {
    pub name: String,
    pub nodes: usize,
    pub pods: usize,
    pub seconds: f64,
    pub pods_per_second: f64,
    /// Scenarios of many jobs: submission to all of a job's pods Running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_latency_p50: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_latency_p99: Option<f64>,
}

/// A scenario from its time and the pods it placed.
pub fn scenario(name: String, nodes: usize, (seconds, pods): (f64, usize)) -> Scenario {
    let pods_per_second = if seconds > 0.0 { pods as f64 / seconds } else { 0.0 };
    Scenario { name, nodes, pods, seconds, pods_per_second, job_latency_p50: None, job_latency_p99: None }
}
