//! `preempt`: inside one queue, a waiting gang evicts whole running gangs
//! the plugins let it (priority: strictly lower priority) — the fewest that
//! make it fit ([`crate::victims`]), never a VIP job — and takes their place
//! in the same statement. The queue's capability is checked with the victims
//! gone. Without a plugin that votes for victims (priority), nothing is evicted.

use crate::session::Evict;
use crate::victims::evict_round;

/// Runs the action.
pub fn run(ss: &mut crate::session::Session) {
    evict_round(ss, Evict::Preempt);
}
