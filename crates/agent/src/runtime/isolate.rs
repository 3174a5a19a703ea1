//! Pod sandboxes, the agent's side: whether namespaces work here (the probe
//! at start), one unprivileged uid per running pod, and the [`Spec`] handed
//! to the pod init ([`super::pod_init`]) that builds the sandbox.
//!
//! The init is this same program re-executed with [`INIT_ARG`] (as `runc
//! init` is): a fresh small process, so nothing of the agent's memory stays
//! mapped for the life of a pod, and the sandbox is built with ordinary
//! calls instead of the few a forked copy of a threaded program may make.

use crate::config::{AgentConfig, Isolation, Runtime};
pub use crate::config::{DEFAULT_UID_BASE, DEFAULT_UID_COUNT};
pub use crate::volumes::{under, Bind};
use crate::AgentError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// First argument that makes a program built with the agent's hook run as a
/// pod init instead of itself.
pub const INIT_ARG: &str = "__ringleader-pod-init";

/// What the probe's init prints when every sandbox step worked.
pub const PROBE_OK: &str = "ringleader-pod-init: sandboxes work";

/// A path the pods must not see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hidden {
    /// Absolute path.
    pub path: PathBuf,
    /// A directory (an empty read-only tmpfs covers it) or a file
    /// (`/dev/null` is bound over it).
    pub dir: bool,
}

/// Where a sandboxed pod sees its sandbox and the agent's programs: at fixed
/// paths on a fresh tmpfs that covers `cover` in the pod, so that they are
/// reachable by the pod's uid wherever the data dir and the agent's program
/// lie on the host (a checkout under a 0700 `/root`, say).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    /// The host directory the pod's tmpfs covers (`/run`; `/mnt` on a host
    /// without `/run`). Nothing is created on the host.
    pub cover: PathBuf,
    /// The pod's sandbox directory as the pod sees it: `<cover>/ringleader/pod`.
    pub pod: PathBuf,
    /// The agent's program directory as the pod sees it: `<cover>/ringleader/bin`.
    pub bin: PathBuf,
}

impl View {
    /// The view on a tmpfs over `cover`.
    pub fn over(cover: &Path) -> View {
        let base = cover.join("ringleader");
        View { cover: cover.to_path_buf(), pod: base.join("pod"), bin: base.join("bin") }
    }

    /// Over `/run`, else `/mnt`: the first that is a directory here.
    pub fn choose() -> Result<View, String> {
        ["/run", "/mnt"]
            .iter()
            .map(Path::new)
            .find(|p| p.is_dir())
            .map(View::over)
            .ok_or_else(|| "neither /run nor /mnt is a directory here: sandboxed pods see their sandbox on a tmpfs over one of them".to_string())
    }

    /// `path` as the pod sees it, given the host's `sandbox`: paths in the
    /// sandbox move to [`View::pod`], others stay.
    pub fn of_sandbox(&self, sandbox: &Path, path: &Path) -> PathBuf {
        match path.strip_prefix(sandbox) {
            Ok(rest) if rest.as_os_str().is_empty() => self.pod.clone(),
            Ok(rest) => self.pod.join(rest),
            Err(_) => path.to_path_buf(),
        }
    }

    /// The host path behind a path the pod sees (inverse of
    /// [`View::of_sandbox`], and [`View::bin`] back to `program_dir`).
    pub fn to_host(&self, sandbox: &Path, program_dir: Option<&Path>, path: &Path) -> PathBuf {
        let back = |view: &Path, host: &Path| match path.strip_prefix(view) {
            Ok(rest) if rest.as_os_str().is_empty() => Some(host.to_path_buf()),
            Ok(rest) => Some(host.join(rest)),
            Err(_) => None,
        };
        back(&self.pod, sandbox)
            .or_else(|| program_dir.and_then(|d| back(&self.bin, d)))
            .unwrap_or_else(|| path.to_path_buf())
    }
}

/// Everything the pod init needs, written by the agent to the init's stdin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    /// Absolute path of the program (resolved by the agent on the pod's `PATH`).
    pub program: PathBuf,
    /// Arguments, `argv[0]` included.
    pub argv: Vec<String>,
    /// Working directory, as the pod sees it (in [`View::pod`]).
    pub cwd: PathBuf,
    /// The pod's sandbox directory on the host: writable, seen at [`View::pod`].
    pub sandbox: PathBuf,
    /// Where the pod sees its sandbox and the agent's programs.
    pub view: View,
    /// The agent's program directory, bound read-only at [`View::bin`].
    pub program_dir: Option<PathBuf>,
    /// UTS host name.
    pub hostname: String,
    /// User and group the pod runs as.
    pub uid: u32,
    /// Group the pod runs as.
    pub gid: u32,
    /// Covered before the sandbox and volumes are bound.
    pub hidden: Vec<Hidden>,
    /// Volumes, parents before children.
    pub binds: Vec<Bind>,
    /// `cgroup.procs` files of the pod's cgroup ([`super::cgroup`]): the
    /// init joins them before anything of the pod runs.
    #[serde(default)]
    pub cgroup_procs: Vec<PathBuf>,
    /// Size of the pod's `/tmp` and `/dev/shm` tmpfs in bytes
    /// ([`super::limits::tmp_size`]).
    #[serde(default)]
    pub tmp_size: Option<u64>,
}

/// The uids of running pods; a uid is reused only after its pod's init has
/// been reaped (its PID namespace, and so every process of that uid, is gone).
#[derive(Debug)]
struct Slots {
    base: u32,
    count: u32,
    used: BTreeSet<u32>,
    next: u32,
}

impl Slots {
    fn take(&mut self) -> Option<u32> {
        for i in 0..self.count {
            let slot = (self.next + i) % self.count;
            if self.used.insert(slot) {
                self.next = (slot + 1) % self.count;
                return Some(slot);
            }
        }
        None
    }
}

/// A pod's uid, given back when dropped.
#[derive(Debug)]
pub struct Lease {
    slots: Arc<Mutex<Slots>>,
    slot: u32,
    /// `base + slot`.
    pub uid: u32,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Ok(mut s) = self.slots.lock() {
            s.used.remove(&self.slot);
        }
    }
}

/// The agent's sandboxing, once the probe said it works.
#[derive(Debug, Clone)]
pub struct Sandboxing {
    /// The program run with [`INIT_ARG`].
    pub init_program: PathBuf,
    /// Paths hidden from every pod (the data dir first).
    pub hidden: Vec<PathBuf>,
    /// Where pods see their sandbox and [`Sandboxing::program_dir`].
    pub view: View,
    /// `AgentConfig::program_dir`, when pods may see it (it neither lies in
    /// nor holds a hidden path).
    pub program_dir: Option<PathBuf>,
    slots: Arc<Mutex<Slots>>,
}

impl Sandboxing {
    /// Sandboxing with pods at uids `uid_base .. uid_base + uid_count`.
    /// Pods see their sandbox in `view` and no program directory.
    pub fn new(init_program: PathBuf, hidden: Vec<PathBuf>, view: View, uid_base: u32, uid_count: u32) -> Sandboxing {
        let slots = Slots { base: uid_base, count: uid_count.max(1), used: BTreeSet::new(), next: 0 };
        Sandboxing { init_program, hidden, view, program_dir: None, slots: Arc::new(Mutex::new(slots)) }
    }

    /// With `dir` bound read-only at [`View::bin`] in every pod, unless it
    /// lies in or holds a hidden path (the bind would show it): then pods
    /// see `dir` at its host path only, and a warning says why.
    pub fn with_program_dir(mut self, dir: Option<&Path>) -> Sandboxing {
        self.program_dir = dir.filter(|d| {
            let Some(h) = self.hidden.iter().find(|h| under(d, h) || under(h, d)) else { return true };
            tracing::warn!(program_dir = %d.display(), hidden = %h.display(), "the agent's program directory is not bound into pods: it would show a path hidden from them; pods find it at its own path if they can reach it");
            false
        })
        .map(Path::to_path_buf);
        self
    }

    /// The directory of the agent's programs as a pod sees it.
    pub fn program_dir_view(&self) -> Option<&Path> {
        self.program_dir.as_ref().map(|_| self.view.bin.as_path())
    }

    /// A free uid, or why there is none.
    pub fn lease(&self) -> Result<Lease, String> {
        let mut s = self.slots.lock().map_err(|_| "pod uid table poisoned".to_string())?;
        let slot = s.take().ok_or_else(|| format!("all {} pod uids are in use", s.count))?;
        let uid = s.base.saturating_add(slot);
        Ok(Lease { slots: self.slots.clone(), slot, uid })
    }

    /// The lease of `uid` for a pod a previous agent started (re-adopted):
    /// `None` when it is not one of ours or already leased.
    pub fn reserve(&self, uid: u32) -> Option<Lease> {
        let mut s = self.slots.lock().ok()?;
        let slot = uid.checked_sub(s.base).filter(|slot| *slot < s.count)?;
        s.used.insert(slot).then(|| Lease { slots: self.slots.clone(), slot, uid })
    }

    /// The hidden paths that exist now, each as a directory or a file.
    pub fn hidden_now(&self) -> Vec<Hidden> {
        self.hidden
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok().map(|m| Hidden { path: p.clone(), dir: m.is_dir() }))
            .collect()
    }
}

/// The sandboxing an agent with `config` uses: probed once at start. With
/// [`Isolation::Required`] and no sandboxes here, the error names the flag
/// that runs pods without them; with [`Isolation::Auto`] the agent says so
/// and goes on without. `config.data_dir` must be absolute.
pub fn resolve(config: &AgentConfig) -> Result<Option<Sandboxing>, AgentError> {
    if config.runtime != Runtime::Process || config.isolation == Isolation::Unsafe {
        if config.runtime == Runtime::Process {
            tracing::warn!("pods run as plain host processes (unsafe process runtime): they can read the agent's data and each other's files and signal each other");
        }
        return Ok(None);
    }
    let init = match &config.init_program {
        Some(p) => Ok(p.clone()),
        None => std::env::current_exe().map_err(|e| format!("finding this program to run as the pod init: {e}")),
    };
    match init.and_then(|p| probe(&p).map(|()| p)).and_then(|p| View::choose().map(|v| (p, v))) {
        Ok((init, view)) => {
            let mut hidden = vec![config.data_dir.clone()];
            hidden.extend(config.hidden_paths.iter().filter_map(|p| std::path::absolute(p).ok()));
            tracing::info!(init = %init.display(), uid_base = config.pod_uid_base, "pods run in sandboxes (mount, PID, IPC and UTS namespaces, one unprivileged uid each)");
            let program_dir = config.program_dir.as_deref().and_then(|d| std::path::absolute(d).ok());
            let s = Sandboxing::new(init, hidden, view, config.pod_uid_base, config.pod_uid_count);
            Ok(Some(s.with_program_dir(program_dir.as_deref())))
        }
        Err(reason) if config.isolation == Isolation::Required => Err(AgentError::Config(format!(
            "pod sandboxes are not available here: {reason}; run the agent as root, or pass --unsafe-process-runtime to run pods as plain host processes that can read the agent's data and each other's files"
        ))),
        Err(reason) => {
            tracing::warn!(%reason, "pod sandboxes are not available here: pods run as plain host processes that can read the agent's data and each other's files");
            Ok(None)
        }
    }
}

/// Everything a sandboxed start needs beyond the plain one: the pod's
/// volumes planned (and emptyDir / `…OrCreate` paths made), a uid leased,
/// the sandbox given to it, the program found. `Err` is a reason and
/// message for the pod's status.
pub fn confine(
    sandboxing: &Sandboxing,
    pod: &serde_json::Value,
    launch: &mut super::process::Launch,
    sandbox: &Path,
    hostname_of_pod: &str,
) -> Result<Confined, (&'static str, String)> {
    let (mounts, volumes) = crate::volumes::read(pod).map_err(|m| ("InvalidPod", m))?;
    let plan = crate::volumes::plan(&mounts, &volumes, sandbox, &sandboxing.hidden, &crate::volumes::RealHost)
        .map_err(|m| ("InvalidPod", m))?;
    let sandbox_error = |p: &Path, e: std::io::Error| ("SandboxError", format!("{}: {e}", p.display()));
    for d in &plan.create_dirs {
        std::fs::create_dir_all(d).map_err(|e| sandbox_error(d, e))?;
    }
    for f in &plan.create_files {
        if let Some(parent) = f.parent() {
            std::fs::create_dir_all(parent).map_err(|e| sandbox_error(parent, e))?;
        }
        std::fs::OpenOptions::new().create(true).append(true).open(f).map_err(|e| sandbox_error(f, e))?;
    }
    let lease = sandboxing.lease().map_err(|m| ("SandboxError", m))?;
    chown_tree(sandbox, lease.uid, lease.uid).map_err(|e| sandbox_error(sandbox, e))?;
    let view = &sandboxing.view;
    let path_env = launch.env.iter().rev().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_str()).unwrap_or_default();
    let argv0 = launch.argv.first().map(String::as_str).unwrap_or_default();
    let to_host = |p: &Path| view.to_host(sandbox, sandboxing.program_dir.as_deref(), p);
    let program = resolve_program(argv0, path_env, &launch.cwd, &to_host).map_err(|m| ("StartError", m))?;
    // Volumes planned in the sandbox appear where the pod sees the sandbox;
    // env values naming a mount path that had to move there follow it
    // (a dataset's `DATA_PATH=/data` on a node without `/data`).
    let moved: Vec<(String, PathBuf)> =
        plan.rerooted.iter().map(|(path, target)| (path.clone(), view.of_sandbox(sandbox, target))).collect();
    crate::volumes::rewrite_env(&mut launch.env, &moved);
    let binds = plan.binds.into_iter().map(|b| Bind { target: view.of_sandbox(sandbox, &b.target), ..b }).collect();
    let (host_prefix, view_prefix) = (format!("{}/", sandbox.display()), format!("{}/", view.pod.display()));
    let notes = plan.notes.iter().map(|n| n.replace(&host_prefix, &view_prefix)).collect();
    let spec = Spec {
        program,
        argv: launch.argv.clone(),
        cwd: launch.cwd.clone(),
        sandbox: sandbox.to_path_buf(),
        view: view.clone(),
        program_dir: sandboxing.program_dir.clone(),
        hostname: hostname(hostname_of_pod),
        uid: lease.uid,
        gid: lease.uid,
        hidden: sandboxing.hidden_now(),
        binds,
        cgroup_procs: Vec::new(),
        tmp_size: None,
    };
    Ok(Confined { init_program: sandboxing.init_program.clone(), spec, lease, notes, cgroup: None })
}

/// Runs the init in probe mode: it makes every kind of namespace and mount
/// a pod's sandbox needs, in a throw-away child. `Err` says why not.
pub fn probe(init_program: &Path) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Err(format!(
            "the agent runs as uid {euid}, not root: creating mount, PID, IPC and UTS namespaces and switching pods to their own users needs root"
        ));
    }
    // `--list`: a program without the init hook that is a test harness lists
    // its tests and runs none.
    let out = std::process::Command::new(init_program)
        .args([INIT_ARG, "probe", "--list"])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("running the pod init {}: {e}", init_program.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() && stdout.lines().any(|l| l == PROBE_OK) {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let reason = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().trim().to_string();
    if reason.is_empty() {
        return Err(format!("{} does not run as a pod init ({})", init_program.display(), out.status));
    }
    Err(reason)
}

/// Gives the sandbox tree to the pod's user. Symbolic links are changed, not
/// followed: a link a previous pod of this name left must not hand a host
/// file to this one.
pub fn chown_tree(dir: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    // Bounded by the tree itself; each directory is pushed once (links are not followed).
    while let Some(d) = stack.pop() {
        std::os::unix::fs::lchown(&d, Some(uid), Some(gid))?;
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else {
                std::os::unix::fs::lchown(entry.path(), Some(uid), Some(gid))?;
            }
        }
    }
    Ok(())
}

/// The program the pod runs, as `execvp` would find it on the pod's `PATH`
/// from the pod's working directory `cwd`, so that a missing program is a
/// `StartError` as without a sandbox. Paths are the pod's; `to_host` says
/// where the agent finds each on the host (the pod's view of its sandbox
/// and of the agent's programs lies elsewhere there).
pub fn resolve_program(
    program: &str,
    path_env: &str,
    cwd: &Path,
    to_host: &dyn Fn(&Path) -> PathBuf,
) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let runnable =
        |p: &Path| std::fs::metadata(to_host(p)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let p = cwd.join(program);
        return if p.is_absolute() && runnable(&p) {
            Ok(p)
        } else {
            Err(format!("{program}: No such file or directory"))
        };
    }
    path_env
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_absolute() && runnable(p))
        .ok_or_else(|| format!("{program}: not found on PATH {path_env:?}"))
}

/// The UTS host name for a pod: Linux allows 64 bytes, Kubernetes 63.
pub fn hostname(name: &str) -> String {
    let mut end = name.len().min(63);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

/// A pod's sandbox as the agent hands it to the pod init.
#[derive(Debug)]
pub struct Confined {
    /// The program run with [`INIT_ARG`].
    pub init_program: PathBuf,
    /// What the init builds and runs.
    pub spec: Spec,
    /// The pod's uid, free again once the init is reaped.
    pub lease: Lease,
    /// Lines for the head of the log (volumes not mounted as asked).
    pub notes: Vec<String>,
    /// The pod's cgroup, removed when the pod has been reaped.
    pub cgroup: Option<super::cgroup::PodCgroup>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_are_distinct_while_held_and_reused_after() {
        let s = Sandboxing::new(PathBuf::from("/x"), vec![], View::over(Path::new("/run")), 1000, 2);
        let a = s.lease().unwrap();
        let b = s.lease().unwrap();
        assert_ne!(a.uid, b.uid);
        assert!([1000, 1001].contains(&a.uid) && [1000, 1001].contains(&b.uid));
        assert!(s.lease().unwrap_err().contains("all 2 pod uids"));
        let freed = a.uid;
        drop(a);
        assert_eq!(s.lease().unwrap().uid, freed);
    }

    #[test]
    fn programs_resolve_on_path() {
        let same = |p: &Path| p.to_path_buf();
        let cwd = Path::new("/");
        assert_eq!(resolve_program("sh", "/nonexistent:/bin", cwd, &same).unwrap(), Path::new("/bin/sh"));
        assert!(resolve_program("no-such-program-here", "/bin", cwd, &same).unwrap_err().contains("not found"));
        assert!(resolve_program("/no/such/program", "/bin", cwd, &same).is_err());
        assert!(resolve_program("sh", "relative/dir", cwd, &same).is_err());
        assert_eq!(resolve_program("bin/sh", "", cwd, &same).unwrap(), Path::new("/bin/sh"));
    }

    #[test]
    fn the_pods_view_maps_to_the_host_and_back() {
        let v = View::over(Path::new("/run"));
        let (sb, progs) = (Path::new("/root/data/nodes/n/pods/ns_p"), Path::new("/root/rl/target/debug"));
        assert_eq!(v.of_sandbox(sb, sb), Path::new("/run/ringleader/pod"));
        assert_eq!(v.of_sandbox(sb, &sb.join("etc/hccl.json")), Path::new("/run/ringleader/pod/etc/hccl.json"));
        assert_eq!(v.of_sandbox(sb, Path::new("/data/x")), Path::new("/data/x"));
        assert_eq!(v.to_host(sb, Some(progs), Path::new("/run/ringleader/bin/ringleader")), progs.join("ringleader"));
        assert_eq!(v.to_host(sb, None, Path::new("/run/ringleader/bin/x")), Path::new("/run/ringleader/bin/x"));
        assert_eq!(v.to_host(sb, Some(progs), Path::new("/run/ringleader/pod/work")), sb.join("work"));
        assert_eq!(v.to_host(sb, Some(progs), Path::new("/usr/bin/env")), Path::new("/usr/bin/env"));
        // A program found through the view is named by its path in the pod.
        let to_host = |p: &Path| v.to_host(sb, Some(Path::new("/bin")), p);
        let found = resolve_program("sh", "/run/ringleader/bin", Path::new("/"), &to_host).unwrap();
        assert_eq!(found, Path::new("/run/ringleader/bin/sh"));
    }

    #[test]
    fn a_program_dir_that_would_show_hidden_paths_is_not_bound() {
        let s = Sandboxing::new(
            PathBuf::from("/x"),
            vec![PathBuf::from("/srv/rl/data")],
            View::over(Path::new("/run")),
            1,
            1,
        );
        assert!(s.clone().with_program_dir(Some(Path::new("/srv/rl"))).program_dir.is_none());
        assert!(s.clone().with_program_dir(Some(Path::new("/srv/rl/data/bin"))).program_dir.is_none());
        let ok = s.with_program_dir(Some(Path::new("/srv/rl/bin")));
        assert_eq!(ok.program_dir_view(), Some(Path::new("/run/ringleader/bin")));
    }

    #[test]
    fn host_names_are_cut_to_63_bytes() {
        assert_eq!(hostname("p"), "p");
        assert_eq!(hostname(&"a".repeat(80)).len(), 63);
    }

    #[test]
    fn chown_does_not_follow_links() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: chown needs root");
            return;
        }
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, "x").unwrap();
        let sb = tmp.path().join("sb");
        std::fs::create_dir_all(sb.join("a/b")).unwrap();
        std::fs::write(sb.join("a/b/f"), "y").unwrap();
        std::os::unix::fs::symlink(&outside, sb.join("link")).unwrap();
        chown_tree(&sb, 200_123, 200_123).unwrap();
        assert_eq!(std::fs::metadata(sb.join("a/b/f")).unwrap().uid(), 200_123);
        assert_eq!(std::fs::symlink_metadata(sb.join("link")).unwrap().uid(), 200_123);
        assert_eq!(std::fs::metadata(&outside).unwrap().uid(), 0);
    }
}
