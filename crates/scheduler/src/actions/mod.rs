//! The actions of a session, each one pass over the jobs in scheduling
//! order ([`crate::order`]), run in the order the configuration lists them.

pub mod allocate;
pub mod backfill;
pub mod enqueue;
pub mod preempt;
pub mod reclaim;
