//! One-click checks end to end: `ringleader check` creates CheckRuns on a
//! running `ringleader up`, the manager runs the probes as pods on the
//! virtual nodes (real TCP between the nodes' loopback addresses), and the
//! report, history, CSV export, re-run, terminate and delete work through
//! the CLI.

mod common;

use common::{cluster_yaml, Plane};
use serde_json::Value;

fn phase(p: &Plane, name: &str) -> String {
    p.get("checkruns", name)
        .and_then(|c| c.pointer("/status/phase").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default()
}

#[test]
fn a_collective_check_across_two_nodes_reports_the_table_and_keeps_history() {
    let p = Plane::start(&cluster_yaml(181, &[("h-1", "hgx-h100-8"), ("h-2", "hgx-h100-8")]), &[]);
    let out = p.ctl(&[
        "check",
        "collective",
        "--nodes",
        "h-1,h-2",
        "--ops",
        "all_reduce,all_gather,reduce_scatter,all_to_all",
        "--devices-per-node",
        "2",
        "--min-bytes",
        "4KiB",
        "--max-bytes",
        "16KiB",
        "--iters",
        "3",
        "--warmup",
        "1",
        "--name",
        "coll-1",
        "--wait",
        "--timeout",
        "120",
    ]);
    assert!(out.contains("checkrun/coll-1 created"), "{out}");
    assert!(out.contains("Phase:     Succeeded"), "{out}");
    for op in ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"] {
        assert!(out.contains(&format!("# {op}\ndata_size(Bytes) | aveg_time(us) | alg_bandwidth(GB/s)")), "{out}");
    }
    let check = p.get("checkruns", "coll-1").expect("checkrun");
    let rows = check.pointer("/status/report/rows").and_then(Value::as_array).cloned().unwrap_or_default();
    assert_eq!(rows.len(), 12, "3 sizes x 4 operations: {rows:?}");
    assert_eq!(rows[0]["data_size"], 4096);
    assert_eq!(rows[2]["data_size"], 16384);
    for r in &rows {
        assert_eq!(r["check_result"], "success", "{r}");
        let (alg, bus) = (r["alg_bandwidth"].as_f64().unwrap_or(0.0), r["bus_bandwidth"].as_f64().unwrap_or(0.0));
        // 2 nodes x 2 ranks: n = 4.
        let factor = if r["operation"] == "all_reduce" { 1.5 } else { 0.75 };
        assert!(alg > 0.0 && (bus - alg * factor).abs() < 1e-9, "{r}");
    }
    assert!(check.pointer("/status/startTime").and_then(Value::as_str).is_some_and(|t| !t.is_empty()));
    assert!(check.pointer("/status/finishTime").and_then(Value::as_str).is_some_and(|t| !t.is_empty()));

    // Re-run: a new CheckRun with the same spec, in the history after the first.
    let rerun = p.ctl(&["check", "rerun", "coll-1", "--wait", "--timeout", "120"]);
    assert!(rerun.contains("Phase:     Succeeded"), "{rerun}");
    let list = p.ctl(&["check", "list"]);
    let names: Vec<&str> = list.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(names.len(), 2, "{list}");
    assert_eq!(names[0], "coll-1", "{list}");
    assert!(names[1].starts_with("collective-"), "{list}");
    assert!(list.lines().skip(1).all(|l| l.contains("Succeeded") && l.contains("h-1,h-2")), "{list}");

    let got = p.ctl(&["get", "checkruns"]);
    assert!(
        got.lines().any(|l| l.starts_with("coll-1") && l.contains("collective") && l.contains("Succeeded")),
        "{got}"
    );
    let csv = p.ctl(&["check", "report", "coll-1", "-o", "csv"]);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("operation,data_size,aveg_time_us,alg_bandwidth,bus_bandwidth,check_result"));
    assert_eq!(lines.clone().count(), 12, "{csv}");
    assert!(lines.all(|l| l.ends_with(",success")), "{csv}");
    let json: Value = serde_json::from_str(&p.ctl(&["check", "report", "coll-1", "-o", "json"])).expect("json");
    assert_eq!(json["status"]["phase"], "Succeeded");

    // A long check is terminated: its probe pods go, its phase is Terminated.
    p.ctl(&[
        "check",
        "collective",
        "--nodes",
        "h-1,h-2",
        "--min-bytes",
        "64MiB",
        "--max-bytes",
        "128MiB",
        "--iters",
        "10000",
        "--name",
        "long-1",
    ]);
    p.wait_for(60, "long-1 running", |p| phase(p, "long-1") == "Running");
    p.ctl(&["check", "terminate", "long-1"]);
    p.wait_for(30, "long-1 Terminated", |p| phase(p, "long-1") == "Terminated");
    p.wait_for(30, "its probe pods gone", |p| {
        let pods = p.rt.block_on(p.client.list(common::find("pods"), Some("platform-system"), None));
        pods.map(|l| !l.items.iter().any(|x| x["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("long-1"))))
            .unwrap_or(false)
    });

    let deleted = p.ctl(&["check", "delete", "long-1"]);
    assert!(deleted.contains("checkrun/long-1 deleted"), "{deleted}");
    p.wait_for(10, "long-1 gone", |p| p.get("checkruns", "long-1").is_none());
}

#[test]
fn server_and_network_checks_report_real_facts() {
    let p = Plane::start(&cluster_yaml(182, &[("s-1", "hgx-h100-8"), ("s-2", "hgx-h100-8")]), &[]);
    let out = p.ctl(&[
        "check",
        "network",
        "--nodes",
        "s-1,s-2",
        "--min-bytes",
        "64KiB",
        "--iters",
        "3",
        "--name",
        "net-1",
        "--wait",
        "--timeout",
        "120",
    ]);
    assert!(out.contains("Phase:     Succeeded"), "{out}");
    let pairs = p.get("checkruns", "net-1").and_then(|c| c.pointer("/status/report/pairs").cloned()).expect("pairs");
    assert_eq!(pairs[0]["from"], "s-1");
    assert_eq!(pairs[0]["to"], "s-2");
    assert_eq!(pairs[0]["transport"], "tcp");
    assert!(pairs[0]["bandwidth_gbps"].as_f64().unwrap_or(0.0) > 0.0);

    // Server: on one machine both nodes read the same /proc, so the baseline
    // comparison passes. Whether the whole check passes depends on this
    // machine's load (cpu-load item), so only its end is waited for.
    p.ctl(&["check", "server", "--nodes", "s-1,s-2", "--baseline", "s-1", "--name", "srv-1"]);
    p.wait_for(60, "srv-1 finished", |p| matches!(phase(p, "srv-1").as_str(), "Succeeded" | "Failed"));
    let out = p.ctl(&["check", "report", "srv-1"]);
    let items = p.get("checkruns", "srv-1").and_then(|c| c.pointer("/status/report/items").cloned()).expect("items");
    let items = items.as_array().cloned().unwrap_or_default();
    let cpu = items.iter().find(|i| i["node"] == "s-1" && i["name"] == "cpu").expect("cpu item");
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpus = cpuinfo.lines().filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor")).count();
    assert!(cpu["result"].as_str().is_some_and(|r| r.starts_with(&format!("{cpus} CPUs"))), "{cpu} vs {cpus}");
    let driver = items.iter().find(|i| i["name"] == "driver").expect("driver item");
    assert!(driver["result"].as_str().is_some_and(|r| r.contains("virtual") || !r.contains("not present")), "{driver}");
    assert!(items.iter().any(|i| i["node"] == "s-2" && i["name"] == "consistency:cpu-model" && i["pass"] == true));
    assert!(out.contains("NODE") && out.contains("consistency:cpu-count"), "{out}");
}
