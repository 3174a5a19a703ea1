//! CPU and memory of the agent's containers, for `metrics.k8s.io`
//! (`kubectl top`): one `ListContainerStats` every few seconds for all of
//! them (as kubelet's CRI stats provider asks), summed per pod UID. The
//! agent's usage sampler reads the latest sums as it reads `/proc` for the
//! process runtime.

use super::cri::{LABEL_MANAGED, LABEL_UID};
use crate::usage::Usage;
use ringleader_cri::{v1, Cri};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The latest sums, by pod UID.
#[derive(Clone)]
pub struct Stats {
    rx: watch::Receiver<Arc<HashMap<String, Usage>>>,
}

/// Sums the stats of each pod's containers (a container without figures
/// counts as zero: the runtime has not measured it yet).
pub fn per_pod(stats: &[v1::ContainerStats]) -> HashMap<String, Usage> {
    let mut out: HashMap<String, Usage> = HashMap::new();
    for s in stats {
        let Some(uid) = s.attributes.as_ref().and_then(|a| a.labels.get(LABEL_UID)) else { continue };
        let cpu = s.cpu.as_ref().and_then(|c| c.usage_core_nano_seconds.as_ref()).map_or(0, |v| v.value);
        let memory = s.memory.as_ref().and_then(|m| m.working_set_bytes.as_ref()).map_or(0, |v| v.value);
        let u = out.entry(uid.clone()).or_default();
        u.cpu_nanos = u.cpu_nanos.saturating_add(cpu);
        u.memory_bytes = u.memory_bytes.saturating_add(memory);
    }
    out
}

impl Stats {
    /// Asks the runtime every `every` until this handle is gone.
    pub fn spawn(mut cri: Cri, every: Duration) -> Stats {
        let (tx, rx) = watch::channel(Arc::new(HashMap::new()));
        tokio::spawn(async move {
            while !tx.is_closed() {
                let filter = v1::ContainerStatsFilter {
                    label_selector: HashMap::from([(LABEL_MANAGED.to_string(), "true".to_string())]),
                    ..Default::default()
                };
                let req = v1::ListContainerStatsRequest { filter: Some(filter) };
                // A runtime that does not answer leaves the last figures; the
                // sampler publishes nothing new for them.
                if let Ok(r) = cri.runtime.list_container_stats(req).await {
                    tx.send_replace(Arc::new(per_pod(&r.into_inner().stats)));
                }
                tokio::time::sleep(every).await;
            }
        });
        Stats { rx }
    }

    /// The latest sums, by pod UID.
    pub fn by_uid(&self) -> Arc<HashMap<String, Usage>> {
        self.rx.borrow().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(uid: &str, cpu: Option<u64>, memory: u64) -> v1::ContainerStats {
        v1::ContainerStats {
            attributes: Some(v1::ContainerAttributes {
                labels: HashMap::from([(LABEL_UID.to_string(), uid.to_string())]),
                ..Default::default()
            }),
            cpu: Some(v1::CpuUsage {
                usage_core_nano_seconds: cpu.map(|value| v1::UInt64Value { value }),
                ..Default::default()
            }),
            memory: Some(v1::MemoryUsage {
                working_set_bytes: Some(v1::UInt64Value { value: memory }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_pods_containers_are_summed_and_unmeasured_ones_count_zero() {
        let sums = per_pod(&[stat("a", Some(5), 100), stat("a", Some(7), 50), stat("b", None, 10)]);
        assert_eq!(sums["a"], Usage { cpu_nanos: 12, memory_bytes: 150 });
        assert_eq!(sums["b"], Usage { cpu_nanos: 0, memory_bytes: 10 });
        assert_eq!(sums.len(), 2);
    }
}
