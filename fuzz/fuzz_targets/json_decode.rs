//! Raw bytes as JSON, the encoding of stored state and of `DynamicValue.json`,
//! decoded against `dynamic` or one of the provider's schemas. Decoding may
//! fail, never panic; a value read from state must be one we can send to
//! Terraform in msgpack, and it must convert back to JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| gpufleet_fuzz_checks::json_decode(input));
