//! The probe workload: a real ring all-reduce over TCP across the ranks of
//! a job, run as the job's own processes, so a placement can be checked
//! end to end (rendezvous files and env, name resolution, every peer
//! reachable, the data arriving intact) and measured.
//!
//! This crate owns reading the rendezvous a pod is given (an MPI hostfile,
//! `hccl.json` via `RANK_TABLE_FILE`, or PyTorch-style `MASTER_ADDR` /
//! `MASTER_PORT` / `RANK` / `WORLD_SIZE`), the TCP rendezvous and ring, the
//! result check and the collective-check table of spec/platform.md. The
//! `ringleader probe` command is a thin shell over [`allreduce`] and
//! [`worker`].
//!
//! Which `server_list` entry of a rank table is this process's: the entry
//! of pod rank `RANK` (else `MS_NODE_RANK`, `CM_RANK`), i.e. the one whose
//! first `rank_id` is that rank × its chips; without one, the entries whose
//! `server_id` / `host_ip` / `container_ip` is `RINGLEADER_POD_IP`. Pods of
//! one node share that address, so several entries may match: the pod that
//! binds the master port takes the entry holding rank 0 if it is among them,
//! and the master hands the others the lowest free matching entries in the
//! order they connect (the entries are interchangeable for the probe).

mod collective;
mod error;
mod hostfile;
mod hosts;
mod net;
mod ranktable;
mod report;
mod ring;
mod run;
mod server;
mod size;
mod wire;

pub use collective::Collective;
pub use error::ProbeError;
pub use hostfile::WorkerHost;
pub use hosts::Hosts;
pub use net::{network, NetConfig, Pair};
pub use ranktable::{RankTable, Server};
pub use report::{format_table, Report, Role, Row, HEADER};
pub use run::{
    allreduce, allreduce_with, serve_worker, worker, Config, Options, Rendezvous, WorkerConfig, DEFAULT_MASTER_PORT,
    DEFAULT_WORKER_PORT, REPORT_PREFIX, WORKER_PORT_TRIES,
};
pub use server::{driver_facts, proc_facts, Facts};
pub use size::{parse_size, size_sweep};
