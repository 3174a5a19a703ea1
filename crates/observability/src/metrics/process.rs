//! The standard `process_*` figures, read from `/proc/self` at scrape time
//! (a few small files: no cost that grows with the cluster). Where `/proc`
//! is missing (not Linux) the families are left out rather than invented.

use std::path::Path;

/// Clock ticks per second of `/proc/<pid>/stat` times: `USER_HZ`, 100 on
/// every Linux architecture the kernel exposes to user space.
const TICKS_PER_SECOND: f64 = 100.0;

/// `process_*` as `(name, help, is_counter, value)`.
pub fn figures(proc_dir: &Path) -> Vec<(&'static str, &'static str, bool, f64)> {
    let mut out = Vec::new();
    let stat = std::fs::read_to_string(proc_dir.join("self/stat")).ok();
    // Fields after the command (which may hold spaces) start at state (field 3).
    let fields: Vec<&str> = stat
        .as_deref()
        .and_then(|s| s.rsplit_once(')'))
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
    if let (Some(utime), Some(stime)) = (field(14), field(15)) {
        out.push((
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            true,
            (utime + stime) / TICKS_PER_SECOND,
        ));
    }
    if let Some(vsize) = field(23) {
        out.push(("process_virtual_memory_bytes", "Virtual memory size in bytes.", false, vsize));
    }
    // `VmRSS` is in kB whatever the page size (4 KiB on x86, often 64 KiB on Arm).
    let rss = std::fs::read_to_string(proc_dir.join("self/status")).ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<f64>().ok())
    });
    if let Some(kb) = rss {
        out.push(("process_resident_memory_bytes", "Resident memory size in bytes.", false, kb * 1024.0));
    }
    let boot = std::fs::read_to_string(proc_dir.join("stat"))
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("btime ")).and_then(|v| v.trim().parse::<f64>().ok()));
    if let (Some(boot), Some(start)) = (boot, field(22)) {
        out.push((
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            false,
            boot + start / TICKS_PER_SECOND,
        ));
    }
    if let Ok(dir) = std::fs::read_dir(proc_dir.join("self/fd")) {
        out.push(("process_open_fds", "Number of open file descriptors.", false, dir.count() as f64));
    }
    let limit = std::fs::read_to_string(proc_dir.join("self/limits")).ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("Max open files"))
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse::<f64>().ok())
    });
    if let Some(limit) = limit {
        out.push(("process_max_fds", "Maximum number of open file descriptors.", false, limit));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_proc_tree() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        std::fs::create_dir_all(p.join("self/fd")).expect("mkdir");
        std::fs::write(p.join("self/fd/0"), "").expect("fd");
        std::fs::write(p.join("self/fd/1"), "").expect("fd");
        // pid (comm with a space) state ppid … utime=250 stime=50 … starttime=1000 vsize
        let mut stat = String::from("42 (ring leader) S");
        for n in 4..=24 {
            let v = match n {
                14 => "250",
                15 => "50",
                22 => "1000",
                23 => "8192",
                24 => "3",
                _ => "0",
            };
            stat.push(' ');
            stat.push_str(v);
        }
        std::fs::write(p.join("self/stat"), stat).expect("stat");
        std::fs::write(p.join("self/status"), "Name: x\nVmRSS:\t  12 kB\n").expect("status");
        std::fs::write(p.join("stat"), "cpu 1 2 3\nbtime 1700000000\n").expect("stat");
        std::fs::write(
            p.join("self/limits"),
            "Limit Soft Hard Units\nMax open files            1024                 4096                 files\n",
        )
        .expect("limits");
        let f = figures(p);
        let get = |n: &str| f.iter().find(|(name, ..)| *name == n).map(|(.., v)| *v);
        assert_eq!(get("process_cpu_seconds"), Some(3.0));
        assert_eq!(get("process_resident_memory_bytes"), Some(12.0 * 1024.0));
        assert_eq!(get("process_virtual_memory_bytes"), Some(8192.0));
        assert_eq!(get("process_start_time_seconds"), Some(1_700_000_010.0));
        assert_eq!(get("process_open_fds"), Some(2.0));
        assert_eq!(get("process_max_fds"), Some(1024.0));
        assert!(figures(&p.join("missing")).is_empty());
    }
}
