//! The GPU Operator's ClusterPolicy as its Helm chart makes it: rendered by
//! the Helm CLI (testbed/helm, built by testbed/build.sh) from the chart in
//! the GPU Operator module cluster.sh pins (`deployments/gpu-operator`), and
//! written as `helm install` and `helm upgrade` write it, so that tests
//! start from the state a real install leaves.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::{Mutex, PoisonError};

use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::fixtures::cluster_policies;
use crate::{go_module, repo_root};

/// The release as NVIDIA's install guide makes it (namespace `gpu-operator`).
const RELEASE: &str = "gpu-operator";
const RELEASE_NAMESPACE: &str = "gpu-operator";

/// The field manager of Helm 3's writes: cmd/helm/helm.go sets
/// `kube.ManagedFieldsManager = "helm"` (helm/helm, v3).
const FIELD_MANAGER: &str = "helm";

/// The ClusterPolicy the chart renders with its default values, plus
/// `mig.strategy` when given, named as the chart names it
/// (`cluster-policy`). Rendered once per strategy and test process:
/// rendering runs the Helm CLI.
pub fn cluster_policy(mig_strategy: Option<&str>) -> Value {
    static RENDERED: Mutex<BTreeMap<Option<String>, Value>> = Mutex::new(BTreeMap::new());
    let mut rendered = RENDERED.lock().unwrap_or_else(PoisonError::into_inner);
    rendered
        .entry(mig_strategy.map(str::to_string))
        .or_insert_with(|| render(mig_strategy))
        .clone()
}

/// `helm template` of the chart's ClusterPolicy. The chart ships its one
/// dependency (node-feature-discovery) unpacked in its `charts/`, which
/// satisfies Chart.lock, so Helm renders it offline, straight from the
/// read-only module cache.
fn render(mig_strategy: Option<&str>) -> Value {
    let module = go_module::gpu_operator_module();
    let chart = go_module::module_dir(&module)
        .unwrap_or_else(|why| panic!("the GPU Operator's Helm chart: {why}"))
        .join("deployments/gpu-operator");
    let helm = repo_root().join("target/tools/bin/helm");
    assert!(
        helm.is_file(),
        "no Helm CLI at {}: run `bash testbed/build.sh helm`",
        helm.display()
    );
    // Helm's own settings and caches in a directory of this run, so that
    // nothing of the machine's Helm (repositories, plugins) takes part.
    let home = tempfile::tempdir().unwrap();
    let mut command = Command::new(&helm);
    command
        .args(["template", RELEASE])
        .arg(&chart)
        .args(["--namespace", RELEASE_NAMESPACE])
        .args(["--show-only", "templates/clusterpolicy.yaml"])
        .env("HELM_CACHE_HOME", home.path().join("cache"))
        .env("HELM_CONFIG_HOME", home.path().join("config"))
        .env("HELM_DATA_HOME", home.path().join("data"));
    if let Some(strategy) = mig_strategy {
        command.args(["--set", &format!("mig.strategy={strategy}")]);
    }
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", helm.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{command:?} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let object: Value = serde_saphyr::from_str(&stdout)
        .unwrap_or_else(|e| panic!("`helm template` printed no one object ({e}):\n{stdout}"));
    assert_eq!(object["kind"], "ClusterPolicy", "{stdout}");
    object
}

/// `object` as Helm 3 sends it: with the label and annotations Helm puts on
/// every object of a release (pkg/action/validate.go, setMetadataVisitor,
/// on install and upgrade).
fn with_release_metadata(mut object: Value) -> Value {
    let metadata = &mut object["metadata"];
    metadata["labels"]["app.kubernetes.io/managed-by"] = json!("Helm");
    metadata["annotations"]["meta.helm.sh/release-name"] = json!(RELEASE);
    metadata["annotations"]["meta.helm.sh/release-namespace"] = json!(RELEASE_NAMESPACE);
    object
}

/// `helm install`'s write of a rendered ClusterPolicy: Helm 3 creates each
/// object (pkg/kube/client.go, createResource: a POST), as field manager
/// `helm`, so it owns every field through an `Update` entry.
pub async fn install_cluster_policy(client: &kube::Client, rendered: &Value) {
    let object: DynamicObject =
        serde_json::from_value(with_release_metadata(rendered.clone())).unwrap();
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PostParams::default()
    };
    cluster_policies(client)
        .create(&params, &object)
        .await
        .unwrap();
}

/// `helm upgrade`'s write of a ClusterPolicy installed from `before` and now
/// rendered as `after` (both as rendered, same name): Helm 3 patches a
/// custom resource with a two-way JSON merge patch from the previous
/// release's manifest to the new one, as field manager `helm`, never
/// looking at the live object's fields (pkg/kube/client.go, update and
/// createPatch: `jsonpatch.CreateMergePatch(oldData, newData)`; the
/// three-way merge is for adopting resources on install only). So a value
/// another writer set stays unless the chart's value for it changed.
pub async fn upgrade_cluster_policy(client: &kube::Client, before: &Value, after: &Value) {
    let patch = merge_patch(before, &with_release_metadata(after.clone()));
    let name = after["metadata"]["name"].as_str().unwrap();
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    cluster_policies(client)
        .patch(name, &params, &Patch::Merge(patch))
        .await
        .unwrap();
}

/// The JSON merge patch (RFC 7386) that turns `from` into `to`: changed
/// values, `null` for removed keys, objects compared key by key, anything
/// else replaced whole.
fn merge_patch(from: &Value, to: &Value) -> Value {
    match (from, to) {
        (Value::Object(from), Value::Object(to)) => {
            let mut patch = serde_json::Map::new();
            for (key, old) in from {
                match to.get(key) {
                    None => {
                        patch.insert(key.clone(), Value::Null);
                    }
                    Some(new) if new != old => {
                        patch.insert(key.clone(), merge_patch(old, new));
                    }
                    Some(_) => {}
                }
            }
            for (key, new) in to {
                if !from.contains_key(key) {
                    patch.insert(key.clone(), new.clone());
                }
            }
            Value::Object(patch)
        }
        _ => to.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_patch_sets_changed_and_nulls_removed_keys() {
        let from = json!({"a": {"b": 1, "c": [1], "d": "x"}, "e": 1});
        let to = json!({"a": {"b": 2, "c": [1], "f": {"g": true}}, "e": 1});
        assert_eq!(
            merge_patch(&from, &to),
            json!({"a": {"b": 2, "d": null, "f": {"g": true}}})
        );
        assert_eq!(merge_patch(&to, &to), json!({}));
    }
}
