//! The gang scheduler of ringleader. Today it owns the node-order policies for
//! GPU-shared pods (`nodeorder`: Random, DotProd, GpuClustering, GpuPacking,
//! BestFit, FGD and ringleader's own policy) together with the fragmentation
//! model they score against; sessions, queues, gang actions and explanations
//! arrive with the scheduler issue.

pub mod cluster;
pub mod explain;
pub mod nodeorder;
pub mod place;
pub mod predicates;
pub mod scenarios;
