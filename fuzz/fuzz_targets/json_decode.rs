//! Raw bytes as JSON, the encoding of stored state and of `DynamicValue.json`,
//! decoded against `dynamic` or one of the provider's schemas. Decoding may
//! fail, never panic; a value read from state must be one we can send to
//! Terraform in msgpack, and it must convert back to JSON.
#![no_main]

use gpufleet::protocol::codec::decode_json;
use gpufleet_fuzz::{assert_msgpack_round_trip, chosen_type};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&selector, bytes)) = input.split_first() else {
        return;
    };
    let ty = chosen_type(selector);
    if let Ok(value) = decode_json(bytes, &ty) {
        assert_msgpack_round_trip(&value, &ty);
        let _ = value.to_json();
    }
});
