//! Node-order plugins for pods that may share a GPU.
//!
//! A policy looks at one node and one pod shape at a time and returns a score
//! (higher is better) plus the GPUs the pod would get there; [`NodeOrder`]
//! runs the policy over a cluster, caches what it can and breaks ties the way
//! the FGD paper's simulator does (lowest per-seed node rank wins).

#![warn(missing_docs)]

mod frag;
mod model;
mod policy;
mod select;
mod typical;

pub use frag::{node_frag, FragBreakdown};
pub use model::{Affinity, GpuPick, ModelId, ModelSet, NodeState, PodShape, MAX_GPUS_PER_NODE, MILLI};
pub use policy::{Policy, Scored, UnknownPolicy};
pub use select::{Decision, NodeOrder};
pub use typical::{TypicalPod, TypicalPods};
