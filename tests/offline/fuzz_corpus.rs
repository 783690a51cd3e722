//! The committed fuzz corpus (fuzz/corpus/<target>/), thousands of inputs
//! libFuzzer kept because each reached new code, replayed through exactly
//! the checks the fuzz targets make (fuzz/checks): decoding may fail,
//! never panic, and what decodes must round-trip. This is `make test`'s
//! fuzz smoke run; it needs no nightly toolchain. Fuzzing itself, a million
//! executions per target, is `make test-long` (scripts/fuzz.sh).

use std::path::PathBuf;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    inputs.sort();
    assert!(inputs.len() > 100, "{target}: only {} inputs", inputs.len());
    for input in &inputs {
        let bytes = std::fs::read(input).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&bytes));
        assert!(outcome.is_ok(), "{target}: {} panicked", input.display());
    }
    eprintln!("{target}: {} corpus inputs replayed", inputs.len());
}

#[test]
fn msgpack_decode() {
    replay("msgpack_decode", gpufleet_fuzz_checks::msgpack_decode);
}

#[test]
fn json_decode() {
    replay("json_decode", gpufleet_fuzz_checks::json_decode);
}

#[test]
fn dynamic_value() {
    replay("dynamic_value", gpufleet_fuzz_checks::dynamic_value);
}

#[test]
fn value_round_trip() {
    replay("value_round_trip", gpufleet_fuzz_checks::value_round_trip);
}

#[test]
fn handshake_env() {
    replay("handshake_env", gpufleet_fuzz_checks::handshake_env);
}
