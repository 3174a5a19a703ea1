//! `ringleader describe` as text, kubectl style: pure functions from the
//! objects the command fetched (and `now`) to what it prints, so the layout
//! is tested without a server. Jobs show their queue, phase, conditions,
//! replicas, PodGroup and pods; pods their node, devices, containers and
//! exit codes; nodes their health and who holds which device; everything
//! ends with the `Events:` about it. Missing fields print as `<none>`.

use crate::devices::{device_list, device_map, held_devices};
use crate::support::{human_duration, since, sort_events, source, table};
use ringleader_server::ResourceType;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

fn or_none(x: &str) -> String {
    if x.is_empty() {
        "<none>".into()
    } else {
        x.to_string()
    }
}

/// Where values start: past the longest label (`Last Heartbeat:`), as
/// kubectl's tab writer aligns a block.
const LABEL_WIDTH: usize = 16;

/// `Label:` padded to the value column, then the value.
fn field(out: &mut String, label: &str, value: &str) {
    let label = format!("{label}:");
    let _ = writeln!(out, "{label:<LABEL_WIDTH$}{}{value}", if label.len() >= LABEL_WIDTH { " " } else { "" });
}

/// A field whose values go one per line under the first (labels, annotations).
fn multi(out: &mut String, label: &str, values: &[String]) {
    match values.split_first() {
        None => field(out, label, "<none>"),
        Some((first, rest)) => {
            field(out, label, first);
            for v in rest {
                let _ = writeln!(out, "{:LABEL_WIDTH$}{v}", "");
            }
        }
    }
}

/// An RFC 3339 stamp with its age, or `<none>`.
fn stamp(t: &str, now: f64) -> String {
    if t.is_empty() {
        "<none>".into()
    } else {
        format!("{t} ({} ago)", since(t, now))
    }
}

fn indent(text: &str, by: usize) -> String {
    text.lines().map(|l| format!("{:by$}{l}", "")).collect::<Vec<_>>().join("\n")
}

fn labels(v: &Value) -> Vec<String> {
    let Some(map) = v.pointer("/metadata/labels").and_then(Value::as_object) else { return vec![] };
    map.iter().map(|(k, x)| format!("{k}={}", x.as_str().unwrap_or_default())).collect()
}

/// Annotations, with the long machine-written ones summarized.
fn annotations(v: &Value) -> Vec<String> {
    let Some(map) = v.pointer("/metadata/annotations").and_then(Value::as_object) else { return vec![] };
    map.iter()
        .map(|(k, x)| {
            let text = x.as_str().map_or_else(|| x.to_string(), str::to_string);
            if k == "ringleader.io/files" {
                let files: BTreeMap<String, Value> = serde_json::from_str(&text).unwrap_or_default();
                let paths: Vec<&str> = files.keys().map(String::as_str).collect();
                return format!("{k}: {} file(s): {}", paths.len(), paths.join(", "));
            }
            let short: String = text.chars().take(100).collect();
            let more = if short.len() < text.len() { "…" } else { "" };
            format!("{k}: {short}{more}")
        })
        .collect()
}

fn common(out: &mut String, t: &ResourceType, v: &Value, now: f64) {
    field(out, "Name", s(v, "/metadata/name"));
    if t.namespaced {
        field(out, "Namespace", s(v, "/metadata/namespace"));
    }
    field(out, "Kind", &format!("{} ({})", t.kind, t.api_version));
    multi(out, "Labels", &labels(v));
    multi(out, "Annotations", &annotations(v));
    field(out, "Created", &stamp(s(v, "/metadata/creationTimestamp"), now));
}

/// Whether an event is about `object`: same uid, or (an event without one)
/// same kind, name and namespace.
fn is_about(e: &Value, object: &Value) -> bool {
    let uid = s(e, "/involvedObject/uid");
    if !uid.is_empty() {
        return uid == s(object, "/metadata/uid");
    }
    !s(e, "/involvedObject/name").is_empty()
        && s(e, "/involvedObject/kind") == s(object, "/kind")
        && s(e, "/involvedObject/name") == s(object, "/metadata/name")
        && s(e, "/involvedObject/namespace") == s(object, "/metadata/namespace")
}

/// The `Events:` section: the events about any of `objects`, oldest first.
pub fn events_section(events: &[Value], objects: &[&Value], now: f64) -> String {
    let mut mine: Vec<Value> = events.iter().filter(|e| objects.iter().any(|o| is_about(e, o))).cloned().collect();
    if mine.is_empty() {
        let mut out = String::new();
        field(&mut out, "Events", "<none>");
        return out;
    }
    sort_events(&mut mine);
    let rows: Vec<Vec<String>> = mine
        .iter()
        .map(|e| {
            let count = e.get("count").and_then(Value::as_u64).unwrap_or(1);
            let first = match s(e, "/firstTimestamp") {
                "" => s(e, "/eventTime"),
                t => t,
            };
            let age = if count > 1 {
                format!("{} (x{count} over {})", since(s(e, "/lastTimestamp"), now), since(first, now))
            } else {
                since(first, now)
            };
            vec![
                s(e, "/type").to_string(),
                s(e, "/reason").to_string(),
                age,
                source(e).to_string(),
                s(e, "/message").trim().to_string(),
            ]
        })
        .collect();
    let mut header_and_rule =
        vec![vec!["----", "------", "----", "----", "-------"].into_iter().map(String::from).collect()];
    header_and_rule.extend(rows);
    format!("Events:\n{}\n", indent(&table(&["Type", "Reason", "Age", "From", "Message"], &header_and_rule), 2))
}

/// A job: its state, replicas, PodGroup and pods, then the events about the
/// job and its PodGroup.
pub fn job(
    t: &ResourceType,
    job: &Value,
    pods: &[&Value],
    podgroup: Option<&Value>,
    events: &[Value],
    now: f64,
) -> String {
    let mut out = String::new();
    common(&mut out, t, job, now);
    let queue = podgroup
        .map(|pg| s(pg, "/spec/queue"))
        .filter(|q| !q.is_empty())
        .or_else(|| Some(s(job, "/spec/runPolicy/schedulingPolicy/queue")).filter(|q| !q.is_empty()))
        .or_else(|| Some(s(job, "/spec/queue")).filter(|q| !q.is_empty()))
        .unwrap_or("default");
    field(&mut out, "Queue", queue);
    let phase = match (s(job, "/status/ringleader/phase"), s(job, "/status/state/phase")) {
        ("", "") => "Pending",
        ("", p) | (p, _) => p,
    };
    field(&mut out, "Phase", phase);
    let reason = s(job, "/status/ringleader/reason");
    if !reason.is_empty() {
        field(&mut out, "Reason", reason);
        field(&mut out, "Message", &or_none(s(job, "/status/ringleader/message")));
    }
    for (label, path) in [("Started", "/status/startTime"), ("Completed", "/status/completionTime")] {
        if !s(job, path).is_empty() {
            field(&mut out, label, &stamp(s(job, path), now));
        }
    }
    if let Some(r) = job.pointer("/status/ringleader/retries").and_then(Value::as_u64).filter(|r| *r > 0) {
        field(&mut out, "Retries", &r.to_string());
    }
    out.push_str(&conditions(job));
    out.push_str(&replicas(job));
    match podgroup {
        Some(pg) => {
            let min = pg.pointer("/spec/minMember").map_or("-".to_string(), Value::to_string);
            let phase = or_none(s(pg, "/status/phase"));
            field(&mut out, "PodGroup", &format!("{} (phase {phase}, minMember {min})", s(pg, "/metadata/name")));
            let why = pg
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|c| c.iter().find(|c| s(c, "/type") == "Unschedulable"))
                .map(|c| s(c, "/message"));
            if let Some(why) = why.filter(|w| !w.is_empty()) {
                field(&mut out, "Unschedulable", why);
            }
        }
        None => field(&mut out, "PodGroup", "<none>"),
    }
    if pods.is_empty() {
        field(&mut out, "Pods", "<none>");
    } else {
        let pod_t = ringleader_registry::resources::PODS;
        // The server Table's pod columns, wide, so `describe` shows what `get pods -o wide` does.
        // Plus the devices each pod holds, which is what a topology-aware placement is about.
        let mut header: Vec<String> =
            ringleader_server::table::columns(pod_t).iter().map(|c| c.name.to_uppercase()).collect();
        header.push("DEVICES".into());
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let rows: Vec<Vec<String>> = pods
            .iter()
            .map(|p| {
                let cells = ringleader_server::table::cells(pod_t, p, now);
                let mut row: Vec<String> =
                    cells.iter().map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_string)).collect();
                row.push(match s(p, "/metadata/annotations/ringleader.io~1devices") {
                    "" => "<none>".to_string(),
                    d => d.to_string(),
                });
                row
            })
            .collect();
        let _ = writeln!(out, "Pods:\n{}", indent(&table(&header, &rows), 2));
    }
    let mut about = vec![job];
    about.extend(podgroup);
    out.push_str(&events_section(events, &about, now));
    out
}

/// Kubeflow-style `status.conditions`, or the controller's own record.
fn conditions(job: &Value) -> String {
    let rows: Vec<Vec<String>> = if let Some(list) = job.pointer("/status/conditions").and_then(Value::as_array) {
        list.iter()
            .map(|c| {
                ["/type", "/status", "/reason", "/lastTransitionTime", "/message"]
                    .iter()
                    .map(|p| or_none(s(c, p)))
                    .collect()
            })
            .collect()
    } else if let Some(list) = job.pointer("/status/ringleader/conditions").and_then(Value::as_array) {
        list.iter()
            .map(|c| {
                let status = if c.get("status").and_then(Value::as_bool) == Some(true) { "True" } else { "False" };
                let at = c.get("last_transition").and_then(Value::as_f64).map(ringleader_api::time::rfc3339);
                vec![
                    or_none(s(c, "/kind")),
                    status.to_string(),
                    or_none(s(c, "/reason")),
                    at.unwrap_or_else(|| "<none>".into()),
                    or_none(s(c, "/message")),
                ]
            })
            .collect()
    } else {
        vec![]
    };
    if rows.is_empty() {
        let mut out = String::new();
        field(&mut out, "Conditions", "<none>");
        return out;
    }
    format!("Conditions:\n{}\n", indent(&table(&["Type", "Status", "Reason", "Last Transition", "Message"], &rows), 2))
}

/// Pods per role by state.
fn replicas(job: &Value) -> String {
    let count = |r: &Value, k: &str| r.get(k).and_then(Value::as_u64).unwrap_or(0).to_string();
    let (header, rows): (&[&str], Vec<Vec<String>>) = if let Some(map) =
        job.pointer("/status/ringleader/replica_statuses").and_then(Value::as_object)
    {
        let rows = map
            .iter()
            .map(|(role, r)| {
                vec![role.clone(), count(r, "pending"), count(r, "running"), count(r, "succeeded"), count(r, "failed")]
            })
            .collect();
        (&["Role", "Pending", "Running", "Succeeded", "Failed"], rows)
    } else if let Some(map) = job.pointer("/status/replicaStatuses").and_then(Value::as_object) {
        let rows = map
            .iter()
            .map(|(role, r)| vec![role.clone(), count(r, "active"), count(r, "succeeded"), count(r, "failed")])
            .collect();
        (&["Role", "Active", "Succeeded", "Failed"], rows)
    } else {
        (&[], vec![])
    };
    if rows.is_empty() {
        let mut out = String::new();
        field(&mut out, "Replicas", "<none>");
        return out;
    }
    format!("Replicas:\n{}\n", indent(&table(header, &rows), 2))
}

/// A pod: placement, state, containers, then its events.
pub fn pod(pod: &Value, events: &[Value], now: f64) -> String {
    let mut out = String::new();
    common(&mut out, ringleader_registry::resources::PODS, pod, now);
    let node = s(pod, "/spec/nodeName");
    let host = s(pod, "/status/hostIP");
    field(
        &mut out,
        "Node",
        &match (node, host) {
            ("", _) => "<none>".to_string(),
            (n, "") => n.to_string(),
            (n, h) => format!("{n}/{h}"),
        },
    );
    let devices = match pod.pointer("/metadata/annotations/ringleader.io~1devices").and_then(Value::as_str) {
        None => "<none>".to_string(),
        Some("") => "<none> (bound without devices)".to_string(),
        Some(d) => d.to_string(),
    };
    field(&mut out, "Devices", &devices);
    field(&mut out, "Start Time", &stamp(s(pod, "/status/startTime"), now));
    let deleting = pod.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null());
    let status = match s(pod, "/status/phase") {
        _ if deleting => "Terminating",
        "" => "Pending",
        p => p,
    };
    field(&mut out, "Status", status);
    field(&mut out, "IP", &or_none(s(pod, "/status/podIP")));
    let owner = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .and_then(|refs| refs.iter().find(|r| r.get("controller").and_then(Value::as_bool) != Some(false)))
        .map(|r| format!("{}/{}", s(r, "/kind"), s(r, "/name")));
    field(&mut out, "Controlled By", &owner.unwrap_or_else(|| "<none>".into()));
    let containers = pod.pointer("/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default();
    let statuses = pod.pointer("/status/containerStatuses").and_then(Value::as_array).cloned().unwrap_or_default();
    if containers.is_empty() {
        field(&mut out, "Containers", "<none>");
    } else {
        out.push_str("Containers:\n");
    }
    for (i, c) in containers.iter().enumerate() {
        let name = s(c, "/name");
        let st = statuses.iter().find(|x| s(x, "/name") == name).or_else(|| statuses.get(i));
        out.push_str(&indent(&container(c, st, status, now), 2));
        out.push('\n');
    }
    if let Some(log) = pod.pointer("/metadata/annotations/ringleader.io~1log-path").and_then(Value::as_str) {
        field(&mut out, "Log", log);
    }
    out.push_str(&events_section(events, &[pod], now));
    out
}

fn container(c: &Value, st: Option<&Value>, pod_status: &str, now: f64) -> String {
    let mut out = format!("{}:\n", or_none(s(c, "/name")));
    let mut inner = String::new();
    field(&mut inner, "Image", &or_none(s(c, "/image")));
    for (label, key) in [("Command", "command"), ("Args", "args")] {
        let words: Vec<String> = c
            .get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|w| w.as_str().map_or_else(|| w.to_string(), str::to_string)).collect())
            .unwrap_or_default();
        if !words.is_empty() {
            let _ = writeln!(inner, "{label}:\n{}", indent(&words.join("\n"), 2));
        }
    }
    if !s(c, "/workingDir").is_empty() {
        field(&mut inner, "Working Dir", s(c, "/workingDir"));
    }
    let state = st.and_then(|x| x.get("state")).and_then(Value::as_object);
    match state.and_then(|m| m.iter().next()) {
        Some((kind, detail)) => {
            let mut word = kind.clone();
            if let Some(first) = word.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            field(&mut inner, "State", &word);
            let mut more = String::new();
            for (label, key) in [("Reason", "reason"), ("Exit Code", "exitCode"), ("Signal", "signal")] {
                if let Some(v) = detail.get(key) {
                    field(&mut more, label, &v.as_str().map_or_else(|| v.to_string(), str::to_string));
                }
            }
            for (label, key) in [("Started", "startedAt"), ("Finished", "finishedAt")] {
                if let Some(t) = detail.get(key).and_then(Value::as_str) {
                    field(&mut more, label, &stamp(t, now));
                }
            }
            if !more.is_empty() {
                inner.push_str(&indent(&more, 2));
                inner.push('\n');
            }
        }
        None => field(&mut inner, "State", if pod_status == "Pending" { "Waiting" } else { pod_status }),
    }
    for (label, path) in [("Requests", "/resources/requests"), ("Limits", "/resources/limits")] {
        if let Some(map) = c.pointer(path).and_then(Value::as_object).filter(|m| !m.is_empty()) {
            let lines: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}: {}", v.as_str().map_or_else(|| v.to_string(), str::to_string)))
                .collect();
            let _ = writeln!(inner, "{label}:\n{}", indent(&lines.join("\n"), 2));
        }
    }
    let env: Vec<&str> =
        c.get("env").and_then(Value::as_array).map(|e| e.iter().map(|v| s(v, "/name")).collect()).unwrap_or_default();
    if env.is_empty() {
        field(&mut inner, "Environment", "<none>");
    } else {
        let _ = writeln!(inner, "Environment:\n{}", indent(&wrap(&env, 96), 2));
    }
    out.push_str(&indent(&inner, 2));
    out
}

/// Words joined by `, ` on lines of at most `width` characters.
fn wrap(words: &[&str], width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for w in words {
        if !line.is_empty() && line.len() + w.len() + 2 > width {
            lines.push(format!("{line},"));
            line.clear();
        }
        if !line.is_empty() {
            line.push_str(", ");
        }
        line.push_str(w);
    }
    lines.push(line);
    lines.join("\n")
}

/// A node: profile, readiness, device health, who holds which device, then
/// its events.
pub fn node(node: &Value, pods: &[Value], events: &[Value], now: f64) -> String {
    let mut out = String::new();
    common(&mut out, ringleader_registry::resources::NODES, node, now);
    let name = s(node, "/metadata/name");
    let profile_name = s(node, "/spec/profile");
    let profile = ringleader_topology::builtin(profile_name);
    field(
        &mut out,
        "Profile",
        &match &profile {
            Some(p) => format!("{} ({} devices)", p.name, p.devices.len()),
            None if profile_name.is_empty() => "<none>".into(),
            None => format!("{profile_name} (unknown profile)"),
        },
    );
    field(&mut out, "Address", &or_none(s(node, "/spec/address")));
    if !s(node, "/spec/network/superPod").is_empty() {
        field(&mut out, "SuperPoD", s(node, "/spec/network/superPod"));
    }
    let stopped = node.pointer("/spec/stopped").and_then(Value::as_bool) == Some(true);
    let ready = match node.pointer("/status/ready").and_then(Value::as_bool) {
        Some(false) => "NotReady",
        _ if stopped => "Stopped",
        Some(true) => "Ready",
        None => "Unknown",
    };
    field(&mut out, "Status", ready);
    let heartbeat = match node.pointer("/status/lastHeartbeat").and_then(Value::as_f64) {
        Some(t) => format!("{} ({} ago)", ringleader_api::time::rfc3339(t), human_duration(now - t)),
        None => "<none>".into(),
    };
    field(&mut out, "Last Heartbeat", &heartbeat);
    let ids = |list: &[u64]| {
        if list.is_empty() {
            "<none>".to_string()
        } else {
            list.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
        }
    };
    let unhealthy = device_list(node, "/status/unhealthyDevices");
    let network = device_list(node, "/status/networkUnhealthyDevices");
    field(&mut out, "Unhealthy", &ids(&unhealthy));
    field(&mut out, "Network Faults", &ids(&network));
    let injected =
        (device_list(node, "/spec/injectedFaults/unhealthy"), device_list(node, "/spec/injectedFaults/network"));
    if !injected.0.is_empty() || !injected.1.is_empty() {
        field(&mut out, "Injected", &format!("unhealthy {}, network {}", ids(&injected.0), ids(&injected.1)));
    }
    let held = held_devices(pods);
    match &profile {
        Some(p) => {
            let (map, used) = device_map(name, p, &unhealthy, &held);
            field(&mut out, "Allocated", &format!("{used}/{} [{map}] (#=allocated x=unhealthy)", p.devices.len()));
            let rows: Vec<Vec<String>> = p
                .devices
                .iter()
                .map(|d| {
                    let holder = held.get(&(name.to_string(), d.id));
                    let mut state = match holder {
                        Some(_) => "allocated".to_string(),
                        None => "free".to_string(),
                    };
                    if unhealthy.contains(&u64::from(d.id)) {
                        state = format!("unhealthy, {state}");
                    } else if network.contains(&u64::from(d.id)) {
                        state = format!("network-unhealthy, {state}");
                    }
                    let pod = holder.map_or("-".to_string(), |(ns, pod)| format!("{ns}/{pod}"));
                    vec![d.id.to_string(), state, pod]
                })
                .collect();
            let _ = writeln!(out, "Devices:\n{}", indent(&table(&["DEVICE", "STATE", "POD"], &rows), 2));
        }
        None => field(&mut out, "Devices", "<none>"),
    }
    out.push_str(&events_section(events, &[node], now));
    out
}

/// Any other object: its fields as YAML, then its events.
pub fn other(t: &ResourceType, v: &Value, events: &[Value], now: f64) -> String {
    let mut out = String::new();
    common(&mut out, t, v, now);
    if let Some(map) = v.as_object() {
        for (k, x) in map.iter().filter(|(k, _)| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata")) {
            let yaml = serde_yaml_ng::to_string(x).unwrap_or_default();
            let mut label = k.clone();
            if let Some(first) = label.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            let _ = writeln!(out, "{label}:\n{}", indent(yaml.trim_end(), 2));
        }
    }
    if t.kind != "Event" {
        out.push_str(&events_section(events, &[v], now));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// 2026-11-23T10:00:00Z, the stamps below are relative to it.
    const NOW: f64 = 1_795_428_000.0;

    /// An event: `what` is type, reason, message; `when` first and last time.
    fn event(name: &str, about: Value, what: [&str; 3], count: u64, when: [&str; 2]) -> Value {
        let ([kind, reason, message], [first, last]) = (what, when);
        json!({"apiVersion": "v1", "kind": "Event",
               "metadata": {"name": name, "namespace": "default", "resourceVersion": "1"},
               "involvedObject": about, "type": kind, "reason": reason, "message": message, "count": count,
               "firstTimestamp": first, "lastTimestamp": last,
               "source": {"component": "ringleader-scheduler"}})
    }

    fn job_object() -> Value {
        json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "demo", "namespace": "default", "uid": "job-uid",
                         "creationTimestamp": "2026-11-23T09:55:00Z", "labels": {"team": "a"}},
            "spec": {"runPolicy": {"schedulingPolicy": {"queue": "research"}}},
            "status": {
                "conditions": [{"type": "Created", "status": "True", "reason": "PyTorchJobCreated",
                                "message": "job created", "lastTransitionTime": "2026-11-23T09:55:00Z"}],
                "ringleader": {"phase": "Pending", "reason": "Created", "message": "job created",
                               "replica_statuses": {"Master": {"pending": 1, "running": 0, "succeeded": 0, "failed": 0},
                                                    "Worker": {"pending": 1, "running": 0, "succeeded": 0, "failed": 0}}}}})
    }

    #[test]
    fn a_job_shows_its_state_pods_and_the_events_about_it_and_its_podgroup() {
        let t = ringleader_registry::resources::find("pytorchjobs").expect("type");
        let job = job_object();
        let pg = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "demo", "namespace": "default", "uid": "pg-uid"},
            "spec": {"minMember": 2, "queue": "research"},
            "status": {"phase": "Pending", "conditions": [{"type": "Unschedulable", "message": "0/1 nodes fit"}]}});
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "demo-master-0", "namespace": "default", "uid": "pod-uid",
                         "creationTimestamp": "2026-11-23T09:55:00Z"},
            "status": {"phase": "Pending"}});
        let events = vec![
            event(
                "demo.2",
                json!({"kind": "PodGroup", "name": "demo", "uid": "pg-uid"}),
                ["Warning", "Unschedulable", "0/1 nodes fit"],
                3,
                ["2026-11-23T09:55:01Z", "2026-11-23T09:58:00Z"],
            ),
            event(
                "demo.1",
                json!({"kind": "PyTorchJob", "name": "demo", "uid": "job-uid"}),
                ["Normal", "PyTorchJobCreated", "job created"],
                1,
                ["2026-11-23T09:55:00Z", "2026-11-23T09:55:00Z"],
            ),
            event(
                "other.1",
                json!({"kind": "PyTorchJob", "name": "other", "uid": "other-uid"}),
                ["Normal", "PyTorchJobCreated", "not this one"],
                1,
                ["2026-11-23T09:55:00Z", "2026-11-23T09:55:00Z"],
            ),
            // Same name, older incarnation: another uid.
            event(
                "demo.0",
                json!({"kind": "PyTorchJob", "name": "demo", "uid": "old-uid"}),
                ["Normal", "PyTorchJobCreated", "an old job"],
                1,
                ["2026-11-23T09:00:00Z", "2026-11-23T09:00:00Z"],
            ),
        ];
        let text = super::job(t, &job, &[&pod], Some(&pg), &events, NOW);
        for line in [
            "Name:           demo",
            "Namespace:      default",
            "Kind:           PyTorchJob (kubeflow.org/v1)",
            "Labels:         team=a",
            "Annotations:    <none>",
            "Created:        2026-11-23T09:55:00Z (5m ago)",
            "Queue:          research",
            "Phase:          Pending",
            "PodGroup:       demo (phase Pending, minMember 2)",
            "Unschedulable:  0/1 nodes fit",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} missing in\n{text}");
        }
        assert!(text.contains("Created   True     PyTorchJobCreated   2026-11-23T09:55:00Z   job created"), "{text}");
        assert!(text.contains("Master   1         0         0           0"), "{text}");
        assert!(text.contains("demo-master-0"), "{text}");
        let events_at = text.find("Events:").expect("events section");
        let tail = &text[events_at..];
        assert!(tail.starts_with("Events:\n  Type      Reason              Age                  From"), "{tail}");
        let created = tail.find("PyTorchJobCreated").expect("job event");
        let unschedulable = tail.find("Unschedulable").expect("podgroup event");
        assert!(created < unschedulable, "oldest first:\n{tail}");
        assert!(tail.contains("2m (x3 over 4m59s)"), "{tail}");
        assert!(!tail.contains("not this one") && !tail.contains("an old job"), "{tail}");
        assert!(text.ends_with("0/1 nodes fit\n"), "events come last:\n{text}");
    }

    #[test]
    fn a_pod_shows_node_devices_containers_and_exit_code() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "demo-master-0", "namespace": "default", "uid": "pod-uid",
                         "creationTimestamp": "2026-11-23T09:59:00Z",
                         "annotations": {"ringleader.io/devices": "0,1",
                                         "ringleader.io/files": "{\"/etc/mpi/hostfile\":\"a\",\"/x/hccl.json\":\"{}\"}"},
                         "ownerReferences": [{"kind": "PyTorchJob", "name": "demo", "uid": "job-uid", "controller": true}]},
            "spec": {"nodeName": "h100-1", "containers": [{"name": "pytorch", "image": "ringleader/probe",
                "command": ["ringleader", "probe"], "args": ["allreduce"],
                "env": [{"name": "MASTER_ADDR", "value": "127.0.1.5"}, {"name": "RANK", "value": "0"}],
                "resources": {"requests": {"nvidia.com/gpu": 2}}}]},
            "status": {"phase": "Failed", "hostIP": "127.0.1.5", "podIP": "127.0.1.5",
                       "startTime": "2026-11-23T09:59:30Z",
                       "containerStatuses": [{"name": "pytorch", "state": {"terminated": {"exitCode": 137,
                           "reason": "Error", "finishedAt": "2026-11-23T09:59:50Z"}}}]}});
        let events = vec![event(
            "demo-master-0.1",
            json!({"kind": "Pod", "name": "demo-master-0", "uid": "pod-uid"}),
            ["Normal", "Scheduled", "Successfully assigned default/demo-master-0 to h100-1 (devices 0,1)"],
            1,
            ["2026-11-23T09:59:01Z", "2026-11-23T09:59:01Z"],
        )];
        let text = super::pod(&pod, &events, NOW);
        for line in [
            "Node:           h100-1/127.0.1.5",
            "Devices:        0,1",
            "Status:         Failed",
            "IP:             127.0.1.5",
            "Controlled By:  PyTorchJob/demo",
            "                ringleader.io/files: 2 file(s): /etc/mpi/hostfile, /x/hccl.json",
            "  pytorch:",
            "    Image:          ringleader/probe",
            "      ringleader",
            "      allreduce",
            "    State:          Terminated",
            "      Exit Code:      137",
            "      Reason:         Error",
            "      MASTER_ADDR, RANK",
            "      nvidia.com/gpu: 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} missing in\n{text}");
        }
        assert!(!text.contains("127.0.1.5\"") && !text.contains("value"), "env values stay out:\n{text}");
        assert!(text.contains("Normal   Scheduled   59s    ringleader-scheduler   Successfully assigned"), "{text}");
    }

    #[test]
    fn a_node_shows_health_and_who_holds_each_device() {
        let node = json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
            "metadata": {"name": "h100-1", "uid": "node-uid", "labels": {"gpu-model": "h100"}},
            "spec": {"profile": "hgx-h100-8", "address": "127.0.1.5", "stopped": false},
            "status": {"ready": true, "lastHeartbeat": NOW - 3.0, "unhealthyDevices": [7]}});
        let pods = vec![
            json!({"metadata": {"name": "a-0", "namespace": "default", "annotations": {"ringleader.io/devices": "0,1"}},
                   "spec": {"nodeName": "h100-1"}, "status": {"phase": "Running"}}),
            json!({"metadata": {"name": "done-0", "namespace": "default", "annotations": {"ringleader.io/devices": "2"}},
                   "spec": {"nodeName": "h100-1"}, "status": {"phase": "Succeeded"}}),
            json!({"metadata": {"name": "elsewhere", "namespace": "team", "annotations": {"ringleader.io/devices": "3"}},
                   "spec": {"nodeName": "h100-2"}, "status": {"phase": "Running"}}),
        ];
        let events = vec![event(
            "h100-1.1",
            json!({"kind": "Node", "name": "h100-1", "uid": "node-uid"}),
            ["Normal", "NodeNotReady", "Node h100-1 status is now: NodeNotReady"],
            2,
            ["2026-11-23T09:00:00Z", "2026-11-23T09:50:00Z"],
        )];
        let text = super::node(&node, &pods, &events, NOW);
        for line in [
            "Name:           h100-1",
            "Profile:        hgx-h100-8 (8 devices)",
            "Status:         Ready",
            "Unhealthy:      7",
            "Allocated:      2/8 [##.....x] (#=allocated x=unhealthy)",
            "  DEVICE   STATE             POD",
            "  0        allocated         default/a-0",
            "  2        free              -",
            "  7        unhealthy, free   -",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} missing in\n{text}");
        }
        assert!(text.contains("Last Heartbeat: 2026-11-23T09:59:57Z (3s ago)"), "{text}");
        assert!(!text.contains("elsewhere"), "{text}");
        assert!(text.contains("10m (x2 over 60m)"), "{text}");
    }

    #[test]
    fn missing_fields_print_as_none_without_panicking() {
        let t = ringleader_registry::resources::find("pytorchjobs").expect("type");
        for v in [json!({}), json!(null), json!({"metadata": null, "status": 3, "spec": {"containers": "x"}})] {
            let j = job(t, &v, &[], None, &[json!({"involvedObject": 5})], NOW);
            assert!(j.contains("Labels:         <none>") && j.contains("Events:         <none>"), "{j}");
            let p = super::pod(&v, &[], NOW);
            assert!(p.contains("Node:           <none>"), "{p}");
            let n = super::node(&v, std::slice::from_ref(&v), &[], NOW);
            assert!(n.contains("Profile:        <none>"), "{n}");
            let q = ringleader_registry::resources::find("queues").expect("type");
            other(q, &v, &[], NOW);
        }
    }
}
