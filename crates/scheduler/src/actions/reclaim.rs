//! `reclaim`: across queues, a waiting gang whose queue stays within its
//! deserved share (and capability) evicts whole gangs of other queues that
//! the plugins let it (proportion: the queue is reclaimable and uses more
//! than it deserves, and keeps its guarantee; priority: the victim is not of
//! higher priority) — never a VIP job — the fewest that make it fit.

use crate::session::Evict;
use crate::victims::evict_round;

/// Runs the action.
pub fn run(ss: &mut crate::session::Session) {
    evict_round(ss, Evict::Reclaim);
}
