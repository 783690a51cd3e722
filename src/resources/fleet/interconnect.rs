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
            .describe("Extra resources a training pod requests per node to use the nodes' interconnect, with the quantity one node has: `{ \"vpc.amazonaws.com/efa\" = \"32\" }` for 8×H100 (p5.48xlarge) under `label_scheme = \"aws\"`. Karpenter's AWS provider attaches EFA interfaces only to nodes whose pods request `vpc.amazonaws.com/efa`, and a pod requesting it gets only instance types that have that many. Null unless the fleet's `label_scheme` (set, or planned from the node class or the provider) is `aws`, `accelerator_count` fixes the GPUs per node and every EC2 instance type with that many of the fleet's models has the same number of EFA interfaces."),
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
