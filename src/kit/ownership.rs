//! What state shows of a live object. gpufleet owns, by server-side apply,
//! only the fields it sends; other writers' fields are theirs. So state
//! reports an optional field only while Terraform manages it (the prior
//! state had it), or right after an import, when everything live is taken,
//! except other tools' bookkeeping annotations.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Annotations other tools write to record their own work, which are
/// theirs to keep, never configuration: an import leaves them out (so no
/// list result or generated configuration has them), and a read shows
/// only the keys Terraform manages, so their changes are no drift. Each
/// entry is a key, or a domain (`domain/`) with its subdomains.
const BOOKKEEPING_ANNOTATIONS: &[&str] = &[
    // kubectl apply's copy of what it applied (k8s.io/api, core/v1
    // annotation_key_constants.go, LastAppliedConfigAnnotation).
    "kubectl.kubernetes.io/last-applied-configuration",
    // Karpenter's hashes of the NodePools it reconciles (sigs.k8s.io/karpenter,
    // pkg/apis/v1/labels.go, NodePoolHashAnnotationKey and its version).
    "karpenter.sh/",
    // Helm's record of the release an object belongs to (helm.sh/helm/v3,
    // pkg/action/validate.go, meta.helm.sh/release-name and -namespace).
    "meta.helm.sh/",
    // Argo CD's record of the application tracking an object (argo-cd,
    // common/common.go, AnnotationKeyAppInstance).
    "argocd.argoproj.io/tracking-id",
];

/// Whether annotation `key` is another tool's bookkeeping (see
/// [`BOOKKEEPING_ANNOTATIONS`]).
fn is_bookkeeping_annotation(key: &str) -> bool {
    let domain = key.split_once('/').map_or("", |(domain, _)| domain);
    BOOKKEEPING_ANNOTATIONS
        .iter()
        .any(|entry| match entry.strip_suffix('/') {
            Some(owner) => domain == owner || domain.ends_with(&format!(".{owner}")),
            None => key == *entry,
        })
}

/// Leaves other tools' bookkeeping out of `meta`'s annotations: what an
/// import does to every object before taking its fields.
pub fn without_bookkeeping(meta: &mut ObjectMeta) {
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.retain(|key, _| !is_bookkeeping_annotation(key));
    }
}

/// A scalar field: live value if managed, else nothing.
pub fn owned<T, P>(live: Option<T>, prior: &Option<P>, importing: bool) -> Option<T> {
    if importing || prior.is_some() {
        live
    } else {
        None
    }
}

/// A field applied as a whole, such as an atomic list or map: its live value
/// while managed (empty if it vanished, which shows as drift), and after an
/// import, the live value if there is one.
pub fn owned_whole<T: Default, P>(
    live: Option<T>,
    prior: &Option<P>,
    importing: bool,
) -> Option<T> {
    match prior {
        _ if importing => live,
        Some(_) => Some(live.unwrap_or_default()),
        None => None,
    }
}

/// A map such as labels: the keys Terraform manages, with their live values
/// (a managed key removed behind Terraform's back is simply absent, which
/// shows as drift). After an import, all live keys; an empty result is null.
pub fn owned_map(
    live: Option<BTreeMap<String, String>>,
    prior: &Option<BTreeMap<String, String>>,
    importing: bool,
) -> Option<BTreeMap<String, String>> {
    let live = live.unwrap_or_default();
    match prior {
        _ if importing => Some(live).filter(|m| !m.is_empty()),
        None => None,
        Some(keys) => Some(
            live.into_iter()
                .filter(|(k, _)| keys.contains_key(k))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn maps_keep_only_managed_keys() {
        let live = Some(map(&[("team", "ml"), ("foreign", "x")]));
        assert_eq!(
            owned_map(live.clone(), &Some(map(&[("team", "")])), false),
            Some(map(&[("team", "ml")]))
        );
        assert_eq!(owned_map(live.clone(), &None, false), None);
        assert_eq!(
            owned_map(live, &None, true),
            Some(map(&[("team", "ml"), ("foreign", "x")]))
        );
        assert_eq!(owned_map(None, &None, true), None);
        assert_eq!(
            owned_map(None, &Some(map(&[("team", "ml")])), false),
            Some(map(&[]))
        );
    }

    #[test]
    fn whole_fields_show_empty_when_they_vanish() {
        let prior = Some(vec![1]);
        assert_eq!(owned_whole(None::<Vec<i32>>, &prior, false), Some(vec![]));
        assert_eq!(owned_whole(Some(vec![2]), &prior, false), Some(vec![2]));
        assert_eq!(owned_whole(Some(vec![2]), &None::<Vec<i32>>, false), None);
        assert_eq!(
            owned_whole(Some(vec![2]), &None::<Vec<i32>>, true),
            Some(vec![2])
        );
        assert_eq!(owned_whole(None::<Vec<i32>>, &None::<Vec<i32>>, true), None);
    }

    #[test]
    fn other_tools_bookkeeping_is_recognised_by_key_or_domain() {
        for key in [
            "kubectl.kubernetes.io/last-applied-configuration",
            "karpenter.sh/nodepool-hash",
            "compatibility.karpenter.sh/v1beta1-nodeclass-reference",
            "meta.helm.sh/release-name",
            "argocd.argoproj.io/tracking-id",
        ] {
            assert!(is_bookkeeping_annotation(key), "{key}");
        }
        for key in [
            "kubectl.kubernetes.io/default-container",
            "example.com/owner",
            "notkarpenter.sh/x",
            "karpenter.sh",
            "kubernetes.io/description",
        ] {
            assert!(!is_bookkeeping_annotation(key), "{key}");
        }
        let mut meta = ObjectMeta {
            annotations: Some(map(&[
                ("kubectl.kubernetes.io/last-applied-configuration", "{}"),
                ("example.com/owner", "platform"),
            ])),
            ..Default::default()
        };
        without_bookkeeping(&mut meta);
        assert_eq!(
            meta.annotations,
            Some(map(&[("example.com/owner", "platform")]))
        );
    }

    #[test]
    fn scalars_show_only_when_managed() {
        assert_eq!(owned(Some(1), &Some(0), false), Some(1));
        assert_eq!(owned(Some(1), &None::<i32>, false), None);
        assert_eq!(owned(Some(1), &None::<i32>, true), Some(1));
    }
}
