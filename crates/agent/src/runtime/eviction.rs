//! Ephemeral-storage limits, enforced as the kubelet enforces them: by
//! measuring what a pod wrote on the node's disk (its sandbox: files, log,
//! emptyDir volumes) every few seconds and evicting a pod past its limit.
//! A pod that sets no `ephemeral-storage` limit and no emptyDir `sizeLimit`
//! is never measured.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Entries walked per measurement at most: a pod making millions of empty
/// files costs the agent a bounded walk (and is counted as over its limit).
const MAX_ENTRIES: u64 = 1_000_000;

/// What is measured of one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageLimits {
    /// The sum of the containers' `ephemeral-storage` limits, in bytes,
    /// and how the pod wrote it.
    pub total: Option<(u64, String)>,
    /// emptyDir volumes with a `sizeLimit`: name, directory, bytes, as written.
    pub empty_dirs: Vec<(String, PathBuf, u64, String)>,
}

fn bytes(v: &Value) -> Option<u64> {
    ringleader_api::quantity::of_json(v).map(|m| u64::try_from(m.div_ceil(1000)).unwrap_or(u64::MAX))
}

fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// The limits of `pod`, whose sandbox is `sandbox`; `None` when it has none.
pub fn limits_of(pod: &Value, sandbox: &Path) -> Option<StorageLimits> {
    let containers = pod.pointer("/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default();
    let each: Vec<&Value> =
        containers.iter().filter_map(|c| c.pointer("/resources/limits/ephemeral-storage")).collect();
    let total = match each.as_slice() {
        [] => None,
        [one] => bytes(one).map(|b| (b, text(one))),
        many => {
            let sum = many.iter().map(|v| bytes(v).unwrap_or(0)).fold(0u64, u64::saturating_add);
            Some((sum, sum.to_string()))
        }
    };
    let empty_dirs: Vec<_> = pod
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let name = v.get("name")?.as_str()?;
            let empty = v.get("emptyDir")?;
            // Memory-backed volumes are memory, limited by the cgroup.
            if empty.get("medium").and_then(Value::as_str) == Some("Memory") {
                return None;
            }
            let limit = empty.get("sizeLimit")?;
            let dir = crate::sandbox::in_sandbox(sandbox, &format!("volumes/{name}")).ok()?;
            Some((name.to_string(), dir, bytes(limit)?, text(limit)))
        })
        .collect();
    (total.is_some() || !empty_dirs.is_empty()).then_some(StorageLimits { total, empty_dirs })
}

/// Bytes on disk under `dir` (allocated blocks, as `du` counts; links not
/// followed), counting no further than `stop_at`.
pub fn usage(dir: &Path, stop_at: u64) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0u64;
    let mut seen = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return u64::MAX;
            }
            let Ok(meta) = e.metadata() else { continue };
            total = total.saturating_add(meta.blocks().saturating_mul(512));
            if meta.is_dir() {
                stack.push(e.path());
            }
            if total > stop_at {
                return total;
            }
        }
    }
    total
}

/// Why the pod in `sandbox` must be evicted, in the kubelet's words, or
/// `None` while it is within its limits.
pub fn over(limits: &StorageLimits, sandbox: &Path) -> Option<String> {
    for (name, dir, max, written) in &limits.empty_dirs {
        if usage(dir, *max) > *max {
            return Some(format!("Usage of EmptyDir volume {name:?} exceeds the limit {written:?}. "));
        }
    }
    let (max, written) = limits.total.as_ref()?;
    (usage(sandbox, *max) > *max)
        .then(|| format!("Pod ephemeral local storage usage exceeds the total limit of containers {written}. "))
}

/// The Warning Event of an eviction, as the kubelet records it.
pub fn event(namespace: &str, name: &str, uid: &str, node: &str, message: &str, now: f64) -> Value {
    let ns = if namespace.is_empty() { "default" } else { namespace };
    let stamp = ringleader_api::time::rfc3339(now);
    // Not the uid's head, which names the pod's other agent Event.
    let suffix: String = uid.chars().filter(char::is_ascii_hexdigit).skip(16).take(16).collect();
    json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{name}.{suffix}"), "namespace": ns},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": ns, "uid": uid},
        "reason": "Evicted",
        "message": message,
        "type": "Warning",
        "source": {"component": "ringleader-agent", "host": node},
        "reportingComponent": "ringleader-agent",
        "reportingInstance": node,
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    })
}

/// The status of an evicted pod: Failed, reason `Evicted`, its container
/// killed (137).
pub fn status(containers: &crate::status::Containers, started: Option<f64>, now: f64, message: &str) -> Value {
    let exit = crate::status::Exit { code: 137, reason: "Error".into(), message: None };
    let mut patch = crate::status::terminated(containers, "", started, now, &exit);
    patch["status"]["reason"] = json!("Evicted");
    patch["status"]["message"] = json!(message);
    patch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_read_from_containers_and_empty_dirs() {
        let sb = Path::new("/sb");
        assert_eq!(limits_of(&json!({"spec": {"containers": [{}]}}), sb), None);
        let pod = json!({"spec": {
            "containers": [{"resources": {"limits": {"ephemeral-storage": "20Mi"}}}],
            "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Mi"}}, {"name": "shm",
                "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}, {"name": "free", "emptyDir": {}}]}});
        let l = limits_of(&pod, sb).unwrap();
        assert_eq!(l.total, Some((20 << 20, "20Mi".to_string())));
        assert_eq!(l.empty_dirs, [("scratch".to_string(), sb.join("volumes/scratch"), 1 << 20, "1Mi".to_string())]);
        let two = json!({"spec": {"containers": [{"resources": {"limits": {"ephemeral-storage": "1Ki"}}},
            {"resources": {"limits": {"ephemeral-storage": 1024}}}]}});
        assert_eq!(limits_of(&two, sb).unwrap().total, Some((2048, "2048".to_string())));
    }

    #[test]
    fn usage_is_measured_and_reported_in_the_kubelets_words() -> std::io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let sb = tmp.path();
        std::fs::create_dir_all(sb.join("volumes/scratch"))?;
        std::fs::write(sb.join("volumes/scratch/f"), vec![7u8; 300 << 10])?;
        std::fs::write(sb.join("log"), vec![7u8; 300 << 10])?;
        std::os::unix::fs::symlink("/usr", sb.join("link"))?;
        let used = usage(sb, u64::MAX);
        assert!((600 << 10..700 << 10).contains(&used), "{used}");
        let pod = |total: &str, dir: &str| {
            json!({"spec": {"containers": [{"resources": {"limits": {"ephemeral-storage": total}}}],
                "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": dir}}]}})
        };
        assert_eq!(over(&limits_of(&pod("1Mi", "1Mi"), sb).unwrap(), sb), None);
        let total = over(&limits_of(&pod("512Ki", "1Mi"), sb).unwrap(), sb).unwrap();
        assert_eq!(total, "Pod ephemeral local storage usage exceeds the total limit of containers 512Ki. ");
        let dir = over(&limits_of(&pod("1Mi", "100Ki"), sb).unwrap(), sb).unwrap();
        assert_eq!(dir, "Usage of EmptyDir volume \"scratch\" exceeds the limit \"100Ki\". ");
        Ok(())
    }

    #[test]
    fn evicted_pods_fail_with_the_reason() {
        let c = crate::status::Containers::of(&json!({"spec": {"containers": [{"name": "main"}]}}), "process");
        let s = status(&c, Some(1.0), 2.0, "too big");
        assert_eq!(s["status"]["phase"], "Failed");
        assert_eq!(s["status"]["reason"], "Evicted");
        assert_eq!(s["status"]["message"], "too big");
        assert_eq!(s["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
        let e = event("", "p", "0123456789abcdef-fedcba9876543210", "n", "too big", 2.0);
        assert_eq!((e["reason"].as_str(), e["metadata"]["namespace"].as_str()), (Some("Evicted"), Some("default")));
        assert_eq!(e["metadata"]["name"], "p.fedcba9876543210");
    }
}
