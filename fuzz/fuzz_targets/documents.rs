//! Fuzz target: Multi-document job YAML/JSON: split, typed, validated, normalised.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ringleader_fuzz::documents(data));
