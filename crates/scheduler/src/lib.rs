//! The gang scheduler of ringleader: the cluster it places onto, node
//! predicates, gang placement onto exact devices and "why not" explanations,
//! plus the node-order policies for GPU-shared pods (`nodeorder`: Random,
//! DotProd, GpuClustering, GpuPacking, BestFit, FGD and ringleader's own
//! policy) with the fragmentation model they score against.

pub mod actions;
pub mod admission;
pub mod cluster;
pub mod conf;
pub mod explain;
pub mod k8s_node;
pub mod nodeorder;
pub mod order;
pub mod place;
pub mod plugins;
pub mod predicates;
pub mod priority;
pub mod queue;
pub mod reserve;
pub mod resources;
pub mod scenarios;
pub mod session;
pub mod victims;
pub mod vip;
pub mod workload;
