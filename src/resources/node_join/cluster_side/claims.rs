//! Objects several tokens share: each token claims one with an annotation
//! of its own, applied by a field manager of its own together with the
//! object's content; the object is deleted with the last claim, and only
//! if gpufleet created it (see the parent module).

use std::collections::BTreeMap;
use std::marker::PhantomData;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use serde_json::json;

use super::PUBLIC;
use crate::cluster::api::{Change, Edit, Kind, Object, Objects};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::kit::Cluster;
use crate::kit::object::AppliedObject;
use crate::protocol::{Diagnostic, Diagnostics};
use crate::resources::node_join::{self, Model};

/// k8s.io/cluster-bootstrap token/api `JWSSignatureKeyPrefix`.
const JWS_PREFIX: &str = "jws-kubeconfig-";

const CREATED_BY: &str = "gpufleet/created-by";
const CREATOR: &str = "gpufleet_node_join";
const CLAIM_PREFIX: &str = "gpufleet/node-join.";

const CLUSTER_ROLE_BINDING: Kind = Kind::new(
    "rbac.authorization.k8s.io/v1",
    "ClusterRoleBinding",
    "clusterrolebindings",
);
const ROLE: Kind = Kind::new("rbac.authorization.k8s.io/v1", "Role", "roles");
const ROLE_BINDING: Kind = Kind::new(
    "rbac.authorization.k8s.io/v1",
    "RoleBinding",
    "rolebindings",
);

/// An object tokens share.
#[async_trait]
pub(super) trait Shared: Object {
    const KIND: Kind;
    const NAMESPACE: Option<&'static str>;

    /// The objects of its kind, where node bootstrap keeps them.
    async fn objects(cluster: &Cluster) -> Result<Objects<'_, Self>, GaveUp>;

    /// Whether someone besides the tokens that claim it still relies on it.
    fn relied_on_without(&self, _token_id: &str) -> bool {
        false
    }

    /// Whether the live object has the content `wanted` gives it (only
    /// the fields gpufleet writes).
    fn has_content_of(&self, wanted: &Self) -> bool;
}

#[async_trait]
impl Shared for ClusterRoleBinding {
    const KIND: Kind = CLUSTER_ROLE_BINDING;
    const NAMESPACE: Option<&'static str> = None;

    async fn objects(cluster: &Cluster) -> Result<Objects<'_, Self>, GaveUp> {
        cluster.kubernetes.objects(Self::KIND).await
    }

    fn has_content_of(&self, wanted: &Self) -> bool {
        self.role_ref == wanted.role_ref && self.subjects == wanted.subjects
    }
}

#[async_trait]
impl Shared for Role {
    const KIND: Kind = ROLE;
    const NAMESPACE: Option<&'static str> = Some(PUBLIC);

    async fn objects(cluster: &Cluster) -> Result<Objects<'_, Self>, GaveUp> {
        cluster.kubernetes.namespaced(Self::KIND, PUBLIC).await
    }

    fn has_content_of(&self, wanted: &Self) -> bool {
        self.rules == wanted.rules
    }
}

#[async_trait]
impl Shared for RoleBinding {
    const KIND: Kind = ROLE_BINDING;
    const NAMESPACE: Option<&'static str> = Some(PUBLIC);

    async fn objects(cluster: &Cluster) -> Result<Objects<'_, Self>, GaveUp> {
        cluster.kubernetes.namespaced(Self::KIND, PUBLIC).await
    }

    fn has_content_of(&self, wanted: &Self) -> bool {
        self.role_ref == wanted.role_ref && self.subjects == wanted.subjects
    }
}

#[async_trait]
impl Shared for ConfigMap {
    const KIND: Kind = Kind::CONFIG_MAP;
    const NAMESPACE: Option<&'static str> = Some(PUBLIC);

    async fn objects(cluster: &Cluster) -> Result<Objects<'_, Self>, GaveUp> {
        cluster.kubernetes.namespaced(Self::KIND, PUBLIC).await
    }

    /// Other tokens' signatures (the bootstrapsigner's, for every signing
    /// token) mean servers still discover the cluster through it.
    fn relied_on_without(&self, token_id: &str) -> bool {
        let ours = format!("{JWS_PREFIX}{token_id}");
        self.data
            .iter()
            .flatten()
            .any(|(k, _)| k.starts_with(JWS_PREFIX) && *k != ours)
    }

    /// The kubeconfig; the bootstrapsigner's signatures beside it are not
    /// gpufleet's.
    fn has_content_of(&self, wanted: &Self) -> bool {
        let kubeconfig = |map: &Self| map.data.as_ref().and_then(|d| d.get("kubeconfig")).cloned();
        kubeconfig(self) == kubeconfig(wanted)
    }
}

fn annotations<K: Object>(live: &K) -> BTreeMap<String, String> {
    live.meta().annotations.clone().unwrap_or_default()
}

fn created_by_us<K: Object>(live: &K) -> bool {
    annotations(live).get(CREATED_BY).map(String::as_str) == Some(CREATOR)
}

fn claims<K: Object>(live: &K) -> Vec<String> {
    annotations(live)
        .into_keys()
        .filter(|k| k.starts_with(CLAIM_PREFIX))
        .collect()
}

/// One token's share of the objects: its claim annotation and the field
/// manager that applies it.
pub(super) struct Share {
    token_id: String,
    manager: String,
    claim: String,
}

impl Share {
    pub(super) fn of(model: &Model) -> Self {
        let token_id = model.token_id.clone().unwrap_or_default();
        Self {
            manager: format!("{}-node-join-{token_id}", crate::cluster::FIELD_MANAGER),
            claim: format!("{CLAIM_PREFIX}{token_id}"),
            token_id,
        }
    }

    /// Takes this token's share of `wanted`: on the object gpufleet created
    /// (creating it first when absent), the content and the claim, applied
    /// as this token's manager by the one read-modify-write, so an object
    /// of that name someone else made is left alone even when it appears
    /// between the read and the write. The create writes no claim: each
    /// claim is owned by its token's manager alone, which drops it.
    pub(super) async fn ensure<K: Shared>(
        &self,
        cluster: &Cluster,
        mut wanted: K,
        deadline: Deadline,
    ) -> Result<(), GaveUp> {
        let objects = K::objects(cluster).await?;
        let name = wanted.meta().name.clone().unwrap_or_default();
        let named = objects.named(&name);
        let annotations = wanted.meta_mut().annotations.get_or_insert_default();
        annotations.insert(CREATED_BY.into(), CREATOR.into());
        let unclaimed = serde_json::to_value(&wanted).map_err(|e| {
            Diagnostics::from(Diagnostic::error(
                "Cannot encode a bootstrap object",
                e.to_string(),
            ))
        })?;
        let mut claimed = unclaimed;
        claimed["metadata"]["annotations"][&self.claim] = json!("");
        let claim = Claim::<K> {
            share: self,
            fields: claimed,
            kind: PhantomData,
        };
        if named.update(&claim, deadline).await?.is_none() {
            named.create_if_absent(&wanted, CREATOR, deadline).await?;
            named.update(&claim, deadline).await?;
        }
        Ok(())
    }

    /// Whether `wanted` is in place (see [`super::in_place`]).
    pub(super) async fn in_place<K: Shared>(
        &self,
        cluster: &Cluster,
        wanted: K,
        deadline: Deadline,
    ) -> Result<bool, GaveUp> {
        let objects = K::objects(cluster).await?;
        let name = wanted.meta().name.clone().unwrap_or_default();
        Ok(match objects.named(&name).get(deadline).await? {
            None => false,
            Some(live) => {
                !created_by_us(&live)
                    || (claims(&live).contains(&self.claim) && live.has_content_of(&wanted))
            }
        })
    }

    /// Releases the claim on object `name`: dropped while other tokens
    /// hold claims, the object deleted with the last one unless someone
    /// else still relies on it.
    pub(super) async fn release<K: Shared>(
        &self,
        cluster: &Cluster,
        name: &str,
        deadline: Deadline,
    ) -> Result<(), GaveUp> {
        let objects = K::objects(cluster).await?;
        let named = objects.named(name);
        let Some(live) = named.get(deadline).await? else {
            return Ok(());
        };
        // A token that expired was deleted by the token cleaner, not by
        // Terraform: its claim counts for nothing.
        let mut dead = Vec::new();
        for claim in claims(&live) {
            let id = claim.strip_prefix(CLAIM_PREFIX).unwrap_or_default();
            if claim != self.claim && !token_exists(cluster, id, deadline).await? {
                dead.push(claim);
            }
        }
        let unclaim = Unclaim::<K> {
            share: self,
            dead: &dead,
            kind: PhantomData,
        };
        let unused = |live: &K| {
            created_by_us(live)
                && unclaim.others(live).is_empty()
                && !live.relied_on_without(&self.token_id)
        };
        named.release(&unclaim, unused, deadline).await?;
        Ok(())
    }
}

/// Whether token `id`'s Secret exists.
async fn token_exists(cluster: &Cluster, id: &str, deadline: Deadline) -> Result<bool, GaveUp> {
    let secrets = cluster
        .kubernetes
        .namespaced::<Secret>(node_join::BootstrapToken::KIND, node_join::NAMESPACE)
        .await?;
    let name = format!("{}{id}", node_join::SECRET_PREFIX);
    Ok(secrets.named(&name).get(deadline).await?.is_some())
}

/// Taking one token's share of an object gpufleet created: its content
/// and the token's claim, applied as the token's manager.
struct Claim<'a, K> {
    share: &'a Share,
    /// The object as the token wants it, claim included.
    fields: serde_json::Value,
    kind: PhantomData<K>,
}

impl<K: Shared> Change<K> for Claim<'_, K> {
    fn describe(&self) -> String {
        format!(
            "the object and metadata.annotations[{:?}]",
            self.share.claim
        )
    }

    fn patch(&self, live: &K) -> Option<Edit> {
        created_by_us(live).then(|| Edit::Apply {
            manager: self.share.manager.clone(),
            fields: self.fields.clone(),
        })
    }

    fn landed(&self, live: &K) -> bool {
        !created_by_us(live) || claims(live).contains(&self.share.claim)
    }
}

/// Dropping one token's share while other tokens hold claims: its manager
/// applies nothing, so it owns nothing (its claim goes), and the content
/// stays, owned by the other claimers, who applied the same. The last
/// claim is not dropped but deleted with the object.
struct Unclaim<'a, K> {
    share: &'a Share,
    /// Claims of tokens that no longer exist.
    dead: &'a [String],
    kind: PhantomData<K>,
}

impl<K: Shared> Unclaim<'_, K> {
    /// The claims of other tokens that still exist (or came after the
    /// check).
    fn others(&self, live: &K) -> Vec<String> {
        claims(live)
            .into_iter()
            .filter(|c| *c != self.share.claim && !self.dead.contains(c))
            .collect()
    }
}

impl<K: Shared> Change<K> for Unclaim<'_, K> {
    fn describe(&self) -> String {
        format!("metadata.annotations[{:?}]", self.share.claim)
    }

    fn patch(&self, live: &K) -> Option<Edit> {
        let held = claims(live).contains(&self.share.claim);
        if !created_by_us(live) || !held || self.others(live).is_empty() {
            return None;
        }
        let mut metadata = json!({});
        if let Some(namespace) = K::NAMESPACE {
            metadata["namespace"] = json!(namespace);
        }
        Some(Edit::Apply {
            manager: self.share.manager.clone(),
            fields: json!({
                "apiVersion": K::KIND.api_version,
                "kind": K::KIND.kind,
                "metadata": metadata,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A claim writes only to an object gpufleet created, and a lost write
    /// landed when the claim is there (or the object is someone else's).
    #[test]
    fn a_claim_writes_only_what_gpufleet_created() {
        let share = Share::of(&Model {
            token_id: Some("abcdef".into()),
            ..Default::default()
        });
        let claim = Claim::<ConfigMap> {
            share: &share,
            fields: json!({"data": {"kubeconfig": "x"}}),
            kind: PhantomData,
        };
        let with = |annotations: &[&str]| {
            let mut map = ConfigMap::default();
            map.metadata.annotations = Some(
                annotations
                    .iter()
                    .map(|a| (a.to_string(), CREATOR.to_string()))
                    .collect(),
            );
            map
        };
        let foreign = ConfigMap::default();
        assert!(claim.patch(&foreign).is_none());
        assert!(claim.landed(&foreign));
        let ours = with(&[CREATED_BY]);
        assert!(
            matches!(claim.patch(&ours), Some(Edit::Apply { manager, .. }) if manager == "gpufleet-node-join-abcdef")
        );
        assert!(!claim.landed(&ours));
        assert!(claim.landed(&with(&[CREATED_BY, "gpufleet/node-join.abcdef"])));
    }

    #[test]
    fn cluster_info_is_relied_on_while_other_tokens_sign_it() {
        let map = |keys: &[&str]| ConfigMap {
            data: Some(
                keys.iter()
                    .map(|k| (k.to_string(), String::new()))
                    .collect(),
            ),
            ..Default::default()
        };
        assert!(!map(&["kubeconfig", "jws-kubeconfig-abcdef"]).relied_on_without("abcdef"));
        assert!(map(&["kubeconfig", "jws-kubeconfig-zzzzzz"]).relied_on_without("abcdef"));
    }
}
