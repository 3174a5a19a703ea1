//! The two ways a pod runs: as a process group ([`process`]) or as a timer
//! ([`sim`]).

pub mod process;
pub mod sim;
