//! Pods as process groups: spawn with the log as stdout and stderr, signal
//! the whole group (a training launcher's children die with it), and find
//! groups a crashed agent left behind.

use crate::status::Exit;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Everything a spawn needs.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// The complete environment (nothing is inherited from the agent).
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Log file (created or truncated).
    pub log: PathBuf,
}

/// Starts the process as the leader of a new process group.
pub fn spawn(launch: &Launch) -> std::io::Result<tokio::process::Child> {
    let (program, args) = launch.argv.split_first().ok_or_else(|| std::io::Error::other("empty command"))?;
    let log = std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(&launch.log)?;
    let err = log.try_clone()?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(&launch.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(err))
        .process_group(0)
        .kill_on_drop(false);
    cmd.spawn()
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
        };
        let mut child = spawn(&launch).unwrap();
        let pgid = child.id().unwrap() as i32;
        assert!(is_pod_group(pgid, "ns", "p"));
        assert!(!is_pod_group(pgid, "ns", "other"));
        assert!(signal_group(pgid, libc::SIGKILL));
        let exit = exit_of(child.wait().await.unwrap());
        assert_eq!(exit.code, 137);
    }
}
