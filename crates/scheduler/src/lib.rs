//! The gang scheduler of ringleader: the cluster it places onto, node
//! predicates, gang placement onto exact devices and "why not" explanations,
//! plus the node-order policies for GPU-shared pods (`nodeorder`: Random,
//! DotProd, GpuClustering, GpuPacking, BestFit, FGD and ringleader's own
//! policy) with the fragmentation model they score against.

pub mod cluster;
pub mod explain;
pub mod nodeorder;
pub mod place;
pub mod predicates;
pub mod scenarios;
