//! The control protocol: one JSON object per line over the rendezvous (or
//! launcher) connection. Bulk data never goes through here.

use crate::ProbeError;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Protocol version every hello carries, so a stray client fails loudly.
pub const PROTOCOL: u32 = 1;

/// Longest control line accepted; a peer list of thousands of processes fits.
const MAX_LINE: u64 = 16 << 20;

/// What every process runs, decided by the master (or launcher) so that
/// all sides agree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub sizes: Vec<u64>,
    pub iters: u32,
    pub warmup: u32,
    pub world: usize,
    pub fault_rank: Option<usize>,
    pub timeout_ms: u64,
    /// Operations run, each over every size (outcomes operation-major).
    #[serde(default = "default_ops")]
    pub ops: Vec<crate::Collective>,
}

fn default_ops() -> Vec<crate::Collective> {
    vec![crate::Collective::AllReduce]
}

/// One process of the ring.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerInfo {
    pub name: String,
    pub data_addr: String,
    pub first_rank: usize,
    pub ranks: usize,
}

/// One size's outcome on one process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub ok: bool,
    pub avg_us: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum Msg {
    /// Process → master: the rank ranges it may own (one when it knows).
    Hello { probe: u32, name: String, candidates: Vec<(usize, usize)>, data_port: u16, data_ip: Option<String> },
    /// Master → process: its index in `peers`, and what to run.
    Assigned { index: usize, peers: Vec<PeerInfo>, plan: Plan },
    /// Launcher → worker.
    Assign { probe: u32, index: usize, first_rank: usize, ranks: usize, plan: Plan },
    /// Worker → launcher: its data port is open.
    Ready { name: String, data_port: u16, data_ip: Option<String> },
    /// Launcher → worker.
    Peers { peers: Vec<PeerInfo> },
    /// Process → master / launcher, one outcome per size.
    Done { outcomes: Vec<Outcome> },
    /// Either way: give up, with the reason.
    Failed { error: String },
}

/// A control connection.
pub struct Conn {
    pub peer: String,
    pub addr: SocketAddr,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    pub fn new(stream: TcpStream, peer: String) -> Result<Conn, ProbeError> {
        let addr = stream.peer_addr().map_err(|e| ProbeError::peer(&peer, "peer address", e))?;
        let _ = stream.set_nodelay(true);
        let writer = stream.try_clone().map_err(|e| ProbeError::peer(&peer, "clone socket", e))?;
        Ok(Conn { peer, addr, reader: BufReader::new(stream), writer })
    }

    pub fn local_ip(&self) -> Option<std::net::IpAddr> {
        self.writer.local_addr().ok().map(|a| a.ip())
    }

    pub fn send(&mut self, msg: &Msg) -> Result<(), ProbeError> {
        let mut line = serde_json::to_vec(msg).map_err(|e| ProbeError::protocol(&self.peer, e.to_string()))?;
        line.push(b'\n');
        self.writer.write_all(&line).map_err(|e| ProbeError::peer(&self.peer, "send", e))
    }

    /// Next message, waiting at most `wait` (`None`: forever).
    pub fn recv(&mut self, wait: Option<Duration>) -> Result<Msg, ProbeError> {
        self.recv_as(wait)
    }

    fn recv_as<T: DeserializeOwned>(&mut self, wait: Option<Duration>) -> Result<T, ProbeError> {
        let _ = self.reader.get_ref().set_read_timeout(wait.map(|w| w.max(Duration::from_millis(1))));
        let mut line = String::new();
        let n = (&mut self.reader).take(MAX_LINE).read_line(&mut line).map_err(|e| {
            let what = if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
                "timed out waiting"
            } else {
                "receive"
            };
            ProbeError::peer(&self.peer, what, e)
        })?;
        if n == 0 {
            return Err(ProbeError::protocol(&self.peer, "connection closed".into()));
        }
        serde_json::from_str(line.trim_end()).map_err(|e| ProbeError::protocol(&self.peer, format!("bad message: {e}")))
    }
}

/// Connects to `addr`, retrying until `deadline`: peers start at different
/// times.
/// Connects to `host:port` until `deadline`, resolving `host` again every
/// second from a fresh read of the hosts file: a peer whose address changes
/// (a pod network's address replacing its node's) is still reached.
pub fn connect_named(
    hosts: &crate::hosts::Hosts,
    host: &str,
    port: u16,
    deadline: Instant,
    who: &str,
) -> Result<TcpStream, ProbeError> {
    let mut hosts = hosts.clone();
    loop {
        let ip = hosts.resolve(host)?;
        let round = (Instant::now() + Duration::from_secs(1)).min(deadline);
        match connect_retry(SocketAddr::new(ip, port), round, who) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => hosts = hosts.reread(),
        }
    }
}

pub fn connect_retry(addr: SocketAddr, deadline: Instant, who: &str) -> Result<TcpStream, ProbeError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match TcpStream::connect_timeout(&addr, left.clamp(Duration::from_millis(10), Duration::from_secs(5))) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() >= deadline => return Err(ProbeError::peer(who, "connect (gave up)", e)),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}
