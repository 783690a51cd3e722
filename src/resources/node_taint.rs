//! `gpufleet_node_taint`: taints on one named node, or on every node that a
//! label selector matches, written next to everyone else's taints.
//!
//! `spec.taints` is an atomic list, so server-side apply would take the whole
//! list away from kubelet, the node lifecycle controller and Karpenter. Each
//! write therefore reads the node, changes only this resource's (key, effect)
//! pairs and writes the list back with the node's resourceVersion as a
//! precondition, retrying on conflict.
//!
//! A read reports the cluster so that a plan is empty exactly when there is
//! nothing to do:
//! * `taints` are ours as last applied, except one not in place on every
//!   targeted node: it reads back with the value the nodes agree on or, when
//!   they do not, a marker such as `(missing on node gpu-7)`, which no
//!   configuration can hold, so the plan shows that taint changing;
//! * `nodes` are the nodes carrying at least one of our taints;
//! * a `node_name` node that no longer exists removes the resource from
//!   state: the next plan re-creates it, and apply then fails clearly if the
//!   node is still missing (or the configuration can simply drop it).
//!
//! Owned taints are the (key, effect) pairs in state, and owned nodes are
//! `nodes`; nothing else is ever removed.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Node, Taint};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::taint::{check_unique, taint_attributes};
use crate::cluster::FIELD_MANAGER;
use crate::cluster::api::{Change, Edit};
use crate::cluster::retry::Deadline;
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::timeouts::Operation;
use crate::framework::validators::not_empty;
use crate::kit::node_scoped::{NodeScoped, Scoped, TargetDescriptions};
use crate::kit::node_target::{self, Seen};
use crate::kit::permissions::Permission;
use crate::kit::{Cluster, list};
use crate::protocol::schema::Nesting;
use crate::protocol::{Diagnostics, Value};

/// Key domains, with their subdomains, of the taints Kubernetes components,
/// cloud providers and Karpenter set. An import leaves these taints out.
const SYSTEM_DOMAINS: &[&str] = &["kubernetes.io", "k8s.io", "karpenter.sh"];
/// The cluster autoscaler's taints, which have no domain.
const SYSTEM_KEYS: &[&str] = &[
    "ToBeDeletedByClusterAutoscaler",
    "DeletionCandidateOfClusterAutoscaler",
];

/// The `gpufleet_node_taint` resource.
pub struct NodeTaint;

/// What it needs of the API: `get` a named node (and every node it tainted
/// before), `list` the nodes a selector matches, `patch` their taints.
pub const PERMISSIONS: &[Permission] =
    &[Permission::cluster("", "nodes", &["get", "list", "patch"])];

/// Kubernetes identifies a taint by its key and effect.
type TaintId = (String, String);

/// A taint as configured and kept in state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct TaintSpec {
    key: String,
    value: Option<String>,
    effect: String,
}

impl TaintSpec {
    fn id(&self) -> TaintId {
        (self.key.clone(), self.effect.clone())
    }

    fn to_live(&self) -> Taint {
        Taint {
            key: self.key.clone(),
            value: self.value.clone().filter(|v| !v.is_empty()),
            effect: self.effect.clone(),
            time_added: None,
        }
    }

    fn from_live(taint: &Taint) -> Self {
        Self {
            key: taint.key.clone(),
            value: taint.value.clone().filter(|v| !v.is_empty()),
            effect: taint.effect.clone(),
        }
    }
}

fn live_id(taint: &Taint) -> TaintId {
    (taint.key.clone(), taint.effect.clone())
}

/// Kubernetes does not tell an empty value from none.
fn same_value(a: Option<&str>, b: Option<&str>) -> bool {
    a.unwrap_or_default() == b.unwrap_or_default()
}

fn taints_of(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|spec| spec.taints.as_deref())
        .unwrap_or_default()
}

/// Whether a taint belongs to Kubernetes, a cloud provider or an autoscaler
/// rather than to a workload.
fn is_system_taint(key: &str) -> bool {
    match key.rsplit_once('/') {
        Some((prefix, _)) => SYSTEM_DOMAINS.iter().any(|domain| {
            prefix == *domain
                || prefix
                    .strip_suffix(domain)
                    .is_some_and(|sub| sub.ends_with('.'))
        }),
        None => SYSTEM_KEYS.contains(&key),
    }
}

/// The resource's own state: the taints.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Taints {
    taints: Vec<TaintSpec>,
}

/// The resource's state.
pub type Model = Scoped<Taints>;

fn taint_ids(state: &Model) -> BTreeSet<TaintId> {
    state.own.taints.iter().map(TaintSpec::id).collect()
}

/// A node's taints after this resource's write: everyone else's kept as they
/// are and where they are, the `released` ones of ours removed, and `ours`
/// set, each replacing any entry with its key and effect (which it thereby
/// takes over).
fn merge_taints(current: &[Taint], released: &BTreeSet<TaintId>, ours: &[TaintSpec]) -> Vec<Taint> {
    let wanted: BTreeMap<TaintId, &TaintSpec> = ours.iter().map(|t| (t.id(), t)).collect();
    let mut placed = BTreeSet::new();
    let mut merged = Vec::with_capacity(current.len() + ours.len());
    for taint in current {
        let id = live_id(taint);
        if let Some(spec) = wanted.get(&id) {
            // An equal entry stays verbatim, keeping its timeAdded.
            merged.push(
                if same_value(taint.value.as_deref(), spec.value.as_deref()) {
                    taint.clone()
                } else {
                    spec.to_live()
                },
            );
            placed.insert(id);
        } else if !released.contains(&id) {
            merged.push(taint.clone());
        }
    }
    merged.extend(
        ours.iter()
            .filter(|t| !placed.contains(&t.id()))
            .map(TaintSpec::to_live),
    );
    merged
}

/// Of the taints we own on a node, those that go: the ones not wanted there now.
fn no_longer_wanted(owned: &BTreeSet<TaintId>, wanted: &BTreeSet<TaintId>) -> BTreeSet<TaintId> {
    owned.difference(wanted).cloned().collect()
}

/// What a read reports for one of our taints (see [`Seen::report`]).
fn observed(ours: &TaintSpec, seen: &Seen) -> TaintSpec {
    let id = ours.id();
    let held = |node: &Node| {
        taints_of(node)
            .iter()
            .find(|t| live_id(t) == id)
            .map(|t| t.value.clone().unwrap_or_default())
    };
    let wanted = ours.value.clone().unwrap_or_default();
    let reported = seen.report(&wanted, held, |node| held(node).is_some());
    TaintSpec {
        value: if reported == wanted {
            ours.value.clone()
        } else {
            Some(reported).filter(|v| !v.is_empty())
        },
        ..ours.clone()
    }
}

/// One node's taints with ours merged into what is there (see `merge_taints`).
pub struct Retaint {
    released: BTreeSet<TaintId>,
    ours: Vec<TaintSpec>,
}

impl Change<Node> for Retaint {
    fn describe(&self) -> String {
        "spec.taints".into()
    }

    fn patch(&self, live: &Node) -> Option<Edit> {
        let current = taints_of(live);
        let merged = merge_taints(current, &self.released, &self.ours);
        (merged != current).then(|| Edit::Merge {
            manager: FIELD_MANAGER.to_string(),
            patch: json!({ "spec": { "taints": merged } }),
        })
    }
}

#[async_trait]
impl NodeScoped for NodeTaint {
    type Own = Taints;
    type Change = Retaint;

    const NAME: &'static str = "node_taint";
    const WRITTEN: &'static str = "tainted";
    const TARGET: TargetDescriptions = TargetDescriptions {
        node_name: "The node to taint.",
        node_selector: "Labels: every node carrying all of them at apply time is tainted, and a node matching later shows up in the next plan.",
        nodes: "The nodes carrying this resource's taints: the named node, or the nodes the selector matched.",
    };

    fn schema(&self) -> ObjectSchema {
        ObjectSchema::new(
            "Taints on one node, or on every node whose labels match, kept next to the taints of kubelet, Karpenter and other tools: only this resource's taints are ever written or removed.",
            vec![
                Attr::nested("taints", Nesting::List, taint_attributes())
                    .required()
                    .validate(not_empty())
                    .describe("The taints this resource owns. One key may appear with several effects; each (key, effect) pair at most once."),
            ],
        )
    }

    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        check_unique(config, &["taints"], diagnostics);
    }

    /// The `label_selector` picks nodes, not taints.
    fn list_schema(&self) -> Option<ObjectSchema> {
        Some(list::schema(Vec::new()))
    }

    /// Every node the selector matches that carries workload taints: each
    /// is one resource of its node's taints.
    async fn listed_nodes(
        &self,
        cluster: &Cluster,
        config: &Value,
    ) -> Result<Vec<String>, Diagnostics> {
        let deadline = Deadline::of(None, Operation::Read);
        let nodes = node_target::nodes(&cluster.kubernetes)
            .await?
            .list(list::label_selector(config), deadline)
            .await?;
        Ok(nodes
            .iter()
            .filter(|node| taints_of(node).iter().any(|t| !is_system_taint(&t.key)))
            .map(|node| node_target::name_of(node).to_string())
            .collect())
    }

    /// Only a node we tainted loses taints, and only ours.
    fn change(&self, prior: Option<&Model>, state: &Model, node: &str, targeted: bool) -> Retaint {
        let ours = if targeted {
            state.own.taints.clone()
        } else {
            Vec::new()
        };
        let released = match prior {
            Some(prior) if prior.written().contains(node) => {
                let wanted = ours.iter().map(TaintSpec::id).collect();
                no_longer_wanted(&taint_ids(prior), &wanted)
            }
            _ => BTreeSet::new(),
        };
        Retaint { released, ours }
    }

    fn carries(&self, state: &Model, node: &Node) -> bool {
        let ids = taint_ids(state);
        taints_of(node).iter().any(|t| ids.contains(&live_id(t)))
    }

    async fn observed(
        &self,
        _cluster: &Cluster,
        prior: Model,
        seen: &Seen,
        importing: bool,
        _deadline: Deadline,
    ) -> Result<Option<Model>, Diagnostics> {
        let taints = if importing {
            seen.targets
                .iter()
                .flat_map(taints_of)
                .filter(|t| !is_system_taint(&t.key))
                .map(TaintSpec::from_live)
                .collect()
        } else {
            prior.own.taints.iter().map(|t| observed(t, seen)).collect()
        };
        Ok(Some(Model {
            own: Taints { taints },
            ..prior
        }))
    }

    /// The prior taints not yet released stay in state.
    fn unfinished(&self, prior: Model, state: &mut Model) {
        let kept = taint_ids(state);
        state.own.taints.extend(
            prior
                .own
                .taints
                .into_iter()
                .filter(|t| !kept.contains(&t.id())),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::LabelScheme;
    use crate::framework::Resource;
    use crate::framework::testkit::Harness;
    use crate::kit::node_scoped::NodeResource;
    use k8s_openapi::api::core::v1::NodeSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    fn taint_value(key: &str, value: Option<&str>, effect: &str) -> Value {
        Value::Object(
            [
                ("key", Value::string(key)),
                ("value", value.map_or(Value::Null, Value::string)),
                ("effect", Value::string(effect)),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        )
    }

    fn config(pairs: &[(&str, Value)]) -> Value {
        NodeResource(NodeTaint).schema().object(pairs)
    }

    fn on_node(taints: Vec<Value>) -> Value {
        config(&[
            ("node_name", Value::string("gpu-1")),
            ("taints", Value::List(taints)),
        ])
    }

    /// (path, detail) of every error, as Terraform would get them.
    fn errors(config: &Value) -> Vec<(String, String)> {
        Harness::new(NodeResource(NodeTaint)).validate(config)
    }

    fn paths(config: &Value) -> Vec<String> {
        errors(config).into_iter().map(|(p, _)| p).collect()
    }

    fn spec(key: &str, value: Option<&str>, effect: &str) -> TaintSpec {
        TaintSpec {
            key: key.into(),
            value: value.map(Into::into),
            effect: effect.into(),
        }
    }

    fn live(key: &str, value: Option<&str>, effect: &str) -> Taint {
        spec(key, value, effect).to_live()
    }

    fn node(name: &str, taints: Vec<Taint>) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: Some(taints),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn ids(pairs: &[(&str, &str)]) -> BTreeSet<TaintId> {
        pairs
            .iter()
            .map(|(k, e)| (k.to_string(), e.to_string()))
            .collect()
    }

    #[test]
    fn exactly_one_target() {
        let taints = Value::List(vec![taint_value("gpu", None, "NoSchedule")]);
        let selector = Value::Map([("pool".to_string(), Value::string("gpu"))].into());
        let both = config(&[
            ("node_name", Value::string("gpu-1")),
            ("node_selector", selector.clone()),
            ("taints", taints.clone()),
        ]);
        assert_eq!(paths(&both), ["node_selector"]);
        let neither = config(&[("taints", taints.clone())]);
        assert_eq!(paths(&neither), ["node_name"]);
        let by_selector = config(&[("node_selector", selector), ("taints", taints.clone())]);
        assert!(paths(&by_selector).is_empty());
        let everything = config(&[
            ("node_selector", Value::Map(BTreeMap::new())),
            ("taints", taints),
        ]);
        assert_eq!(paths(&everything), ["node_selector"]);
    }

    #[test]
    fn bad_taints_are_pointed_at() {
        let bad = on_node(vec![
            taint_value("", None, "NoSchedule"),
            taint_value("gpu", None, "Sometimes"),
            taint_value("bad key", None, "NoSchedule"),
            taint_value("gpu", Some("-x"), "NoExecute"),
            taint_value("team", None, "NoSchedule"),
            taint_value("team", Some("ml"), "NoSchedule"),
        ]);
        let found = errors(&bad);
        let found_paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            found_paths,
            [
                "taints[0].key",
                "taints[1].effect",
                "taints[2].key",
                "taints[3].value",
                "taints[5]",
            ],
            "{found:?}"
        );
        assert_eq!(found[0].1, "taints[0].key: the key must not be empty");
        assert!(found[1].1.contains("\"Sometimes\" is not one of"));
        assert!(found[4].1.starts_with("taints[5] repeats key \"team\""));
        assert!(found[4].1.contains("from taints[4]"));
        assert_eq!(paths(&on_node(vec![])), ["taints"]);
    }

    #[test]
    fn one_key_may_carry_several_effects() {
        let c = on_node(vec![
            taint_value("nvidia.com/gpu", Some("present"), "NoSchedule"),
            taint_value("nvidia.com/gpu", Some("present"), "NoExecute"),
            taint_value("nvidia.com/gpu", None, "PreferNoSchedule"),
        ]);
        assert!(errors(&c).is_empty(), "{:?}", errors(&c));
    }

    #[test]
    fn unknown_values_are_not_judged_at_validate_time() {
        let c = config(&[
            ("node_name", Value::UNKNOWN),
            ("node_selector", Value::UNKNOWN),
            (
                "taints",
                Value::List(vec![taint_value("gpu", None, "NoSchedule"), Value::UNKNOWN]),
            ),
        ]);
        assert!(errors(&c).is_empty(), "{:?}", errors(&c));
    }

    #[test]
    fn merge_keeps_foreign_taints_in_place() {
        let mut not_ready = live("node.kubernetes.io/not-ready", None, "NoExecute");
        not_ready.time_added = Some(Time(Default::default()));
        let current = vec![not_ready.clone(), live("team", Some("ml"), "NoSchedule")];
        let ours = [spec("gpu", Some("true"), "NoSchedule")];
        let merged = merge_taints(&current, &BTreeSet::new(), &ours);
        assert_eq!(
            merged,
            [
                not_ready,
                live("team", Some("ml"), "NoSchedule"),
                live("gpu", Some("true"), "NoSchedule"),
            ]
        );
        // Applying again changes nothing, so nothing is written.
        assert_eq!(merge_taints(&merged, &BTreeSet::new(), &ours), merged);
    }

    #[test]
    fn merge_tells_effects_of_one_key_apart() {
        let foreign = live("gpu", Some("busy"), "NoExecute");
        let ours = [spec("gpu", Some("true"), "NoSchedule")];
        let merged = merge_taints(std::slice::from_ref(&foreign), &BTreeSet::new(), &ours);
        assert_eq!(merged, [foreign.clone(), ours[0].to_live()]);
        // Releasing ours leaves the other effect's taint alone.
        let released = merge_taints(&merged, &ids(&[("gpu", "NoSchedule")]), &[]);
        assert_eq!(released, [foreign]);
    }

    #[test]
    fn merge_takes_over_an_entry_with_our_key_and_effect() {
        let current = vec![
            live("gpu", Some("old"), "NoSchedule"),
            live("other", None, "NoSchedule"),
        ];
        let merged = merge_taints(
            &current,
            &BTreeSet::new(),
            &[spec("gpu", None, "NoSchedule")],
        );
        assert_eq!(
            merged,
            [
                live("gpu", None, "NoSchedule"),
                live("other", None, "NoSchedule")
            ]
        );
    }

    #[test]
    fn removing_one_taint_from_configuration_removes_exactly_that_one() {
        let prior = Model {
            own: Taints {
                taints: vec![
                    spec("gpu", None, "NoSchedule"),
                    spec("gpu", None, "NoExecute"),
                ],
            },
            ..Default::default()
        };
        let planned = [spec("gpu", None, "NoSchedule")];
        let planned_ids: BTreeSet<TaintId> = planned.iter().map(TaintSpec::id).collect();
        let released = no_longer_wanted(&taint_ids(&prior), &planned_ids);
        let current = vec![
            live("gpu", None, "NoSchedule"),
            live("foreign", None, "NoExecute"),
            live("gpu", None, "NoExecute"),
            live("gpu", None, "PreferNoSchedule"),
        ];
        assert_eq!(
            merge_taints(&current, &released, &planned),
            [
                live("gpu", None, "NoSchedule"),
                live("foreign", None, "NoExecute"),
                live("gpu", None, "PreferNoSchedule"),
            ]
        );
    }

    #[test]
    fn read_reports_ours_as_applied_only_when_every_node_has_them() {
        let seen = |targets: &[Node], stale: &[Node]| Seen {
            targets: targets.to_vec(),
            stale: stale.to_vec(),
        };
        let ours = spec("gpu", Some("true"), "NoSchedule");
        let tainted = |name| node(name, vec![live("x", None, "NoSchedule"), ours.to_live()]);
        let (a, b) = (tainted("a"), tainted("b"));
        assert_eq!(observed(&ours, &seen(&[a.clone(), b.clone()], &[])), ours);
        assert_eq!(observed(&ours, &seen(&[], &[])), ours);

        let fresh = node("c", vec![]);
        assert_eq!(
            observed(&ours, &seen(&[a.clone(), fresh], &[]))
                .value
                .as_deref(),
            Some("(missing on node c)")
        );
        let stale = tainted("d");
        assert_eq!(
            observed(&ours, &seen(std::slice::from_ref(&a), &[stale]))
                .value
                .as_deref(),
            Some("(still on node d, which is no longer targeted)")
        );
        // Someone changed the value everywhere: that value shows, as drift.
        let changed = node("e", vec![live("gpu", Some("false"), "NoSchedule")]);
        assert_eq!(
            observed(&ours, &seen(std::slice::from_ref(&changed), &[]))
                .value
                .as_deref(),
            Some("false")
        );
        assert_eq!(
            observed(&ours, &seen(&[a, changed], &[])).value.as_deref(),
            Some("(differs between nodes)")
        );
        // Kubernetes drops an empty value.
        let empty = spec("gpu", Some(""), "NoSchedule");
        let bare = node("f", vec![live("gpu", None, "NoSchedule")]);
        assert_eq!(observed(&empty, &seen(&[bare], &[])), empty);
        // A value removed everywhere shows as none.
        let valueless = node("g", vec![live("gpu", None, "NoSchedule")]);
        assert_eq!(observed(&ours, &seen(&[valueless], &[])).value, None);
    }

    #[test]
    fn system_taints() {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.cloudprovider.kubernetes.io/uninitialized",
            "node-role.kubernetes.io/control-plane",
            "karpenter.sh/disrupted",
            "kubernetes.io/arch",
            "ToBeDeletedByClusterAutoscaler",
        ] {
            assert!(is_system_taint(key), "{key}");
        }
        for key in [
            "nvidia.com/gpu",
            "workload",
            "notkubernetes.io/x",
            "example.com/k8s.io",
        ] {
            assert!(!is_system_taint(key), "{key}");
        }
    }

    #[test]
    fn plan_shows_the_id_and_a_named_node() {
        let taints = Value::List(vec![taint_value("gpu", None, "NoSchedule")]);
        let planned = |c: &Value| {
            let cluster = Cluster::offline(LabelScheme::Cfke);
            let plan = Harness::new(NodeResource(NodeTaint)).plan(&cluster, &Value::Null, c);
            assert!(!plan.diagnostics.has_errors(), "{:?}", plan.diagnostics);
            plan.planned_state
        };
        let named = planned(&on_node(vec![taint_value("gpu", None, "NoSchedule")]));
        assert_eq!(named.attr("id"), &Value::string("gpu-1"));
        assert_eq!(
            named.attr("nodes"),
            &Value::Set(vec![Value::string("gpu-1")])
        );

        let labels = [
            ("team".to_string(), Value::string("ml")),
            ("pool".to_string(), Value::string("gpu")),
        ];
        let selected = planned(&config(&[
            ("node_selector", Value::Map(labels.into())),
            ("taints", taints.clone()),
        ]));
        assert_eq!(selected.attr("id"), &Value::string("pool=gpu,team=ml"));
        assert!(selected.attr("nodes").is_unknown());

        let unknown = planned(&config(&[
            ("node_name", Value::UNKNOWN),
            ("taints", taints),
        ]));
        assert!(unknown.attr("id").is_unknown());
    }

    /// The identity is the node: a selector's identity imports nothing.
    #[test]
    fn identities_name_a_node_and_refuse_a_selector() {
        let resource = NodeResource(NodeTaint);
        let imported = resource.import("gpu-1").unwrap();
        let identity = resource.identity_of(&imported);
        assert_eq!(resource.import_id(identity).unwrap(), "gpu-1");
        assert!(resource.import("pool=gpu").is_err());
        let selected = Model {
            target: node_target::NodeTarget::parse("pool=gpu").unwrap(),
            ..Default::default()
        };
        let refused = resource.import_id(resource.identity_of(&selected));
        let refused = format!("{:?}", refused.unwrap_err());
        assert!(refused.contains("Cannot import by selector"), "{refused}");
    }
}
