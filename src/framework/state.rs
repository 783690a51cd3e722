//! Typed views of values: resources read configuration and write state as
//! plain serde structs, converted through exact JSON.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::protocol::codec::from_json;
use crate::protocol::{Diagnostic, Diagnostics, Type, Value};

/// Reads a value as `T`. Unknowns read as null: at apply time only computed
/// attributes can still be unknown, and those are what the resource fills in.
pub fn typed<T: DeserializeOwned>(value: &Value) -> Result<T, Diagnostics> {
    serde_json::from_value(value.to_json()).map_err(|e| {
        Diagnostic::error(
            "Unexpected value shape",
            format!("{e}. This is a bug in the gpufleet provider; please report it."),
        )
        .into()
    })
}

/// Writes `T` as a value of type `ty`; fields `T` lacks are null.
pub fn untyped<T: Serialize>(data: &T, ty: &Type) -> Result<Value, Diagnostics> {
    let json = serde_json::to_value(data)
        .map_err(|e| Diagnostics::from(Diagnostic::error("Cannot encode state", e.to_string())))?;
    from_json(&json, ty, "").map_err(|e| {
        Diagnostic::error(
            "Cannot encode state",
            format!("{e}. This is a bug in the gpufleet provider; please report it."),
        )
        .into()
    })
}
