//! The monitoring files in `deploy/` (issue 17): every metric family the
//! alert rules and the Grafana dashboard query is one a live `ringleader up`
//! serves (a renamed family would leave a silent dashboard), and Prometheus'
//! own checker accepts the rules and the scrape configuration. Without
//! promtool the promtool steps say SKIPPED, unless
//! `RINGLEADER_REQUIRE_PROMTOOL=1` (CI installs it).

mod common;

use common::{cluster_yaml, repo, Plane};
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::Command;

const BLOCK: u8 = 88;

/// The prefixes of ringleader's families (docs/metrics.md).
const PREFIXES: &[&str] = &["ringleader_", "scheduler_", "volcano_", "kube_", "apiserver_", "process_"];

/// Metric names a PromQL expression uses (identifiers with our prefixes).
fn metric_names(expr: &str) -> BTreeSet<String> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|w| PREFIXES.iter().any(|p| w.starts_with(p)))
        .map(str::to_string)
        .collect()
}

/// The family a sample name belongs to (`foo_total` of counter `foo`, the
/// `_bucket`/`_sum`/`_count` of histogram `foo`).
fn family_of<'a>(name: &'a str, families: &BTreeSet<String>) -> Option<&'a str> {
    if families.contains(name) {
        return Some(name);
    }
    ["_total", "_bucket", "_sum", "_count"].iter().find_map(|s| name.strip_suffix(s).filter(|f| families.contains(*f)))
}

fn exprs_of_dashboard(dash: &Value) -> Vec<String> {
    dash["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_string))
        .collect()
}

fn exprs_of_rules(rules: &Value) -> Vec<String> {
    rules["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r["expr"].as_str().map(str::to_string))
        .collect()
}

fn promtool(args: &[&str]) -> Option<(bool, String)> {
    let present = Command::new("promtool").arg("--version").output().is_ok_and(|o| o.status.success());
    if !present {
        let required = std::env::var("RINGLEADER_REQUIRE_PROMTOOL").as_deref() == Ok("1");
        assert!(!required, "RINGLEADER_REQUIRE_PROMTOOL=1 but promtool is not on PATH");
        eprintln!("promtool not found on PATH: `promtool {}` is SKIPPED", args.join(" "));
        return None;
    }
    let out = Command::new("promtool").args(args).output().expect("promtool");
    Some((
        out.status.success(),
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
    ))
}

#[test]
fn alerts_and_dashboard_query_only_served_families_and_pass_promtool() {
    let deploy = repo().join("deploy");
    let rules_path = deploy.join("prometheus/alerts.yml");
    let rules: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&rules_path).expect("alerts.yml"))
        .expect("alerts.yml is YAML");
    let dash: Value =
        serde_json::from_str(&std::fs::read_to_string(deploy.join("grafana/ringleader.json")).expect("dashboard"))
            .expect("the dashboard is JSON");
    let alerts: BTreeSet<&str> =
        rules["groups"][0]["rules"].as_array().into_iter().flatten().filter_map(|r| r["alert"].as_str()).collect();
    for want in ["RingleaderNodeNotReady", "RingleaderDeviceUnhealthy", "RingleaderJobFailed", "RingleaderQueueStarved"]
    {
        assert!(alerts.contains(want), "alert {want} in {alerts:?}");
    }

    // Every name a query of ours uses, read before the plane starts.
    let mut queried: BTreeSet<(String, String)> = BTreeSet::new();
    for expr in exprs_of_dashboard(&dash).iter().chain(exprs_of_rules(&rules).iter()) {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "a query of ours names a family of ours: {expr}");
        queried.extend(names.into_iter().map(|n| (n, expr.clone())));
    }

    // The families a live plane serves, from its TYPE lines, once a queue
    // with a share runs one job and cannot fit another (a family with no
    // series yet is not written). Some families appear only after the
    // first heartbeat, scheduling pass or API request, so the scrape is
    // repeated until every queried one is there or the minute is up.
    let p = Plane::start(&cluster_yaml(BLOCK, &[("gpu-1", "hgx-h100-8")]), &["--runtime", "simulated"]);
    let job = |name: &str, gpus: u32| {
        format!(
            "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {name}, namespace: default}}\n\
             spec:\n  minAvailable: 1\n  queue: team\n  tasks:\n  - name: main\n    replicas: 1\n    template:\n\
             \x20     spec:\n        containers:\n        - name: main\n          image: busybox\n\
             \x20         resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}\n"
        )
    };
    p.apply(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: team}\n\
         spec: {weight: 1, deserved: {nvidia.com/gpu: 8}, capability: {nvidia.com/gpu: 8}}\n",
    )
    .expect("queue");
    p.apply(&job("fits", 8)).expect("job");
    p.apply(&job("too-big", 16)).expect("job");
    let served = |text: &str| -> BTreeSet<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_string)
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let families = loop {
        let families = served(&p.rt.block_on(p.client.metrics_text()).unwrap_or_default());
        let all = queried.iter().all(|(name, _)| family_of(name, &families).is_some());
        if all || std::time::Instant::now() > deadline {
            break families;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    for (name, expr) in &queried {
        assert!(family_of(name, &families).is_some(), "{name} (in `{expr}`) is not served; families: {families:?}");
    }
    let queried: BTreeSet<&str> = queried.iter().map(|(n, _)| n.as_str()).collect();
    assert!(queried.len() >= 10, "the dashboard covers devices, queues, scheduling, jobs and the API: {queried:?}");

    if let Some((ok, out)) = promtool(&["check", "rules", &rules_path.to_string_lossy()]) {
        assert!(ok, "promtool check rules:\n{out}");
    }
    let config = deploy.join("prometheus/prometheus.yml");
    if let Some((ok, out)) = promtool(&["check", "config", "--syntax-only", &config.to_string_lossy()]) {
        assert!(ok, "promtool check config:\n{out}");
    }
}

#[test]
fn metric_names_are_read_out_of_promql() {
    let names = metric_names(
        "histogram_quantile(0.99, sum by (le) (rate(scheduler_pod_scheduling_sli_duration_seconds_bucket[5m]))) and on (queue) label_replace(volcano_queue_weight, \"queue\", \"$1\", \"queue_name\", \"(.*)\")",
    );
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(names, ["scheduler_pod_scheduling_sli_duration_seconds_bucket", "volcano_queue_weight"]);
    let families: BTreeSet<String> = ["scheduler_schedule_attempts".to_string()].into();
    assert_eq!(family_of("scheduler_schedule_attempts_total", &families), Some("scheduler_schedule_attempts"));
    assert_eq!(family_of("scheduler_nothing_total", &families), None);
}
