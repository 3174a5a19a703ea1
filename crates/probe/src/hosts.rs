//! Name resolution: the agent's hosts file (`RINGLEADER_HOSTS`) first,
//! because pod hostnames exist nowhere else, then the system resolver.

use crate::ProbeError;
use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::path::Path;

/// Names from an `/etc/hosts`-format file.
#[derive(Debug, Clone, Default)]
pub struct Hosts {
    names: HashMap<String, IpAddr>,
    source: Option<String>,
}

impl Hosts {
    /// Parses `addr name [name...]` lines; `#` starts a comment; the first
    /// line naming a host wins, as in `/etc/hosts`.
    pub fn parse(text: &str) -> Hosts {
        let mut names = HashMap::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            let mut words = line.split_whitespace();
            let Some(addr) = words.next().and_then(|a| a.parse::<IpAddr>().ok()) else { continue };
            for name in words {
                names.entry(name.to_ascii_lowercase()).or_insert(addr);
            }
        }
        Hosts { names, source: None }
    }

    /// Reads a hosts file.
    pub fn from_file(path: &Path) -> Result<Hosts, ProbeError> {
        let text = std::fs::read_to_string(path).map_err(|cause| ProbeError::File {
            what: "hosts file (RINGLEADER_HOSTS)",
            path: path.display().to_string(),
            cause,
        })?;
        let mut hosts = Hosts::parse(&text);
        hosts.source = Some(path.display().to_string());
        Ok(hosts)
    }

    /// The file read again (peers' addresses may have been added since: on
    /// a pod network a peer's address is known once its sandbox runs); as
    /// it was when the file cannot be read.
    pub fn reread(&self) -> Hosts {
        match &self.source {
            Some(path) => Hosts::from_file(Path::new(path)).unwrap_or_else(|_| self.clone()),
            None => self.clone(),
        }
    }

    /// The address of `host`: a literal address, a hosts-file name (a
    /// trailing dot ignored), else the system resolver (IPv4 preferred).
    pub fn resolve(&self, host: &str) -> Result<IpAddr, ProbeError> {
        let host = host.trim();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(ip);
        }
        let key = host.trim_end_matches('.').to_ascii_lowercase();
        if let Some(ip) = self.names.get(&key) {
            return Ok(*ip);
        }
        let found: Vec<IpAddr> = match (host, 0u16).to_socket_addrs() {
            Ok(addrs) => addrs.map(|a| a.ip()).collect(),
            Err(e) => return Err(ProbeError::Resolve { host: host.to_string(), reason: self.why_not(&e.to_string()) }),
        };
        found
            .iter()
            .find(|ip| ip.is_ipv4())
            .or_else(|| found.first())
            .copied()
            .ok_or_else(|| ProbeError::Resolve { host: host.to_string(), reason: self.why_not("no addresses") })
    }

    fn why_not(&self, resolver: &str) -> String {
        match &self.source {
            Some(path) => format!("not in hosts file {path} and the system resolver says: {resolver}"),
            None => format!("RINGLEADER_HOSTS is not set and the system resolver says: {resolver}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_file_first() {
        let h = Hosts::parse(
            "# pods\n127.0.1.3 job-worker-0 job-worker-0.job.default.svc\n\n127.0.1.4 job-master-0\nbad line\n",
        );
        assert_eq!(h.resolve("job-worker-0.job.default.svc").ok(), "127.0.1.3".parse().ok());
        assert_eq!(h.resolve("JOB-MASTER-0.").ok(), "127.0.1.4".parse().ok());
        assert_eq!(h.resolve("10.1.2.3").ok(), "10.1.2.3".parse().ok());
        assert_eq!(h.resolve("localhost").ok().map(|ip| ip.is_loopback()), Some(true));
        let err = h.resolve("no-such-host.invalid").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("no-such-host.invalid"), "{err}");
    }
}
