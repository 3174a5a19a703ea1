//! A pod's log as the agent or its shim writes it: each line's start
//! stamped in a file beside it, copied from the pod's pipe, kept under a
//! size cap by rotating as the kubelet rotates container logs.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Suffix of the file beside a log holding when each of its lines began.
pub const TIMES_SUFFIX: &str = ".times";

/// The file of line stamps of `log`: one RFC 3339 stamp (nanoseconds) per
/// line of the log, in order.
pub fn times_path(log: &Path) -> PathBuf {
    let mut name = log.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(TIMES_SUFFIX);
    log.with_file_name(name)
}

/// Suffix of the log of the run before: `kubectl logs --previous` reads it.
pub const PREVIOUS_SUFFIX: &str = ".previous";

/// The previous run's log beside `log` (its stamps: [`times_path`] of it).
pub fn previous_path(log: &Path) -> PathBuf {
    let mut name = log.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(PREVIOUS_SUFFIX);
    log.with_file_name(name)
}

/// Before a new run writes `log`: the last run's log and stamps, if it
/// wrote any, become the previous run's (replacing older ones), as the
/// kubelet keeps a restarted container's last log. A restart here is a new
/// pod of the same name in the same sandbox.
pub fn keep_previous(log: &Path) {
    if std::fs::metadata(log).map_or(true, |m| m.len() == 0) {
        return;
    }
    let previous = previous_path(log);
    for (from, to) in [(times_path(log), times_path(&previous)), (log.to_path_buf(), previous)] {
        if let Err(e) = std::fs::rename(&from, &to) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(log = %from.display(), error = %e, "keeping the previous run's log failed");
            }
        }
    }
}

/// How long an exited pod's last output may take to reach the log; a
/// background process still holding the pipe does not hold the pod up.
pub(crate) const DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Copies the pipe into the log until every writer closed it, stamping
/// each line's start.
pub(crate) fn record(
    mut pipe: std::io::PipeReader,
    mut log: std::fs::File,
    mut times: std::fs::File,
    mut cap: super::limits::LogCap,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 16 << 10];
    let mut line_start = true;
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        if cap.rotate_before(n) {
            match cap.rotate() {
                Ok(pair) => {
                    (log, times) = pair;
                    // The line running on continues the new file: it gets a stamp there.
                    line_start = true;
                }
                Err(e) => tracing::warn!(error = %e, "rotating a pod's log failed; it grows on"),
            }
        }
        let stamp = jiff::Timestamp::now().to_string();
        let mut stamps = String::new();
        for byte in chunk {
            if line_start {
                stamps.push_str(&stamp);
                stamps.push('\n');
            }
            line_start = *byte == b'\n';
        }
        // Stamps first: a reader never sees a line without its stamp.
        times.write_all(stamps.as_bytes())?;
        log.write_all(chunk)?;
    }
}

/// Keeps a pod's log under `max` bytes: past it the log moves to `<log>.1`
/// (replacing the older one), its stamps with it, and a fresh pair starts,
/// as the kubelet rotates container logs.
#[derive(Debug)]
pub struct LogCap {
    path: PathBuf,
    max: u64,
    written: u64,
}

impl LogCap {
    /// A cap of `max` bytes for the log at `path`.
    pub fn new(path: &Path, max: u64) -> LogCap {
        LogCap { path: path.to_path_buf(), max: max.max(4096), written: 0 }
    }

    /// Counts `n` bytes about to be written; true when the log must rotate first.
    pub fn rotate_before(&mut self, n: usize) -> bool {
        let n = n as u64;
        if self.written > 0 && self.written.saturating_add(n) > self.max {
            self.written = n;
            return true;
        }
        self.written = self.written.saturating_add(n);
        false
    }

    /// Moves the log and its stamps aside and opens fresh ones.
    pub fn rotate(&self) -> std::io::Result<(std::fs::File, std::fs::File)> {
        let times = times_path(&self.path);
        let aside = |p: &Path| {
            let mut name = p.as_os_str().to_os_string();
            name.push(".1");
            PathBuf::from(name)
        };
        std::fs::rename(&self.path, aside(&self.path))?;
        std::fs::rename(&times, aside(&times))?;
        let open = |p: &Path| std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(p);
        Ok((open(&self.path)?, open(&times)?))
    }
}
