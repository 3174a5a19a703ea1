//! Series names of the history, their units, and the RBAC scope that
//! guards each. A name is a path of the object and the figure:
//!
//! | series | unit |
//! |---|---|
//! | `node/<node>/cpu`, `node/<node>/memory` | cores, bytes |
//! | `node/<node>/ready` | boolean (1 Ready, 0 not) |
//! | `node/<node>/devices-allocated/<resource>`, `node/<node>/devices-total/<resource>` | devices |
//! | `node/<node>/device/<id>/utilization` | ratio (0–1) |
//! | `node/<node>/device/<id>/memory` | bytes (in use) |
//! | `node/<node>/device/<id>/temperature`, `node/<node>/device/<id>/power` | celsius, watts |
//! | `pod/<namespace>/<pod>/cpu`, `pod/<namespace>/<pod>/memory` | cores, bytes |
//! | `job/<namespace>/<plural>.<group>/<job>/pods-<Phase>` | pods |
//! | `queue/<queue>/devices-allocated/<resource>` | devices |
//!
//! Object names never hold a `/`; a resource name (`nvidia.com/gpu`) may,
//! so it comes last.

/// The pod phases a job's series count.
pub const JOB_PHASES: [&str; 4] = ["Pending", "Running", "Succeeded", "Failed"];

/// Whose permission a series needs: `list` of these objects.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// ringleader.io Nodes.
    Nodes,
    /// Pods of a namespace.
    Pods { namespace: String },
    /// Jobs of one resource type in a namespace.
    Jobs { namespace: String, group: String, plural: String },
    /// Volcano Queues.
    Queues,
}

/// What the series names accept, for error messages.
pub const FORMS: &str = "node/<node>/{cpu,memory,ready,devices-allocated/<resource>,devices-total/<resource>}, \
node/<node>/device/<id>/{utilization,memory,temperature,power}, \
pod/<namespace>/<pod>/{cpu,memory}, job/<namespace>/<plural>.<group>/<job>/pods-{Pending,Running,Succeeded,Failed}, \
queue/<queue>/devices-allocated/<resource>";

/// `node/<node>/<metric>`.
pub fn node(node: &str, metric: &str) -> String {
    format!("node/{node}/{metric}")
}

/// The figures of one device of a node (its agent's telemetry) and their units.
pub const DEVICE_FIGURES: [(&str, &str); 4] =
    [("utilization", "ratio"), ("memory", "bytes"), ("temperature", "celsius"), ("power", "watts")];

/// `node/<node>/device/<id>/<figure>`, `figure` one of [`DEVICE_FIGURES`].
pub fn device(node: &str, device: &str, figure: &str) -> String {
    format!("node/{node}/device/{device}/{figure}")
}

/// The unit of `device/<id>/<figure>`, where `id` is a device ID.
fn device_figure_unit(metric: &str) -> Option<&'static str> {
    let rest = metric.strip_prefix("device/")?;
    let (id, figure) = rest.split_once('/')?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    DEVICE_FIGURES.iter().find(|(f, _)| *f == figure).map(|(_, unit)| *unit)
}

/// `pod/<namespace>/<pod>/<metric>`.
pub fn pod(namespace: &str, pod: &str, metric: &str) -> String {
    format!("pod/{namespace}/{pod}/{metric}")
}

/// `job/<namespace>/<resource>/<job>/pods-<phase>`, `resource` qualified
/// (`pytorchjobs.kubeflow.org`).
pub fn job(namespace: &str, resource: &str, job: &str, phase: &str) -> String {
    format!("job/{namespace}/{resource}/{job}/pods-{phase}")
}

/// `queue/<queue>/devices-allocated/<resource>`.
pub fn queue(queue: &str, resource: &str) -> String {
    format!("queue/{queue}/devices-allocated/{resource}")
}

fn device_metric(metric: &str, kinds: &[&str]) -> bool {
    kinds.iter().any(|k| metric.strip_prefix(k).and_then(|r| r.strip_prefix('/')).is_some_and(|r| !r.is_empty()))
}

/// The unit of a metric of an object kind (`node`, `pod`, `job`, `queue`).
fn unit(kind: &str, metric: &str) -> Option<&'static str> {
    match (kind, metric) {
        ("node" | "pod", "cpu") => Some("cores"),
        ("node" | "pod", "memory") => Some("bytes"),
        ("node", "ready") => Some("boolean"),
        ("node", m) if device_metric(m, &["devices-allocated", "devices-total"]) => Some("devices"),
        ("node", m) if m.starts_with("device/") => device_figure_unit(m),
        ("queue", m) if device_metric(m, &["devices-allocated"]) => Some("devices"),
        ("job", m) if m.strip_prefix("pods-").is_some_and(|p| JOB_PHASES.contains(&p)) => Some("pods"),
        _ => None,
    }
}

/// A series name's scope and unit, or why it is not one.
pub fn parse(series: &str) -> Result<(Scope, &'static str), String> {
    let bad = || format!("{series:?} is not a series name; the forms are {FORMS}");
    let segs: Vec<&str> = series.split('/').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return Err(bad());
    }
    let (kind, scope, rest) = match segs.as_slice() {
        ["node", _, rest @ ..] => ("node", Scope::Nodes, rest),
        ["queue", _, rest @ ..] => ("queue", Scope::Queues, rest),
        ["pod", ns, _, rest @ ..] => ("pod", Scope::Pods { namespace: ns.to_string() }, rest),
        ["job", ns, resource, _, rest @ ..] => ("job", job_scope(ns, resource).ok_or_else(bad)?, rest),
        _ => return Err(bad()),
    };
    let unit = unit(kind, &rest.join("/")).ok_or_else(bad)?;
    Ok((scope, unit))
}

fn job_scope(namespace: &str, resource: &str) -> Option<Scope> {
    let (plural, group) = resource.split_once('.')?;
    (!plural.is_empty() && !group.is_empty()).then(|| Scope::Jobs {
        namespace: namespace.to_string(),
        group: group.to_string(),
        plural: plural.to_string(),
    })
}

/// The one scope every series under `prefix` shares, when the prefix's
/// complete segments settle it (`pod/team/` does, `pod/te` does not).
pub fn prefix_scope(prefix: &str) -> Option<Scope> {
    let segs: Vec<&str> = prefix.split('/').collect();
    let complete = segs.get(..segs.len().saturating_sub(1))?;
    match complete {
        ["node", ..] => Some(Scope::Nodes),
        ["queue", ..] => Some(Scope::Queues),
        ["pod", ns, ..] if !ns.is_empty() => Some(Scope::Pods { namespace: ns.to_string() }),
        ["job", ns, resource, ..] => job_scope(ns, resource),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_to_their_scope_and_unit() {
        let pods = Scope::Pods { namespace: "team".into() };
        assert_eq!(parse(&pod("team", "p-0", "cpu")), Ok((pods.clone(), "cores")));
        assert_eq!(parse(&node("n1", "devices-total/nvidia.com/gpu")), Ok((Scope::Nodes, "devices")));
        assert_eq!(parse(&node("n1", "ready")), Ok((Scope::Nodes, "boolean")));
        assert_eq!(parse(&device("n1", "3", "utilization")), Ok((Scope::Nodes, "ratio")));
        assert_eq!(parse(&device("n1", "12", "memory")), Ok((Scope::Nodes, "bytes")));
        assert_eq!(parse(&device("n1", "0", "temperature")), Ok((Scope::Nodes, "celsius")));
        assert_eq!(parse(&device("n1", "0", "power")), Ok((Scope::Nodes, "watts")));
        assert_eq!(prefix_scope("node/n1/device/"), Some(Scope::Nodes));
        assert_eq!(parse(&queue("q", "huawei.com/Ascend910")), Ok((Scope::Queues, "devices")));
        let jobs = Scope::Jobs { namespace: "team".into(), group: "kubeflow.org".into(), plural: "pytorchjobs".into() };
        assert_eq!(parse(&job("team", "pytorchjobs.kubeflow.org", "j", "Running")), Ok((jobs.clone(), "pods")));
        assert_eq!(prefix_scope("pod/team/"), Some(pods));
        assert_eq!(prefix_scope("job/team/pytorchjobs.kubeflow.org/"), Some(jobs));
        assert_eq!(prefix_scope("node/"), Some(Scope::Nodes));
        assert_eq!(prefix_scope("pod/te"), None);
        assert_eq!(prefix_scope(""), None);
    }

    #[test]
    fn bad_names_are_refused_with_the_forms() {
        for bad in [
            "",
            "pod/team/p",
            "pod/team/p/gpu",
            "node//cpu",
            "node/n1/devices-allocated",
            "node/n1/device/0",
            "node/n1/device/x/power",
            "node/n1/device/0/fan",
            "node/n1/device/0/power/extra",
            "job/team/pytorchjobs/j/pods-Running",
            "job/team/pytorchjobs.kubeflow.org/j/pods-Sleeping",
            "volume/x/cpu",
        ] {
            let e = parse(bad).err().unwrap_or_default();
            assert!(e.contains(&format!("{bad:?}")) && e.contains("pod/<namespace>/<pod>"), "{bad}: {e}");
        }
    }
}
