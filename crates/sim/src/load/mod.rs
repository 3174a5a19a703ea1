//! Trace loaders. Only the openb CSV format today; a "cluster file + job YAMLs
//! with arrival times" loader is planned once the job model settles.

pub mod openb;

pub use openb::{load_nodes, load_pods, parse_nodes, parse_pods, LoadError};
