//! A `DynamicValue` message as it arrives over gRPC (protobuf bytes holding
//! msgpack or JSON), decoded the way every request's values are, against a
//! schema: the provider's own, or one made up from the input with nested
//! attributes of every nesting mode, so types derive the way real schemas
//! derive them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| gpufleet_fuzz_checks::dynamic_value(input));
