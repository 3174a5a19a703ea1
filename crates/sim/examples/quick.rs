//! Quick run: `cargo run --release -p ringleader-sim --example quick -- NODES PODS POLICIES SEEDS`.
use std::path::Path;

use ringleader_sim::load::{load_nodes, load_pods};
use ringleader_sim::replay::saturation::SaturationConfig;
use ringleader_sim::run::{parse_policies, parse_seeds, run_saturation, summarize};
use ringleader_sim::Experiment;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let get = |i: usize, d: &str| args.get(i).cloned().unwrap_or_else(|| d.to_string());
    let cluster = load_nodes(Path::new(&get(1, "/work/shared/data/openb/openb_node_list_gpu_node.csv")))?;
    let workload = load_pods(Path::new(&get(2, "/work/shared/data/openb/openb_pod_list_default.csv")), &cluster)?;
    let policies = parse_policies(&get(3, "all"))?;
    let seeds = parse_seeds(&get(4, "42"))?;
    let exp = Experiment::new(cluster, workload);
    eprintln!("typical pods: {}", exp.typical.len());
    let t = std::time::Instant::now();
    let runs = run_saturation(&exp, &policies, &seeds, SaturationConfig::default(), &|| {});
    for s in summarize(&runs) {
        let a = |p| s.allocation.get(&p).map_or(f64::NAN, |x| x.mean);
        println!(
            "{:<11} 100%: {:6.2}  130%: {:6.2}  (min {:6.2} max {:6.2})  {:.2}s/seed {:.1}us/pod",
            s.policy.name(),
            a(100),
            a(130),
            s.allocation.get(&130).map_or(f64::NAN, |x| x.min),
            s.allocation.get(&130).map_or(f64::NAN, |x| x.max),
            s.seconds_per_seed,
            s.micros_per_pod
        );
    }
    eprintln!("total {:.2}s", t.elapsed().as_secs_f64());
    Ok(())
}
