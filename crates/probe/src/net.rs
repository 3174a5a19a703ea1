//! The network check: bandwidth and latency over TCP between the first
//! process (rank 0, listening on `MASTER_ADDR:MASTER_PORT`) and each other
//! process, one pair at a time so pairs do not share the link. Latency is
//! half the mean round trip of an 8-byte message; bandwidth is one-way,
//! each message acknowledged by one byte once its every byte has arrived
//! and matched the sent pattern (so the figure includes that round trip).
//! Measured over TCP and labelled so: this probe has no RDMA path.

use crate::hosts::Hosts;
use crate::ProbeError;
use serde::Serialize;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

const MAGIC: &[u8; 4] = b"RLNT";
const PING: u8 = b'L';
const BULK: u8 = b'B';
const QUIT: u8 = b'Q';
/// Longest node name a hello may carry.
const MAX_NAME: usize = 253;

/// What one pair measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    pub from: String,
    pub to: String,
    pub transport: &'static str,
    pub bytes: u64,
    pub bandwidth_gbps: f64,
    pub latency_us: f64,
    pub pass: bool,
}

/// One process of a network check.
#[derive(Debug, Clone)]
pub struct NetConfig {
    /// Rank 0 measures; the others answer.
    pub rank: usize,
    /// Processes in all.
    pub world: usize,
    pub master: String,
    pub port: u16,
    /// Where rank 0 listens (`RINGLEADER_POD_IP`).
    pub bind_ip: Option<IpAddr>,
    pub hosts: Hosts,
    /// This process's node, for the report.
    pub name: String,
    /// Bandwidth message size, bytes.
    pub bytes: u64,
    pub iters: u32,
    pub warmup: u32,
    pub timeout: Duration,
}

fn io<'a>(who: &'a str, action: &'static str) -> impl Fn(std::io::Error) -> ProbeError + 'a {
    move |e| ProbeError::Peer { peer: who.to_string(), action, cause: e }
}

/// The byte at offset `i` of a bandwidth message.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

/// Runs this process's part; rank 0 returns every pair, the others none.
pub fn network(c: &NetConfig) -> Result<Vec<Pair>, ProbeError> {
    if c.world < 2 {
        return Err(ProbeError::Invalid("a network check needs at least 2 processes".into()));
    }
    let len = usize::try_from(c.bytes).map_err(|_| ProbeError::Invalid(format!("size {} too large", c.bytes)))?;
    if len == 0 {
        return Err(ProbeError::Invalid("size must be at least 1 byte".into()));
    }
    if c.rank == 0 {
        measure(c, len)
    } else {
        answer(c, len).map(|()| Vec::new())
    }
}

fn measure(c: &NetConfig, len: usize) -> Result<Vec<Pair>, ProbeError> {
    let addr = SocketAddr::new(c.bind_ip.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), c.port);
    let listener = TcpListener::bind(addr).map_err(|cause| ProbeError::Listen { addr, cause })?;
    listener.set_nonblocking(true).map_err(io("network check", "listen"))?;
    let deadline = Instant::now() + c.timeout;
    let mut peers: Vec<(usize, String, TcpStream)> = Vec::new();
    while peers.len() < c.world - 1 {
        match listener.accept() {
            Ok((mut s, from)) => {
                let who = from.to_string();
                let _ = s.set_nonblocking(false);
                let _ = s.set_read_timeout(Some(c.timeout));
                let _ = s.set_write_timeout(Some(c.timeout));
                let _ = s.set_nodelay(true);
                let mut head = [0u8; 12];
                s.read_exact(&mut head).map_err(io(&who, "hello"))?;
                let rank = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
                let name_len = u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize;
                if &head[..4] != MAGIC || name_len > MAX_NAME || rank == 0 || rank >= c.world {
                    return Err(ProbeError::Protocol { peer: who, reason: "not a network-check hello".into() });
                }
                let mut name = vec![0u8; name_len];
                s.read_exact(&mut name).map_err(io(&who, "hello"))?;
                peers.push((rank, String::from_utf8_lossy(&name).into_owned(), s));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(ProbeError::Rendezvous(format!(
                        "timed out on {addr}: {} of {} processes joined",
                        peers.len() + 1,
                        c.world
                    )));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(io("network check", "accept")(e)),
        }
    }
    peers.sort_by_key(|(r, ..)| *r);
    let message: Vec<u8> = (0..len).map(pattern).collect();
    let mut pairs = Vec::with_capacity(peers.len());
    for (_, name, s) in &mut peers {
        let who = name.clone();
        let rounds = c.warmup + c.iters;
        command(s, PING, rounds, 0, &who)?;
        let mut echo = [0u8; 8];
        let mut rtt = Duration::ZERO;
        for i in 0..rounds {
            let t0 = Instant::now();
            s.write_all(&u64::from(i).to_le_bytes()).map_err(io(&who, "ping"))?;
            s.read_exact(&mut echo).map_err(io(&who, "pong"))?;
            if i >= c.warmup {
                rtt += t0.elapsed();
            }
        }
        command(s, BULK, rounds, len as u64, &who)?;
        let mut ack = [0u8; 1];
        let mut pass = true;
        let mut total = Duration::ZERO;
        for i in 0..rounds {
            let t0 = Instant::now();
            s.write_all(&message).map_err(io(&who, "send"))?;
            s.read_exact(&mut ack).map_err(io(&who, "acknowledgement"))?;
            if i >= c.warmup {
                total += t0.elapsed();
            }
            pass &= ack[0] == 1;
        }
        let iters = f64::from(c.iters.max(1));
        let secs = total.as_secs_f64();
        pairs.push(Pair {
            from: c.name.clone(),
            to: name.clone(),
            transport: "tcp",
            bytes: len as u64,
            bandwidth_gbps: if secs > 0.0 { len as f64 * iters / secs / 1e9 } else { 0.0 },
            latency_us: rtt.as_secs_f64() * 1e6 / iters / 2.0,
            pass,
        });
    }
    for (_, name, s) in &mut peers {
        command(s, QUIT, 0, 0, name)?;
    }
    Ok(pairs)
}

fn command(s: &mut TcpStream, op: u8, rounds: u32, len: u64, who: &str) -> Result<(), ProbeError> {
    let mut head = vec![op];
    head.extend_from_slice(&rounds.to_le_bytes());
    head.extend_from_slice(&len.to_le_bytes());
    s.write_all(&head).map_err(io(who, "command"))
}

fn answer(c: &NetConfig, len: usize) -> Result<(), ProbeError> {
    let label = format!("master {}:{}", c.master, c.port);
    let mut s = crate::wire::connect_named(&c.hosts, &c.master, c.port, Instant::now() + c.timeout, &label)?;
    let _ = s.set_nodelay(true);
    // The master measures the other peers first: wait as long as they may take.
    let _ = s.set_read_timeout(Some(c.timeout * (c.world as u32).max(1) + Duration::from_secs(10)));
    let name = c.name.as_bytes();
    let mut hello = MAGIC.to_vec();
    hello.extend_from_slice(&(c.rank as u32).to_le_bytes());
    hello.extend_from_slice(&(name.len().min(MAX_NAME) as u32).to_le_bytes());
    hello.extend_from_slice(&name[..name.len().min(MAX_NAME)]);
    s.write_all(&hello).map_err(io(&label, "hello"))?;
    let mut buf = vec![0u8; len];
    loop {
        let mut head = [0u8; 13];
        s.read_exact(&mut head).map_err(io(&label, "command"))?;
        let rounds = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
        let want = u64::from_le_bytes([head[5], head[6], head[7], head[8], head[9], head[10], head[11], head[12]]);
        match head[0] {
            PING => {
                let mut ping = [0u8; 8];
                for _ in 0..rounds {
                    s.read_exact(&mut ping).map_err(io(&label, "ping"))?;
                    s.write_all(&ping).map_err(io(&label, "pong"))?;
                }
            }
            BULK if want == len as u64 => {
                for _ in 0..rounds {
                    s.read_exact(&mut buf).map_err(io(&label, "receive"))?;
                    let ok = buf.iter().enumerate().all(|(i, &b)| b == pattern(i));
                    s.write_all(&[u8::from(ok)]).map_err(io(&label, "acknowledge"))?;
                }
            }
            QUIT => return Ok(()),
            other => {
                return Err(ProbeError::Protocol {
                    peer: label,
                    reason: format!("unexpected command {other} (size {want}, expected {len})"),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_processes_measure_two_pairs_over_loopback() {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let cfg = move |rank: usize| NetConfig {
            rank,
            world: 3,
            master: "127.0.0.1".into(),
            port,
            bind_ip: Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            hosts: Hosts::default(),
            name: format!("node-{rank}"),
            bytes: 65536,
            iters: 3,
            warmup: 1,
            timeout: Duration::from_secs(20),
        };
        let handles: Vec<_> = (0..3).map(|r| std::thread::spawn(move || network(&cfg(r)))).collect();
        let results: Vec<Result<Vec<Pair>, ProbeError>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(ProbeError::Invalid("panic".into()))))
            .collect();
        let pairs = match &results[0] {
            Ok(p) => p.clone(),
            Err(e) => panic!("{e}"),
        };
        assert_eq!(pairs.len(), 2);
        assert_eq!((pairs[0].from.as_str(), pairs[0].to.as_str()), ("node-0", "node-1"));
        assert_eq!(pairs[1].to, "node-2");
        assert!(pairs.iter().all(|p| p.pass && p.transport == "tcp" && p.bandwidth_gbps > 0.0 && p.latency_us > 0.0));
        assert!(results[1..].iter().all(|r| r.as_ref().is_ok_and(Vec::is_empty)));
    }
}
