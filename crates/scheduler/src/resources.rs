//! Accelerator amounts per resource name, the unit queues, quotas and DRF
//! count in. Amounts are thousandths of a device so GPU shares add up
//! exactly; `aliyun.com/gpu` counts as `nvidia.com/gpu`.

use crate::cluster::Node;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use ringleader_api::{DeviceKind, DeviceRequest, Job};
use ringleader_topology::DeviceSet;
use serde::Serialize;
use std::collections::BTreeMap;

/// Thousandths of a device per resource name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Resources(pub BTreeMap<String, u64>);

impl Resources {
    /// `amount` thousandths of `resource`.
    pub fn one(resource: &str, milli: u64) -> Resources {
        let mut r = Resources::default();
        r.add_to(resource, milli);
        r
    }

    /// Adds `milli` of `resource`.
    pub fn add_to(&mut self, resource: &str, milli: u64) {
        if milli > 0 {
            *self.0.entry(canonical(resource).to_string()).or_default() += milli;
        }
    }

    /// Adds every amount of `other`.
    pub fn add(&mut self, other: &Resources) {
        for (k, v) in &other.0 {
            self.add_to(k, *v);
        }
    }

    /// Takes away every amount of `other`, stopping at zero.
    pub fn sub(&mut self, other: &Resources) {
        for (k, v) in &other.0 {
            if let Some(have) = self.0.get_mut(k) {
                *have = have.saturating_sub(*v);
            }
        }
        self.0.retain(|_, v| *v > 0);
    }

    /// The amount of one resource.
    pub fn get(&self, resource: &str) -> u64 {
        self.0.get(canonical(resource)).copied().unwrap_or(0)
    }

    /// Whether nothing is counted.
    pub fn is_empty(&self) -> bool {
        self.0.values().all(|v| *v == 0)
    }

    /// `self + other`.
    pub fn plus(&self, other: &Resources) -> Resources {
        let mut r = self.clone();
        r.add(other);
        r
    }

    /// The first resource of `request` for which `used + request` exceeds
    /// `limit`; resources the limit does not name are unlimited.
    pub fn exceeds(used: &Resources, request: &Resources, limit: &Resources) -> Option<String> {
        request
            .0
            .iter()
            .filter(|(_, v)| **v > 0)
            .find(|(k, v)| limit.0.get(*k).is_some_and(|cap| used.get(k) + **v > *cap))
            .map(|(k, _)| k.clone())
    }

    /// Largest share `self / of` over the resources `of` names (0 when none).
    pub fn dominant_share(&self, of: &Resources) -> f64 {
        self.0
            .iter()
            .map(|(k, v)| match of.0.get(k) {
                Some(total) if *total > 0 => *v as f64 / *total as f64,
                _ if *v > 0 && of.0.contains_key(k) => f64::INFINITY,
                _ => 0.0,
            })
            .fold(0.0, f64::max)
    }

    /// Parses a Kubernetes resource list (queue capability, guarantee,
    /// deserved); amounts that are not plain numbers (`64Gi`) are left out:
    /// only accelerator counts matter to the scheduler.
    pub fn from_quantities(map: &BTreeMap<String, Quantity>) -> Resources {
        let mut r = Resources::default();
        for (k, q) in map {
            if let Some(milli) = parse_milli(&q.0) {
                *r.0.entry(canonical(k).to_string()).or_default() += milli;
            }
        }
        r
    }
}

/// Formats thousandths as a device count (`16`, `0.5`).
pub fn format_milli(milli: u64) -> String {
    if milli / 1000 * 1000 == milli {
        (milli / 1000).to_string()
    } else {
        format!("{}", milli as f64 / 1000.0)
    }
}

/// `aliyun.com/gpu` is an NVIDIA GPU under another name.
pub fn canonical(resource: &str) -> &str {
    match resource {
        "aliyun.com/gpu" => "nvidia.com/gpu",
        r => r,
    }
}

fn parse_milli(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(m) = s.strip_suffix('m') {
        return m.parse::<u64>().ok();
    }
    if let Ok(n) = s.parse::<u64>() {
        return n.checked_mul(1000);
    }
    let f = s.parse::<f64>().ok().filter(|f| f.is_finite() && *f >= 0.0)?;
    Some((f * 1000.0).round() as u64)
}

/// What one pod's device request counts as.
pub fn pod_request(req: &DeviceRequest) -> Resources {
    // GPU memory counts as the GPUs it is taken on (a vGPU each, as HAMi
    // counts `nvidia.com/gpu`), or their core share when one is given.
    let milli = match req.kind {
        DeviceKind::GpuShare { milli } => u64::from(milli),
        DeviceKind::GpuMem { cores, .. } if cores > 0 && cores < 100 => u64::from(req.count) * u64::from(cores) * 10,
        _ => u64::from(req.count) * 1000,
    };
    let resource = match req.kind {
        DeviceKind::GpuShare { .. } | DeviceKind::GpuMem { .. } => "nvidia.com/gpu",
        _ => req.resource.as_str(),
    };
    Resources::one(resource, milli)
}

/// Everything a job asks for: every pod of every role.
pub fn job_request(job: &Job) -> Resources {
    let mut r = Resources::default();
    for role in &job.roles {
        if let Some(d) = &role.device {
            let one = pod_request(d);
            for _ in 0..role.replicas {
                r.add(&one);
            }
        }
    }
    r
}

/// What the gang's first `minAvailable` pods (rank order) ask for: the least
/// the job can start with, which is what queue admission counts.
pub fn job_min_request(job: &Job) -> Resources {
    let mut left = job.scheduling.min_available.min(job.total_replicas());
    let mut r = Resources::default();
    for role in &job.roles {
        let take = left.min(role.replicas);
        left -= take;
        if let Some(d) = &role.device {
            let one = pod_request(d);
            for _ in 0..take {
                r.add(&one);
            }
        }
    }
    r
}

/// Devices of a node counted under its profile's resource name.
pub fn held(node: &Node, devices: DeviceSet) -> Resources {
    Resources::one(&node.profile.resource_name, u64::from(devices.len()) * 1000)
}

/// A node's healthy devices: what it adds to the cluster's total.
pub fn capacity(node: &Node) -> Resources {
    held(node, node.state.healthy(&node.profile))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_shares_and_names() {
        let q = |s: &str| Quantity(s.to_string());
        let caps = BTreeMap::from([
            ("huawei.com/Ascend910".to_string(), q("128")),
            ("aliyun.com/gpu".to_string(), q("500m")),
            ("memory".to_string(), q("4096Gi")),
        ]);
        let r = Resources::from_quantities(&caps);
        assert_eq!(r.get("huawei.com/Ascend910"), 128_000);
        assert_eq!(r.get("nvidia.com/gpu"), 500);
        assert_eq!(r.get("memory"), 0, "non-accelerator amounts are left out");
        assert_eq!(format_milli(16_000), "16");
        assert_eq!(format_milli(1_500), "1.5");
        let used = Resources::one("nvidia.com/gpu", 2000).plus(&Resources::one("huawei.com/Ascend910", 8000));
        let total = Resources::one("nvidia.com/gpu", 8000).plus(&Resources::one("huawei.com/Ascend910", 16000));
        assert_eq!(used.dominant_share(&total), 0.5);
        let limit = Resources::one("huawei.com/Ascend910", 10_000);
        assert_eq!(
            Resources::exceeds(&used, &Resources::one("huawei.com/Ascend910", 4000), &limit).as_deref(),
            Some("huawei.com/Ascend910")
        );
        assert_eq!(Resources::exceeds(&used, &Resources::one("nvidia.com/gpu", 4000), &limit), None);
    }
}
