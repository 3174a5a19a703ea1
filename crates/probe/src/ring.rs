//! The data path: deterministic inputs, the local reduction of a process's
//! own ranks, and the ring all-reduce (reduce-scatter then all-gather) over
//! one TCP connection to the ring successor and one from the predecessor.

use crate::wire::{Outcome, PeerInfo, Plan};
use crate::Collective;
use crate::ProbeError;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::ops::Range;
use std::time::{Duration, Instant};

/// Largest job whose sums stay exact in f32: 1023 × ranks < 2^24.
pub const MAX_WORLD: usize = 16_384;
/// Input values repeat with this period, so expected sums need one table.
const PERIOD: u64 = 1024;
const MAGIC: &[u8; 4] = b"RLPD";

/// Rank `rank`'s input element `i`: a small integer, so every partial sum
/// is exact in f32 whatever the order of additions.
pub fn value(rank: usize, i: usize) -> f32 {
    ((7 * rank as u64 + 13 * i as u64) % PERIOD) as f32
}

/// `table[k]` = Σ over `ranks` of `(7r + k) mod 1024`; element `i` of the
/// sum of those ranks' inputs is `table[13i mod 1024]`.
pub fn sum_table(ranks: Range<usize>) -> Vec<f32> {
    (0..PERIOD).map(|k| ranks.clone().map(|r| (7 * r as u64 + k) % PERIOD).sum::<u64>() as f32).collect()
}

/// Expected element `i` of the all-reduced buffer.
pub fn expected(table: &[f32], i: usize) -> f32 {
    table[((13 * i as u64) % PERIOD) as usize]
}

/// The ring connections of one process.
pub struct Ring {
    index: usize,
    peers: Vec<PeerInfo>,
    next: Option<TcpStream>,
    prev: Option<TcpStream>,
    /// Reused wire buffer of the chunk being sent.
    outgoing: Vec<u8>,
}

fn peer_label(p: &PeerInfo) -> String {
    format!("{} (ranks {}..{}) at {}", p.name, p.first_rank, p.first_rank + p.ranks, p.data_addr)
}

impl Ring {
    /// Connects to the successor and accepts the predecessor on `listener`.
    pub fn connect(
        index: usize,
        peers: Vec<PeerInfo>,
        listener: TcpListener,
        timeout: Duration,
    ) -> Result<Ring, ProbeError> {
        let n = peers.len();
        if n <= 1 {
            return Ok(Ring { index, peers, next: None, prev: None, outgoing: Vec::new() });
        }
        let deadline = Instant::now() + timeout;
        let next_peer = &peers[(index + 1) % n];
        let prev_index = (index + n - 1) % n;
        let prev_label = peer_label(&peers[prev_index]);
        let next_label = peer_label(next_peer);
        let next_addr: SocketAddr = next_peer
            .data_addr
            .parse()
            .map_err(|_| ProbeError::protocol(&next_label, format!("bad data address {:?}", next_peer.data_addr)))?;
        let (next, prev) = std::thread::scope(|s| {
            let connector = s.spawn(|| -> Result<TcpStream, ProbeError> {
                let mut stream = crate::wire::connect_retry(next_addr, deadline, &next_label)?;
                let mut hello = MAGIC.to_vec();
                hello.extend_from_slice(&(index as u32).to_le_bytes());
                stream.write_all(&hello).map_err(|e| ProbeError::peer(&next_label, "ring handshake", e))?;
                Ok(stream)
            });
            let prev = accept_prev(&listener, prev_index, deadline, &prev_label);
            let next =
                connector.join().unwrap_or_else(|_| Err(ProbeError::Rendezvous("ring connector panicked".into())));
            (next, prev)
        });
        let (next, prev) = (next?, prev?);
        for s in [&next, &prev] {
            let _ = s.set_nodelay(true);
            let _ = s.set_read_timeout(Some(timeout));
            let _ = s.set_write_timeout(Some(timeout));
        }
        Ok(Ring { index, peers, next: Some(next), prev: Some(prev), outgoing: Vec::new() })
    }

    fn label(&self, offset: usize) -> String {
        let n = self.peers.len();
        peer_label(&self.peers[(self.index + offset) % n])
    }

    /// Runs every operation of `plan` at every size (outcomes
    /// operation-major); `corrupt` adds 1 to the first chunk this process
    /// receives in every iteration (the fault-injection hook).
    pub fn run(&mut self, plan: &Plan, mine: Range<usize>, corrupt: bool) -> Result<Vec<Outcome>, ProbeError> {
        let table = sum_table(0..plan.world);
        // Each process's own sum table: what its share of a gather or
        // all-to-all holds.
        let tables: Vec<Vec<f32>> =
            self.peers.iter().map(|p| sum_table(p.first_rank..p.first_rank + p.ranks)).collect();
        let mut outcomes = Vec::with_capacity(plan.sizes.len() * plan.ops.len());
        for &op in &plan.ops {
            for &size in &plan.sizes {
                let elems =
                    usize::try_from(size / 4).map_err(|_| ProbeError::Invalid(format!("size {size} too large")))?;
                outcomes.push(self.run_one(op, elems, plan, &mine, &table, &tables, corrupt)?);
            }
        }
        Ok(outcomes)
    }

    /// One operation at one size: warm-up and timed iterations, each checked.
    #[allow(clippy::too_many_arguments)]
    fn run_one(
        &mut self,
        op: Collective,
        elems: usize,
        plan: &Plan,
        mine: &Range<usize>,
        table: &[f32],
        tables: &[Vec<f32>],
        corrupt: bool,
    ) -> Result<Outcome, ProbeError> {
        let n = self.peers.len().max(1);
        let p = self.index;
        let bounds = |c: usize| c * elems / n..(c + 1) * elems / n;
        let blk = elems / n;
        // This process's input: the local sum of its own ranks' inputs,
        // laid out as the operation reads it.
        let mut input = vec![0f32; elems];
        for r in mine.clone() {
            match op {
                Collective::AllReduce | Collective::ReduceScatter => {
                    for (i, x) in input.iter_mut().enumerate() {
                        *x += value(r, i);
                    }
                }
                Collective::AllGather => {
                    let own = bounds(p);
                    for i in own.clone() {
                        input[i] += value(r, i);
                    }
                }
                Collective::AllToAll => {
                    // Block d goes to process d, which checks it against
                    // this process's ranks' values at its own position.
                    for (i, x) in input.iter_mut().enumerate().take(blk * n) {
                        *x += value(r, i);
                    }
                }
            }
        }
        let mut buf = vec![0f32; elems];
        let mut ok = true;
        let mut total = Duration::ZERO;
        for it in 0..plan.warmup + plan.iters {
            buf.copy_from_slice(&input);
            let t0 = Instant::now();
            let checked = match op {
                Collective::AllReduce => {
                    self.allreduce(&mut buf, corrupt)?;
                    0..elems
                }
                Collective::ReduceScatter => {
                    let kept = if n > 1 { bounds((p + 1) % n) } else { 0..elems };
                    if n > 1 {
                        self.reduce_scatter(&mut buf, false)?;
                    }
                    kept
                }
                Collective::AllGather => {
                    self.all_gather(&mut buf, 0)?;
                    0..elems
                }
                Collective::AllToAll => {
                    self.all_to_all(&mut buf, blk)?;
                    0..blk * n
                }
            };
            let dt = t0.elapsed();
            if it >= plan.warmup {
                total += dt;
            }
            if corrupt && op != Collective::AllReduce {
                if let Some(x) = buf.get_mut(checked.start).filter(|_| !checked.is_empty()) {
                    *x += 1.0;
                }
            }
            ok &= match op {
                Collective::AllReduce | Collective::ReduceScatter => {
                    checked.clone().all(|i| buf[i] == expected(table, i))
                }
                Collective::AllGather => {
                    (0..n).all(|c| tables.get(c).is_some_and(|t| bounds(c).all(|i| buf[i] == expected(t, i))))
                }
                Collective::AllToAll => (0..n).all(|q| {
                    tables.get(q).is_some_and(|t| (0..blk).all(|j| buf[q * blk + j] == expected(t, p * blk + j)))
                }),
            };
        }
        let avg_us = total.as_secs_f64() * 1e6 / f64::from(plan.iters.max(1));
        Ok(Outcome { ok, avg_us })
    }

    fn allreduce(&mut self, buf: &mut [f32], corrupt: bool) -> Result<(), ProbeError> {
        let n = self.peers.len();
        if n <= 1 {
            if corrupt {
                if let Some(x) = buf.first_mut() {
                    *x += 1.0;
                }
            }
            return Ok(());
        }
        self.reduce_scatter(buf, corrupt)?;
        // After the reduce-scatter process p holds chunk p+1 reduced.
        self.all_gather(buf, 1)
    }

    /// Ring reduce-scatter: afterwards process p holds chunk (p+1) mod n
    /// summed over every process.
    fn reduce_scatter(&mut self, buf: &mut [f32], corrupt: bool) -> Result<(), ProbeError> {
        let n = self.peers.len();
        let p = self.index;
        let len = buf.len();
        let bounds = |c: usize| c * len / n..(c + 1) * len / n;
        let mut corrupt_pending = corrupt;
        let mut incoming = Vec::new();
        for s in 0..n.saturating_sub(1) {
            let (send_c, recv_c) = ((p + n - s) % n, (p + 2 * n - s - 1) % n);
            self.exchange(&buf[bounds(send_c)], bounds(recv_c).len(), &mut incoming)?;
            let chunk = &mut buf[bounds(recv_c)];
            for (x, b) in chunk.iter_mut().zip(incoming.chunks_exact(4)) {
                *x += f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            if corrupt_pending {
                if let Some(x) = chunk.first_mut() {
                    *x += 1.0;
                    corrupt_pending = false;
                }
            }
        }
        Ok(())
    }

    /// Ring all-gather where process p starts holding chunk (p+offset) mod n.
    fn all_gather(&mut self, buf: &mut [f32], offset: usize) -> Result<(), ProbeError> {
        let n = self.peers.len();
        let p = self.index;
        let len = buf.len();
        let bounds = |c: usize| c * len / n..(c + 1) * len / n;
        let mut incoming = Vec::new();
        for s in 0..n.saturating_sub(1) {
            let (send_c, recv_c) = ((p + offset + n - s) % n, (p + offset + 2 * n - s - 1) % n);
            self.exchange(&buf[bounds(send_c)], bounds(recv_c).len(), &mut incoming)?;
            for (x, b) in buf[bounds(recv_c)].iter_mut().zip(incoming.chunks_exact(4)) {
                *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        Ok(())
    }

    /// Ring all-to-all by relay: block d of `buf` goes to process d; after
    /// it, block q holds what process q sent here. In step s each process
    /// receives the n−s blocks process p−s still carries, keeps the first
    /// and passes the rest on (only ring links exist).
    fn all_to_all(&mut self, buf: &mut [f32], blk: usize) -> Result<(), ProbeError> {
        let n = self.peers.len();
        let p = self.index;
        if n <= 1 || blk == 0 {
            return Ok(());
        }
        // Blocks destined for p+1, p+2, …, p+n−1, in that order.
        let mut carry: Vec<f32> = Vec::with_capacity(blk * (n - 1));
        for k in 1..n {
            let d = (p + k) % n;
            carry.extend_from_slice(&buf[d * blk..(d + 1) * blk]);
        }
        let mut out = vec![0f32; blk * n];
        out[p * blk..(p + 1) * blk].copy_from_slice(&buf[p * blk..(p + 1) * blk]);
        let mut incoming = Vec::new();
        for s in 1..n {
            self.exchange(&carry, blk * (n - s), &mut incoming)?;
            let got: Vec<f32> =
                incoming.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            let origin = (p + n - s) % n;
            out[origin * blk..(origin + 1) * blk].copy_from_slice(&got[..blk]);
            carry.clear();
            carry.extend_from_slice(&got[blk..]);
        }
        buf[..blk * n].copy_from_slice(&out);
        Ok(())
    }

    /// Sends `out` to the successor while receiving `elems` values from the
    /// predecessor; both at once, or two large chunks would deadlock on full
    /// socket buffers.
    fn exchange(&mut self, out: &[f32], elems: usize, incoming: &mut Vec<u8>) -> Result<(), ProbeError> {
        let outgoing = &mut self.outgoing;
        outgoing.resize(out.len() * 4, 0);
        for (b, x) in outgoing.chunks_exact_mut(4).zip(out) {
            b.copy_from_slice(&x.to_le_bytes());
        }
        let outgoing = &self.outgoing;
        let (next_label, prev_label) = (self.label(1), self.label(self.peers.len() - 1));
        let (Some(next), Some(prev)) = (self.next.as_mut(), self.prev.as_mut()) else {
            return Err(ProbeError::Rendezvous("ring is not connected".into()));
        };
        incoming.resize(elems * 4, 0);
        std::thread::scope(|s| {
            let sender =
                s.spawn(move || next.write_all(outgoing).map_err(|e| ProbeError::peer(&next_label, "send chunk", e)));
            let received = prev.read_exact(incoming).map_err(|e| ProbeError::peer(&prev_label, "receive chunk", e));
            let sent = sender.join().unwrap_or_else(|_| Err(ProbeError::Rendezvous("ring sender panicked".into())));
            received.and(sent)
        })
    }
}

fn accept_prev(listener: &TcpListener, prev: usize, deadline: Instant, label: &str) -> Result<TcpStream, ProbeError> {
    listener.set_nonblocking(true).map_err(|e| ProbeError::peer(label, "listen", e))?;
    loop {
        match listener.accept() {
            Ok((mut stream, _)) => {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(
                    deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(1)),
                ));
                let mut hello = [0u8; 8];
                stream.read_exact(&mut hello).map_err(|e| ProbeError::peer(label, "ring handshake", e))?;
                let from = u32::from_le_bytes([hello[4], hello[5], hello[6], hello[7]]) as usize;
                if &hello[..4] != MAGIC || from != prev {
                    return Err(ProbeError::protocol(
                        label,
                        format!("unexpected ring connection (from process {from})"),
                    ));
                }
                return Ok(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(ProbeError::peer(label, "wait for ring connection (gave up)", e));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(ProbeError::peer(label, "accept ring connection", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_direct_sum() {
        let t = sum_table(0..5);
        for i in [0usize, 1, 77, 1023, 1024, 99_999] {
            let direct: f32 = (0..5).map(|r| value(r, i)).sum();
            assert_eq!(expected(&t, i), direct);
        }
    }
}
