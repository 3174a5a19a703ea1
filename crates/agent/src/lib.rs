//! The node agent (being built).
