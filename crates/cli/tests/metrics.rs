//! `/metrics` of a running `ringleader up`, scraped with the API token after
//! a job started, checked by Prometheus' own linter (`promtool check metrics`,
//! from Debian's `prometheus` package) and for the figures the job leaves.
//! Without promtool on the PATH the promtool step says so and is skipped,
//! unless `RINGLEADER_REQUIRE_PROMTOOL=1` (CI installs it), where that is a
//! failure.

mod common;

use common::{cluster_yaml, Plane};

const BLOCK: u8 = 177;

fn job(name: &str) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  minAvailable: 1\n  queue: default\n  tasks:\n  - name: main\n    replicas: 1\n    template:\n      metadata: {{annotations: {{ringleader.io/duration: \"120\"}}}}\n      spec:\n        restartPolicy: Never\n        containers:\n        - name: main\n          image: busybox\n          command: [\"/bin/true\"]\n          resources:\n            limits: {{nvidia.com/gpu: 2}}\n"
    )
}

/// The value of the first sample line starting with `prefix`.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines().find(|l| l.starts_with(prefix)).and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok())
}

#[test]
fn a_live_scrape_passes_promtool_and_counts_the_running_job() {
    let p = Plane::start(&cluster_yaml(BLOCK, &[("gpu-1", "hgx-h100-8")]), &["--runtime", "simulated"]);
    p.apply(&job("m1")).expect("apply");
    p.wait_for(60, "m1 Running", |p| p.phase("vcjob", "m1") == "Running");
    let mut text = String::new();
    // The gauges follow the store's watch: a bounded wait for them to catch up.
    p.wait_for(30, "the job's devices and start in /metrics", |p| {
        text = p.rt.block_on(p.client.metrics_text()).unwrap_or_default();
        sample(&text, "ringleader_job_start_duration_seconds_count") == Some(1.0)
            && text
                .lines()
                .filter(|l| l.starts_with("ringleader_device_allocated{node=\"gpu-1\""))
                .filter(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) == Some(1.0))
                .count()
                == 2
    });
    for family in [
        "scheduler_schedule_attempts_total{result=\"scheduled\",profile=\"ringleader\"}",
        "scheduler_pod_scheduling_sli_duration_seconds_count",
        "scheduler_scheduling_attempt_duration_seconds_count",
        "apiserver_request_total{",
        "apiserver_request_duration_seconds_count{",
        "apiserver_storage_objects{resource=\"pods\"}",
        "ringleader_jobs{kind=\"Job\",group=\"batch.volcano.sh\",phase=\"Running\"}",
        "ringleader_pods{namespace=\"default\",phase=\"Running\"}",
        "volcano_queue_allocated_scalar_resources{queue_name=\"default\",resource=\"nvidia.com/gpu\"}",
        "volcano_queue_weight{queue_name=\"default\"}",
        "kube_node_status_condition{node=\"gpu-1\",condition=\"Ready\",status=\"true\"}",
        "ringleader_device_healthy{node=\"gpu-1\",device=\"0\"",
        "ringleader_store_resource_version",
        "process_resident_memory_bytes",
        "process_start_time_seconds",
        "ringleader_build_info{version=",
    ] {
        assert!(sample(&text, family).is_some_and(|v| v > 0.0), "{family} missing or zero in:\n{text}");
    }
    assert_eq!(
        sample(&text, "volcano_queue_allocated_scalar_resources{queue_name=\"default\",resource=\"nvidia.com/gpu\"}"),
        Some(2.0)
    );

    common::promtool_check_metrics(&text);
}
