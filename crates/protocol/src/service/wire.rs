//! How the service's values and diagnostics travel: a request's
//! `DynamicValue` decoded with the schema of the type it names, answers
//! encoded in msgpack, identities, and a list resource's diagnostic paths.

use crate::codec::{decode_json, decode_msgpack, encode_msgpack};
use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::proto::tfplugin6 as pb;
use crate::types::Type;
use crate::value::Value;

/// A request's `DynamicValue` as a value of `ty` (msgpack when present, else
/// JSON; absent is null). Public so the fuzz targets reach the same path.
pub fn decode(
    value: Option<&pb::DynamicValue>,
    ty: &Type,
    what: &str,
) -> Result<Value, Diagnostics> {
    let Some(dv) = value else {
        return Ok(Value::Null);
    };
    let result = if !dv.msgpack.is_empty() {
        decode_msgpack(&dv.msgpack, ty)
    } else if !dv.json.is_empty() {
        decode_json(&dv.json, ty)
    } else {
        return Ok(Value::Null);
    };
    result.map_err(|e| {
        let diagnostic = Diagnostic::error(
            format!("Invalid {what} received from Terraform"),
            e.to_string(),
        );
        // At the attribute, so the CLI shows its line.
        let diagnostic = if e.path.0.is_empty() {
            diagnostic
        } else {
            diagnostic.at(e.path)
        };
        diagnostic.into()
    })
}

pub(super) fn encode(
    value: &Value,
    ty: &Type,
    diagnostics: &mut Diagnostics,
) -> Option<pb::DynamicValue> {
    match encode_msgpack(value, ty) {
        Ok(msgpack) => Some(pb::DynamicValue {
            msgpack,
            json: Vec::new(),
        }),
        Err(e) => {
            diagnostics.error(
                "Provider produced a value it cannot encode",
                format!("{e}. This is a bug in the gpufleet provider; please report it."),
            );
            None
        }
    }
}

/// An identity as the wire carries it; none for a null identity.
pub(super) fn encode_identity(
    identity: &Value,
    ty: Option<&Type>,
    diagnostics: &mut Diagnostics,
) -> Option<pb::ResourceIdentityData> {
    match ty {
        Some(ty) if !identity.is_null() => Some(pb::ResourceIdentityData {
            identity_data: Some(encode(identity, ty, diagnostics)?),
        }),
        _ => None,
    }
}

/// A list resource's diagnostics on the wire. The provider sees only the
/// `list` block's inner `config`, but Terraform looks each path up from the
/// `list` block itself (hashicorp/terraform, internal/plugin6/grpc_provider.go
/// sends `config` alone; internal/terraform/node_resource_validate.go and
/// node_resource_plan_instance_query.go resolve with `InConfigBody` of the
/// `list` block), so a path must start at `config` to reach its line.
pub(super) fn in_list_block(diagnostics: &Diagnostics) -> Vec<pb::Diagnostic> {
    use pb::attribute_path::{Step, step::Selector};
    let mut wire = diagnostics.to_proto();
    for d in &mut wire {
        if let Some(path) = &mut d.attribute {
            let config = Step {
                selector: Some(Selector::AttributeName("config".into())),
            };
            path.steps.insert(0, config);
        }
    }
    wire
}

pub(super) fn unknown_type(kind: &str, name: &str) -> Diagnostics {
    Diagnostic::error(
        format!("Unknown {kind} type"),
        format!("gpufleet has no {kind} named {name:?}."),
    )
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AttributePath;

    #[test]
    fn a_value_that_cannot_be_decoded_is_reported_at_its_attribute() {
        let ty = Type::object([("name", Type::String), ("value", Type::Number)]);
        let mut msgpack = Vec::new();
        rmpv::encode::write_value(
            &mut msgpack,
            &rmpv::Value::Map(vec![("value".into(), "1e5000".into())]),
        )
        .unwrap();
        let value = pb::DynamicValue {
            msgpack,
            json: Vec::new(),
        };
        let diagnostics = decode(Some(&value), &ty, "configuration").unwrap_err();
        let [diagnostic] = &diagnostics.0[..] else {
            panic!("{diagnostics:?}");
        };
        assert_eq!(diagnostic.path, Some(AttributePath::attr("value")));
        assert!(
            diagnostic.detail.contains("at most 4096 digits"),
            "{diagnostic:?}"
        );
        // Bytes after the value belong to no attribute.
        let garbage = pb::DynamicValue {
            msgpack: vec![0xc0, 0xc0],
            json: Vec::new(),
        };
        let diagnostics = decode(Some(&garbage), &ty, "configuration").unwrap_err();
        assert_eq!(diagnostics.0[0].path, None);
    }
}
