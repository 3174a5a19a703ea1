//! Reports of simulation results: JSON, a terminal table, CSV and SVG curves.

pub mod csv;
pub mod json;
pub mod svg;
pub mod table;
