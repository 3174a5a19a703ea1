//! The per-pod shim: what owns a pod's output and exit status so the pod
//! outlives its agent (containerd-shim's part under the kubelet). The agent
//! runs it as its own program (or the pod init) re-executed with
//! [`SHIM_ARG`], the [`ShimSpec`] on stdin. It
//!
//! 1. forks and leaves: the child starts a new session, so it is no child
//!    of the agent, in none of its groups, and no signal or death of the
//!    agent reaches it;
//! 2. starts the pod (its program, or the pod init with the sandbox spec)
//!    as the leader of a new process group, its stdout and stderr a pipe
//!    the shim copies into the log, stamping each line in the `.times` file;
//! 3. records the pod in [`POD_FILE`] of the pod's state directory (pids
//!    with their start times, so a recycled pid is never taken for it) and
//!    tells the agent the pod's pid on stdout;
//! 4. when the pod's leader ends, kills what is left of its group, lets the
//!    last output reach the log, and writes the exit (code or signal, and
//!    when) to [`EXIT_FILE`], atomically, then ends.
//!
//! The state directory lies under the agent's data directory, hidden from
//! sandboxed pods: a pod cannot forge its exit or point the agent at
//! another process.

use super::isolate;
use super::log_file::{record, times_path, DRAIN};
use super::memfd::spec_file;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};

/// First argument that makes a program built with the agent's hook run as
/// a pod's shim.
pub const SHIM_ARG: &str = "__ringleader-pod-shim";

/// What the probe prints when the program runs as a shim.
pub const PROBE_OK: &str = "ringleader-pod-shim: ready";

/// The pod as its shim started it, in the state directory.
pub const POD_FILE: &str = "pod.json";

/// How the pod ended, in the state directory; written once, atomically.
pub const EXIT_FILE: &str = "exit.json";

/// What the agent hands its shim.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShimSpec {
    /// The pod's UID, recorded with its pids and exit.
    pub uid: String,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// The pod's complete environment (the shim's own is empty).
    pub env: Vec<(String, String)>,
    /// The pod's working directory.
    pub cwd: PathBuf,
    /// The log; the shim appends (the agent created it).
    pub log: PathBuf,
    /// The size past which the log is rotated.
    #[serde(default = "default_log_max")]
    pub log_max: u64,
    /// The pod's state directory (created, empty, by the agent).
    pub state: PathBuf,
    /// A sandboxed pod: `argv` runs the pod init, which reads this on stdin.
    pub init: Option<isolate::Spec>,
}

fn default_log_max() -> u64 {
    super::limits::DEFAULT_LOG_MAX
}

/// A process as it was when recorded: a pid and its start time since boot
/// (clock ticks, `/proc/<pid>/stat` field 22), so a pid recycled since is
/// told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proc {
    /// Process id.
    pub pid: i32,
    /// Start time in clock ticks after boot.
    pub start: u64,
}

impl Proc {
    /// `pid` as it is now, if it lives.
    pub fn now(pid: i32) -> Option<Proc> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (state, start) = stat_fields(&stat)?;
        (state != "Z").then_some(Proc { pid, start })
    }

    /// Whether this very process still runs (not a zombie, not a recycled pid).
    pub fn alive(&self) -> bool {
        Proc::now(self.pid).is_some_and(|p| p.start == self.start)
    }
}

/// Waits until `p` ends: on its pidfd (readable once the process is gone;
/// it is no child of ours), or by looking every `poll` where the kernel has
/// no pidfds.
pub async fn ended(p: Proc, poll: std::time::Duration) {
    if let Some(fd) = pidfd(p) {
        // SAFETY: the AsyncFd owns the descriptor, open for all its life.
        if let Ok(fd) = unsafe { tokio::io::unix::AsyncFd::register(fd) } {
            let _ = fd.readable().await;
            return;
        }
    }
    while p.alive() {
        tokio::time::sleep(poll).await;
    }
}

fn pidfd(p: Proc) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, p.pid, 0) };
    let fd = libc::c_int::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: pidfd_open returned a new descriptor we own.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    // Opened after the pid was recycled: not the process we watch.
    p.alive().then_some(fd)
}

/// State and start time from a `/proc/<pid>/stat` line (comm may hold
/// spaces and parentheses).
fn stat_fields(stat: &str) -> Option<(&str, u64)> {
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Field 3 (state) is the first after comm; field 22 (starttime) the 20th.
    Some((fields.first()?, fields.get(19)?.parse().ok()?))
}

/// [`POD_FILE`]: the pod as its shim started it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodRecord {
    /// The pod's UID.
    pub uid: String,
    /// The pod's process (group leader; the pod init when sandboxed).
    pub pod: Proc,
    /// The shim.
    pub shim: Proc,
    /// The log the shim appends to.
    pub log: PathBuf,
    /// The sandboxed pod's uid (its lease), if sandboxed.
    pub sandbox_uid: Option<u32>,
}

/// [`EXIT_FILE`]: how the pod ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitRecord {
    /// The pod's UID.
    pub uid: String,
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal that killed it, when one did.
    pub signal: Option<i32>,
    /// Unix time the shim saw it end.
    pub finished_at: f64,
}

/// Where the pods of `node` keep their state: `<data-dir>/nodes/<node>/run/`.
pub fn states_dir(data_dir: &Path, node: &str) -> PathBuf {
    data_dir.join("nodes").join(node).join("run")
}

/// The state directory of a pod: `<data-dir>/nodes/<node>/run/<namespace>_<pod>/`
/// (beside its sandbox, which the pod can write, not in it).
pub fn state_dir(data_dir: &Path, node: &str, namespace: &str, pod: &str) -> Result<PathBuf, String> {
    let sandbox = crate::sandbox::sandbox_dir(data_dir, node, namespace, pod)?;
    let name = sandbox.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    Ok(states_dir(data_dir, node).join(name))
}

/// The program an agent with `config` runs as its pods' shim: the pod init
/// when pods are sandboxed, else the configured init program or the agent's
/// own; `None` (pods then live and die with the agent) when it does not
/// answer as a shim — a test harness embedding the agent.
pub fn resolve(config: &crate::AgentConfig, sandboxing: Option<&isolate::Sandboxing>) -> Option<PathBuf> {
    let program = match (sandboxing, &config.init_program) {
        (Some(s), _) => s.init_program.clone(),
        (None, Some(p)) => p.clone(),
        (None, None) => std::env::current_exe().ok()?,
    };
    // `--list`: a test harness without the hook lists its tests and runs none.
    let out = std::process::Command::new(&program)
        .args([SHIM_ARG, "probe", "--list"])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    if out.is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).lines().any(|l| l == PROBE_OK)) {
        return Some(program);
    }
    tracing::warn!(program = %program.display(), "no pod shim: pods are the agent's children and end with it");
    None
}

/// Writes `value` as `dir/name` in one rename: a reader sees all or nothing.
fn write_atomic(dir: &Path, name: &str, value: &impl Serialize) -> std::io::Result<()> {
    let text = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = std::fs::File::create(&tmp)?;
    // No fsync: a host that loses power loses its pods too.
    f.write_all(&text)?;
    std::fs::rename(&tmp, dir.join(name))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The pod recorded in `state`, if it is the pod with `uid`.
pub fn read_pod(state: &Path, uid: &str) -> Option<PodRecord> {
    read_json::<PodRecord>(&state.join(POD_FILE)).filter(|r| r.uid == uid)
}

/// Any pod recorded in `state`, whatever its UID.
pub fn read_any_pod(state: &Path) -> Option<PodRecord> {
    read_json(&state.join(POD_FILE))
}

/// The exit of the pod with `uid` recorded in `state`, once there is one.
pub fn read_exit(state: &Path, uid: &str) -> Option<ExitRecord> {
    read_json::<ExitRecord>(&state.join(EXIT_FILE)).filter(|r| r.uid == uid)
}

/// Runs the shim when the program was started as one (first argument
/// [`SHIM_ARG`]); otherwise returns at once. Call it first in `main`,
/// before any thread is started (it forks). A program that embeds the agent
/// without it (the `ringleader-pod-init` of the agent's own tests) runs
/// pods attached to the agent, which end with it.
pub fn run_if_invoked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(SHIM_ARG)) {
        return;
    }
    if args.next().as_deref() == Some(std::ffi::OsStr::new("probe")) {
        println!("{PROBE_OK}");
        std::process::exit(0);
    }
    std::process::exit(shim());
}

/// Tells the agent how the start went (one line on stdout), then lets go of
/// stdout so the agent's read ends.
fn tell_agent(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(format!("{line}\n").as_bytes());
    let _ = out.flush();
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        use std::os::fd::AsRawFd;
        // SAFETY: both descriptors are open.
        unsafe { libc::dup2(null.as_raw_fd(), 1) };
    }
}

fn shim() -> i32 {
    let mut text = Vec::new();
    if let Err(e) = std::io::stdin().lock().read_to_end(&mut text) {
        tell_agent(&format!("err reading the shim spec: {e}"));
        return 1;
    }
    let spec: ShimSpec = match serde_json::from_slice(&text) {
        Ok(s) => s,
        Err(e) => {
            tell_agent(&format!("err reading the shim spec: {e}"));
            return 1;
        }
    };
    // SAFETY: single-threaded (the hook runs first in main).
    match unsafe { libc::fork() } {
        -1 => {
            tell_agent(&format!("err fork: {}", std::io::Error::last_os_error()));
            return 1;
        }
        0 => {}
        // The agent reaps this parent at once; the child is init's.
        _ => return 0,
    }
    // SAFETY: setsid has no preconditions; the forked child is no group leader.
    unsafe { libc::setsid() };
    match supervise(&spec) {
        Ok(()) => 0,
        Err(e) => {
            tell_agent(&format!("err {e}"));
            1
        }
    }
}

/// Starts the pod, records it, copies its output and records its end.
fn supervise(spec: &ShimSpec) -> std::io::Result<()> {
    let (program, args) = spec.argv.split_first().ok_or_else(|| std::io::Error::other("empty command"))?;
    let append = |p: &Path| std::fs::OpenOptions::new().create(true).append(true).open(p);
    let log = append(&spec.log)?;
    let times = append(&times_path(&spec.log))?;
    // One pipe for both streams keeps their order, as one file did.
    let (reader, writer) = std::io::pipe()?;
    let err = writer.try_clone()?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(&spec.cwd)
        .stdout(writer)
        .stderr(err)
        .process_group(0);
    match &spec.init {
        Some(init) => {
            cmd.stdin(spec_file(init)?);
        }
        None => {
            cmd.stdin(std::process::Stdio::null());
        }
    }
    let mut child = cmd.spawn()?;
    // The write ends must close here, or the log never sees end of file.
    drop(cmd);
    let pid = child.id() as i32;
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    let record_of = |pid| Proc::now(pid).unwrap_or(Proc { pid, start: 0 });
    let pod = PodRecord {
        uid: spec.uid.clone(),
        pod: record_of(pid),
        shim: record_of(me),
        log: spec.log.clone(),
        sandbox_uid: spec.init.as_ref().map(|i| i.uid),
    };
    if let Err(e) = write_atomic(&spec.state, POD_FILE, &pod) {
        // Without its record no later agent could find the pod: stop it.
        // SAFETY: the group is the child's own, just created.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let _ = child.wait();
        return Err(std::io::Error::new(e.kind(), format!("{}: {e}", spec.state.join(POD_FILE).display())));
    }
    tell_agent(&format!("pid {pid}"));
    let (done_tx, done) = std::sync::mpsc::channel();
    let cap = super::limits::LogCap::new(&spec.log, spec.log_max);
    std::thread::spawn(move || {
        let _ = record(reader, log, times, cap);
        let _ = done_tx.send(());
    });
    let status = loop {
        match child.wait() {
            Ok(s) => break Some(s),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break None,
        }
    };
    // The leader is gone; stragglers of its group go with it.
    // SAFETY: the group is the pod's (pid > 1, not ours: we lead our own session).
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    // A background process still holding the pipe does not hold the end up.
    let _ = done.recv_timeout(DRAIN);
    let exit = ExitRecord {
        uid: spec.uid.clone(),
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        finished_at: ringleader_api::time::now(),
    };
    write_atomic(&spec.state, EXIT_FILE, &exit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_read_past_odd_command_names() {
        let tail = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4242 99";
        assert_eq!(stat_fields(&format!("7 (a) b (c)) {tail}")), Some(("S", 4242)));
        assert_eq!(stat_fields("7 (x) S 1"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_recycled_pid_is_not() {
        // SAFETY: getpid cannot fail.
        let me = Proc::now(unsafe { libc::getpid() }).expect("own stat");
        assert!(me.alive());
        assert!(!Proc { start: me.start + 1, ..me }.alive());
    }

    #[test]
    fn records_are_read_only_for_their_pod() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let exit = ExitRecord { uid: "u1".into(), code: Some(3), signal: None, finished_at: 5.0 };
        write_atomic(dir.path(), EXIT_FILE, &exit)?;
        assert_eq!(read_exit(dir.path(), "u1"), Some(exit));
        assert_eq!(read_exit(dir.path(), "u2"), None);
        Ok(())
    }
}
