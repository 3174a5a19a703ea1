//! The simulator of ringleader: openb trace loaders, saturation and time
//! replays of the node-order policies in `ringleader-scheduler`, seed-parallel
//! runs and their reports (table, JSON, CSV, SVG).

#![warn(missing_docs)]

pub mod load;
pub mod replay;
pub mod report;
pub mod run;
pub mod trace;

pub use replay::Experiment;
