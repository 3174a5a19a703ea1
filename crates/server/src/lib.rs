//! The API server (being built).
