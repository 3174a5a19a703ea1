//! The server check's facts about the machine a probe pod runs on, read
//! from `/proc` and the vendor tools where present; the manager judges them
//! (criteria, baseline consistency). Nothing is invented: a tool that is
//! not installed is reported as not present.

use serde::Serialize;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a vendor tool may run (they hang when the driver is wedged).
const TOOL_TIMEOUT: Duration = Duration::from_secs(20);

/// What the probe found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Facts {
    /// Logical CPUs listed in `cpuinfo`.
    pub cpus: usize,
    /// The first CPU's model name (`model name`, else `Hardware`/`CPU part`).
    pub cpu_model: String,
    /// `MemTotal`, KiB.
    pub mem_total_kib: u64,
    /// `MemAvailable`, KiB.
    pub mem_available_kib: u64,
    /// 1-minute load average.
    pub load1: f64,
    /// `nvidia-smi` driver version, when the tool answered.
    pub nvidia_driver: Option<String>,
    /// The version line of `npu-smi info`, when the tool answered.
    pub npu_driver: Option<String>,
}

/// Reads `cpuinfo`, `meminfo` and `loadavg` under `proc_root` (`/proc`);
/// the driver fields are left to [`driver_facts`].
pub fn proc_facts(proc_root: &Path) -> Facts {
    let read = |f: &str| std::fs::read_to_string(proc_root.join(f)).unwrap_or_default();
    let cpuinfo = read("cpuinfo");
    let cpus = cpuinfo.lines().filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor")).count();
    let field = |key: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let cpu_model = field("model name").or_else(|| field("Hardware")).or_else(|| field("CPU part")).unwrap_or_default();
    let meminfo = read("meminfo");
    let kib = |key: &str| {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':')?.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let load1 = read("loadavg").split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0.0);
    Facts {
        cpus,
        cpu_model,
        mem_total_kib: kib("MemTotal"),
        mem_available_kib: kib("MemAvailable"),
        load1,
        nvidia_driver: None,
        npu_driver: None,
    }
}

/// Fills the driver fields from `nvidia-smi` and `npu-smi` when installed.
pub fn driver_facts(facts: &mut Facts) {
    facts.nvidia_driver = run_tool("nvidia-smi", &["--query-gpu=driver_version", "--format=csv,noheader"])
        .and_then(|out| out.lines().next().map(|l| l.trim().to_string()))
        .filter(|v| !v.is_empty());
    facts.npu_driver = run_tool("npu-smi", &["info"])
        .and_then(|out| out.lines().find(|l| l.contains("Version")).map(|l| l.trim_matches(['|', ' ']).to_string()));
}

/// A tool's stdout when it ran and exited 0 within [`TOOL_TIMEOUT`].
fn run_tool(program: &str, args: &[&str]) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + TOOL_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = String::new();
                use std::io::Read;
                child.stdout.take()?.read_to_string(&mut out).ok()?;
                return status.success().then_some(out);
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_come_from_the_proc_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("cpuinfo"),
            "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n",
        )
        .expect("write");
        std::fs::write(
            dir.path().join("meminfo"),
            "MemTotal:       2113536 kB\nMemFree: 1 kB\nMemAvailable:    1056768 kB\n",
        )
        .expect("write");
        std::fs::write(dir.path().join("loadavg"), "0.50 0.40 0.30 1/100 42\n").expect("write");
        let f = proc_facts(dir.path());
        assert_eq!(f.cpus, 2);
        assert_eq!(f.cpu_model, "Intel(R) Xeon(R) Platinum 8480+");
        assert_eq!((f.mem_total_kib, f.mem_available_kib), (2_113_536, 1_056_768));
        assert_eq!(f.load1, 0.5);
        let arm = tempfile::tempdir().expect("tempdir");
        std::fs::write(arm.path().join("cpuinfo"), "processor : 0\nCPU part : 0xd01\n").expect("write");
        let f = proc_facts(arm.path());
        assert_eq!((f.cpus, f.cpu_model.as_str(), f.mem_total_kib), (1, "0xd01", 0));
    }

    #[test]
    fn a_missing_tool_is_not_present() {
        assert_eq!(run_tool("ringleader-no-such-tool", &[]), None);
        assert_eq!(run_tool("sh", &["-c", "echo 550.54; exit 0"]).as_deref(), Some("550.54\n"));
        assert_eq!(run_tool("sh", &["-c", "exit 3"]), None);
    }
}
