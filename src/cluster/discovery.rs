//! Which APIs the cluster serves, from one request: the aggregated
//! discovery document of `/apis` (Kubernetes 1.30+, `apidiscovery.k8s.io/v2`;
//! 1.27+ serve `v2beta1`, of the same shape: k8s.io/api,
//! apidiscovery/v2/types.go). A server that answers only with the older
//! per-group list gives no kinds, and nothing is concluded from it.
//!
//! Every authenticated user may read discovery (Kubernetes' default role
//! `system:discovery`), so it needs no permission of the provider's roles.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::api::Kind;
use super::client::Kubernetes;
use super::retry::{Call, Deadline, GaveUp};

/// The aggregated discovery document, preferred to the plain group list.
const ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// The API discovery's own, as calls name it.
const DISCOVERY: Kind = Kind::new("apidiscovery.k8s.io/v2", "APIGroupDiscoveryList", "apis");

/// A kind the cluster serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedKind {
    /// `karpenter.k8s.aws/v1`: the first version that serves it, in the
    /// server's order of preference.
    pub api_version: String,
    /// `ec2nodeclasses`.
    pub plural: String,
}

/// The kinds the cluster's API groups (not the core group) serve.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Served {
    /// By group, then kind: every version serving it, the server's
    /// preferred first.
    groups: BTreeMap<String, BTreeMap<String, Vec<ServedKind>>>,
}

impl Served {
    /// Whether `group` is served at all.
    pub fn has_group(&self, group: &str) -> bool {
        self.groups.contains_key(group)
    }

    /// `kind` of `group` in the server's preferred version, when served.
    pub fn kind(&self, group: &str, kind: &str) -> Option<&ServedKind> {
        self.groups.get(group)?.get(kind)?.first()
    }

    /// Whether `kind`'s API, in its version, is served.
    pub fn serves(&self, kind: Kind) -> bool {
        let group = kind.api_version.rsplit_once('/').map_or("", |(g, _)| g);
        self.groups
            .get(group)
            .and_then(|kinds| kinds.get(kind.kind))
            .is_some_and(|versions| versions.iter().any(|v| v.api_version == kind.api_version))
    }

    /// The served kinds of an aggregated discovery document; `None` for any
    /// other document (the plain group list of an older server).
    fn parse(document: serde_json::Value) -> Option<Self> {
        if document["kind"] != "APIGroupDiscoveryList" {
            return None;
        }
        let list: List = serde_json::from_value(document).ok()?;
        let mut served = Served::default();
        for group in list.items {
            let kinds = served
                .groups
                .entry(group.metadata.name.clone())
                .or_default();
            for version in group.versions {
                let api_version = format!("{}/{}", group.metadata.name, version.version);
                for resource in version.resources {
                    let Some(response_kind) = resource.response_kind else {
                        continue;
                    };
                    kinds
                        .entry(response_kind.kind)
                        .or_default()
                        .push(ServedKind {
                            api_version: api_version.clone(),
                            plural: resource.resource,
                        });
                }
            }
        }
        Some(served)
    }
}

#[derive(Deserialize)]
struct List {
    #[serde(default)]
    items: Vec<Group>,
}

#[derive(Deserialize)]
struct Group {
    metadata: Metadata,
    #[serde(default)]
    versions: Vec<Version>,
}

#[derive(Deserialize)]
struct Metadata {
    name: String,
}

#[derive(Deserialize)]
struct Version {
    version: String,
    #[serde(default)]
    resources: Vec<Resource>,
}

#[derive(Deserialize)]
struct Resource {
    resource: String,
    /// Absent for a resource served under no kind of its own.
    #[serde(rename = "responseKind")]
    response_kind: Option<ResponseKind>,
}

#[derive(Deserialize)]
struct ResponseKind {
    kind: String,
}

impl Kubernetes {
    /// What the cluster serves, asked once per provider process (one plan,
    /// or one apply) and kept once answered: `None` when the server has no
    /// aggregated discovery (Kubernetes 1.26 or older), `Err` when it could
    /// not be asked (the cluster is not reachable), which the next caller
    /// asks again.
    pub async fn served(&self, deadline: Deadline) -> Result<Option<&Served>, GaveUp> {
        self.served
            .get_or_try_init(|| self.discover(deadline))
            .await
            .map(Option::as_ref)
    }

    async fn discover(&self, deadline: Deadline) -> Result<Option<Served>, GaveUp> {
        let client = self.client().await?;
        let call = Call {
            action: "find which APIs the cluster serves".into(),
            request: "GET /apis (aggregated discovery)".into(),
            api: DISCOVERY,
        };
        let document: serde_json::Value = self
            .call(deadline, &call, || {
                let request = http::Request::get("/apis")
                    .header(http::header::ACCEPT, ACCEPT)
                    .body(Vec::new())
                    .expect("a GET of /apis is a request");
                client.request(request)
            })
            .await?;
        Ok(Served::parse(document))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_come_from_the_aggregated_document_only() {
        let document = json!({
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "items": [{
                "metadata": {"name": "karpenter.sh"},
                "versions": [
                    {"version": "v1", "resources": [
                        {"resource": "nodepools", "responseKind": {"group": "", "version": "", "kind": "NodePool"}, "scope": "Cluster"}
                    ]},
                    {"version": "v1alpha1", "resources": [
                        {"resource": "nodeoverlays", "responseKind": {"group": "", "version": "", "kind": "NodeOverlay"}, "scope": "Cluster"}
                    ]}
                ]
            }]
        });
        let served = Served::parse(document).unwrap();
        assert!(served.serves(Kind::new("karpenter.sh/v1", "NodePool", "nodepools")));
        assert!(served.serves(Kind::new(
            "karpenter.sh/v1alpha1",
            "NodeOverlay",
            "nodeoverlays"
        )));
        assert!(!served.serves(Kind::new("karpenter.sh/v1beta1", "NodePool", "nodepools")));
        assert!(!served.serves(Kind::new(
            "nvidia.com/v1",
            "ClusterPolicy",
            "clusterpolicies"
        )));
        assert_eq!(
            served.kind("karpenter.sh", "NodeOverlay"),
            Some(&ServedKind {
                api_version: "karpenter.sh/v1alpha1".into(),
                plural: "nodeoverlays".into()
            })
        );
        assert!(served.has_group("karpenter.sh") && !served.has_group("karpenter.k8s.aws"));
        // An older server's plain group list says nothing of kinds.
        assert_eq!(
            Served::parse(json!({"kind": "APIGroupList", "groups": []})),
            None
        );
    }
}
