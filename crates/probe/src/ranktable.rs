//! `hccl.json` as the controller writes it (every value a string, one
//! `server_list` entry per pod with chips, `rank_id = pod rank × chips +
//! position`), reduced to what the probe needs: each entry's rank range.

use crate::ProbeError;
use serde::Deserialize;
use std::net::IpAddr;
use std::ops::Range;

#[derive(Deserialize)]
struct RawTable {
    status: Option<String>,
    #[serde(default)]
    server_list: Vec<RawServer>,
}

#[derive(Deserialize)]
struct RawServer {
    server_id: String,
    host_ip: Option<String>,
    container_ip: Option<String>,
    #[serde(default)]
    device: Vec<RawDevice>,
}

#[derive(Deserialize)]
struct RawDevice {
    rank_id: String,
}

/// One `server_list` entry: one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// `server_id` (the node address).
    pub server_id: String,
    /// `host_ip`, `container_ip` and `server_id`: any of them may be the
    /// pod's own address.
    pub addresses: Vec<String>,
    /// Its contiguous ranks.
    pub ranks: Range<usize>,
}

/// A parsed rank table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankTable {
    /// Entries in file order (sorted by first rank by the controller).
    pub servers: Vec<Server>,
    /// Total ranks.
    pub world: usize,
}

/// Whether `text` is a table still being filled in (`"status":
/// "initializing"`, as written until every pod has its chips and address).
pub fn initializing(text: &str) -> bool {
    serde_json::from_str::<RawTable>(text).is_ok_and(|t| t.status.as_deref() == Some("initializing"))
}

impl RankTable {
    /// Parses `hccl.json`; `path` only names the file in errors.
    pub fn parse(text: &str, path: &str) -> Result<RankTable, ProbeError> {
        let bad =
            |reason: String| ProbeError::BadFile { what: "rank table (RANK_TABLE_FILE)", path: path.into(), reason };
        let raw: RawTable = serde_json::from_str(text).map_err(|e| bad(format!("not an hccl.json: {e}")))?;
        let status = raw.status.unwrap_or_default();
        if status != "completed" {
            return Err(bad(format!(
                "status is {status:?}, not \"completed\" (some pod still lacks its chips or address)"
            )));
        }
        let mut servers = Vec::new();
        for (i, s) in raw.server_list.into_iter().enumerate() {
            let mut ids = Vec::with_capacity(s.device.len());
            for d in &s.device {
                let id = d.rank_id.trim().parse::<usize>();
                ids.push(id.map_err(|_| bad(format!("server_list[{i}]: rank_id {:?} is not a number", d.rank_id)))?);
            }
            let Some(&first) = ids.first() else {
                return Err(bad(format!("server_list[{i}] ({}) has no device", s.server_id)));
            };
            if ids.iter().enumerate().any(|(k, &id)| id != first + k) {
                return Err(bad(format!("server_list[{i}] ({}): rank_ids {ids:?} are not consecutive", s.server_id)));
            }
            let mut addresses = vec![s.server_id.clone()];
            addresses.extend(s.host_ip.into_iter().chain(s.container_ip).filter(|a| !a.is_empty()));
            addresses.dedup();
            servers.push(Server { server_id: s.server_id, addresses, ranks: first..first + ids.len() });
        }
        if servers.is_empty() {
            return Err(bad("server_list is empty".into()));
        }
        let mut sorted: Vec<&Range<usize>> = servers.iter().map(|s| &s.ranks).collect();
        sorted.sort_by_key(|r| r.start);
        let mut next = 0;
        for r in sorted {
            if r.start != next {
                return Err(bad(format!("rank_ids do not cover 0..N exactly once (expected {next}, found {r:?})")));
            }
            next = r.end;
        }
        Ok(RankTable { servers, world: next })
    }

    /// The entry holding rank 0.
    pub fn first(&self) -> Option<&Server> {
        self.servers.iter().find(|s| s.ranks.start == 0)
    }

    /// The entry of pod rank `rank`: the one whose first `rank_id` is
    /// `rank × its chips`.
    pub fn by_pod_rank(&self, rank: usize) -> Option<&Server> {
        self.servers.iter().find(|s| rank.checked_mul(s.ranks.len()) == Some(s.ranks.start))
    }

    /// Entries naming `ip` as their server, host or container address.
    pub fn by_address(&self, ip: IpAddr) -> Vec<&Server> {
        self.servers.iter().filter(|s| s.addresses.iter().any(|a| a.parse::<IpAddr>().ok() == Some(ip))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = r#"{"status":"completed","version":"1.0","server_count":"2","server_list":[
        {"server_id":"127.0.1.1","host_ip":"127.0.1.1","container_ip":"127.0.1.1","device":[
            {"device_id":"0","device_ip":"192.168.100.101","rank_id":"0"},{"device_id":"1","rank_id":"1"}]},
        {"server_id":"127.0.1.1","host_ip":"127.0.1.1","container_ip":"127.0.1.1","device":[
            {"device_id":"2","rank_id":"2"},{"device_id":"3","rank_id":"3"}]}]}"#;

    #[test]
    fn parses_and_finds() {
        let t = RankTable::parse(TABLE, "hccl.json").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.world, 4);
        assert_eq!(t.by_pod_rank(1).map(|s| s.ranks.clone()), Some(2..4));
        assert_eq!(t.by_address("127.0.1.1".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))).len(), 2);
        assert_eq!(t.first().map(|s| s.server_id.as_str()), Some("127.0.1.1"));
    }

    #[test]
    fn rejects() {
        let e = |t: &str| RankTable::parse(t, "/x/hccl.json").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e(r#"{"status":"initializing"}"#).contains("initializing"));
        assert!(e("nope").contains("/x/hccl.json"));
        assert!(e(&TABLE.replace(r#""rank_id":"3""#, r#""rank_id":"5""#)).contains("consecutive"));
        assert!(e(&TABLE.replace(r#""rank_id":"1""#, r#""rank_id":"x""#)).contains("not a number"));
    }
}
