//! The simulator of ringleader: openb trace loaders, saturation and time
//! replays of the node-order policies in `ringleader-scheduler`, seed-parallel
//! runs and their reports (table, JSON, CSV, SVG); and [`jobs`], a time replay
//! of ringleader's own formats (a cluster file and job YAMLs with arrival
//! times) through the real gang scheduler.

#![warn(missing_docs)]

pub mod jobs;
pub mod load;
pub mod replay;
pub mod report;
pub mod run;
pub mod trace;

pub use replay::Experiment;
