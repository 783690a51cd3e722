//! Raw bytes as msgpack, the encoding Terraform sends every value in, decoded
//! against `dynamic` (the bytes then carry their own type) or one of the
//! provider's schemas. Decoding may fail, never panic; what decodes must
//! encode back to itself.
#![no_main]

use gpufleet::protocol::codec::decode_msgpack;
use gpufleet_fuzz::{assert_msgpack_round_trip, chosen_type};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&selector, bytes)) = input.split_first() else {
        return;
    };
    let ty = chosen_type(selector);
    if let Ok(value) = decode_msgpack(bytes, &ty) {
        assert_msgpack_round_trip(&value, &ty);
    }
});
