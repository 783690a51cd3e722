//! What a fleet's nodes have for training traffic between nodes, as the
//! resources workloads request to use it (`interconnect_resources`).

use std::collections::BTreeMap;

use super::model::Model;
use super::resolved::Models;
use super::sharing::fixed_gpus;
use crate::catalog::{EFA_RESOURCE, LabelScheme, ec2_efa_interfaces};
use crate::framework::schema::Attr;

/// The fleet's interconnect attributes.
pub(super) fn attributes() -> Vec<Attr> {
    vec![
        Attr::string_map("interconnect_resources")
            .derived_from(&["label_scheme", "accelerators", "accelerator_count"])
            .exact()
            .describe("Extra resources a training pod requests per node to use the nodes' interconnect, with the quantity one node has: `{ \"vpc.amazonaws.com/efa\" = \"32\" }` for 8×H100 (p5.48xlarge) under `label_scheme = \"aws\"`. Karpenter's AWS provider attaches EFA interfaces only to nodes whose pods request `vpc.amazonaws.com/efa`, and a pod requesting it gets only instance types that have that many. Null unless the fleet's own `label_scheme` is `aws`, `accelerator_count` fixes the GPUs per node and every EC2 instance type with that many of the fleet's models has the same number of EFA interfaces."),
    ]
}

/// `interconnect_resources`, from configuration.
pub(super) fn derive(model: &mut Model, models: &Models) {
    let aws = model.label_scheme.as_deref().and_then(LabelScheme::parse) == Some(LabelScheme::Aws);
    let efa = fixed_gpus(model.constraints.accelerator_count.as_ref())
        .filter(|_| aws && models.unknown.is_none())
        .and_then(|gpus| ec2_efa_interfaces(&models.known, gpus));
    model.interconnect_resources =
        efa.map(|n| BTreeMap::from([(EFA_RESOURCE.to_string(), n.to_string())]));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::catalog::LabelScheme;
    use crate::framework::testkit::{Harness, errors};
    use crate::kit::Cluster;
    use crate::kit::object::ObjectResource;
    use crate::protocol::Value;
    use crate::resources::fleet::Fleet;

    fn planned(attributes: serde_json::Value) -> Value {
        let h = Harness::new(ObjectResource(Fleet));
        let mut config = json!({
            "name": "training",
            "node_class": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        });
        config
            .as_object_mut()
            .unwrap()
            .extend(attributes.as_object().unwrap().clone());
        let plan = h.plan(
            &Cluster::offline(LabelScheme::Aws),
            &Value::Null,
            &h.value(config),
        );
        assert!(
            errors(&plan.diagnostics).is_empty(),
            "{:?}",
            plan.diagnostics
        );
        plan.planned_state.attr("interconnect_resources").clone()
    }

    #[test]
    fn a_fleet_pinned_to_one_ec2_shape_says_its_efa_interfaces() {
        let h100x8 = json!({
            "label_scheme": "aws",
            "accelerators": ["H100"],
            "accelerator_count": {"min": 8, "max": 8},
        });
        assert_eq!(
            planned(h100x8.clone()).to_json(),
            json!({"vpc.amazonaws.com/efa": "32"})
        );
        // Not pinned: a range of GPU counts, another scheme, or no
        // scheme of its own.
        let mut range = h100x8.clone();
        range["accelerator_count"] = json!({"min": 1, "max": 8});
        let mut cfke = h100x8.clone();
        cfke["label_scheme"] = json!("cfke");
        let mut unset = h100x8.clone();
        unset.as_object_mut().unwrap().remove("label_scheme");
        let mut l4x1 = h100x8;
        l4x1["accelerators"] = json!(["L4"]);
        l4x1["accelerator_count"] = json!({"min": 1, "max": 1});
        for config in [range, cfke, unset, l4x1] {
            assert!(planned(config.clone()).is_null(), "{config}");
        }
    }
}
