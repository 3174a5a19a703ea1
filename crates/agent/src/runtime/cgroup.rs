//! One cgroup per sandboxed pod, limited as the kubelet limits a pod's
//! cgroup: `resources.limits.cpu` as a CFS quota, `resources.limits.memory`
//! as the memory limit (swap included where the kernel accounts it), and
//! the node's pids limit (`podPidsLimit`), which a pod cannot raise.
//!
//! Both hierarchies are supported, found at start: cgroup v2 (one tree,
//! `cgroup.controllers` at its root) and cgroup v1 (a tree per controller
//! under `/sys/fs/cgroup/<controller>`). Pods' groups are
//! `<root>/ringleader/<pod uid>`. The pod init joins them before it makes
//! the pod's namespaces ([`super::pod_init`]), so no process of the pod
//! ever runs outside.

use std::path::{Path, PathBuf};

/// CFS period the kubelet uses (100 ms).
pub const CPU_PERIOD_US: u64 = 100_000;

/// Smallest CFS quota the kernel takes (1 ms).
const MIN_QUOTA_US: u64 = 1_000;

/// Default pids limit of a pod (the kubelet's `podPidsLimit` is unlimited
/// by default; a node shared by tenants needs one).
pub const DEFAULT_PIDS_LIMIT: u64 = 4_096;

/// Name of the agent's directory in each hierarchy.
const PARENT: &str = "ringleader";

/// How old an empty pod group must be before a starting agent removes it.
const SWEEP_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// What a pod's cgroup is limited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    /// CFS quota per [`CPU_PERIOD_US`], in microseconds.
    pub cpu_quota_us: Option<u64>,
    /// Bytes.
    pub memory: Option<u64>,
    /// Processes and threads.
    pub pids: Option<u64>,
}

/// The CFS quota for `milli` CPUs, as the kubelet computes it
/// (`milliCPUToQuota`): `milli × period / 1000`, at least 1 ms.
pub fn cpu_quota_us(milli: u128) -> u64 {
    let quota = milli.saturating_mul(u128::from(CPU_PERIOD_US)) / 1000;
    u64::try_from(quota).unwrap_or(u64::MAX).max(MIN_QUOTA_US)
}

/// The first container's limits (the agent runs only that one) with the
/// node's pids limit; a limit that does not parse is left out (the API
/// server validated quantities already).
pub fn limits_of(pod: &serde_json::Value, pids_limit: Option<u64>) -> Limits {
    let limit = |r: &str| {
        pod.pointer("/spec/containers/0/resources/limits")
            .and_then(|l| l.get(r))
            .and_then(ringleader_api::quantity::of_json)
    };
    Limits {
        cpu_quota_us: limit("cpu").filter(|m| *m > 0).map(cpu_quota_us),
        memory: limit("memory").map(|m| u64::try_from(m.div_ceil(1000)).unwrap_or(u64::MAX)).filter(|b| *b > 0),
        pids: pids_limit.filter(|p| *p > 0),
    }
}

/// Which hierarchy the host mounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hierarchy {
    /// Unified: one directory per group, every controller in it.
    V2 {
        /// Mount point (`/sys/fs/cgroup`).
        root: PathBuf,
    },
    /// One tree per controller.
    V1 {
        /// `…/memory`.
        memory: PathBuf,
        /// `…/pids`.
        pids: PathBuf,
        /// `…/cpu` (often `cpu,cpuacct`).
        cpu: PathBuf,
    },
}

/// The hierarchy under `root` (`/sys/fs/cgroup`), or why pods cannot be
/// limited here.
pub fn detect(root: &Path) -> Result<Hierarchy, String> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Err(format!("the agent runs as uid {euid}, not root: creating cgroups needs root"));
    }
    if let Ok(list) = std::fs::read_to_string(root.join("cgroup.controllers")) {
        let have: Vec<&str> = list.split_whitespace().collect();
        let missing: Vec<&str> = ["memory", "pids", "cpu"].into_iter().filter(|c| !have.contains(c)).collect();
        if !missing.is_empty() {
            return Err(format!("cgroup v2 at {} lacks the controllers {}", root.display(), missing.join(", ")));
        }
        return Ok(Hierarchy::V2 { root: root.to_path_buf() });
    }
    let v1 = |c: &str| {
        let p = root.join(c);
        p.join("cgroup.procs").is_file().then_some(p)
    };
    match (v1("memory"), v1("pids"), v1("cpu")) {
        (Some(memory), Some(pids), Some(cpu)) => Ok(Hierarchy::V1 { memory, pids, cpu }),
        _ => Err(format!(
            "no cgroup v2 (cgroup.controllers) and no cgroup v1 memory, pids and cpu controllers under {}",
            root.display()
        )),
    }
}

/// The agent's cgroups: where pods' groups are made, and the node's pids limit.
#[derive(Debug, Clone)]
pub struct Cgroups {
    hierarchy: Hierarchy,
    /// The node's pids limit for every pod.
    pub pids_limit: Option<u64>,
}

impl Cgroups {
    /// Cgroups on `root`, with the parent directories made (and, on v2,
    /// the controllers delegated to them). `Err` says why not.
    pub fn new(root: &Path, pids_limit: Option<u64>) -> Result<Cgroups, String> {
        let hierarchy = detect(root)?;
        let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
        match &hierarchy {
            Hierarchy::V2 { root } => {
                // Children get a controller only when every ancestor passes it on.
                let enable = "+memory +pids +cpu";
                let top = root.join("cgroup.subtree_control");
                std::fs::write(&top, enable).map_err(|e| io(&top, e))?;
                let parent = root.join(PARENT);
                std::fs::create_dir_all(&parent).map_err(|e| io(&parent, e))?;
                let sub = parent.join("cgroup.subtree_control");
                std::fs::write(&sub, enable).map_err(|e| io(&sub, e))?;
            }
            Hierarchy::V1 { memory, pids, cpu } => {
                for c in [memory, pids, cpu] {
                    let parent = c.join(PARENT);
                    std::fs::create_dir_all(&parent).map_err(|e| io(&parent, e))?;
                }
            }
        }
        let cgroups = Cgroups { hierarchy, pids_limit };
        cgroups.sweep();
        Ok(cgroups)
    }

    /// Removes the empty groups a stopped agent left (a group with
    /// processes in it refuses removal, so a pod still running keeps its).
    /// Groups are shared by every agent on the host, and one another agent
    /// has just made is empty until its pod joins it: only groups older
    /// than [`SWEEP_AFTER`] go, so an agent starting beside a busy one
    /// never takes a group from under a pod being started.
    fn sweep(&self) {
        let parents: Vec<PathBuf> = match &self.hierarchy {
            Hierarchy::V2 { root } => vec![root.join(PARENT)],
            Hierarchy::V1 { memory, pids, cpu } => [memory, pids, cpu].iter().map(|c| c.join(PARENT)).collect(),
        };
        for parent in parents {
            for e in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
                let old_enough = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|made| made.elapsed().ok())
                    .is_some_and(|age| age >= SWEEP_AFTER);
                if e.file_type().is_ok_and(|t| t.is_dir()) && old_enough {
                    let _ = std::fs::remove_dir(e.path());
                }
            }
        }
    }

    /// The hierarchy in use.
    pub fn hierarchy(&self) -> &Hierarchy {
        &self.hierarchy
    }

    /// The group of pod `uid` a previous agent made, while it exists (a
    /// pod adopted under its shim keeps its group).
    pub fn open(&self, uid: &str) -> Option<PodCgroup> {
        let group = self.group(uid).ok()?;
        group.dirs.iter().all(|d| d.is_dir()).then_some(group)
    }

    fn group(&self, uid: &str) -> Result<PodCgroup, String> {
        if uid.is_empty() || !uid.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(format!("pod uid {uid:?} cannot name a cgroup"));
        }
        Ok(match &self.hierarchy {
            Hierarchy::V2 { root } => PodCgroup { v2: true, dirs: vec![root.join(PARENT).join(uid)] },
            Hierarchy::V1 { memory, pids, cpu } => {
                PodCgroup { v2: false, dirs: [memory, pids, cpu].iter().map(|c| c.join(PARENT).join(uid)).collect() }
            }
        })
    }

    /// Makes the group of pod `uid` with `limits`. A group of that name a
    /// crashed agent left is emptied and reused.
    pub fn create(&self, uid: &str, limits: &Limits) -> Result<PodCgroup, String> {
        let group = self.group(uid)?;
        for d in &group.dirs {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        group.apply(limits).inspect_err(|_| group.remove_now())?;
        Ok(group)
    }
}

/// A pod's cgroup (one directory on v2; memory, pids and cpu on v1).
#[derive(Debug)]
pub struct PodCgroup {
    v2: bool,
    /// v2: the group; v1: memory, pids, cpu.
    dirs: Vec<PathBuf>,
}

fn write(dir: &Path, file: &str, value: &str) -> Result<(), String> {
    let p = dir.join(file);
    std::fs::write(&p, value).map_err(|e| format!("writing {value} to {}: {e}", p.display()))
}

/// `key value` lines of a cgroup file (`memory.events`, `memory.oom_control`).
fn field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
}

impl PodCgroup {
    fn apply(&self, limits: &Limits) -> Result<(), String> {
        if self.v2 {
            let d = &self.dirs[0];
            if let Some(m) = limits.memory {
                write(d, "memory.max", &m.to_string())?;
                // Swap would let a pod run past its limit on a node with swap.
                if d.join("memory.swap.max").exists() {
                    write(d, "memory.swap.max", "0")?;
                }
            }
            if let Some(p) = limits.pids {
                write(d, "pids.max", &p.to_string())?;
            }
            if let Some(q) = limits.cpu_quota_us {
                write(d, "cpu.max", &format!("{q} {CPU_PERIOD_US}"))?;
            }
            return Ok(());
        }
        let (memory, pids, cpu) = (&self.dirs[0], &self.dirs[1], &self.dirs[2]);
        if let Some(m) = limits.memory {
            write(memory, "memory.limit_in_bytes", &m.to_string())?;
            // memsw ≥ memory always; equal means no swap.
            if memory.join("memory.memsw.limit_in_bytes").exists() {
                write(memory, "memory.memsw.limit_in_bytes", &m.to_string())?;
            }
        }
        if let Some(p) = limits.pids {
            write(pids, "pids.max", &p.to_string())?;
        }
        if let Some(q) = limits.cpu_quota_us {
            write(cpu, "cpu.cfs_period_us", &CPU_PERIOD_US.to_string())?;
            write(cpu, "cpu.cfs_quota_us", &q.to_string())?;
        }
        Ok(())
    }

    /// Leaves the group as it is: its pod runs on under its shim after this
    /// agent stops, and the next agent adopts both.
    pub fn keep(mut self) {
        self.dirs.clear();
    }

    /// The `cgroup.procs` files a process writes `0` into to join the group.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }

    fn memory_dir(&self) -> &Path {
        &self.dirs[0]
    }

    /// Whether the kernel's OOM killer killed a process of the pod.
    pub fn oom_killed(&self) -> bool {
        let d = self.memory_dir();
        if self.v2 {
            return std::fs::read_to_string(d.join("memory.events"))
                .ok()
                .and_then(|t| field(&t, "oom_kill"))
                .unwrap_or(0)
                > 0;
        }
        let control = std::fs::read_to_string(d.join("memory.oom_control")).unwrap_or_default();
        match field(&control, "oom_kill") {
            Some(n) => n > 0,
            // Kernels before 4.13 do not count kills: hitting the limit is the best sign.
            None => {
                std::fs::read_to_string(d.join("memory.failcnt"))
                    .ok()
                    .and_then(|t| t.trim().parse::<u64>().ok())
                    .unwrap_or(0)
                    > 0
            }
        }
    }

    /// How many processes the pids controller refused to fork.
    pub fn pids_refused(&self) -> u64 {
        let d = if self.v2 { &self.dirs[0] } else { &self.dirs[1] };
        std::fs::read_to_string(d.join("pids.events")).ok().and_then(|t| field(&t, "max")).unwrap_or(0)
    }

    /// Kills what is left in the group and removes it, retrying while the
    /// kernel finishes the kills (bounded: about 5 s).
    fn remove_now(&self) {
        for attempt in 0..50 {
            let mut left = false;
            for d in &self.dirs {
                if !d.exists() {
                    continue;
                }
                if std::fs::remove_dir(d).is_ok() {
                    continue;
                }
                left = true;
                if self.v2 && d.join("cgroup.kill").exists() {
                    let _ = std::fs::write(d.join("cgroup.kill"), "1");
                } else if let Ok(procs) = std::fs::read_to_string(d.join("cgroup.procs")) {
                    for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()).filter(|p| *p > 1) {
                        // SAFETY: kill takes integers; the pid is a member of the pod's group.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                    }
                }
            }
            if !left {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20 + 10 * attempt.min(10)));
        }
        tracing::warn!(cgroup = %self.dirs[0].display(), "a pod's cgroup could not be removed: processes are still in it");
    }
}

impl Drop for PodCgroup {
    /// The group goes with the pod, off the caller's thread (the kernel may
    /// take a moment to empty it).
    fn drop(&mut self) {
        if self.dirs.is_empty() {
            return;
        }
        let group = PodCgroup { v2: self.v2, dirs: std::mem::take(&mut self.dirs) };
        let spawned = std::thread::Builder::new().name("pod-cgroup".into()).spawn(move || {
            let mut group = group;
            group.remove_now();
            // Emptied, its own drop has nothing left to do.
            group.dirs.clear();
        });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "removing a pod's cgroup: no thread");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cpu_millicores_become_a_cfs_quota() {
        assert_eq!(cpu_quota_us(1000), 100_000);
        assert_eq!(cpu_quota_us(250), 25_000);
        assert_eq!(cpu_quota_us(2500), 250_000);
        // Below 10m the kernel's minimum (1 ms) applies, as in the kubelet.
        assert_eq!(cpu_quota_us(1), 1_000);
        assert_eq!(cpu_quota_us(u128::MAX), u64::MAX);
    }

    #[test]
    fn limits_come_from_the_first_container_and_the_node() {
        let pod = json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "500m", "memory": "64Mi"}}}, {
            "resources": {"limits": {"cpu": "8"}}}]}});
        let l = limits_of(&pod, Some(100));
        assert_eq!(l, Limits { cpu_quota_us: Some(50_000), memory: Some(64 << 20), pids: Some(100) });
        let none = limits_of(&json!({"spec": {"containers": [{}]}}), None);
        assert_eq!(none, Limits::default());
        // A pod naming pids among its limits does not change the node's.
        let pids = json!({"spec": {"containers": [{"resources": {"limits": {"pids": "100000", "memory": 1e9}}}]}});
        assert_eq!(
            limits_of(&pids, Some(64)),
            Limits { cpu_quota_us: None, memory: Some(1_000_000_000), pids: Some(64) }
        );
    }

    #[test]
    fn kernel_counters_parse() {
        let v2 = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(field(v2, "oom_kill"), Some(1));
        assert_eq!(field(v2, "oom"), Some(1));
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(field(v1, "oom_kill"), Some(3));
        assert_eq!(field("oom_kill_disable 0\n", "oom_kill"), None);
    }

    #[test]
    fn hierarchies_are_told_apart() {
        let tmp = tempfile::tempdir().unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            assert!(detect(tmp.path()).unwrap_err().contains("not root"));
            return;
        }
        assert!(detect(tmp.path()).unwrap_err().contains("no cgroup v2"));
        for c in ["memory", "pids", "cpu"] {
            std::fs::create_dir_all(tmp.path().join(c)).unwrap();
            std::fs::write(tmp.path().join(c).join("cgroup.procs"), "").unwrap();
        }
        assert!(matches!(detect(tmp.path()).unwrap(), Hierarchy::V1 { .. }));
        std::fs::write(tmp.path().join("cgroup.controllers"), "cpuset cpu io memory pids\n").unwrap();
        assert_eq!(detect(tmp.path()).unwrap(), Hierarchy::V2 { root: tmp.path().to_path_buf() });
        std::fs::write(tmp.path().join("cgroup.controllers"), "cpu io\n").unwrap();
        assert!(detect(tmp.path()).unwrap_err().contains("memory, pids"));
    }

    #[test]
    fn a_starting_agent_sweeps_only_old_empty_groups() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return; // detect() needs root; CI runs this as root.
        }
        let tmp = tempfile::tempdir().unwrap();
        for c in ["memory", "pids", "cpu"] {
            std::fs::create_dir_all(tmp.path().join(c).join(PARENT)).unwrap();
            std::fs::write(tmp.path().join(c).join("cgroup.procs"), "").unwrap();
        }
        let group = |c: &str, name: &str| tmp.path().join(c).join(PARENT).join(name);
        let long_ago = std::time::SystemTime::now() - SWEEP_AFTER - std::time::Duration::from_secs(5);
        for c in ["memory", "pids", "cpu"] {
            // A group another agent made a moment ago, its pod not yet in it.
            std::fs::create_dir(group(c, "fresh")).unwrap();
            // A group a stopped agent left behind.
            std::fs::create_dir(group(c, "stale")).unwrap();
            std::fs::File::open(group(c, "stale")).unwrap().set_modified(long_ago).unwrap();
        }
        Cgroups::new(tmp.path(), None).unwrap();
        for c in ["memory", "pids", "cpu"] {
            assert!(group(c, "fresh").is_dir(), "{c}: a group made moments ago is kept");
            assert!(!group(c, "stale").exists(), "{c}: an old empty group is removed");
        }
    }
}
