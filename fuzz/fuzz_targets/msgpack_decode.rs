//! Raw bytes as msgpack, the encoding Terraform sends every value in, decoded
//! against `dynamic` (the bytes then carry their own type) or one of the
//! provider's schemas. Decoding may fail, never panic; what decodes must
//! encode back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| gpufleet_fuzz_checks::msgpack_decode(input));
