//! Rank tables: the per-job `hccl.json` ([`hccl`]) and MindIE's global rank
//! table over controller, coordinator and server jobs ([`mindie`]).

pub mod hccl;
pub mod mindie;
