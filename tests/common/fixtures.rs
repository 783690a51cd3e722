//! Configuration snippets and live-object lookups the acceptance tests share.

use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};

use super::{block_on, kube_client};

pub fn class(resource: &str, name: &str, value: i64, extra: &str) -> String {
    format!(
        "resource \"gpufleet_priority_class\" \"{resource}\" {{\n  name  = \"{name}\"\n  value = {value}\n{extra}}}\n"
    )
}

/// A fleet on kwok's node class, as the test cluster has it.
pub fn fleet(resource: &str, name: &str, body: &str) -> String {
    format!(
        "resource \"gpufleet_fleet\" \"{resource}\" {{\n  name       = \"{name}\"\n  node_class = {{ group = \"karpenter.kwok.sh\", kind = \"KWOKNodeClass\", name = \"default\" }}\n{body}}}\n"
    )
}

/// The seed's training fleet: 8×H100 nodes, tainted for training, 64 GPUs.
pub const TRAINING: &str = r#"  accelerators      = ["H100"]
  accelerator_count = { min = 8, max = 8 }
  taints            = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  limits            = { gpus = 64 }
"#;

/// The seed's inference fleet: L4 nodes, tainted for inference.
pub const INFERENCE: &str = r#"  accelerators = ["L4"]
  taints       = [{ key = "workload", value = "inference", effect = "NoSchedule" }]
"#;

pub fn live_priority_class(name: &str) -> Option<PriorityClass> {
    block_on(async {
        Api::<PriorityClass>::all(kube_client().await)
            .get_opt(name)
            .await
            .unwrap()
    })
}

/// NodePools of an API group (`karpenter.sh`, or a missing one in tests of that case).
pub fn node_pools(group: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", "NodePool"), "nodepools")
}

pub async fn node_pool_api() -> Api<DynamicObject> {
    Api::all_with(kube_client().await, &node_pools("karpenter.sh"))
}

pub fn live_node_pool(name: &str) -> Option<DynamicObject> {
    block_on(async { node_pool_api().await.get_opt(name).await.unwrap() })
}
