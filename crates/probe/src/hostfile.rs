//! MPI hostfiles as the MPIJob controller writes them: OpenMPI
//! `host slots=N`, Intel MPI / MPICH `host:N`, or a bare host.

use crate::ProbeError;

/// One worker line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerHost {
    /// Name or address as written.
    pub host: String,
    /// Ranks the worker runs.
    pub slots: usize,
    /// Control port of its `probe worker`.
    pub port: u16,
}

/// Parses a hostfile. `default_slots` applies to lines without a count;
/// `port` is the workers' control port. Pods of one node share its address,
/// so the k-th repeat of a host gets `port + k` (the k-th worker to start
/// there binds it); a `port=P` token (a ringleader extension) pins it.
pub fn parse(text: &str, path: &str, default_slots: usize, port: u16) -> Result<Vec<WorkerHost>, ProbeError> {
    let bad = |line: usize, reason: String| ProbeError::BadFile {
        what: "MPI hostfile",
        path: path.to_string(),
        reason: format!("line {line}: {reason}"),
    };
    let mut workers: Vec<WorkerHost> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        let (host, mut slots) = match first.rsplit_once(':') {
            // An IPv6 literal has several colons and no count.
            Some((h, count)) if !h.contains(':') => {
                let c = count.parse::<usize>().map_err(|_| bad(n + 1, format!("bad slot count in {first:?}")))?;
                (h.to_string(), c)
            }
            _ => (first.to_string(), default_slots),
        };
        let mut pinned = None;
        for word in words {
            let (key, value) = word.split_once('=').unwrap_or((word, ""));
            match key {
                "slots" => slots = value.parse().map_err(|_| bad(n + 1, format!("bad {word:?}")))?,
                "port" => pinned = Some(value.parse::<u16>().map_err(|_| bad(n + 1, format!("bad {word:?}")))?),
                // max_slots and friends do not change where ranks go.
                _ => {}
            }
        }
        if slots == 0 {
            return Err(bad(n + 1, format!("{host} has 0 slots")));
        }
        let port = match pinned {
            Some(p) => p,
            None => {
                let repeats = workers.iter().filter(|w| w.host == host).count();
                u16::try_from(usize::from(port) + repeats)
                    .map_err(|_| bad(n + 1, format!("port {port} + {repeats} is out of range")))?
            }
        };
        workers.push(WorkerHost { host, slots, port });
    }
    if workers.is_empty() {
        return Err(ProbeError::BadFile { what: "MPI hostfile", path: path.to_string(), reason: "no hosts".into() });
    }
    Ok(workers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let text = "# workers\nj-worker-0.j.ns.svc slots=8\nj-worker-1.j.ns.svc slots=8 max_slots=8\n";
        let w = parse(text, "hf", 1, 29400).unwrap_or_default();
        assert_eq!(w.len(), 2);
        assert_eq!((w[1].host.as_str(), w[1].slots, w[1].port), ("j-worker-1.j.ns.svc", 8, 29400));
        let w = parse("a:4\nb\n", "hf", 2, 1).unwrap_or_default();
        assert_eq!((w[0].slots, w[1].slots), (4, 2));
    }

    #[test]
    fn repeated_hosts_step_the_port_and_port_pins_it() {
        let w = parse("127.0.1.2 slots=1\n127.0.1.2 slots=1\n127.0.1.3\n127.0.1.2 port=7\n", "hf", 1, 29400)
            .unwrap_or_default();
        let ports: Vec<u16> = w.iter().map(|w| w.port).collect();
        assert_eq!(ports, vec![29400, 29401, 29400, 7]);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("a slots=x\n", "/etc/mpi/hostfile", 1, 1).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("/etc/mpi/hostfile") && e.contains("line 1"), "{e}");
        assert!(parse("# nothing\n", "hf", 1, 1).is_err());
        assert!(parse("a slots=0\n", "hf", 1, 1).is_err());
    }
}
