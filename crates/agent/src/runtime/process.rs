//! Pods as process groups: spawn (through the pod's [`shim`], so the pod
//! outlives the agent, or attached to the agent where no shim runs), signal
//! the whole group (a training launcher's children die with it), re-adopt
//! what a previous agent started, and find groups it left behind.

pub use super::isolate::Confined;
pub use super::launch::Launch;
use super::log_file::{record, DRAIN};
pub use super::log_file::{times_path, TIMES_SUFFIX};
use super::memfd::{memfd, spec_file};
use super::{isolate, shim};
use crate::status::Exit;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Starts the process as the leader of a new process group, attached to
/// the agent: its stdout and stderr come through the agent, which appends
/// them to the log and stamps every line's start in [`times_path`] (what
/// `kubectl logs --timestamps` and `--since` read). The pipes close with
/// the agent, and the pod with them: [`spawn_in`] with a shim does not.
pub fn spawn(launch: &Launch) -> std::io::Result<Running> {
    spawn_in(launch, None, None)
}

/// Where a pod's shim runs from and keeps its state.
#[derive(Debug, Clone)]
pub struct ShimTarget {
    /// The program run with [`shim::SHIM_ARG`].
    pub program: PathBuf,
    /// The pod's UID.
    pub uid: String,
    /// The pod's state directory (emptied for the new start).
    pub state: PathBuf,
}

/// [`spawn`], in a sandbox when `confined` is given: the process the agent
/// waits on and signals is then the pod init (the group leader, with the
/// pod's environment), and the program runs under it. With `shim`, the pod
/// runs under its shim, detached from the agent.
pub fn spawn_in(launch: &Launch, confined: Option<Confined>, shim: Option<&ShimTarget>) -> std::io::Result<Running> {
    let (program, args) = launch.argv.split_first().ok_or_else(|| std::io::Error::other("empty command"))?;
    let open = |p: &Path| std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(p);
    let mut log = open(&launch.log)?;
    let mut times = open(&times_path(&launch.log))?;
    if let Some(target) = shim {
        if let Some(c) = &confined {
            note(&mut log, &mut times, &c.notes)?;
        }
        return spawn_shimmed(launch, confined, target);
    }
    // One pipe for both streams keeps their order, as one file did.
    let (reader, writer) = std::io::pipe()?;
    let err = writer.try_clone()?;
    let mut cgroup = None;
    let (mut cmd, stdin, lease) = match confined {
        None => (tokio::process::Command::new(program), Stdio::null(), None),
        Some(c) => {
            note(&mut log, &mut times, &c.notes)?;
            let mut cmd = tokio::process::Command::new(&c.init_program);
            cmd.arg(isolate::INIT_ARG);
            cgroup = c.cgroup;
            (cmd, Stdio::from(spec_file(&c.spec)?), Some(c.lease))
        }
    };
    if lease.is_none() {
        cmd.args(args).current_dir(&launch.cwd);
    } else {
        cmd.current_dir("/");
    }
    cmd.env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(stdin)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(err))
        .process_group(0)
        .kill_on_drop(false);
    let child = cmd.spawn()?;
    // The write ends must close here, or the log never sees end of file.
    drop(cmd);
    let (done_tx, done) = tokio::sync::oneshot::channel();
    let cap = super::limits::LogCap::new(&launch.log, launch.log_max);
    std::thread::Builder::new().name("pod-log".into()).spawn(move || {
        if let Err(e) = record(reader, log, times, cap) {
            tracing::warn!(error = %e, "recording a pod's log failed");
        }
        let _ = done_tx.send(());
    })?;
    Ok(Running { how: How::Attached { child, done }, _lease: lease, cgroup, ended: false })
}

/// Lines for the head of the log, stamped.
fn note(log: &mut std::fs::File, times: &mut std::fs::File, notes: &[String]) -> std::io::Result<()> {
    let stamp = jiff::Timestamp::now().to_string();
    for note in notes {
        times.write_all(format!("{stamp}\n").as_bytes())?;
        log.write_all(format!("ringleader sandbox: {note}\n").as_bytes())?;
    }
    Ok(())
}

/// Starts the pod's shim and waits for it to say the pod runs (its pid) or
/// why not. The shim's first process ends at once (the agent reaps it);
/// the shim itself runs on in its own session.
fn spawn_shimmed(launch: &Launch, confined: Option<Confined>, target: &ShimTarget) -> std::io::Result<Running> {
    match std::fs::remove_dir_all(&target.state) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::create_dir_all(&target.state)?;
    let (argv, cwd, init, lease, cgroup) = match confined {
        None => (launch.argv.clone(), launch.cwd.clone(), None, None, None),
        Some(c) => {
            let argv = vec![c.init_program.to_string_lossy().into_owned(), isolate::INIT_ARG.to_string()];
            // The pod init joins the cgroup before it forks the pod.
            (argv, PathBuf::from("/"), Some(c.spec), Some(c.lease), c.cgroup)
        }
    };
    let spec = shim::ShimSpec {
        uid: target.uid.clone(),
        argv,
        env: launch.env.clone(),
        cwd,
        log: launch.log.clone(),
        log_max: launch.log_max,
        state: target.state.clone(),
        init,
    };
    let text = serde_json::to_vec(&spec).map_err(std::io::Error::other)?;
    let mut cmd = std::process::Command::new(&target.program);
    // The shim's own environment is empty and it works from `/`: it holds
    // nothing of the pod's that `ps` or a search by environment would find.
    cmd.arg(shim::SHIM_ARG)
        .current_dir("/")
        .env_clear()
        .stdin(Stdio::from(memfd(&text)?))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn()?;
    let mut said = String::new();
    if let Some(mut out) = child.stdout.take() {
        // Ends when the shim lets go of stdout: at once after the pod started.
        out.read_to_string(&mut said)?;
    }
    let _ = child.wait();
    let line = said.lines().next().unwrap_or_default();
    if let Some(why) = line.strip_prefix("err ") {
        return Err(std::io::Error::other(why.to_string()));
    }
    let pid = line.strip_prefix("pid ").and_then(|p| p.trim().parse::<i32>().ok());
    let record = shim::read_pod(&target.state, &target.uid);
    match (pid, record) {
        (Some(pid), Some(record)) if record.pod.pid == pid => Ok(Running {
            how: How::Shim { record, state: target.state.clone(), uid: target.uid.clone() },
            _lease: lease,
            cgroup,
            ended: false,
        }),
        _ => Err(std::io::Error::other(format!("the pod's shim did not start it ({:?})", line))),
    }
}

/// What a previous agent's pod left in its state directory.
#[derive(Debug)]
pub enum Left {
    /// Nothing of this pod (no record, or one of another pod): it did not
    /// run under a shim.
    Nothing,
    /// It still runs under its shim: watched again.
    Running(Running),
    /// It ended while no agent watched; its shim recorded how.
    Ended(Ended),
    /// Its shim is gone without recording an end (killed): what is left of
    /// its group is found the old way.
    Lost,
}

/// Re-attaches to the pod with `uid` a previous agent started with its
/// state in `state`. A sandboxed pod takes back its uid from `sandboxing`
/// and its cgroup from `cgroups`.
pub fn adopt(
    state: &Path,
    uid: &str,
    sandboxing: Option<&isolate::Sandboxing>,
    cgroups: Option<&super::cgroup::Cgroups>,
) -> Left {
    let Some(record) = shim::read_pod(state, uid) else { return Left::Nothing };
    if let Some(e) = shim::read_exit(state, uid) {
        return Left::Ended(Ended::of(&e));
    }
    if !record.shim.alive() {
        // It may have ended between the two reads.
        return shim::read_exit(state, uid).map_or(Left::Lost, |e| Left::Ended(Ended::of(&e)));
    }
    let lease = record.sandbox_uid.and_then(|u| sandboxing.and_then(|s| s.reserve(u)));
    let cgroup = cgroups.and_then(|c| c.open(uid));
    Left::Running(Running {
        how: How::Shim { record, state: state.to_path_buf(), uid: uid.to_string() },
        _lease: lease,
        cgroup,
        ended: false,
    })
}

/// How a pod ended, and when (when its shim saw it).
#[derive(Debug, Clone)]
pub struct Ended {
    /// Exit code, reason, message.
    pub exit: Exit,
    /// Unix time; `None`: now.
    pub at: Option<f64>,
}

impl Ended {
    fn of(e: &shim::ExitRecord) -> Ended {
        Ended { exit: Exit::from_wait(e.code, e.signal), at: Some(e.finished_at) }
    }
}

/// How often the agent looks at a shim for its end where the kernel has no pidfds.
const POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// A spawned pod process and the end of the copy of its output into the log.
#[derive(Debug)]
pub struct Running {
    how: How,
    /// Held until the process is reaped (dropped with this).
    _lease: Option<isolate::Lease>,
    /// Removed once dropped after the pod ended; kept for the next agent
    /// when a pod under its shim is dropped still running (agent stopping).
    cgroup: Option<super::cgroup::PodCgroup>,
    /// [`Running::wait`] saw the end.
    ended: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.ended && self.detached() {
            if let Some(group) = self.cgroup.take() {
                group.keep();
            }
        }
    }
}

#[derive(Debug)]
enum How {
    /// The agent's child; its output comes through the agent.
    Attached { child: tokio::process::Child, done: tokio::sync::oneshot::Receiver<()> },
    /// Under its shim, which records its end in `state`.
    Shim { record: shim::PodRecord, state: PathBuf, uid: String },
}

impl Running {
    /// The process id (the process group's id too).
    pub fn id(&self) -> Option<u32> {
        match &self.how {
            How::Attached { child, .. } => child.id(),
            How::Shim { record, .. } => u32::try_from(record.pod.pid).ok(),
        }
    }

    /// The log its shim appends to (`None`: attached to the agent).
    pub fn log(&self) -> Option<&Path> {
        match &self.how {
            How::Shim { record, .. } => Some(&record.log),
            How::Attached { .. } => None,
        }
    }

    /// Whether it outlives the agent (runs under its shim).
    pub fn detached(&self) -> bool {
        matches!(self.how, How::Shim { .. })
    }

    /// Waits for the process to exit and its output to be in the log.
    pub async fn wait(&mut self) -> std::io::Result<Ended> {
        match &mut self.how {
            How::Attached { child, done } => {
                let status = child.wait().await?;
                let _ = tokio::time::timeout(DRAIN, done).await;
                self.ended = true;
                Ok(Ended { exit: exit_of(status), at: None })
            }
            How::Shim { record, state, uid } => {
                // The shim records the end, then ends.
                shim::ended(record.shim, POLL).await;
                match shim::read_exit(state, uid) {
                    Some(e) => {
                        self.ended = true;
                        Ok(Ended::of(&e))
                    }
                    None => Err(std::io::Error::other("the pod's shim ended without recording the pod's end")),
                }
            }
        }
    }

    /// Whether the OOM killer killed a process of the pod (read before
    /// this is dropped, which removes the pod's cgroup).
    pub fn oom_killed(&self) -> bool {
        self.cgroup.as_ref().is_some_and(super::cgroup::PodCgroup::oom_killed)
    }
}

/// The exit of a reaped child.
pub fn exit_of(status: std::process::ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    Exit::from_wait(status.code(), status.signal())
}

/// Whether `pgid` may be signalled: never 0/1 (kill(0)/kill(-1) reach far
/// more than a pod) and never the agent's own group.
fn signallable(pgid: i32) -> bool {
    // SAFETY: getpgrp has no preconditions and cannot fail.
    pgid > 1 && pgid != unsafe { libc::getpgrp() }
}

/// Sends `signal` to every process of group `pgid`; false when none is left.
pub fn signal_group(pgid: i32, signal: i32) -> bool {
    if !signallable(pgid) {
        return false;
    }
    // SAFETY: kill with a negative pid signals a process group; no memory is involved.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

fn proc_pgrp(stat: &str) -> Option<i32> {
    // `pid (comm) state ppid pgrp …`; comm may contain spaces and parens.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(2)?.parse().ok()
}

/// Whether group `pgid` still has a process that is this pod's (its
/// environment names the pod), so a recycled process-group ID of some
/// unrelated program is never killed. Without `/proc` a live group counts.
pub fn is_pod_group(pgid: i32, namespace: &str, pod: &str) -> bool {
    if !signallable(pgid) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // SAFETY: signal 0 only checks for existence.
        return unsafe { libc::kill(-pgid, 0) == 0 };
    };
    let want_pod = format!("RINGLEADER_POD={pod}");
    let want_ns = format!("RINGLEADER_NAMESPACE={namespace}");
    entries.flatten().any(|e| {
        let dir = e.path();
        let numeric = e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        numeric && in_group(&dir, pgid) && env_has(&dir, &want_pod, &want_ns)
    })
}

fn in_group(dir: &Path, pgid: i32) -> bool {
    std::fs::read_to_string(dir.join("stat")).ok().and_then(|s| proc_pgrp(&s)) == Some(pgid)
}

fn env_has(dir: &Path, a: &str, b: &str) -> bool {
    let Ok(env) = std::fs::read(dir.join("environ")) else { return false };
    let vars: Vec<&[u8]> = env.split(|c| *c == 0).collect();
    vars.contains(&a.as_bytes()) && vars.contains(&b.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing_survives_odd_command_names() {
        assert_eq!(proc_pgrp("123 (sh) S 1 456 456 0"), Some(456));
        assert_eq!(proc_pgrp("123 (a) b (c)) S 1 789 789 0"), Some(789));
        assert_eq!(proc_pgrp("garbage"), None);
    }

    #[test]
    fn refuses_to_signal_everything() {
        assert!(!signal_group(0, 0));
        assert!(!signal_group(1, 0));
        assert!(!signal_group(-5, 0));
        // SAFETY: getpgrp cannot fail.
        assert!(!signal_group(unsafe { libc::getpgrp() }, 0));
    }

    #[tokio::test]
    async fn spawned_group_is_recognised_and_killed() {
        let tmp = tempfile::tempdir().unwrap();
        let launch = Launch {
            argv: vec!["/bin/sh".into(), "-c".into(), "sleep 30 & wait".into()],
            env: vec![("RINGLEADER_POD".into(), "p".into()), ("RINGLEADER_NAMESPACE".into(), "ns".into())],
            cwd: tmp.path().to_path_buf(),
            log: tmp.path().join("log"),
            log_max: 1 << 20,
        };
        let mut child = spawn(&launch).unwrap();
        let pgid = child.id().unwrap() as i32;
        assert!(is_pod_group(pgid, "ns", "p"));
        assert!(!is_pod_group(pgid, "ns", "other"));
        assert!(signal_group(pgid, libc::SIGKILL));
        let exit = child.wait().await.unwrap().exit;
        assert_eq!(exit.code, 137);
    }

    #[tokio::test]
    async fn output_lands_in_the_log_with_a_stamp_per_line() -> std::io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let launch = Launch {
            argv: vec!["/bin/sh".into(), "-c".into(), "echo one; echo two >&2; printf three".into()],
            env: vec![],
            cwd: tmp.path().to_path_buf(),
            log: tmp.path().join("log"),
            log_max: 1 << 20,
        };
        let mut running = spawn(&launch)?;
        let exit = running.wait().await?.exit;
        assert_eq!(exit.code, 0);
        let log = std::fs::read_to_string(tmp.path().join("log"))?;
        assert_eq!(log, "one\ntwo\nthree");
        let times = std::fs::read_to_string(times_path(&launch.log))?;
        let stamps: Vec<&str> = times.lines().collect();
        assert_eq!(stamps.len(), 3, "{times}");
        for s in &stamps {
            assert!(s.parse::<jiff::Timestamp>().is_ok(), "{s}");
        }
        assert!(stamps[0] <= stamps[2]);
        Ok(())
    }
}
