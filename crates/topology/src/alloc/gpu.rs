//! Whole-GPU allocation by exact search on the spec/gpu.md objective.
//!
//! Among the k-subsets S of the free GPUs F, the chosen set maximises, in order:
//! 1. the bottleneck: min over pairs of S of the link bandwidth;
//! 2. the total: sum over pairs of S;
//! 3. the keep-free measure: sum over pairs of F \ S — the connectivity left
//!    for later requests. For k = 1 this picks the GPU with the least
//!    bandwidth to the other free GPUs (the least-connected one); in general
//!    it leaves well-connected groups intact, since
//!    keep(S) = sum(F) − Σ_{i∈S} row_F(i) + sum(S);
//! 4. lowest IDs: the lexicographically smallest sorted index list.
//!
//! The search walks combinations depth-first (lexicographic order) over a
//! fixed 16×16 matrix. A branch is pruned when an upper bound of its best
//! (bottleneck, total, keep-free) cannot beat the best set found so far:
//! the running minimum only falls as GPUs are added; the total gains at most
//! the largest free link per new pair; the keep-free measure loses at least
//! the smallest free row sum per new GPU. A branch that can at best tie is
//! pruned too, because every set found later is lexicographically larger
//! and so loses the lowest-IDs tie-break.

use super::{Allocation, DeviceState, GpuScore, NoFit, NodeScore, WholeRequest};
use crate::devset::DeviceSet;
use crate::profile::Profile;

pub use crate::devset::MAX_GPUS;

/// A bandwidth matrix of at most [`MAX_GPUS`] devices, MB/s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BwMatrix {
    n: usize,
    bw: [[u32; MAX_GPUS]; MAX_GPUS],
}

impl BwMatrix {
    /// From a profile's link matrix (devices beyond [`MAX_GPUS`] are ignored).
    pub fn from_profile(profile: &Profile) -> BwMatrix {
        let n = profile.len().min(MAX_GPUS);
        let mut bw = [[0u32; MAX_GPUS]; MAX_GPUS];
        for (i, row) in bw.iter_mut().enumerate().take(n) {
            for (j, cell) in row.iter_mut().enumerate().take(n) {
                if i != j {
                    *cell = profile.bandwidth(i, j);
                }
            }
        }
        BwMatrix { n, bw }
    }

    /// From a square matrix (only the first [`MAX_GPUS`] rows and columns are read; the diagonal is ignored).
    pub fn from_rows(rows: &[Vec<u32>]) -> BwMatrix {
        let n = rows.len().min(MAX_GPUS);
        let mut bw = [[0u32; MAX_GPUS]; MAX_GPUS];
        for (i, (out, row)) in bw.iter_mut().zip(rows).enumerate().take(n) {
            for (j, cell) in out.iter_mut().enumerate().take(n) {
                if i != j {
                    *cell = row.get(j).copied().unwrap_or(0);
                }
            }
        }
        BwMatrix { n, bw }
    }

    /// Number of devices.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the matrix has no devices.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Bandwidth between `i` and `j`.
    pub fn get(&self, i: usize, j: usize) -> u32 {
        if i < MAX_GPUS && j < MAX_GPUS {
            self.bw[i][j]
        } else {
            0
        }
    }
}

/// Best k-subset of `free` on the objective, with its score; `None` when `free` has fewer than `k` devices or `k` is 0.
pub fn choose(bw: &BwMatrix, free: DeviceSet, k: u32) -> Option<(DeviceSet, GpuScore)> {
    let free = free.and(DeviceSet::first(bw.n));
    if k == 0 || free.len() < k {
        return None;
    }
    let mut idx = [0usize; MAX_GPUS];
    let mut m = 0;
    for i in free.iter() {
        idx[m] = i;
        m += 1;
    }
    let mut row_f = [0u64; MAX_GPUS];
    let mut sum_f = 0u64;
    let mut max_bw = 0u64;
    for a in 0..m {
        for b in 0..m {
            if a != b {
                let v = u64::from(bw.bw[idx[a]][idx[b]]);
                row_f[idx[a]] += v;
                max_bw = max_bw.max(v);
            }
        }
        sum_f += row_f[idx[a]];
    }
    sum_f /= 2;
    let min_row = idx[..m].iter().map(|&i| row_f[i]).min().unwrap_or(0);
    let mut s = Search {
        bw,
        idx: &idx[..m],
        row_f: &row_f,
        sum_f,
        max_bw,
        min_row,
        k: k as usize,
        chosen: [0; MAX_GPUS],
        best: None,
    };
    s.dfs(0, 0, 0, u32::MAX, 0, 0);
    let (mask, min, sum, keep) = s.best?;
    let score = GpuScore {
        bottleneck_mbps: if k < 2 { 0 } else { min },
        total_mbps: sum,
        keep_free_mbps: keep,
        free_after: free.len() - k,
    };
    Some((DeviceSet(mask), score))
}

struct Search<'a> {
    bw: &'a BwMatrix,
    idx: &'a [usize],
    row_f: &'a [u64; MAX_GPUS],
    sum_f: u64,
    /// Largest link between two free GPUs.
    max_bw: u64,
    /// Smallest row sum of a free GPU over the free GPUs.
    min_row: u64,
    k: usize,
    chosen: [usize; MAX_GPUS],
    /// (mask, bottleneck, total, keep-free)
    best: Option<(u64, u32, u64, u64)>,
}

impl Search<'_> {
    fn dfs(&mut self, start: usize, depth: usize, mask: u64, min: u32, sum: u64, rows: u64) {
        if let Some((_, bmin, bsum, bkeep)) = self.best {
            if min < bmin {
                return;
            }
            if min == bmin {
                let r = (self.k - depth) as u64;
                let sum_ub = sum + (r * depth as u64 + r * r.saturating_sub(1) / 2) * self.max_bw;
                if sum_ub < bsum {
                    return;
                }
                if sum_ub == bsum {
                    let keep_ub = (self.sum_f + sum_ub).saturating_sub(rows + r * self.min_row);
                    if keep_ub <= bkeep {
                        return;
                    }
                }
            }
        }
        if depth == self.k {
            let keep = self.sum_f + sum - rows;
            let better = match self.best {
                None => true,
                Some((bmask, bmin, bsum, bkeep)) => {
                    // Lowest IDs: the lowest index in which the two sets differ belongs to the winner,
                    // i.e. the larger bit-reversed mask.
                    (min, sum, keep, mask.reverse_bits()) > (bmin, bsum, bkeep, bmask.reverse_bits())
                }
            };
            if better {
                self.best = Some((mask, min, sum, keep));
            }
            return;
        }
        let need = self.k - depth;
        for p in start..=self.idx.len() - need {
            let j = self.idx[p];
            let row = &self.bw.bw[j];
            let mut m = min;
            let mut s = sum;
            for &i in &self.chosen[..depth] {
                let b = row[i];
                m = m.min(b);
                s += u64::from(b);
            }
            self.chosen[depth] = j;
            self.dfs(p + 1, depth + 1, mask | (1u64 << j), m, s, rows + self.row_f[j]);
        }
    }
}

/// Chooses whole GPUs on a node.
pub fn allocate(profile: &Profile, state: &DeviceState, req: &WholeRequest) -> Result<Allocation, NoFit> {
    let n = profile.len() as u32;
    if req.count > n.min(MAX_GPUS as u32) {
        return Err(NoFit::InvalidCount {
            resource: profile.resource_name.clone(),
            count: req.count,
            machine: profile.name.clone(),
            allowed: format!("1–{}", n.min(MAX_GPUS as u32)),
        });
    }
    let free = state.whole_free(profile, req.multi_pod);
    let bw = BwMatrix::from_profile(profile);
    let (set, score) =
        choose(&bw, free, req.count).ok_or_else(|| NoFit::Insufficient { resource: profile.resource_name.clone() })?;
    Ok(Allocation::new(profile, set, NodeScore::Gpu(score)))
}
