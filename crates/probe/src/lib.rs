//! The probe workload (being built).
