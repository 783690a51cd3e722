//! Any type, any value of it (unknowns and nulls anywhere, `dynamic` values
//! carrying their own types, numbers beyond float64): msgpack must carry it
//! to the decoder and back unchanged, and a wholly known value must survive
//! JSON (stored state) as well.
#![no_main]

use arbitrary::Unstructured;
use gpufleet::protocol::Type;
use gpufleet::protocol::codec::from_json;
use gpufleet_fuzz::{arbitrary_type, arbitrary_value, assert_msgpack_round_trip};
use libfuzzer_sys::fuzz_target;

fn has_dynamic(ty: &Type) -> bool {
    match ty {
        Type::Dynamic => true,
        Type::List(e) | Type::Set(e) | Type::Map(e) => has_dynamic(e),
        Type::Tuple(types) => types.iter().any(has_dynamic),
        Type::Object { attributes, .. } => attributes.values().any(has_dynamic),
        Type::Bool | Type::Number | Type::String => false,
    }
}

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let Ok(ty) = arbitrary_type(&mut u, 0) else {
        return;
    };
    let Ok(value) = arbitrary_value(&mut u, &ty) else {
        return;
    };
    assert_msgpack_round_trip(&value, &ty);
    // State JSON holds no unknowns, and `Value::to_json` writes a dynamic
    // value's inner value only (Terraform stores its type beside it).
    if value.is_wholly_known() && !has_dynamic(&ty) {
        let json = value.to_json();
        let back = from_json(&json, &ty, "")
            .unwrap_or_else(|e| panic!("cannot read back {json} as {ty}: {e}"));
        assert_eq!(back, value, "JSON round trip as {ty}");
    }
});
