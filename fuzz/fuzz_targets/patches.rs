//! Fuzz target: JSON, merge and strategic merge patches, and the store's merge patch.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ringleader_fuzz::patches(data));
