//! The `gpufleet_fleet` schema: every attribute with its validators,
//! defaults (Karpenter's own, so they never show as diffs) and plan
//! behaviour.

use super::constraints::{self, MAX_MIN_VALUES, REQUIREMENT_INPUTS};
use super::upgrade;
use super::validation::{
    is_budget_duration, is_budget_nodes, is_cron_schedule, is_karpenter_duration,
    is_termination_grace_period,
};
use crate::catalog::LabelScheme;
use crate::cluster::names::{
    annotation_keys, dns1123_subdomain, label_value, labels, qualified_name, resource_quantities,
};
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::validators::{
    Validator, all_or_none, each, integer_between, not_empty, one_of,
};
use crate::protocol::Value;
use crate::protocol::schema::Nesting;
use crate::resources::taint::taint_attributes;

const OPERATORS: &[&str] = &[
    "In",
    "NotIn",
    "Exists",
    "DoesNotExist",
    "Gt",
    "Lt",
    "Gte",
    "Lte",
];
const CONSOLIDATION_POLICIES: &[&str] = &["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"];
const DISRUPTION_REASONS: &[&str] = &["Underutilized", "Empty", "Drifted"];
// Karpenter's defaults (NodePool CRD v1), planned when the configuration
// leaves them unset.
const DEFAULT_CONSOLIDATION_POLICY: &str = "WhenEmptyOrUnderutilized";
const DEFAULT_CONSOLIDATE_AFTER: &str = "0s";
const DEFAULT_BUDGET_NODES: &str = "10%";
const DEFAULT_EXPIRE_AFTER: &str = "720h";

/// The `gpufleet_fleet` schema.
pub(super) fn schema() -> ObjectSchema {
    let min_values = || integer_between(1, MAX_MIN_VALUES.into(), "");
    let mut schema = ObjectSchema::new(
        "A GPU fleet: a Karpenter NodePool whose nodes have the GPUs, taints and labels one kind of work needs. Workloads use `node_selector` and `tolerations` to land on it.",
        vec![
            Attr::string("id").derived_from(&["name"]).describe("The NodePool name."),
            Attr::string("name")
                .required()
                .requires_replace()
                .validate(dns1123_subdomain())
                .describe("NodePool name (at most 63 characters: nodes carry it in the `karpenter.sh/nodepool` label)."),
        ]
        .into_iter()
        .chain(constraints::attributes())
        .chain([
            Attr::nested(
                "node_class",
                Nesting::Single,
                vec![
                    Attr::string("group").required().requires_replace().validate(not_empty())
                        .validate(Validator::string("an API group, without `/`", |g| !g.contains('/')))
                        .describe("e.g. `karpenter.k8s.aws`. Immutable in Karpenter: a change replaces the fleet."),
                    Attr::string("kind").required().requires_replace().validate(not_empty())
                        .describe("e.g. `EC2NodeClass`. Immutable in Karpenter: a change replaces the fleet."),
                    Attr::string("name").required().validate(not_empty()),
                ],
            )
            .required()
            .describe("The cloud-specific node class the nodes are built from; gpufleet does not create it. A plan that creates or changes the fleet warns when the cluster does not serve its kind, or when an EC2NodeClass or KWOKNodeClass of that name does not exist."),
            Attr::nested("taints", Nesting::List, taint_attributes())
                .optional()
                .describe("Taints on every node; only pods tolerating them (see `tolerations`) land there."),
            Attr::nested("startup_taints", Nesting::List, taint_attributes())
                .optional()
                .describe("Taints something removes once a node is ready (e.g. a driver installer); pods need not tolerate them."),
            Attr::string_map("labels")
                .optional()
                .validate(labels())
                .describe("Labels on every node. Karpenter's domains are reserved. The NodePool keeps them as one map, so labels someone else adds to its template show as drift and the next apply removes them."),
            Attr::string_map("annotations")
                .optional()
                .validate(annotation_keys())
                .describe("Annotations on every node."),
            Attr::string_map("limits")
                .optional()
                .validate(not_empty())
                .validate(resource_quantities())
                .describe("Caps on the capacity the fleet may launch, by resource: e.g. `{ gpus = 64, cpu = 1000, memory = \"4000Gi\", nodes = 10 }`. `gpus` is `nvidia.com/gpu`; any resource name works (`ephemeral-storage`, `nvidia.com/mig-1g.10gb`, ...). A static fleet may only limit `nodes`."),
            Attr::nested(
                "disruption",
                Nesting::Single,
                vec![
                    Attr::string("consolidation_policy")
                        .default(Value::string(DEFAULT_CONSOLIDATION_POLICY))
                        .validate(one_of(CONSOLIDATION_POLICIES))
                        .describe("Which nodes Karpenter may consolidate."),
                    Attr::string("consolidate_after")
                        .default(Value::string(DEFAULT_CONSOLIDATE_AFTER))
                        .validate(Validator::string("a duration such as \"30s\" or \"1h30m\", or \"Never\"", is_karpenter_duration))
                        .describe("How long a node must be consolidatable before Karpenter acts; default `0s`."),
                    Attr::nested(
                        "budgets",
                        Nesting::List,
                        vec![
                            Attr::string("nodes")
                                .required()
                                .validate(Validator::string("a node count such as \"5\" or a percentage such as \"10%\"", is_budget_nodes))
                                .describe("Most nodes disrupted at once: a count or a percentage."),
                            Attr::string("schedule")
                                .optional()
                                .validate(Validator::string("a cron schedule (five fields) or a macro such as \"@daily\"", is_cron_schedule))
                                .describe("When the budget starts to apply (cron, UTC); with `duration`."),
                            Attr::string("duration")
                                .optional()
                                .validate(Validator::string("a duration in hours and minutes such as \"1h30m\"", is_budget_duration))
                                .describe("How long the budget applies after each `schedule` hit."),
                            Attr::string_set("reasons")
                                .optional()
                                .validate(each(one_of(DISRUPTION_REASONS)))
                                .describe("Disruption reasons the budget limits; all when unset."),
                        ],
                    )
                    .default(default_budgets())
                    .validate_object(all_or_none(&["schedule", "duration"]))
                    .describe("Default: `[{ nodes = \"10%\" }]`."),
                ],
            )
            .default(default_disruption())
            .describe("When Karpenter may remove or replace nodes; Karpenter's defaults when unset."),
            Attr::number("weight")
                .optional()
                .validate(integer_between(1, 100, ""))
                .describe("Priority among NodePools that fit a pod, 1 to 100; higher first. Not on static fleets."),
            Attr::number("replicas")
                .optional()
                .validate(integer_between(0, i64::MAX, ""))
                .describe("Makes the fleet static: Karpenter keeps this many nodes whatever the pods need (Karpenter's alpha `StaticCapacity` feature). A static fleet has no `weight`, may only limit `nodes`, and ignores consolidation. Karpenter cannot turn a NodePool static or dynamic in place: adding or removing `replicas` replaces the fleet; changing the number scales it."),
            Attr::string("expire_after")
                .default(Value::string(DEFAULT_EXPIRE_AFTER))
                .validate(Validator::string("a duration such as \"720h\", or \"Never\"", is_karpenter_duration))
                .describe("Node lifetime before replacement; default `720h`. A change rolls the fleet's nodes."),
            Attr::string("termination_grace_period")
                .optional()
                .validate(Validator::string("a duration such as \"48h\" or \"1h30m\"", is_termination_grace_period))
                .describe("Longest a node may drain before Karpenter deletes its pods anyway, overriding disruption budgets of pods and `karpenter.sh/do-not-disrupt`. Unset, draining waits for the pods. A change rolls the fleet's nodes."),
            Attr::nested(
                "requirements",
                Nesting::List,
                vec![
                    Attr::string("key").required().validate(qualified_name()),
                    Attr::string("operator").required().validate(one_of(OPERATORS)),
                    Attr::string_list("values").optional().validate(each(label_value())),
                    Attr::number("min_values").optional().validate(min_values()),
                ],
            )
            .optional()
            .describe("More node requirements, added after the ones the attributes above generate: any key (other than Karpenter's reserved ones) and operator, with `min_values` if wanted. One is refused only when it contradicts an attribute (no node could meet both)."),
            Attr::string_map("node_pool_labels")
                .optional()
                .validate(labels())
                .describe("Labels on the NodePool object itself (not its nodes). Others' labels on it are left alone."),
            Attr::string_map("node_pool_annotations")
                .optional()
                .validate(annotation_keys())
                .describe("Annotations on the NodePool object itself, e.g. `{ \"kubernetes.io/description\" = \"...\" }`. Others' annotations on it are left alone."),
            Attr::string("label_scheme")
                .optional()
                .computed()
                .validate(one_of(LabelScheme::NAMES))
                .describe("Node labels GPU constraints map to: `cfke`, `aws` or `azure`. When unset, the node class's cloud decides (`aws` for `karpenter.k8s.aws`, Karpenter's EC2NodeClass; `azure` for `karpenter.azure.com`, its AKSNodeClass), else the provider's `label_scheme`; the plan shows the one used. A scheme other than the node class's is refused: its nodes never carry that scheme's labels."),
            Attr::nested(
                "node_pool_requirements",
                Nesting::List,
                ["key", "operator"]
                    .map(|name| Attr::string(name).computed())
                    .into_iter()
                    .chain([
                        Attr::string_list("values").computed(),
                        Attr::number("min_values").computed(),
                    ])
                    .collect(),
            )
            .derived_from(REQUIREMENT_INPUTS)
            .describe("The node requirements the NodePool gets, in order: those the attributes above generate on the label scheme's labels, those they imply, then `requirements`. Karpenter launches only instance types whose labels meet them all."),
            Attr::string_map("node_selector")
                .derived_from(&["name"])
                .describe("Node selector for workloads: `{ \"karpenter.sh/nodepool\" = name }`."),
            Attr::nested(
                "tolerations",
                Nesting::List,
                ["key", "operator", "value", "effect"]
                    .map(|name| Attr::string(name).computed())
                    .into(),
            )
            .derived_from(&["taints"])
            .describe("Tolerations for workloads, one per taint."),
        ])
        .chain(super::sharing::attributes())
        .chain(super::interconnect::attributes())
        .chain(super::admission::attributes())
        .chain(super::flavor::attributes())
        .collect(),
    );
    schema.version = upgrade::VERSION;
    schema
}

fn default_budgets() -> Value {
    let budget = [
        ("nodes", Value::string(DEFAULT_BUDGET_NODES)),
        ("schedule", Value::Null),
        ("duration", Value::Null),
        ("reasons", Value::Null),
    ];
    Value::List(vec![Value::Object(
        budget.map(|(k, v)| (k.to_string(), v)).into(),
    )])
}

fn default_disruption() -> Value {
    let disruption = [
        (
            "consolidation_policy",
            Value::string(DEFAULT_CONSOLIDATION_POLICY),
        ),
        (
            "consolidate_after",
            Value::string(DEFAULT_CONSOLIDATE_AFTER),
        ),
        ("budgets", default_budgets()),
    ];
    Value::Object(disruption.map(|(k, v)| (k.to_string(), v)).into())
}
