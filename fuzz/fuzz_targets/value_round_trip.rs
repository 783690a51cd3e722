//! Any type, any value of it (unknowns and nulls anywhere, `dynamic` values
//! carrying their own types, numbers beyond float64): msgpack must carry it
//! to the decoder and back unchanged, and a wholly known value must survive
//! JSON (stored state) as well.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| gpufleet_fuzz_checks::value_round_trip(input));
