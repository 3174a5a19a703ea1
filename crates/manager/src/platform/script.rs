//! ScriptRuns: a Script run on chosen nodes. Each node gets one batch/v1
//! Job (one pod, never restarted, pinned by `kubernetes.io/hostname`) in
//! `platform-system` running the script under `timeout`; the ScriptRun
//! records per node its state, exit code and the end of the pod's log, and
//! an overall state. A node's result, once final, is kept as written.

use super::node_job::{file_tail, node_job, node_jobs_of};
use super::object::{compact, dns_label, name, status_op};
use crate::cache::{annotation, at, str_at, Cache};
use crate::pods::{self, exit_code};
use ringleader_controller::lifecycle::PodPhase;
use ringleader_store::Op;
use serde_json::{json, Value};
use std::collections::HashMap;

pub use super::api::HOSTNAME_LABEL;

/// Label of a ScriptRun's jobs and pods: the ScriptRun.
pub const SCRIPT_RUN_LABEL: &str = "platform.ringleader.io/script-run";
/// Shortest and default script timeout (seconds).
pub const MIN_TIMEOUT: u64 = 600;
/// How much of a pod's log a node's result keeps.
pub const OUTPUT_BYTES: usize = 4096;

/// The name of the job of the `index`-th node of a ScriptRun.
pub fn job_name(script_run: &str, index: usize) -> String {
    dns_label(script_run, &format!("-{index}"))
}

/// The job running `content` on `node` for `sr`.
pub fn job(sr: &Value, index: usize, node: &str, content: &str, timeout: u64) -> Value {
    let container = json!({
        "name": "script",
        "image": "busybox:1.36",
        "command": ["timeout", timeout.to_string(), "/bin/sh", "-c", content],
    });
    node_job(sr, job_name(name(sr), index), SCRIPT_RUN_LABEL, node, container)
}

/// The last `OUTPUT_BYTES` of a file, if it can be read.
pub fn read_tail(path: &str) -> Option<String> {
    file_tail(path, OUTPUT_BYTES)
}

/// One node's entry from its pod (`None`: no pod yet).
fn node_entry(node: &str, pod: Option<&Value>, read_log: &dyn Fn(&str) -> Option<String>) -> Value {
    let Some(pod) = pod else { return json!({"node": node, "state": "running"}) };
    let (state, done) = match pods::phase_of(pod) {
        PodPhase::Pending | PodPhase::Unknown | PodPhase::Running => ("running", false),
        PodPhase::Succeeded => ("succeeded", true),
        PodPhase::Failed => ("failed", true),
    };
    let output =
        if done { annotation(pod, super::run::LOG_PATH).and_then(read_log).unwrap_or_default() } else { String::new() };
    compact(json!({"node": node, "state": state, "exitCode": if done { exit_code(pod) } else { None },
                   "output": output}))
}

/// The writes of one ScriptRun: its jobs created, its status.
pub fn decide(
    sr: &Value,
    scripts: &[Value],
    nodes: &[Value],
    jobs: &HashMap<String, &Value>,
    pods: &HashMap<String, &Value>,
    read_log: &dyn Fn(&str) -> Option<String>,
) -> Vec<Op> {
    let script_name = str_at(sr, &["spec", "script"]).unwrap_or_default();
    let Some(script) = scripts.iter().find(|s| name(s) == script_name) else {
        let wanted = json!({"state": "failed", "message": format!("script {script_name} not found"), "nodes": []});
        return status_op(sr, wanted).into_iter().collect();
    };
    let content = str_at(script, &["spec", "content"]).unwrap_or_default();
    let timeout =
        at(script, &["spec", "timeoutSeconds"]).and_then(Value::as_u64).unwrap_or(MIN_TIMEOUT).max(MIN_TIMEOUT);
    let before: Vec<Value> = at(sr, &["status", "nodes"]).and_then(Value::as_array).cloned().unwrap_or_default();
    let mut ops = Vec::new();
    let mut entries = Vec::new();
    for (i, node) in
        at(sr, &["spec", "nodes"]).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).enumerate()
    {
        let kept = before.iter().find(|e| e.get("node").and_then(Value::as_str) == Some(node));
        if let Some(e) = kept.filter(|e| matches!(e.get("state").and_then(Value::as_str), Some("succeeded" | "failed")))
        {
            entries.push(e.clone());
            continue;
        }
        if !nodes.iter().any(|n| name(n) == node) {
            entries.push(json!({"node": node, "state": "failed", "output": format!("node {node} not found")}));
            continue;
        }
        let jn = job_name(name(sr), i);
        let Some(j) = jobs.get(&jn) else {
            ops.push(Op::Create(job(sr, i, node, content, timeout)));
            entries.push(node_entry(node, None, read_log));
            continue;
        };
        let pod = str_at(j, &["metadata", "uid"]).and_then(|uid| pods.get(uid).copied());
        entries.push(node_entry(node, pod, read_log));
    }
    let states: Vec<&str> = entries.iter().filter_map(|e| e.get("state").and_then(Value::as_str)).collect();
    let state = if states.contains(&"running") {
        "running"
    } else if states.contains(&"failed") {
        "failed"
    } else {
        "succeeded"
    };
    let done = states.iter().filter(|s| matches!(**s, "succeeded" | "failed")).count();
    let message = format!("{done}/{} node(s) done", states.len());
    ops.extend(status_op(sr, json!({"state": state, "message": message, "nodes": entries})));
    ops
}

/// The writes of every ScriptRun in the cache.
pub fn pass_ops(cache: &Cache, _now: f64) -> Vec<Op> {
    use super::api::{API, NODE_API};
    use super::object::objects;
    let runs = objects(cache, API, "ScriptRun");
    if runs.is_empty() {
        return Vec::new();
    }
    let (scripts, nodes) = (objects(cache, API, "Script"), objects(cache, NODE_API, "Node"));
    let mut ops = Vec::new();
    for sr in &runs {
        let (jobs, pods) = node_jobs_of(cache, str_at(sr, &["metadata", "uid"]));
        ops.extend(decide(sr, &scripts, &nodes, &jobs, &pods, &read_tail));
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_api::{validate, Resource};

    fn sr() -> Value {
        json!({"apiVersion": super::super::API, "kind": "ScriptRun", "metadata": {"name": "check", "uid": "sr-uid"},
               "spec": {"script": "df", "nodes": ["a", "b", "ghost"]}})
    }

    fn scripts() -> Vec<Value> {
        vec![json!({"metadata": {"name": "df"}, "spec": {"content": "df -h /", "timeoutSeconds": 900}})]
    }

    fn nodes() -> Vec<Value> {
        vec![json!({"metadata": {"name": "a"}}), json!({"metadata": {"name": "b"}})]
    }

    #[test]
    fn one_valid_job_per_node_runs_the_script_under_timeout() {
        let no_log = |_: &str| None;
        let ops = decide(&sr(), &scripts(), &nodes(), &HashMap::new(), &HashMap::new(), &no_log);
        let created: Vec<&Value> =
            ops.iter().filter_map(|o| if let Op::Create(v) = o { Some(v) } else { None }).collect();
        assert_eq!(created.len(), 2);
        let j = created[1];
        assert_eq!(j["metadata"]["name"], "check-1");
        assert_eq!(j["metadata"]["ownerReferences"][0]["uid"], "sr-uid");
        let pod = &j["spec"]["template"]["spec"];
        assert_eq!(pod["nodeSelector"][HOSTNAME_LABEL], "b");
        assert_eq!(pod["containers"][0]["command"], json!(["timeout", "900", "/bin/sh", "-c", "df -h /"]));
        let r = Resource::from_value(j).expect("typed");
        assert!(validate(&r).is_empty(), "{:?}", validate(&r));
        let Some(Op::Patch { patch, .. }) = ops.last() else { panic!("{ops:?}") };
        assert_eq!(patch["status"]["state"], "running");
        assert_eq!(
            patch["status"]["nodes"][2],
            json!({"node": "ghost", "state": "failed",
                                                       "output": "node ghost not found"})
        );
    }

    #[test]
    fn results_come_from_the_pods_and_their_logs() {
        let job = |n: &str| json!({"metadata": {"name": n, "uid": format!("uid-{n}")}});
        let (ja, jb) = (job("check-0"), job("check-1"));
        let jobs: HashMap<String, &Value> = [("check-0".to_string(), &ja), ("check-1".to_string(), &jb)].into();
        let pod = |phase: &str, code: i64| {
            json!({"metadata": {"annotations": {super::super::run::LOG_PATH: "/x/log"}},
            "status": {"phase": phase, "containerStatuses": [{"state": {"terminated": {"exitCode": code}}}]}})
        };
        let (pa, pb) = (pod("Succeeded", 0), pod("Failed", 124));
        let pods: HashMap<String, &Value> = [("uid-check-0".to_string(), &pa), ("uid-check-1".to_string(), &pb)].into();
        let log = |p: &str| Some(format!("log of {p}"));
        let ops = decide(&sr(), &scripts(), &nodes(), &jobs, &pods, &log);
        let Some(Op::Patch { patch, .. }) = ops.last() else { panic!("{ops:?}") };
        let st = &patch["status"];
        assert_eq!(st["state"], "failed");
        assert_eq!(
            st["nodes"][0],
            json!({"node": "a", "state": "succeeded", "exitCode": 0, "output": "log of /x/log"})
        );
        assert_eq!(st["nodes"][1]["exitCode"], 124);
        assert_eq!(st["message"], "3/3 node(s) done");
        // Final results are kept: nothing to write once recorded.
        let mut done = sr();
        done["status"] = st.clone();
        assert!(decide(&done, &scripts(), &nodes(), &HashMap::new(), &HashMap::new(), &|_: &str| None).is_empty());
    }

    #[test]
    fn a_missing_script_fails_the_run() {
        let ops = decide(&sr(), &[], &nodes(), &HashMap::new(), &HashMap::new(), &|_: &str| None);
        let Some(Op::Patch { patch, .. }) = ops.first() else { panic!("{ops:?}") };
        assert_eq!(patch["status"]["message"], "script df not found");
    }

    #[test]
    fn the_tail_of_a_log_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("log");
        let text = format!("{}END", "x".repeat(5000));
        std::fs::write(&path, &text).expect("write");
        let tail = read_tail(path.to_str().unwrap_or_default()).unwrap_or_default();
        assert_eq!(tail.len(), OUTPUT_BYTES);
        assert!(tail.ends_with("END"));
        assert_eq!(read_tail("/no/such/file"), None);
    }
}
