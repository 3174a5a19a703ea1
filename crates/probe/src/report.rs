//! What a run found, and the collective-check table of spec/platform.md.

use crate::Collective;
use std::ops::Range;

/// Column header of the collective-communication check.
pub const HEADER: &str = "data_size(Bytes) | aveg_time(us) | alg_bandwidth(GB/s) | check_result";

/// One message size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// The operation timed.
    pub op: Collective,
    /// Bytes per rank.
    pub data_size: u64,
    /// Mean time of one all-reduce over the timed iterations (slowest
    /// process, when the row covers several).
    pub aveg_time_us: f64,
    /// Whether every process saw the exact expected sum.
    pub ok: bool,
}

impl Row {
    /// `data_size / aveg_time`, in 10^9 bytes per second.
    pub fn alg_bandwidth(&self) -> f64 {
        if self.aveg_time_us > 0.0 {
            self.data_size as f64 / (self.aveg_time_us * 1e3)
        } else {
            0.0
        }
    }
}

/// Which side of the run produced a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The process owning rank 0: its rows cover every process.
    Leader,
    /// Any other ring process: its rows are its own.
    Member,
    /// The MPI-style launcher: rows cover every worker.
    Launcher,
    /// A `probe worker`: its rows are its own.
    Worker,
}

/// Outcome of one process's part in a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub role: Role,
    /// Ranks in the job.
    pub world: usize,
    /// Ring processes.
    pub processes: usize,
    /// This process's index in the ring (0 for a launcher).
    pub index: usize,
    /// Ranks this process owns (empty for a launcher).
    pub ranks: Range<usize>,
    pub iters: u32,
    pub warmup: u32,
    pub rows: Vec<Row>,
}

impl Report {
    /// Every row checked out.
    pub fn success(&self) -> bool {
        self.rows.iter().all(|r| r.ok)
    }

    /// Whether this report covers the whole job (print the table).
    pub fn is_global(&self) -> bool {
        matches!(self.role, Role::Leader | Role::Launcher)
    }

    /// The check table.
    pub fn table(&self) -> String {
        format_table(&self.rows)
    }

    /// The best algorithm bandwidth (the check's summary figure).
    pub fn max_alg_bandwidth(&self) -> f64 {
        self.rows.iter().map(Row::alg_bandwidth).fold(0.0, f64::max)
    }

    /// Bus bandwidth of an all-reduce: algbw · 2(n−1)/n.
    pub fn bus_bandwidth(&self, alg: f64) -> f64 {
        Collective::AllReduce.bus_bandwidth(alg, self.world)
    }

    /// Every row as the CheckRun report carries it (bus bandwidth by the
    /// row's operation across this report's ranks).
    pub fn check_rows(&self) -> serde_json::Value {
        let rows: Vec<serde_json::Value> = self
            .rows
            .iter()
            .map(|r| {
                let alg = r.alg_bandwidth();
                serde_json::json!({
                    "operation": r.op.name(),
                    "data_size": r.data_size,
                    "aveg_time_us": r.aveg_time_us,
                    "alg_bandwidth": alg,
                    "bus_bandwidth": r.op.bus_bandwidth(alg, self.world),
                    "check_result": if r.ok { "success" } else { "fail" },
                })
            })
            .collect();
        serde_json::json!({"rows": rows})
    }

    /// The table of each operation run, headed by its name when the run
    /// covers more than all-reduce.
    pub fn tables(&self) -> String {
        let mut ops: Vec<Collective> = Vec::new();
        for r in &self.rows {
            if !ops.contains(&r.op) {
                ops.push(r.op);
            }
        }
        if ops == [Collective::AllReduce] {
            return self.table();
        }
        let mut out = String::new();
        for op in ops {
            let rows: Vec<Row> = self.rows.iter().filter(|r| r.op == op).copied().collect();
            out.push_str(&format!("# {}\n{}", op.name(), format_table(&rows)));
        }
        out
    }

    /// One line: the job-wide summary, or this process's part.
    pub fn summary(&self) -> String {
        let check = if self.success() { "success" } else { "fail" };
        if self.is_global() {
            let alg = self.max_alg_bandwidth();
            format!(
                "allreduce: {} ranks in {} processes, {} size(s) x {} iters (+{} warm-up), \
                 max alg_bandwidth {alg:.4} GB/s, bus_bandwidth {:.4} GB/s, check_result {check}",
                self.world,
                self.processes,
                self.rows.len(),
                self.iters,
                self.warmup,
                self.bus_bandwidth(alg)
            )
        } else {
            format!(
                "allreduce: process {} of {}, ranks {}..{} of {}: check_result {check}",
                self.index, self.processes, self.ranks.start, self.ranks.end, self.world
            )
        }
    }
}

/// The header and one row per size; values right-aligned under their
/// column names.
pub fn format_table(rows: &[Row]) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for r in rows {
        let check = if r.ok { "success" } else { "fail" };
        out.push_str(&format!(
            "{:>16} | {:>13.2} | {:>19.4} | {check}\n",
            r.data_size,
            r.aveg_time_us,
            r.alg_bandwidth()
        ));
    }
    out
}
