//! A container's CRI log (`<RFC 3339 time> <stream> <P|F> <text>` per
//! line, as containerd writes it) copied into the pod's log and its stamps
//! file, the form the API server serves `kubectl logs` from, with the
//! pod's log cap and rotation.

use super::limits::LogCap;
use super::log_file::times_path;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Bytes read from the CRI log at once.
const CHUNK: usize = 1 << 20;

/// One parsed line: its stamp, its text, and whether it ends a line
/// (`F`) or continues in the next record (`P`, a long line split).
#[derive(Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub time: &'a str,
    pub text: &'a [u8],
    pub full: bool,
}

/// Parses one CRI log line (without its `\n`); `None` when malformed.
pub fn parse(line: &[u8]) -> Option<Record<'_>> {
    let mut parts = line.splitn(4, |b| *b == b' ');
    let time = std::str::from_utf8(parts.next()?).ok()?;
    let _stream = parts.next()?;
    let tag = parts.next()?;
    let text = parts.next().unwrap_or_default();
    let full = match tag {
        b"F" => true,
        b"P" => false,
        _ => return None,
    };
    Some(Record { time, text, full })
}

/// Pauses between reads of a followed log: after output, and at most.
const FOLLOW_FAST: Duration = Duration::from_millis(200);
const FOLLOW_SLOW: Duration = Duration::from_millis(1600);

/// Copies new records of the CRI log at `from` into `to` (and its stamps)
/// until `done` says the container has exited and nothing new came in a
/// last read. Bounded by the container's life plus one poll.
pub async fn follow(from: PathBuf, to: PathBuf, max: u64, mut done: tokio::sync::watch::Receiver<bool>) {
    let mut copier = match Copier::open(&to, max) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(log = %to.display(), error = %e, "a container's log cannot be written");
            return;
        }
    };
    // Read again soon after output, less often while there is none: a
    // thousand quiet containers are not read five times a second each.
    let mut pause = FOLLOW_FAST;
    loop {
        let finished = *done.borrow_and_update();
        match copier.copy_from(&from) {
            Ok(true) => pause = FOLLOW_FAST,
            Ok(false) => pause = (pause * 2).min(FOLLOW_SLOW),
            Err(e) => tracing::warn!(log = %from.display(), error = %e, "reading a container's CRI log failed"),
        }
        if finished {
            return;
        }
        // Woken at once when the container ends, for its last lines.
        let _ = tokio::time::timeout(pause, done.changed()).await;
    }
}

struct Copier {
    log: std::fs::File,
    times: std::fs::File,
    cap: LogCap,
    offset: u64,
    pending: Vec<u8>,
    line_open: bool,
}

impl Copier {
    fn open(to: &Path, max: u64) -> std::io::Result<Copier> {
        let open = |p: &Path| std::fs::OpenOptions::new().create(true).append(true).open(p);
        Ok(Copier {
            log: open(to)?,
            times: open(&times_path(to))?,
            cap: LogCap::new(to, max),
            offset: 0,
            pending: Vec::new(),
            line_open: false,
        })
    }

    /// Copies what the CRI log gained; whether it gained anything.
    fn copy_from(&mut self, from: &Path) -> std::io::Result<bool> {
        let mut f = match std::fs::File::open(from) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let start = self.offset;
        f.seek(SeekFrom::Start(self.offset))?;
        // In bounded chunks: a container that writes gigabytes between two
        // polls costs the agent one chunk of memory, not the whole burst.
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match f.read(&mut buf) {
                Ok(0) => return Ok(self.offset > start),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.offset += n as u64;
            self.absorb(&buf[..n])?;
        }
    }

    /// Takes in bytes read from the CRI log; writes the records they complete.
    fn absorb(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.pending.extend_from_slice(bytes);
        let Some(last_nl) = self.pending.iter().rposition(|b| *b == b'\n') else { return Ok(()) };
        let complete: Vec<u8> = self.pending.drain(..=last_nl).collect();
        let (mut text, mut stamps) = (Vec::new(), String::new());
        for line in complete.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let Some(r) = parse(line) else { continue };
            if !self.line_open {
                stamps.push_str(r.time);
                stamps.push('\n');
            }
            text.extend_from_slice(r.text);
            if r.full {
                text.push(b'\n');
            }
            self.line_open = !r.full;
        }
        if text.is_empty() {
            return Ok(());
        }
        if self.cap.rotate_before(text.len()) {
            match self.cap.rotate() {
                Ok((log, times)) => (self.log, self.times) = (log, times),
                Err(e) => tracing::warn!(error = %e, "rotating a container's log failed; it grows on"),
            }
        }
        // Stamps first: a reader never sees a line without its stamp.
        self.times.write_all(stamps.as_bytes())?;
        self.log.write_all(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cri_lines_parse() {
        let r = parse(b"2026-11-28T08:00:00.1Z stdout F hello world").unwrap();
        assert_eq!((r.time, r.text, r.full), ("2026-11-28T08:00:00.1Z", &b"hello world"[..], true));
        assert!(!parse(b"2026-11-28T08:00:00.1Z stderr P part").unwrap().full);
        assert_eq!(parse(b"t stdout F").unwrap().text, b"");
        assert_eq!(parse(b"garbage"), None);
        assert_eq!(parse(b"t stdout X text"), None);
    }

    #[test]
    fn records_become_lines_with_stamps_and_split_lines_join() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("0.log"), dir.path().join("log"));
        std::fs::write(&from, "T1 stdout F one\nT2 stdout P tw").unwrap();
        let mut c = Copier::open(&to, 1 << 20).unwrap();
        c.copy_from(&from).unwrap();
        assert_eq!(std::fs::read_to_string(&to).unwrap(), "one\n", "a record not yet ended waits");
        let mut f = std::fs::OpenOptions::new().append(true).open(&from).unwrap();
        f.write_all(b"o\nT3 stderr F !\nT4 stdout F three\n").unwrap();
        c.copy_from(&from).unwrap();
        assert_eq!(std::fs::read_to_string(&to).unwrap(), "one\ntwo!\nthree\n");
        assert_eq!(std::fs::read_to_string(times_path(&to)).unwrap(), "T1\nT2\nT4\n");
    }

    #[test]
    fn a_log_larger_than_a_chunk_is_copied_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("0.log"), dir.path().join("log"));
        let line = format!("T stdout F {}\n", "x".repeat(999));
        let lines = 3 * CHUNK / line.len() + 7;
        std::fs::write(&from, line.repeat(lines)).unwrap();
        let mut c = Copier::open(&to, 1 << 30).unwrap();
        c.copy_from(&from).unwrap();
        let copied = std::fs::read_to_string(&to).unwrap();
        assert_eq!(copied.lines().count(), lines);
        assert!(copied.lines().all(|l| l.len() == 999));
        assert_eq!(std::fs::read_to_string(times_path(&to)).unwrap().lines().count(), lines);
    }
}
