//! The gpufleet provider: its configuration block, and the list of
//! resources and data sources it registers. Resources depend on the
//! cluster layer, never on this module.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::catalog::LabelScheme;
use crate::cluster::config_map::ConfigMapRef;
use crate::cluster::connection::Connection;
use crate::cluster::names::{dns1123_label, dns1123_subdomain};
use crate::cluster::object::ObjectResource;
use crate::cluster::{Cluster, Kubernetes};
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::validators::{all_or_none, one_of};
use crate::framework::{
    ProviderDefinition, RegisteredDataSource, RegisteredResource, register_data_source,
    register_resource,
};
use crate::protocol::Diagnostics;
use crate::protocol::schema::Nesting;
use crate::{data_sources, resources};

/// The provider definition.
pub struct Gpufleet;

/// The provider block.
#[derive(Default, Deserialize, Serialize)]
pub struct Config {
    /// How to reach the cluster.
    #[serde(flatten)]
    connection: Connection,
    /// The label scheme fleets use unless they say otherwise.
    label_scheme: Option<String>,
    /// Where the GPU Operator runs.
    gpu_operator_namespace: Option<String>,
    /// The ConfigMap of device-plugin configurations gpufleet writes.
    device_plugin_config_map: Option<String>,
}

/// The GPU Operator's namespace unless the provider block says otherwise;
/// the operator reads device-plugin configurations only from there.
const DEFAULT_GPU_OPERATOR_NAMESPACE: &str = "gpu-operator";
const DEFAULT_DEVICE_PLUGIN_CONFIG_MAP: &str = "gpufleet-device-plugin";

#[async_trait]
impl ProviderDefinition for Gpufleet {
    type Client = Cluster;
    type Config = Config;

    fn type_prefix(&self) -> &'static str {
        "gpufleet"
    }

    fn schema(&self) -> ObjectSchema {
        ObjectSchema::new(
            "Manages GPU fleets, GPU sharing, node taints and priority classes on a Kubernetes cluster.",
            vec![
                Attr::string("config_path").optional().describe("Path to a kubeconfig file. Defaults to `KUBE_CONFIG_PATH`, then `KUBECONFIG`."),
                Attr::string("config_context").optional().describe("Context of the kubeconfig to use; its current context when unset."),
                Attr::string("host").optional().describe("API server URL, e.g. `https://10.0.0.1:6443`. When set, no kubeconfig is read."),
                Attr::string("token").optional().sensitive().describe("Bearer token for `host`."),
                Attr::string("cluster_ca_certificate").optional().describe("PEM CA certificate of the API server."),
                Attr::string("client_certificate").optional().describe("PEM client certificate for `host`."),
                Attr::string("client_key").optional().sensitive().describe("PEM key of `client_certificate`."),
                Attr::bool("insecure").optional().describe("Skip verifying the API server's certificate (test clusters only)."),
                Attr::nested(
                    "exec",
                    Nesting::Single,
                    vec![
                        Attr::string("api_version").required().describe("e.g. `client.authentication.k8s.io/v1`."),
                        Attr::string("command").required().describe("The command that prints an ExecCredential."),
                        Attr::string_list("args").optional().describe("Its arguments."),
                        Attr::string_map("env").optional().describe("Environment variables it gets."),
                    ],
                )
                .optional()
                .describe("Run a command for credentials (an exec credential plugin)."),
                Attr::string("label_scheme")
                    .optional()
                    .validate(one_of(LabelScheme::NAMES))
                    .describe("Node labels GPU constraints map to; `cfke` when unset."),
                Attr::string("gpu_operator_namespace")
                    .optional()
                    .validate(dns1123_label())
                    .describe("Namespace of the NVIDIA GPU Operator (or of a standalone device plugin), where GPU sharing writes the device-plugin ConfigMap; `gpu-operator` when unset. The operator reads the ConfigMap only from its own namespace."),
                Attr::string("device_plugin_config_map")
                    .optional()
                    .validate(dns1123_subdomain())
                    .describe("Name of the ConfigMap holding the device-plugin configurations that `gpufleet_gpu_sharing`, fleets' `gpu_sharing` and `gpufleet_node_sharing` write, one key each; `gpufleet-device-plugin` when unset."),
            ],
        )
        .validate(all_or_none(&["client_certificate", "client_key"]))
    }

    async fn configure(&self, config: Config) -> Result<Cluster, Diagnostics> {
        let label_scheme = config
            .label_scheme
            .as_deref()
            .and_then(LabelScheme::parse)
            .unwrap_or(LabelScheme::Cfke);
        Ok(Cluster {
            kubernetes: Kubernetes::new(config.connection),
            label_scheme,
            device_plugin_config: ConfigMapRef {
                namespace: config
                    .gpu_operator_namespace
                    .unwrap_or_else(|| DEFAULT_GPU_OPERATOR_NAMESPACE.into()),
                name: config
                    .device_plugin_config_map
                    .unwrap_or_else(|| DEFAULT_DEVICE_PLUGIN_CONFIG_MAP.into()),
            },
            plan_notes: Default::default(),
        })
    }

    fn resources(&self) -> Vec<RegisteredResource<Cluster>> {
        vec![
            register_resource(ObjectResource(resources::priority_class::PriorityClass)),
            register_resource(ObjectResource(resources::fleet::Fleet)),
            register_resource(resources::node_taint::NodeTaint),
            register_resource(resources::gpu_sharing::GpuSharing),
            register_resource(resources::node_sharing::NodeSharing),
        ]
    }

    fn data_sources(&self) -> Vec<RegisteredDataSource<Cluster>> {
        vec![register_data_source(
            data_sources::accelerators::Accelerators,
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::FrameworkProvider;

    #[test]
    fn every_schema_is_sound() {
        let provider = FrameworkProvider::new(Gpufleet);
        for (name, schema) in provider.object_schemas() {
            let problems = schema.check();
            assert!(problems.is_empty(), "{name}: {problems:#?}");
        }
    }
}
