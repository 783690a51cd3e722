//! The go-plugin start-up contract read from arbitrary environment values:
//! every outcome is an environment or an error, never a panic, and an
//! accepted environment is usable (a port range that is not empty, a
//! certificate that is not blank).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| gpufleet_fuzz_checks::handshake_env(input));
