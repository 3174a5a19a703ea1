//! End-to-end checks of the replays on small traces shipped with the crate
//! or built in the test.

use std::error::Error;
use std::path::PathBuf;

use rand::rngs::StdRng;
use rand::SeedableRng;
use ringleader_scheduler::nodeorder::{node_frag, ModelSet, NodeOrder, PodShape, Policy};
use ringleader_sim::load::{load_nodes, load_pods, parse_nodes, parse_pods};
use ringleader_sim::replay::saturation::{arrival_order, replay, SaturationConfig};
use ringleader_sim::replay::time;
use ringleader_sim::report::{json, svg};
use ringleader_sim::run::{run_saturation, summarize};
use ringleader_sim::trace::{Cluster, NodeSpec, PodRecord, Workload};
use ringleader_sim::Experiment;

type Res = Result<(), Box<dyn Error>>;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn small() -> Result<Experiment, Box<dyn Error>> {
    let cluster = load_nodes(&data("nodes_small.csv"))?;
    let workload = load_pods(&data("pods_small.csv"), &cluster)?;
    Ok(Experiment::new(cluster, workload))
}

fn pod(name: &str, cpu: u32, count: u32, milli: u32) -> PodRecord {
    PodRecord {
        name: name.to_string(),
        shape: PodShape { cpu_milli: cpu, mem_mib: 1, gpu_count: count, gpu_milli: milli, models: ModelSet::ANY },
        spec: String::new(),
        creation: None,
        deletion: None,
    }
}

fn one_model_cluster(gpus: &[u32], cpu: u32) -> Cluster {
    Cluster {
        nodes: gpus
            .iter()
            .enumerate()
            .map(|(i, &g)| NodeSpec {
                name: format!("n{i}"),
                cpu_milli: cpu,
                mem_mib: 1 << 20,
                gpus: g,
                model: Some(0),
            })
            .collect(),
        models: vec!["T4".to_string()],
    }
}

#[test]
fn shipped_traces_load() -> Res {
    let exp = small()?;
    assert_eq!(exp.cluster.nodes.len(), 35);
    assert_eq!(exp.cluster.gpu_count(), 152);
    assert_eq!(exp.workload.pods.len(), 300);
    assert_eq!(exp.workload.pods.iter().filter(|p| !p.spec.is_empty()).count(), 42);
    let multi = load_pods(&data("pods_multigpu_small.csv"), &exp.cluster)?;
    assert_eq!(multi.pods.len(), 60);
    assert_eq!(multi.pods.iter().filter(|p| p.shape.gpu_count > 1).count(), 20);
    assert!(multi.pods.iter().all(|p| p.creation.is_none()));
    Ok(())
}

#[test]
fn malformed_pod_row_is_an_error_naming_the_place() -> Res {
    let cluster = load_nodes(&data("nodes_small.csv"))?;
    let text = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nok,1000,10,1,500\nbad,1000,10,1,1500\n";
    let err = parse_pods(text, "pods.csv", &cluster).err().map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("pods.csv:3: column `gpu_milli`: invalid value `1500`: more than one GPU (1000) per GPU")
    );
    let err = parse_nodes("sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,\n", "n.csv").err().map(|e| e.to_string());
    assert_eq!(err.as_deref(), Some("n.csv:2: column `model`: invalid value ``: a node with GPUs needs a GPU model"));
    Ok(())
}

#[test]
fn shuffle_is_seeded_and_deterministic() -> Res {
    let exp = small()?;
    let (a, _) = arrival_order(&exp, 1.3, 42);
    let (b, _) = arrival_order(&exp, 1.3, 42);
    let (c, _) = arrival_order(&exp, 1.3, 43);
    assert_eq!(a, b);
    assert_ne!(a, c);
    let mut sorted = a.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), a.len(), "tune-down removes pods without duplicating any");
    Ok(())
}

#[test]
fn inflation_stops_just_below_the_target() {
    // 4 GPUs = 4000 milli; target 1.3 x 4000 = 5200; three 500-milli pods
    // (1500) plus a CPU pod; re-draws add 500 or 0 until the next 500 would
    // pass 5200, so GPU requests end at exactly 5000.
    let cluster = one_model_cluster(&[4], 64000);
    let workload = Workload {
        pods: vec![pod("a", 1000, 1, 500), pod("b", 1000, 1, 500), pod("c", 1000, 1, 500), pod("d", 1000, 0, 0)],
    };
    let exp = Experiment::new(cluster, workload);
    for seed in 0..20 {
        let (order, _) = arrival_order(&exp, 1.3, seed);
        let total: u64 = order.iter().map(|&i| exp.workload.pods[i].shape.total_gpu_milli()).sum();
        assert_eq!(total, 5000, "seed {seed}");
        // The original four pods come first, each once.
        assert_eq!(order[..4].iter().copied().collect::<std::collections::BTreeSet<_>>().len(), 4);
    }
}

#[test]
fn inflation_of_a_cpu_only_workload_adds_nothing() {
    // No GPU request can ever reach the target: the re-draw loop must not spin.
    let exp = Experiment::new(one_model_cluster(&[2], 8000), Workload { pods: vec![pod("a", 1000, 0, 0)] });
    let (order, _) = arrival_order(&exp, 1.3, 7);
    assert_eq!(order, vec![0]);
}

#[test]
fn allocation_bookkeeping_holds_for_every_policy() -> Res {
    let exp = small()?;
    let capacity = exp.cluster.gpu_capacity_milli();
    for policy in Policy::ALL {
        for seed in [1, 2] {
            let run = replay(&exp, policy, seed, SaturationConfig::default());
            assert_eq!(run.allocated_milli, run.placed_request_milli, "{policy} seed {seed}");
            assert!(run.allocated_milli <= capacity);
            assert!(run.pods_placed <= run.pods_arrived);
            assert!(run.curve.iter().all(|p| p.allocation_percent <= 100.0 + 1e-9 && p.allocation_percent >= 0.0));
            // Allocation never decreases with arrived load (no departures).
            assert!(run.curve.windows(2).all(|w| w[1].allocation_percent + 1e-9 >= w[0].allocation_percent));
            let again = replay(&exp, policy, seed, SaturationConfig::default());
            assert_eq!(run.curve, again.curve, "{policy} is reproducible per seed");
        }
    }
    Ok(())
}

#[test]
fn fgd_avoids_the_placement_that_fragments() {
    // Two 1-GPU nodes; workload 400, 600, 600 milli (1 core each), so the
    // typical pods are 600 milli (2/3) and 400 milli (1/3).
    let cluster = one_model_cluster(&[1, 1], 32000);
    let workload = Workload { pods: vec![pod("a", 1000, 1, 400), pod("b", 1000, 1, 600), pod("c", 1000, 1, 600)] };
    let exp = Experiment::new(cluster, workload);
    let mut nodes = exp.empty_nodes();
    let mut order = NodeOrder::new(Policy::Fgd, exp.typical.clone(), 2, 0);
    let mut rng = StdRng::seed_from_u64(0);
    // The 400 pod leaves 600 free wherever it goes: no fragment either way
    // (score 50 on both), so the rank decides: node 1.
    let first = order.choose(&nodes, &[1, 0], &exp.workload.pods[0].shape, None, &mut rng);
    assert_eq!(first.map(|d| d.node), Some(1));
    if let Some(d) = first {
        nodes[d.node].place(&exp.workload.pods[0].shape, d.gpus);
        order.node_changed(d.node);
    }
    // A 600 pod: on node 1 it fills the GPU (fragment 0 -> 0, score 50); on
    // the empty node 0 it leaves 400, a fragment for the 600 shape:
    // 400 x 2/3 = 266.7 -> sigmoid(-0.2667) x 100 = 43.4 -> 43. Ties would
    // now go to node 0, yet FGD must take node 1.
    let second = order.choose(&nodes, &[0, 1], &exp.workload.pods[1].shape, None, &mut rng);
    assert_eq!(second.map(|d| d.node), Some(1));
    let mut after = exp.empty_nodes()[0].clone();
    after.place(&exp.workload.pods[1].shape, 1);
    assert!((node_frag(&after, &exp.typical) - 400.0 * 2.0 / 3.0).abs() < 1e-9);
}

#[test]
fn time_replay_queues_fifo_and_counts_unplaced() -> Res {
    let cluster = one_model_cluster(&[1], 32000);
    let mut a = pod("a", 1000, 1, 1000);
    (a.creation, a.deletion) = (Some(0), Some(10));
    let mut b = pod("b", 1000, 1, 1000);
    (b.creation, b.deletion) = (Some(5), Some(30));
    let mut c = pod("c", 1000, 1, 1000);
    (c.creation, c.deletion) = (Some(6), Some(8));
    let mut d = pod("d", 1000, 1, 600);
    (d.creation, d.deletion) = (Some(7), Some(40));
    let exp = Experiment::new(cluster, Workload { pods: vec![a, b, c, d] });
    let run = time::replay(&exp, Policy::BestFit, 1)?;
    // a runs at once; b and d queue; c leaves before anything frees; at t=10
    // b (first in queue) takes the GPU and d keeps waiting; at 30 d starts.
    assert_eq!(run.placed, 3);
    assert_eq!(run.never_placed, 1);
    assert!((run.mean_queue_delay_s - (0.0 + 5.0 + 23.0) / 3.0).abs() < 1e-9);
    assert_eq!(run.p99_queue_delay_s, 23.0);
    // GPU busy 0..40 except nothing idle: 1000 from 0 to 30, 600 from 30 to 40.
    assert!((run.mean_utilisation_percent - 100.0 * (30.0 * 1000.0 + 10.0 * 600.0) / 40.0 / 1000.0).abs() < 1e-9);
    let multi = Experiment::new(exp.cluster.clone(), Workload { pods: vec![pod("x", 1, 1, 1000)] });
    assert!(time::replay(&multi, Policy::Fgd, 1).is_err());
    Ok(())
}

#[test]
fn json_and_svg_reports() -> Res {
    let exp = small()?;
    let runs = run_saturation(&exp, &[Policy::BestFit, Policy::Fgd], &[3, 4], SaturationConfig::default(), &|| {});
    assert_eq!(runs.len(), 4);
    let summaries = summarize(&runs);
    let doc: serde_json::Value = serde_json::from_str(&json::saturation_json(&summaries))?;
    let results = doc["results"].as_array().map(|a| a.len());
    assert_eq!(results, Some(2));
    assert_eq!(doc["results"][0]["policy"], "bestfit");
    assert_eq!(doc["results"][1]["seeds"], serde_json::json!([3, 4]));
    for key in ["90", "100", "110", "120", "130"] {
        assert!(doc["results"][0]["allocation"][key].is_number(), "allocation at {key}");
        assert!(doc["results"][0]["fragmentation"][key].is_number(), "fragmentation at {key}");
    }
    assert!(doc["results"][0]["micros_per_pod"].is_number());
    let plot = svg::allocation_svg(&summaries, "small");
    assert_eq!(plot.matches("<polyline").count(), 2);
    Ok(())
}
