//! The controller manager (being built).
