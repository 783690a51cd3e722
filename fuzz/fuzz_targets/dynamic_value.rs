//! A `DynamicValue` message as it arrives over gRPC (protobuf bytes holding
//! msgpack or JSON), decoded the way every request's values are, against a
//! schema: the provider's own, or one made up from the input with nested
//! attributes of every nesting mode, so types derive the way real schemas
//! derive them.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use gpufleet::protocol::proto::tfplugin6::DynamicValue;
use gpufleet::protocol::server::decode;
use gpufleet_fuzz::{arbitrary_schema, assert_msgpack_round_trip, schema_types};
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let ty = match u8::arbitrary(&mut u) {
        Ok(i) if usize::from(i) < schema_types().len() => schema_types()[usize::from(i)].clone(),
        _ => match arbitrary_schema(&mut u) {
            Ok(schema) => schema.value_type(),
            Err(_) => return,
        },
    };
    let Ok(message) = DynamicValue::decode(u.take_rest()) else {
        return;
    };
    if let Ok(value) = decode(Some(&message), &ty, "configuration") {
        assert_msgpack_round_trip(&value, &ty);
    }
});
