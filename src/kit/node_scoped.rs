//! A resource that writes to existing nodes, written once: its target
//! (`node_name` or `node_selector`, see [`node_target`]), the nodes carrying
//! its writes (`nodes`), reads that drop a named node gone and report the
//! nodes no longer targeted, writes that release those nodes, and state kept
//! after a write that stopped part-way, so nothing written is lost from it.
//!
//! A new such resource supplies its model ([`NodeScoped::Own`]), its change
//! to one node ([`NodeScoped::change`]) and its schema; [`NodeResource`]
//! does the rest, `id`, identity and import included. Objects its node
//! writes point at (a ConfigMap key) are its companions: written before the
//! nodes, removed after them.

use std::collections::BTreeSet;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use serde::{Deserialize, Serialize};

use super::node_target::{self, Interrupted, NodeTarget, Seen, TargetIdentity};
use super::{Cluster, list};
use crate::cluster::api::Change;
use crate::cluster::names::{check_dns1123_subdomain, check_import_name};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::timeouts::{Operation, Timeouts};
use crate::framework::{
    Failed, Identity, IdentityAttr, Listing, Model, PlanChange, Private, Resource, Stored, Warnings,
};
use crate::kit::timeouts_attribute;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};

/// The state of a node-scoped resource: what every one has, and its own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Scoped<T> {
    /// Derived by [`NodeScoped::id`].
    pub id: Option<String>,
    /// Which nodes it writes to.
    #[serde(flatten)]
    pub target: NodeTarget,
    /// The nodes carrying its writes.
    pub nodes: Option<BTreeSet<String>>,
    /// The `timeouts` attribute.
    pub timeouts: Option<Timeouts>,
    /// Its own attributes.
    #[serde(flatten)]
    pub own: T,
}

impl<T> Scoped<T> {
    /// The nodes state says carry the resource's writes.
    pub fn written(&self) -> BTreeSet<String> {
        self.nodes.clone().unwrap_or_default()
    }

    fn deadline(&self, operation: Operation) -> Deadline {
        Deadline::of(self.timeouts.as_ref(), operation)
    }
}

/// What a node-scoped resource's `node_name`, `node_selector` and `nodes`
/// say, for the schema the kit completes.
pub struct TargetDescriptions {
    /// `node_name`: the node it writes to.
    pub node_name: &'static str,
    /// `node_selector`: the labels that pick its nodes.
    pub node_selector: &'static str,
    /// `nodes`: the nodes carrying its writes.
    pub nodes: &'static str,
}

/// A name of its own beside the target, as `gpufleet_node_sharing` names the
/// ConfigMap key its nodes select. It is then the resource's `id`, comes
/// first in its identity and its import ID (`NAME:NODE` or
/// `NAME:key=value,...`), and a selector imports too: what the name finds
/// says which writes are the resource's. Without one, the target alone is
/// the `id` and the identity, and only a named node imports: a selector's
/// nodes may each carry writes of others (taints of other tools).
pub struct OwnName<Own> {
    /// The name `own` carries.
    pub of: fn(&Own) -> &str,
    /// `own` with nothing set but its name, where an import starts.
    pub named: fn(String) -> Own,
}

/// A node-scoped resource's identity: its name if it has one
/// ([`NodeScoped::NAMED`]), then its target.
#[derive(Default, Serialize, Deserialize)]
pub struct NodeIdentity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(flatten)]
    target: TargetIdentity,
}

/// What a write left of a resource's companions.
pub enum Companions {
    /// The resource has none.
    None,
    /// Written; `changed` when that changes what the nodes do.
    Written {
        /// Whether the nodes must take the change up.
        changed: bool,
    },
}

/// What a resource that writes to existing nodes puts on them.
#[async_trait]
pub trait NodeScoped: Send + Sync + 'static {
    /// Its attributes besides `id`, the target, `nodes` and `timeouts`.
    type Own: Model;
    /// Its change to one node.
    type Change: Change<Node> + Send;

    /// Type name without the provider prefix, e.g. `node_taint`.
    const NAME: &'static str;
    /// What a targeted node is once written, for the error when a named
    /// node is missing: `tainted`.
    const WRITTEN: &'static str;

    /// Its target's attributes and `nodes`, described.
    const TARGET: TargetDescriptions;
    /// Its own `name` attribute, if it has one beside the target.
    const NAMED: Option<OwnName<Self::Own>> = None;

    /// The schema of its own attributes; `id`, the target's attributes (see
    /// [`node_target::attributes`]), `nodes`, `timeouts` and the rule that
    /// exactly one target is set are added for every such resource.
    fn schema(&self) -> ObjectSchema;
    /// Checks across attributes beyond the schema's validators and the
    /// target's rules.
    fn validate(&self, _config: &Value, _diagnostics: &mut Diagnostics) {}
    /// Plan-time checks that need provider settings or the cluster as it is
    /// (see [`Resource::modify_plan`]).
    async fn modify_plan(
        &self,
        _cluster: &Cluster,
        _change: &mut PlanChange<'_>,
        _diagnostics: &mut Diagnostics,
    ) {
    }
    /// Fills its own attributes derived from configuration (`nodes` is
    /// derived for every such resource).
    fn derive(&self, _state: &mut Scoped<Self::Own>) {}

    /// The change to node `node` that writes `state` over what `prior` put
    /// there (`None` on create). `targeted` is false for a node to release:
    /// one `prior` wrote that `state` no longer targets, and every node on
    /// delete, where `state` is `prior`.
    fn change(
        &self,
        prior: Option<&Scoped<Self::Own>>,
        state: &Scoped<Self::Own>,
        node: &str,
        targeted: bool,
    ) -> Self::Change;
    /// Whether `node` carries the writes `state` describes: a read's
    /// `nodes` are those, among the targeted and the stale nodes.
    fn carries(&self, state: &Scoped<Self::Own>, node: &Node) -> bool;
    /// What a read reports of its own attributes: `prior` as the nodes
    /// `seen` show it (see [`Seen::report`]) and its companions; when
    /// `importing`, also the configuration they imply. `None`: gone.
    async fn observed(
        &self,
        cluster: &Cluster,
        prior: Scoped<Self::Own>,
        seen: &Seen,
        importing: bool,
        deadline: Deadline,
    ) -> Result<Option<Scoped<Self::Own>>, Diagnostics>;
    /// After an update stopped part-way, what of `prior` may still be on
    /// the nodes, kept in `state` (the desired state) so the next plan
    /// shows it.
    fn unfinished(&self, _prior: Scoped<Self::Own>, _state: &mut Scoped<Self::Own>) {}

    /// Writes the companions `state` asks for, before its nodes.
    async fn write_companions(
        &self,
        _cluster: &Cluster,
        _state: &mut Scoped<Self::Own>,
        _deadline: Deadline,
    ) -> Result<Companions, GaveUp> {
        Ok(Companions::None)
    }
    /// Makes the nodes `state` wrote take up changed companions.
    async fn companions_changed(
        &self,
        _cluster: &Cluster,
        _state: &Scoped<Self::Own>,
        _deadline: Deadline,
    ) -> Result<(), GaveUp> {
        Ok(())
    }
    /// The configuration of its `list` block (`terraform query`); `None`
    /// when it cannot be listed.
    fn list_schema(&self) -> Option<ObjectSchema> {
        None
    }
    /// The nodes a `list` block's `config` names, each listed as an import
    /// of it takes it.
    async fn listed_nodes(
        &self,
        _cluster: &Cluster,
        _config: &Value,
    ) -> Result<Vec<String>, Diagnostics> {
        Ok(Vec::new())
    }

    /// Removes the companions `prior` wrote; runs after its nodes are
    /// released.
    async fn delete_companions(
        &self,
        _cluster: &Cluster,
        _prior: &Scoped<Self::Own>,
        _deadline: Deadline,
    ) -> Result<(), GaveUp> {
        Ok(())
    }
}

/// The resource of a [`NodeScoped`].
pub struct NodeResource<T>(pub T);

impl<T: NodeScoped> NodeResource<T> {
    /// What `id` and the identity are made of.
    const IDENTIFIED_BY: &'static [&'static str] = match T::NAMED {
        Some(_) => &["name", "node_name", "node_selector"],
        None => &["node_name", "node_selector"],
    };

    /// Writes `desired` over what `prior` wrote: its companions, then one
    /// read-modify-write per node, targeted or written before. On a failure
    /// part-way, state keeps everything that may now carry our writes: the
    /// nodes written and those written before, with what `prior` put there
    /// (see [`NodeScoped::unfinished`]), so the next plan shows what is left.
    async fn write(
        &self,
        cluster: &Cluster,
        prior: Option<Scoped<T::Own>>,
        mut desired: Scoped<T::Own>,
        operation: Operation,
    ) -> Result<Stored<Scoped<T::Own>>, Failed<Scoped<T::Own>>> {
        let deadline = desired.deadline(operation);
        let companions = self
            .0
            .write_companions(cluster, &mut desired, deadline)
            .await?;
        let before = prior.as_ref().map(Scoped::written).unwrap_or_default();
        let change =
            |node: &str, targeted: bool| self.0.change(prior.as_ref(), &desired, node, targeted);
        let rewritten = desired
            .target
            .rewrite(&cluster.kubernetes, &before, change, T::WRITTEN, deadline)
            .await;
        match rewritten {
            Ok(written) => {
                desired.nodes = Some(written);
                if let Companions::Written { changed: true } = companions {
                    let settled = self.0.companions_changed(cluster, &desired, deadline).await;
                    if let Err(gave_up) = settled {
                        return Err(Failed::after_write(desired, gave_up.diagnostics));
                    }
                }
                Ok(desired.into())
            }
            Err(Interrupted {
                mut written,
                diagnostics,
            }) => {
                let nothing_written = written.is_empty() && matches!(companions, Companions::None);
                if prior.is_none() && nothing_written {
                    return Err(diagnostics.into());
                }
                written.extend(before);
                desired.nodes = Some(written);
                if let Some(prior) = prior {
                    self.0.unfinished(prior, &mut desired);
                }
                Err(Failed::after_write(desired, diagnostics))
            }
        }
    }
}

#[async_trait]
impl<T: NodeScoped> Resource<Cluster> for NodeResource<T> {
    type Model = Scoped<T::Own>;
    type IdentityModel = NodeIdentity;

    fn name(&self) -> &'static str {
        T::NAME
    }

    fn schema(&self) -> ObjectSchema {
        let mut schema = self.0.schema().validate(node_target::exactly_one());
        let id = match T::NAMED {
            Some(_) => Attr::string("id")
                .derived_from(&Self::IDENTIFIED_BY[..1])
                .describe("The name."),
            None => Attr::string("id")
                .derived_from(Self::IDENTIFIED_BY)
                .describe("The node name, or the selector as `key=value,...`."),
        };
        schema.attrs.insert(0, id);
        schema.attrs.extend(node_target::attributes(
            T::TARGET.node_name,
            T::TARGET.node_selector,
        ));
        schema.attrs.extend([
            Attr::string_set("nodes")
                .derived_from(&["node_name"])
                .describe(T::TARGET.nodes),
            timeouts_attribute(),
        ]);
        schema
    }

    /// Mutable: the target changes in place (what the resource writes moves
    /// to the new nodes).
    fn identity(&self) -> Identity {
        let mut node_name = format!(
            "{} Null when a selector picks the nodes.",
            T::TARGET.node_name
        );
        if T::NAMED.is_none() {
            node_name.push_str(" Import by identity needs it.");
        }
        let mut attrs = Vec::new();
        if T::NAMED.is_some() {
            attrs.push(
                IdentityAttr::string("name")
                    .required_for_import()
                    .describe("The name."),
            );
        }
        attrs.extend(node_target::identity_attributes(node_name));
        Identity::new(Self::IDENTIFIED_BY, attrs).mutable()
    }

    fn identity_of(&self, state: &Self::Model) -> NodeIdentity {
        NodeIdentity {
            name: T::NAMED.map(|named| (named.of)(&state.own).to_string()),
            target: state.target.identity(),
        }
    }

    /// `NAME:TARGET` for a named resource, else the node (see [`OwnName`]).
    fn import_id(&self, identity: NodeIdentity) -> Result<String, Diagnostics> {
        let NodeIdentity { name, target } = identity;
        match T::NAMED {
            Some(_) => {
                let target = target.node_name.or(target.node_selector).ok_or_else(|| {
                    Diagnostics::from(Diagnostic::error(
                        "Missing identity attribute",
                        "An import by identity needs `node_name` or `node_selector`.",
                    ))
                })?;
                Ok(format!("{}:{target}", name.unwrap_or_default()))
            }
            None => target.node_name.ok_or_else(|| {
                Diagnostic::error(
                    "Cannot import by selector",
                    "Import one node, by its `node_name`: what a selector's nodes carry cannot be told apart from what others wrote there.",
                )
                .at(AttributePath::attr("node_name"))
                .into()
            }),
        }
    }

    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        node_target::validate(config, diagnostics);
        self.0.validate(config, diagnostics);
    }

    async fn modify_plan(
        &self,
        cluster: &Cluster,
        change: &mut PlanChange<'_>,
        diagnostics: &mut Diagnostics,
    ) {
        self.0.modify_plan(cluster, change, diagnostics).await;
    }

    fn list_schema(&self) -> Option<ObjectSchema> {
        self.0.list_schema()
    }

    async fn list(
        &self,
        cluster: &Cluster,
        config: &Value,
    ) -> Result<Listing<Self::Model>, Diagnostics> {
        let nodes = self.0.listed_nodes(cluster, config).await?;
        list::by_import(self, cluster, nodes, |state| {
            state.nodes.as_ref().is_some_and(|n| !n.is_empty())
        })
        .await
    }

    /// A named node is the one node written; a selector's nodes are known
    /// only once the cluster is asked.
    fn derive(&self, state: &mut Self::Model) {
        state.id = match T::NAMED {
            Some(named) => Some((named.of)(&state.own).to_string()),
            None => state.target.id(),
        };
        self.0.derive(state);
        if let Some(known) = state.target.known_nodes() {
            state.nodes = Some(known);
        }
    }

    async fn create(
        &self,
        cluster: &Cluster,
        planned: Self::Model,
    ) -> Result<Stored<Self::Model>, Failed<Self::Model>> {
        self.write(cluster, None, planned, Operation::Create).await
    }

    async fn read(
        &self,
        cluster: &Cluster,
        prior: Self::Model,
        private: &Private,
    ) -> Result<Option<Stored<Self::Model>>, Diagnostics> {
        let nodes = node_target::nodes(&cluster.kubernetes).await?;
        let deadline = prior.deadline(Operation::Read);
        let Some(seen) = prior
            .target
            .observe(&nodes, &prior.written(), deadline)
            .await?
        else {
            return Ok(None);
        };
        let observed = self
            .0
            .observed(cluster, prior, &seen, private.importing, deadline)
            .await?;
        let Some(mut state) = observed else {
            return Ok(None);
        };
        state.nodes = Some(seen.carrying(|node| self.0.carries(&state, node)));
        Ok(Some(state.into()))
    }

    async fn update(
        &self,
        cluster: &Cluster,
        prior: Self::Model,
        planned: Self::Model,
        _private: &Private,
    ) -> Result<Stored<Self::Model>, Failed<Self::Model>> {
        self.write(cluster, Some(prior), planned, Operation::Update)
            .await
    }

    /// Releases what is ours on every node `prior` wrote, then the
    /// companions.
    async fn delete(
        &self,
        cluster: &Cluster,
        prior: Self::Model,
        _private: &Private,
    ) -> Result<Warnings, Diagnostics> {
        let deadline = prior.deadline(Operation::Delete);
        let release = |node: &str, _| self.0.change(Some(&prior), &prior, node, false);
        prior
            .target
            .release(&cluster.kubernetes, &prior.written(), release, deadline)
            .await?;
        self.0.delete_companions(cluster, &prior, deadline).await?;
        Ok(Warnings::default())
    }

    /// See [`OwnName`] for what an import ID holds.
    fn import(&self, id: &str) -> Result<Self::Model, Diagnostics> {
        let Some(named) = T::NAMED else {
            check_import_name(id, "node name")?;
            return Ok(Scoped {
                target: NodeTarget {
                    node_name: Some(id.to_string()),
                    node_selector: None,
                },
                ..Default::default()
            });
        };
        let invalid = |why: String| -> Diagnostics {
            Diagnostic::error(
                "Invalid import ID",
                format!("Import by `NAME:NODE` or `NAME:key=value,...` (the resource's name, then its node or selector): {why}"),
            )
            .into()
        };
        let (name, target) = id
            .split_once(':')
            .ok_or_else(|| invalid(format!("{id:?} has no `:`")))?;
        check_dns1123_subdomain(name).map_err(invalid)?;
        Ok(Scoped {
            target: NodeTarget::parse(target).map_err(invalid)?,
            own: (named.named)(name.to_string()),
            ..Default::default()
        })
    }
}
