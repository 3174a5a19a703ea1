//! CPU and memory of each running pod of the process runtime, read from
//! `/proc`, and the patches that publish them for `metrics.k8s.io`
//! (`kubectl top`). A pod's processes are its process group and every
//! descendant of it (a sandbox's init may start sessions of its own).
//! Each sample carries the one before it, so the API server derives a CPU
//! rate from a single read of the pod. Simulated pods are never sampled:
//! there is nothing real to report.

use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Cumulative CPU time of the pod's processes, in nanoseconds.
pub const CPU_NANOS: &str = "ringleader.io/usage-cpu-nanos";
/// Resident memory of the pod's processes, in bytes.
pub const MEMORY_BYTES: &str = "ringleader.io/usage-memory-bytes";
/// Unix time (seconds) of the sample.
pub const AT: &str = "ringleader.io/usage-at";
/// [`CPU_NANOS`] of the sample before (0 at the pod's start).
pub const PREV_CPU_NANOS: &str = "ringleader.io/usage-prev-cpu-nanos";
/// [`AT`] of the sample before (the pod's start time for the first one).
pub const PREV_AT: &str = "ringleader.io/usage-prev-at";

/// One process as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Process id.
    pub pid: i32,
    /// Parent's id.
    pub ppid: i32,
    /// Process group.
    pub pgrp: i32,
    /// utime + stime + cutime + cstime, in clock ticks: the time of its
    /// reaped children counts, so a short-lived child's CPU is not lost.
    pub cpu_ticks: u64,
    /// Resident set, in pages.
    pub rss_pages: u64,
}

/// Parses one `/proc/<pid>/stat` line (`None` when it is not one). The
/// command name may hold spaces and parentheses: fields are counted after
/// its last `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text.get(..open)?.trim().parse().ok()?;
    let f: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok());
    let i = |i: usize| f.get(i).and_then(|s| s.parse::<i32>().ok());
    let cpu_ticks = n(11)?.saturating_add(n(12)?).saturating_add(n(13)?).saturating_add(n(14)?);
    Some(ProcStat { pid, ppid: i(1)?, pgrp: i(2)?, cpu_ticks, rss_pages: n(21)? })
}

/// Every process under `proc_root` (processes that end while it is read are skipped).
pub fn proc_table(proc_root: &Path) -> Vec<ProcStat> {
    let Ok(dir) = std::fs::read_dir(proc_root) else { return Vec::new() };
    dir.flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|t| parse_stat(&t))
        .collect()
}

/// CPU and memory of a set of processes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Cumulative CPU time, nanoseconds.
    pub cpu_nanos: u64,
    /// Resident memory, bytes.
    pub memory_bytes: u64,
}

/// Clock ticks per second and page size of this machine.
#[derive(Debug, Clone, Copy)]
pub struct Units {
    /// `_SC_CLK_TCK`.
    pub ticks_per_second: u64,
    /// `_SC_PAGESIZE`.
    pub page_size: u64,
}

impl Units {
    /// This machine's.
    pub fn host() -> Units {
        // SAFETY: sysconf has no preconditions; a failure returns -1, replaced below.
        let (tck, page) = unsafe { (libc::sysconf(libc::_SC_CLK_TCK), libc::sysconf(libc::_SC_PAGESIZE)) };
        Units {
            ticks_per_second: u64::try_from(tck).ok().filter(|t| *t > 0).unwrap_or(100),
            page_size: u64::try_from(page).ok().filter(|p| *p > 0).unwrap_or(4096),
        }
    }
}

/// A process table indexed by parent, built once per sampling round and
/// asked for every pod's group.
pub struct ProcTree {
    table: Vec<ProcStat>,
    children: HashMap<i32, Vec<usize>>,
    by_group: HashMap<i32, Vec<usize>>,
}

impl ProcTree {
    /// Indexes `table`.
    pub fn new(table: Vec<ProcStat>) -> ProcTree {
        let mut children: HashMap<i32, Vec<usize>> = HashMap::new();
        let mut by_group: HashMap<i32, Vec<usize>> = HashMap::new();
        for (i, p) in table.iter().enumerate() {
            children.entry(p.ppid).or_default().push(i);
            by_group.entry(p.pgrp).or_default().push(i);
        }
        ProcTree { table, children, by_group }
    }

    /// Usage of the processes in group `pgid` and of all their descendants.
    pub fn group_usage(&self, pgid: i32, units: Units) -> Usage {
        let table = &self.table;
        let mut seen: HashSet<usize> = HashSet::new();
        let mut todo: Vec<usize> = self.by_group.get(&pgid).cloned().unwrap_or_default();
        // Each process is visited once, so this ends after at most `table.len()` steps.
        while let Some(i) = todo.pop() {
            if !seen.insert(i) {
                continue;
            }
            if let Some(kids) = self.children.get(&table[i].pid) {
                todo.extend(kids.iter().copied().filter(|k| !seen.contains(k)));
            }
        }
        let (ticks, pages) = seen.iter().fold((0u64, 0u64), |(t, p), &i| {
            (t.saturating_add(table[i].cpu_ticks), p.saturating_add(table[i].rss_pages))
        });
        Usage {
            cpu_nanos: ticks.saturating_mul(1_000_000_000) / units.ticks_per_second.max(1),
            memory_bytes: pages.saturating_mul(units.page_size),
        }
    }
}

/// A sample as published: the figures, when, and the sample before.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Published {
    /// The figures.
    pub usage: Usage,
    /// Unix time of the sample.
    pub at: f64,
    /// Cumulative CPU of the sample before.
    pub prev_cpu_nanos: u64,
    /// Unix time of the sample before.
    pub prev_at: f64,
}

impl Published {
    /// The sample that follows `prev` (or the first, counted from `start`).
    pub fn next(prev: Option<&Published>, start: f64, usage: Usage, at: f64) -> Published {
        let (prev_cpu_nanos, prev_at) = prev.map_or((0, start), |p| (p.usage.cpu_nanos, p.at));
        Published { usage, at, prev_cpu_nanos, prev_at }
    }

    /// Whether `usage` is worth a write after this one: the figures moved,
    /// or this one still shows CPU being used (one more write records the stop).
    pub fn stale(&self, usage: Usage) -> bool {
        usage != self.usage || self.usage.cpu_nanos > self.prev_cpu_nanos
    }

    /// Merge patch of the pod's annotations.
    pub fn pod_patch(&self) -> Value {
        json!({"metadata": {"annotations": {
            CPU_NANOS: self.usage.cpu_nanos.to_string(),
            MEMORY_BYTES: self.usage.memory_bytes.to_string(),
            AT: format!("{:.3}", self.at),
            PREV_CPU_NANOS: self.prev_cpu_nanos.to_string(),
            PREV_AT: format!("{:.3}", self.prev_at),
        }}})
    }

    /// Merge patch of the node's `status.usage` (the sum over its pods).
    pub fn node_patch(&self) -> Value {
        json!({"status": {"usage": {
            "cpuNanos": self.usage.cpu_nanos,
            "memoryBytes": self.usage.memory_bytes,
            "at": self.at,
            "prevCpuNanos": self.prev_cpu_nanos,
            "prevAt": self.prev_at,
        }}})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNITS: Units = Units { ticks_per_second: 100, page_size: 4096 };

    fn stat(pid: i32, ppid: i32, pgrp: i32, ticks: u64, rss: u64) -> String {
        format!("{pid} (a (b) c) S {ppid} {pgrp} 1 0 -1 4194560 1 0 0 0 {ticks} 0 0 0 20 0 1 0 100 1000 {rss} 18446744073709551615")
    }

    #[test]
    fn stat_lines_parse_past_odd_command_names() {
        let p = parse_stat(&stat(42, 1, 40, 250, 300)).expect("parses");
        assert_eq!(p, ProcStat { pid: 42, ppid: 1, pgrp: 40, cpu_ticks: 250, rss_pages: 300 });
        assert_eq!(parse_stat("42 (x) S 1"), None);
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn a_group_counts_its_members_and_their_descendants_only() {
        let table: Vec<ProcStat> = [
            stat(10, 1, 10, 100, 10),  // leader
            stat(11, 10, 10, 50, 20),  // same group
            stat(12, 11, 12, 25, 30),  // own session, descendant
            stat(20, 1, 20, 1000, 99), // another pod
        ]
        .iter()
        .filter_map(|s| parse_stat(s))
        .collect();
        let tree = ProcTree::new(table);
        let u = tree.group_usage(10, UNITS);
        assert_eq!(u, Usage { cpu_nanos: 1_750_000_000, memory_bytes: 60 * 4096 });
        assert_eq!(tree.group_usage(99, UNITS), Usage::default());
    }

    #[test]
    fn this_process_is_measured_from_proc() {
        let me = i32::try_from(std::process::id()).expect("pid fits");
        let table = proc_table(Path::new("/proc"));
        let mine = table.iter().find(|p| p.pid == me).expect("own stat");
        let pgrp = mine.pgrp;
        assert!(ProcTree::new(table).group_usage(pgrp, Units::host()).memory_bytes > 0);
    }

    #[test]
    fn samples_chain_and_writes_stop_once_idle() {
        let first = Published::next(None, 100.0, Usage { cpu_nanos: 5, memory_bytes: 7 }, 110.0);
        assert_eq!((first.prev_cpu_nanos, first.prev_at), (0, 100.0));
        assert_eq!(first.pod_patch()["metadata"]["annotations"][AT], "110.000");
        let same = first.usage;
        assert!(first.stale(same), "CPU was used: one more write records the stop");
        let idle = Published::next(Some(&first), 100.0, same, 120.0);
        assert_eq!((idle.prev_cpu_nanos, idle.prev_at), (5, 110.0));
        assert!(!idle.stale(same));
        assert!(idle.stale(Usage { cpu_nanos: 5, memory_bytes: 8 }));
    }
}
