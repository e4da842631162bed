//! `cargo fuzz run sql_statement`: see `src/fuzz.rs` for what it exercises.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fluss_datafusion::fuzz::sql_statement(data));
