//! The node's limits on its pods, and how a sandboxed start takes them on:
//! the pod's cgroup ([`super::cgroup`]), the size of its `/tmp`, and how
//! an end by the OOM killer reads in its status.

use super::cgroup::{self, Cgroups, PodCgroup};
pub use super::log_file::LogCap;
pub use super::node_limits::{NodeLimits, DEFAULT_DELETED_RETENTION, DEFAULT_LOG_MAX, DEFAULT_TMP_SIZE};
use crate::status::Exit;
use std::path::{Path, PathBuf};

/// Removes a deleted pod's sandbox (files, log, emptyDirs). It is renamed
/// aside at once, so a new pod of the same name starts on a fresh
/// directory, and removed off the caller's thread.
pub fn remove_sandbox(dir: &Path) {
    // A container's tmpfs volumes first: a mount point cannot be removed.
    super::cri_volumes::unmount_all(dir);
    let Some(name) = dir.file_name().and_then(|n| n.to_str()) else { return };
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let aside = dir.with_file_name(format!(".removed-{name}-{nanos}"));
    match std::fs::rename(dir, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            tracing::warn!(sandbox = %dir.display(), error = %e, "removing a deleted pod's sandbox failed");
            return;
        }
    }
    let spawned = std::thread::Builder::new().name("sandbox-rm".into()).spawn(move || {
        if let Err(e) = std::fs::remove_dir_all(&aside) {
            tracing::warn!(sandbox = %aside.display(), error = %e, "removing a deleted pod's sandbox failed");
        }
    });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "removing a deleted pod's sandbox: no thread");
    }
}

/// Removes a deleted pod's sandbox but for its logs (this run's, the
/// previous run's and their rotated parts), which stay at the same paths.
pub fn strip_to_logs(dir: &Path) {
    let Some(name) = dir.file_name().and_then(|n| n.to_str()) else { return };
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let (logs, others): (Vec<_>, Vec<_>) = entries.filter_map(Result::ok).partition(|e| {
        e.file_type().is_ok_and(|t| t.is_file())
            && e.file_name().to_str().is_some_and(|n| n.starts_with(crate::sandbox::LOG_FILE))
    });
    if others.is_empty() {
        return;
    }
    let logs: Vec<std::ffi::OsString> = logs.iter().map(|e| e.file_name()).collect();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let keep = dir.with_file_name(format!(".logs-{name}-{nanos}"));
    if let Err(e) = std::fs::create_dir(&keep) {
        tracing::warn!(sandbox = %dir.display(), error = %e, "keeping a deleted pod's logs failed");
        return;
    }
    for log in &logs {
        let _ = std::fs::rename(dir.join(log), keep.join(log));
    }
    remove_sandbox(dir);
    if let Err(e) = std::fs::rename(&keep, dir) {
        tracing::warn!(sandbox = %dir.display(), error = %e, "keeping a deleted pod's logs failed");
    }
}

/// The cgroups of a sandboxing agent, or `None` with one warning: pods then
/// run without cpu, memory and pids limits (an unprivileged demo still runs).
pub fn cgroups(limits: &NodeLimits) -> Option<Cgroups> {
    match Cgroups::new(&limits.cgroup_root, limits.pids) {
        Ok(c) => {
            tracing::info!(hierarchy = ?c.hierarchy(), pids_limit = ?limits.pids, "pods are limited by cgroups (cpu, memory, pids)");
            Some(c)
        }
        Err(reason) => {
            tracing::warn!(%reason, "pod cgroups are not available here: pods run without cpu, memory and pids limits");
            None
        }
    }
}

/// Bytes of the first container's limit `resource`, if set.
pub fn limit_bytes(pod: &serde_json::Value, resource: &str) -> Option<u64> {
    pod.pointer("/spec/containers/0/resources/limits")
        .and_then(|l| l.get(resource))
        .and_then(ringleader_api::quantity::of_json)
        .map(|m| u64::try_from(m.div_ceil(1000)).unwrap_or(u64::MAX))
}

/// Size of the pod's `/tmp`: the smaller of its memory and ephemeral-storage
/// limits (what it writes there is memory, charged to its cgroup, and local
/// storage), never more than the node's `tmp_size`.
pub fn tmp_size(pod: &serde_json::Value, node: &NodeLimits) -> u64 {
    [limit_bytes(pod, "memory"), limit_bytes(pod, "ephemeral-storage")]
        .into_iter()
        .flatten()
        .fold(node.tmp_size, u64::min)
        .max(1 << 20)
}

/// Mount options of a pod's tmpfs of `size` bytes (`None`: the kernel's default).
pub fn tmpfs_options(size: Option<u64>) -> String {
    match size {
        Some(s) => format!("mode=1777,size={s}"),
        None => "mode=1777".to_string(),
    }
}

/// Moves the calling process into the cgroup of each `cgroup.procs` file
/// (the pod init, before it forks anything).
pub fn join_cgroup(procs: &[PathBuf]) -> std::io::Result<()> {
    for p in procs {
        std::fs::write(p, "0")
            .map_err(|e| std::io::Error::new(e.kind(), format!("joining the pod's cgroup {}: {e}", p.display())))?;
    }
    Ok(())
}

/// The cgroup of a sandboxed pod starting, made and named in `spec`, with
/// its `/tmp` sized. `Err` is a reason and message for the pod's status.
pub fn confine(
    cgroups: Option<&Cgroups>,
    node: &NodeLimits,
    pod: &serde_json::Value,
    uid: &str,
    spec: &mut super::isolate::Spec,
) -> Result<Option<PodCgroup>, (&'static str, String)> {
    spec.tmp_size = Some(tmp_size(pod, node));
    let Some(c) = cgroups else { return Ok(None) };
    let group = c.create(uid, &cgroup::limits_of(pod, c.pids_limit)).map_err(|m| ("CgroupError", m))?;
    spec.cgroup_procs = group.procs_files();
    Ok(Some(group))
}

/// How a pod's end reads once its cgroup says whether the OOM killer
/// struck: `OOMKilled`, exit code 137, as the kubelet reports it.
pub fn exit_with_oom(exit: Exit, oom_killed: bool) -> Exit {
    if oom_killed && exit.code != 0 {
        return Exit { code: 137, reason: "OOMKilled".into(), message: None };
    }
    exit
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(limits: serde_json::Value) -> serde_json::Value {
        json!({"spec": {"containers": [{"resources": {"limits": limits}}]}})
    }

    #[test]
    fn a_stripped_sandbox_keeps_only_its_logs_and_a_new_run_makes_them_previous() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("ns_p");
        std::fs::create_dir_all(dir.join("etc/mpi")).unwrap();
        std::fs::write(dir.join("etc/mpi/hostfile"), "w-0\n").unwrap();
        std::fs::write(dir.join("hosts"), "127.0.0.1 localhost\n").unwrap();
        std::fs::write(dir.join("log"), "first run\n").unwrap();
        std::fs::write(dir.join("log.times"), "2026-01-01T00:00:00Z\n").unwrap();
        std::fs::write(dir.join("log.1"), "rotated\n").unwrap();
        strip_to_logs(&dir);
        let mut left: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        left.sort();
        assert_eq!(left, ["log", "log.1", "log.times"]);
        assert_eq!(std::fs::read_to_string(dir.join("log")).unwrap(), "first run\n");
        // Nothing left beside it but the sandbox being removed in the background.
        let others = std::fs::read_dir(root.path()).unwrap().filter_map(Result::ok);
        assert!(others.map(|e| e.file_name()).all(|n| n == "ns_p" || n.to_string_lossy().starts_with(".removed-")));

        let log = dir.join("log");
        super::super::log_file::keep_previous(&log);
        assert!(!log.exists());
        assert_eq!(std::fs::read_to_string(dir.join("log.previous")).unwrap(), "first run\n");
        assert_eq!(std::fs::read_to_string(dir.join("log.previous.times")).unwrap(), "2026-01-01T00:00:00Z\n");
        // A run that wrote nothing leaves the one before as the previous.
        std::fs::write(&log, "").unwrap();
        super::super::log_file::keep_previous(&log);
        assert_eq!(std::fs::read_to_string(dir.join("log.previous")).unwrap(), "first run\n");
    }

    #[test]
    fn tmp_is_sized_by_the_smaller_limit_and_capped() {
        let node = NodeLimits::default();
        assert_eq!(tmp_size(&pod(json!({})), &node), DEFAULT_TMP_SIZE);
        assert_eq!(tmp_size(&pod(json!({"memory": "64Mi"})), &node), 64 << 20);
        assert_eq!(tmp_size(&pod(json!({"memory": "64Mi", "ephemeral-storage": "16Mi"})), &node), 16 << 20);
        assert_eq!(tmp_size(&pod(json!({"memory": "512Gi"})), &node), DEFAULT_TMP_SIZE);
        assert_eq!(tmp_size(&pod(json!({"memory": "1"})), &node), 1 << 20, "a tmpfs of at least 1 MiB");
        assert_eq!(tmpfs_options(Some(4096)), "mode=1777,size=4096");
    }

    #[test]
    fn oom_kills_read_as_the_kubelet_writes_them() {
        let killed = exit_with_oom(Exit::from_wait(None, Some(9)), true);
        assert_eq!((killed.code, killed.reason.as_str(), killed.phase()), (137, "OOMKilled", "Failed"));
        let clean = exit_with_oom(Exit::from_wait(Some(0), None), true);
        assert_eq!(clean.reason, "Completed", "a pod that survived a kill of one of its processes succeeded");
        assert_eq!(exit_with_oom(Exit::from_wait(Some(1), None), false).reason, "Error");
    }

    #[test]
    fn a_deleted_pods_sandbox_goes_without_following_links() -> std::io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&outside)?;
        std::fs::write(outside.join("keep"), "k")?;
        let sb = tmp.path().join("pods/ns_p");
        std::fs::create_dir_all(sb.join("volumes/v"))?;
        std::fs::write(sb.join("log"), "l")?;
        std::os::unix::fs::symlink(&outside, sb.join("link"))?;
        remove_sandbox(&sb);
        assert!(!sb.exists(), "a new pod of the name gets a fresh directory at once");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::read_dir(tmp.path().join("pods"))?.next().is_some() {
            assert!(std::time::Instant::now() < deadline, "sandbox not removed");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(outside.join("keep").exists());
        remove_sandbox(&sb);
        Ok(())
    }

    #[test]
    fn logs_rotate_past_their_cap() -> std::io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let log = tmp.path().join("log");
        std::fs::write(&log, "old")?;
        std::fs::write(super::super::process::times_path(&log), "t")?;
        let mut cap = LogCap::new(&log, 4096);
        assert!(!cap.rotate_before(4000));
        assert!(!cap.rotate_before(96));
        assert!(cap.rotate_before(1));
        let (mut l, _) = cap.rotate()?;
        std::io::Write::write_all(&mut l, b"new")?;
        assert_eq!(std::fs::read_to_string(&log)?, "new");
        assert_eq!(std::fs::read_to_string(tmp.path().join("log.1"))?, "old");
        assert_eq!(std::fs::read_to_string(tmp.path().join("log.times.1"))?, "t");
        Ok(())
    }
}
