//! Property checks of the saturation replay on random small clusters.

use proptest::prelude::*;
use ringleader_scheduler::nodeorder::{ModelSet, PodShape, Policy};
use ringleader_sim::replay::saturation::{replay, SaturationConfig};
use ringleader_sim::trace::{Cluster, NodeSpec, PodRecord, Workload};
use ringleader_sim::Experiment;

fn cluster(nodes: &[(u32, u32)]) -> Cluster {
    Cluster {
        nodes: nodes
            .iter()
            .enumerate()
            .map(|(i, &(cpu, gpus))| NodeSpec {
                name: format!("n{i:02}"),
                cpu_milli: cpu,
                mem_mib: 65536,
                gpus,
                model: (gpus > 0).then_some((i % 2) as u16),
            })
            .collect(),
        models: vec!["A".to_string(), "B".to_string()],
    }
}

fn pod_strategy() -> impl Strategy<Value = (u32, u32, u32, u8)> {
    (1u32..=16, prop_oneof![Just(0u32), Just(1), Just(2)], 1u32..=10, 0u8..3)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn bookkeeping_never_exceeds_capacity(
        nodes in prop::collection::vec((prop_oneof![Just(8000u32), Just(32000), Just(96000)], 1u32..=8), 1..8),
        pods in prop::collection::vec(pod_strategy(), 1..40),
        seed in 0u64..1000,
    ) {
        let c = cluster(&nodes);
        let workload = Workload {
            pods: pods
                .iter()
                .enumerate()
                .map(|(i, &(cores, count, tenths, spec))| {
                    let milli = if count == 1 { tenths * 100 } else { 1000 };
                    PodRecord {
                        name: format!("p{i:03}"),
                        shape: PodShape {
                            cpu_milli: cores * 1000,
                            mem_mib: 1024,
                            gpu_count: count,
                            gpu_milli: if count == 0 { 0 } else { milli },
                            models: match spec { 1 => ModelSet::only([0]), 2 => ModelSet::only([1]), _ => ModelSet::ANY },
                        },
                        spec: match spec { 1 => "A".into(), 2 => "B".into(), _ => String::new() },
                        creation: None,
                        deletion: None,
                    }
                })
                .collect(),
        };
        let exp = Experiment::new(c, workload);
        let capacity = exp.cluster.gpu_capacity_milli();
        for policy in Policy::ALL {
            let run = replay(&exp, policy, seed, SaturationConfig::default());
            prop_assert_eq!(run.allocated_milli, run.placed_request_milli);
            prop_assert!(run.allocated_milli <= capacity);
            prop_assert!(run.curve.iter().all(|p| p.allocation_percent <= 100.0 + 1e-9));
            prop_assert!(run.curve.iter().all(|p| (0.0..=100.0 + 1e-9).contains(&p.fragmentation_percent)));
        }
    }
}
