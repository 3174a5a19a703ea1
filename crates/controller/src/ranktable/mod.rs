//! Rank tables: the per-job `hccl.json` ([`hccl`]) and MindIE's global rank
//! table over controller, coordinator and server jobs ([`mindie`]).

pub mod hccl;
pub mod mindie;

use ringleader_api::devices::{classify, Family};
use ringleader_api::model::Job;
use ringleader_api::DeviceKind;

/// Whether the job's pods get an `hccl.json` and `RANK_TABLE_FILE` naming
/// it when released: a training job (not a Deployment nor a batch Job) of
/// whole Ascend chips, as Ascend Operator and the Volcano plugins give one.
pub fn gets_rank_table(job: &Job) -> bool {
    !job.kind.independent_replicas()
        && job.roles.iter().any(|r| {
            r.device
                .as_ref()
                .is_some_and(|d| matches!(classify(&d.resource), Some((Family::Ascend, DeviceKind::Whole))))
        })
}
