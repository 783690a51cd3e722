//! What every resource that writes to existing nodes shares: the
//! `node_name` / `node_selector` attributes and their rules, finding the
//! nodes a target names, the nodes written before and no longer targeted,
//! the read-modify-write of each node, and the drift markers a read reports.
//! [`super::node_scoped`] builds the resource on them.

use std::collections::{BTreeMap, BTreeSet};

use futures::stream::{FuturesUnordered, StreamExt};
use k8s_openapi::api::core::v1::Node;
use serde::{Deserialize, Serialize};

use crate::cluster::Kubernetes;
use crate::cluster::api::{Change, Kind, Objects};
use crate::cluster::names::{dns1123_subdomain, labels};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::framework::IdentityAttr;
use crate::framework::schema::Attr;
use crate::framework::validators::{ObjectValidator, exactly_one_of};
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};

/// How many node writes a resource has in flight at once. kube-apiserver
/// shares its 600 seats (`--max-requests-inflight` 400 plus
/// `--max-mutating-requests-inflight` 200, k8s.io/apiserver
/// pkg/server/config.go) among priority levels by their shares
/// (pkg/apis/flowcontrol/bootstrap/default.go; the arithmetic in
/// pkg/util/flowcontrol/apf_controller.go): a user's requests fall in
/// `global-default` (20 of 245 shares: 49 seats, 24 never lent to other
/// levels) and a service account's in `workload-low` (100 shares: 245
/// seats, 24 never lent). 16 stays within the seats either level keeps
/// however busy the others are, so one resource's writes neither wait in
/// the level's queues nor come back 429, and leave the level room for its
/// other clients.
pub const IN_FLIGHT: usize = 16;

/// Which nodes a resource writes to: one by name, or every node a label
/// selector matches at apply time. Flattened into the resource's model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeTarget {
    /// The node.
    pub node_name: Option<String>,
    /// Labels every targeted node carries.
    pub node_selector: Option<BTreeMap<String, String>>,
}

/// The two attributes, described as `node_name` and `node_selector` say.
pub fn attributes(node_name: &'static str, node_selector: &'static str) -> [Attr; 2] {
    [
        Attr::string("node_name")
            .optional()
            .validate(dns1123_subdomain())
            .describe(node_name),
        Attr::string_map("node_selector")
            .optional()
            .validate(labels())
            .describe(node_selector),
    ]
}

/// The target as a resource's identity.
#[derive(Default, Serialize, Deserialize)]
pub struct TargetIdentity {
    /// The node; null for a selector.
    pub node_name: Option<String>,
    /// The selector as text; null for a named node.
    pub node_selector: Option<String>,
}

/// The identity's two attributes, `node_name` described as `node_name` says.
pub fn identity_attributes(node_name: String) -> [IdentityAttr; 2] {
    [
        IdentityAttr::string("node_name").describe(node_name),
        IdentityAttr::string("node_selector")
            .describe("The selector as `key=value,...`; null for a named node."),
    ]
}

/// Exactly one of the two is set.
pub fn exactly_one() -> ObjectValidator {
    exactly_one_of(&["node_name", "node_selector"])
}

/// An empty selector would match every node, control plane included.
pub fn validate(config: &Value, diagnostics: &mut Diagnostics) {
    if config
        .attr("node_selector")
        .entries()
        .is_some_and(BTreeMap::is_empty)
    {
        diagnostics.error_at(
            AttributePath::attr("node_selector"),
            "Empty node selector",
            "An empty selector matches every node, control plane included: list at least one label.",
        );
    }
}

/// `pool=gpu,team=ml`: a label selector in its text form.
pub fn selector_text(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A node's name.
pub fn name_of(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

/// The nodes of the cluster, as node-scoped resources call them.
pub async fn nodes(kubernetes: &Kubernetes) -> Result<Objects<'_, Node>, GaveUp> {
    kubernetes.objects(Kind::NODE).await
}

impl NodeTarget {
    /// The node's name, or the selector as text: what identifies the target.
    pub fn id(&self) -> Option<String> {
        match (&self.node_name, &self.node_selector) {
            (Some(name), None) => Some(name.clone()),
            (None, Some(selector)) => Some(selector_text(selector)),
            _ => None,
        }
    }

    /// The selector as `key=value,...`; `None` for a named node.
    pub fn selector(&self) -> Option<String> {
        self.node_selector.as_ref().map(selector_text)
    }

    /// The target as an identity.
    pub fn identity(&self) -> TargetIdentity {
        TargetIdentity {
            node_name: self.node_name.clone(),
            node_selector: self.selector(),
        }
    }

    /// The nodes a named target writes to, known before the cluster is
    /// asked; `None` for a selector.
    pub fn known_nodes(&self) -> Option<BTreeSet<String>> {
        self.node_name.clone().map(|name| BTreeSet::from([name]))
    }

    /// A target read from an import ID: a node name, or `key=value,...`.
    pub fn parse(text: &str) -> Result<Self, String> {
        if !text.contains('=') {
            crate::cluster::names::check_dns1123_subdomain(text)?;
            return Ok(Self {
                node_name: Some(text.to_string()),
                node_selector: None,
            });
        }
        let selector = text
            .split(',')
            .map(|pair| {
                pair.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .ok_or_else(|| format!("{pair:?} is not key=value"))
            })
            .collect::<Result<BTreeMap<_, _>, _>>()?;
        Ok(Self {
            node_name: None,
            node_selector: Some(selector),
        })
    }

    /// The targeted nodes that exist now.
    pub async fn find(
        &self,
        nodes: &Objects<'_, Node>,
        deadline: Deadline,
    ) -> Result<Vec<Node>, GaveUp> {
        match (&self.node_name, &self.node_selector) {
            (Some(name), _) => Ok(nodes.named(name).get(deadline).await?.into_iter().collect()),
            (None, Some(selector)) => nodes.list(Some(&selector_text(selector)), deadline).await,
            (None, None) => Ok(Vec::new()),
        }
    }

    /// What a read sees: the targeted nodes and those of `written` (the
    /// nodes state says carry the resource's writes) that still exist and
    /// are no longer targeted. `None` when the named node is gone: state
    /// drops the resource, the next plan re-creates it, and apply then
    /// fails clearly if the node is still missing.
    pub async fn observe(
        &self,
        nodes: &Objects<'_, Node>,
        written: &BTreeSet<String>,
        deadline: Deadline,
    ) -> Result<Option<Seen>, GaveUp> {
        let targets = self.find(nodes, deadline).await?;
        if targets.is_empty() && self.node_name.is_some() {
            return Ok(None);
        }
        let targeted: BTreeSet<&str> = targets.iter().map(name_of).collect();
        let mut stale = Vec::new();
        for name in written.iter().filter(|n| !targeted.contains(n.as_str())) {
            if let Some(node) = nodes.named(name).get(deadline).await? {
                stale.push(node);
            }
        }
        Ok(Some(Seen { targets, stale }))
    }

    /// Writes `change(node, targeted)` to every targeted node and to every
    /// node of `written_before` (where `targeted` is false, to release what
    /// is there), one [`update`](crate::cluster::api::Named::update) per
    /// node, [`IN_FLIGHT`] at a time. Returns the targeted nodes written. A
    /// named node that does not exist is an error at `node_name`, saying it
    /// cannot be `done`.
    pub async fn rewrite<C: Change<Node> + Send>(
        &self,
        kubernetes: &Kubernetes,
        written_before: &BTreeSet<String>,
        change: impl Fn(&str, bool) -> C + Sync,
        done: &str,
        deadline: Deadline,
    ) -> Result<BTreeSet<String>, Interrupted> {
        self.write(kubernetes, written_before, true, change, done, deadline)
            .await
    }

    /// Releases what is ours on every node of `written`: `change(node,
    /// false)` on each, [`IN_FLIGHT`] at a time. The target only says which
    /// nodes to list, so that those it still selects need no GET.
    pub async fn release<C: Change<Node> + Send>(
        &self,
        kubernetes: &Kubernetes,
        written: &BTreeSet<String>,
        change: impl Fn(&str, bool) -> C + Sync,
        deadline: Deadline,
    ) -> Result<(), Diagnostics> {
        self.write(kubernetes, written, false, change, "released", deadline)
            .await
            .map(drop)
            .map_err(|interrupted| interrupted.diagnostics)
    }

    /// [`Self::rewrite`], or with `targeting` false [`Self::release`]. A
    /// selector's nodes are listed once, and each is written with the
    /// resourceVersion the list returned (read again only after a
    /// conflict); a named node, and a node written before that the
    /// selector no longer matches, are read before their write. After a
    /// failure no further write starts, those in flight finish, and the
    /// targeted nodes written (or that may have been: an answer lost) are
    /// returned with the first failure.
    ///
    /// Other writers make those conflicts even on nodes nobody else
    /// targets. kube-controller-manager's TTL controller sets
    /// `node.alpha.kubernetes.io/ttl` by cluster size (0 up to 100 nodes, 15
    /// up to 500) on a node whenever it sees that node added or updated
    /// (k8s.io/kubernetes pkg/controller/ttl/ttl_controller.go). So nodes
    /// created before the cluster passed a bound keep the old value until
    /// their next update, and when the controller relists (after an API
    /// server restart) it rewrites all of them at once: each one listed
    /// before and written after comes back 409 once.
    async fn write<C: Change<Node> + Send>(
        &self,
        kubernetes: &Kubernetes,
        written_before: &BTreeSet<String>,
        targeting: bool,
        change: impl Fn(&str, bool) -> C + Sync,
        done: &str,
        deadline: Deadline,
    ) -> Result<BTreeSet<String>, Interrupted> {
        let stop = |written: BTreeSet<String>, diagnostics: Diagnostics| Interrupted {
            written,
            diagnostics,
        };
        let nodes = nodes(kubernetes)
            .await
            .map_err(|gave_up| stop(BTreeSet::new(), gave_up.diagnostics))?;
        let mut listed = BTreeMap::new();
        if self.node_selector.is_some() && (targeting || !written_before.is_empty()) {
            let found = self
                .find(&nodes, deadline)
                .await
                .map_err(|gave_up| stop(BTreeSet::new(), gave_up.diagnostics))?;
            listed.extend(found.into_iter().map(|n| (name_of(&n).to_string(), n)));
        }
        let targets: BTreeSet<String> = match self.known_nodes() {
            _ if !targeting => BTreeSet::new(),
            Some(known) => known,
            None => listed.keys().cloned().collect(),
        };
        let mut pending = targets.union(written_before).map(|name| {
            let targeted = targets.contains(name);
            (name.clone(), targeted, listed.remove(name))
        });
        let write_one = |(name, targeted, listed): (String, bool, Option<Node>)| {
            let (nodes, change) = (&nodes, &change);
            async move {
                let node = nodes.named(&name);
                let change = change(&name, targeted);
                let before = match listed {
                    Some(listed) => node.update_listed(listed, &change, deadline).await,
                    None => node.update(&change, deadline).await,
                };
                (name, targeted, before.map(|before| before.is_some()))
            }
        };
        let mut in_flight = FuturesUnordered::new();
        let mut written = BTreeSet::new();
        let mut failed: Vec<(String, Diagnostics)> = Vec::new();
        loop {
            while failed.is_empty() && in_flight.len() < IN_FLIGHT {
                match pending.next() {
                    Some(next) => in_flight.push(write_one(next)),
                    None => break,
                }
            }
            let Some((name, targeted, outcome)) = in_flight.next().await else {
                break;
            };
            match outcome {
                Ok(true) if targeted => {
                    written.insert(name);
                }
                Ok(false) if targeted && self.node_name.is_some() => {
                    let missing = Diagnostic::error(
                        "Node not found",
                        format!(
                            "Node {name:?} does not exist on {}, so it cannot be {done}.",
                            kubernetes.describe()
                        ),
                    )
                    .at(AttributePath::attr("node_name"));
                    failed.push((name, missing.into()));
                }
                Ok(_) => {}
                Err(gave_up) => {
                    // The write may have landed before the policy gave up.
                    if targeted && gave_up.maybe_applied {
                        written.insert(name.clone());
                    }
                    failed.push((name, gave_up.diagnostics));
                }
            }
        }
        let mut failed = failed.into_iter();
        let Some((_, mut diagnostics)) = failed.next() else {
            return Ok(written);
        };
        let others: Vec<String> = failed.map(|(name, _)| format!("{name:?}")).collect();
        if let (Some(first), false) = (diagnostics.0.first_mut(), others.is_empty()) {
            first.detail += &format!(
                "\n\nThe writes in flight beside it failed too, on nodes {}; no other write was started.",
                others.join(", ")
            );
        }
        Err(stop(written, diagnostics))
    }
}

/// Where a [`NodeTarget::rewrite`] stopped: the targeted nodes it had
/// written (or may have), and why it stopped.
pub struct Interrupted {
    /// The nodes that may carry the resource's writes.
    pub written: BTreeSet<String>,
    /// Why it stopped.
    pub diagnostics: Diagnostics,
}

/// The nodes a read looked at.
pub struct Seen {
    /// The targeted nodes that exist.
    pub targets: Vec<Node>,
    /// Nodes written before, no longer targeted, still there.
    pub stale: Vec<Node>,
}

impl Seen {
    /// The names of the nodes, targeted or stale, for which `carries` holds.
    pub fn carrying(&self, carries: impl Fn(&Node) -> bool) -> BTreeSet<String> {
        self.targets
            .iter()
            .chain(&self.stale)
            .filter(|node| carries(node))
            .map(|node| name_of(node).to_string())
            .collect()
    }

    /// What a read reports for one thing the resource puts on its nodes (a
    /// taint, a label), given `held`, its value on a node (`None`: absent):
    /// `wanted` when every targeted node holds it so; the value they all
    /// hold instead, as drift; otherwise a marker that no configuration
    /// holds, so the plan shows it being put back: `(missing on node gpu-7)`,
    /// `(differs between nodes)`, or `(still on node gpu-2, which is no
    /// longer targeted)` for a stale node where `ours` still holds.
    pub fn report(
        &self,
        wanted: &str,
        held: impl Fn(&Node) -> Option<String>,
        ours: impl Fn(&Node) -> bool,
    ) -> String {
        let mut values = BTreeSet::new();
        for node in &self.targets {
            match held(node) {
                Some(value) => values.insert(value),
                None => return format!("(missing on node {})", name_of(node)),
            };
        }
        if let Some(node) = self.stale.iter().find(|node| ours(node)) {
            return format!(
                "(still on node {}, which is no longer targeted)",
                name_of(node)
            );
        }
        let mut values = values.into_iter();
        match (values.next(), values.next()) {
            (Some(live), None) => live,
            (Some(_), Some(_)) => "(differs between nodes)".into(),
            _ => wanted.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn node(name: &str, label: Option<&str>) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: label.map(|v| [("l".to_string(), v.to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn label(node: &Node) -> Option<String> {
        node.metadata.labels.as_ref()?.get("l").cloned()
    }

    #[test]
    fn a_read_reports_what_every_node_holds() {
        let seen = |targets: Vec<Node>, stale: Vec<Node>| Seen { targets, stale };
        let report = |s: &Seen| s.report("ours", label, |n| label(n).as_deref() == Some("ours"));
        let ours = |name| node(name, Some("ours"));
        assert_eq!(report(&seen(vec![ours("a"), ours("b")], vec![])), "ours");
        assert_eq!(report(&seen(vec![], vec![])), "ours");
        assert_eq!(
            report(&seen(vec![ours("a"), node("c", None)], vec![])),
            "(missing on node c)"
        );
        assert_eq!(
            report(&seen(vec![ours("a")], vec![ours("d")])),
            "(still on node d, which is no longer targeted)"
        );
        // A stale node holding someone else's value is not ours to report.
        assert_eq!(
            report(&seen(vec![ours("a")], vec![node("d", Some("x"))])),
            "ours"
        );
        // Someone changed the value everywhere: that value shows, as drift.
        assert_eq!(report(&seen(vec![node("e", Some("x"))], vec![])), "x");
        assert_eq!(
            report(&seen(vec![ours("a"), node("e", Some("x"))], vec![])),
            "(differs between nodes)"
        );
        let all = seen(vec![ours("a"), node("b", None)], vec![ours("d")]);
        assert_eq!(
            all.carrying(|n| label(n).is_some()),
            BTreeSet::from(["a".to_string(), "d".to_string()])
        );
    }

    #[test]
    fn a_target_is_a_node_or_a_selector() {
        let named = NodeTarget::parse("dgx-1").unwrap();
        assert_eq!(named.id().as_deref(), Some("dgx-1"));
        assert_eq!(
            named.known_nodes(),
            Some(BTreeSet::from(["dgx-1".to_string()]))
        );
        let selected = NodeTarget::parse("team=ml,pool=gpu").unwrap();
        assert_eq!(selected.id().as_deref(), Some("pool=gpu,team=ml"));
        assert_eq!(selected.known_nodes(), None);
        assert!(NodeTarget::parse("Bad_Node").is_err());
        assert!(NodeTarget::parse("pool=gpu,team").is_err());
        assert_eq!(NodeTarget::default().id(), None);
    }
}
