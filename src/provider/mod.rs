//! The gpufleet provider: its configuration block, and the list of
//! resources and data sources it registers. Resources depend on the
//! cluster layer, never on this module.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::catalog::LabelScheme;
use crate::cluster::Kubernetes;
use crate::cluster::connection::{
    Connection, EXEC_API_VERSIONS, HOST_ONLY, environment_names, kubeconfig_problems,
    pem_certificates, pem_private_key, server_url,
};
use crate::cluster::names::{dns1123_label, dns1123_subdomain};
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::validators::{all_or_none, no_null_elements, not_empty, one_of};
use crate::framework::{
    ProviderDefinition, RegisteredDataSource, RegisteredResource, register_data_source,
    register_resource,
};
use crate::kit::Cluster;
use crate::kit::config_map::ConfigMapRef;
use crate::kit::node_scoped::NodeResource;
use crate::kit::object::ObjectResource;
use crate::kit::permissions::{Denied, Permission};
use crate::protocol::diagnostics::Severity;
use crate::protocol::schema::Nesting;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};
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
                Attr::string("host").optional().validate(server_url()).describe("API server URL, e.g. `https://10.0.0.1:6443`. When set, no kubeconfig is read."),
                Attr::string("token").optional().sensitive().describe("Bearer token for `host` (only with `host`)."),
                Attr::string("cluster_ca_certificate").optional().validate(pem_certificates()).describe("PEM CA certificate of the API server (only with `host`)."),
                Attr::string("client_certificate").optional().validate(pem_certificates()).describe("PEM client certificate for `host` (only with `host`)."),
                Attr::string("client_key").optional().sensitive().validate(pem_private_key()).describe("PEM key of `client_certificate` (only with `host`)."),
                Attr::bool("insecure").optional().describe("Skip verifying the API server's certificate, for `host` and kubeconfigs alike (throw-away test clusters only; configuring the provider warns). Verification is on unless this is `true`."),
                Attr::nested(
                    "exec",
                    Nesting::Single,
                    vec![
                        Attr::string("api_version").required().validate(one_of(EXEC_API_VERSIONS)).describe("e.g. `client.authentication.k8s.io/v1`."),
                        Attr::string("command").required().validate(not_empty()).describe("The command that prints an ExecCredential."),
                        Attr::string_list("args").optional().validate(no_null_elements()).describe("Its arguments."),
                        Attr::string_map("env").optional().validate(environment_names()).describe("Environment variables it gets."),
                    ],
                )
                .optional()
                .describe("Run a command for credentials (an exec credential plugin; only with `host`)."),
                Attr::string("label_scheme")
                    .optional()
                    .validate(one_of(LabelScheme::NAMES))
                    .describe("Node labels GPU constraints map to, for fleets that set no `label_scheme` and whose node class does not decide it (an EC2NodeClass means `aws`, an AKSNodeClass `azure`); `cfke` when unset."),
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

    /// Settings only `host` uses, given without it, would be ignored: the
    /// kubeconfig is read instead.
    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        if !config.attr("host").is_null() {
            return;
        }
        for name in HOST_ONLY {
            let value = config.attr(name);
            if !value.is_null() {
                diagnostics.error_at(
                    AttributePath::attr(name),
                    "Setting without host",
                    format!(
                        "`{name}` is used only with `host`; without `host` the provider reads a kubeconfig and would ignore it. Set `host` too, or put the credentials in the kubeconfig."
                    ),
                );
            }
        }
    }

    fn configure_warnings(&self, config: &Config) -> Diagnostics {
        let mut warnings = Diagnostics::default();
        warnings.extend(Diagnostics(
            kubeconfig_problems(&config.connection)
                .0
                .into_iter()
                .filter(|d| d.severity == Severity::Warning)
                .collect(),
        ));
        if config.connection.insecure == Some(true) {
            warnings.push(
                Diagnostic::warning(
                    "TLS verification is off",
                    "`insecure = true`: gpufleet does not check the API server's certificate, so whoever sits between here and the cluster can read and change every request, credentials included. Use it only for throw-away test clusters; give the cluster's CA with `cluster_ca_certificate` (or the kubeconfig's certificate-authority-data) instead.",
                )
                .at(AttributePath::attr("insecure")),
            );
        }
        warnings
    }

    async fn configure(&self, config: Config) -> Result<Cluster, Diagnostics> {
        let problems = kubeconfig_problems(&config.connection);
        if problems.has_errors() {
            return Err(problems);
        }
        let label_scheme = config
            .label_scheme
            .as_deref()
            .and_then(LabelScheme::parse)
            .unwrap_or(LabelScheme::Cfke);
        Ok(Cluster {
            kubernetes: Kubernetes::new(config.connection).explaining_denials(missing_rule),
            label_scheme,
            device_plugin_config: ConfigMapRef {
                namespace: config
                    .gpu_operator_namespace
                    .unwrap_or_else(|| DEFAULT_GPU_OPERATOR_NAMESPACE.into()),
                name: config
                    .device_plugin_config_map
                    .unwrap_or_else(|| DEFAULT_DEVICE_PLUGIN_CONFIG_MAP.into()),
            },
        })
    }

    fn resources(&self) -> Vec<RegisteredResource<Cluster>> {
        vec![
            register_resource(ObjectResource(resources::priority_class::PriorityClass)),
            register_resource(ObjectResource(resources::fleet::Fleet)),
            register_resource(ObjectResource(resources::queue::Queue)),
            register_resource(NodeResource(resources::node_taint::NodeTaint)),
            register_resource(resources::gpu_sharing::GpuSharing),
            register_resource(NodeResource(resources::node_sharing::NodeSharing)),
            register_resource(ObjectResource(resources::node_join::BootstrapToken)),
        ]
    }

    fn data_sources(&self) -> Vec<RegisteredDataSource<Cluster>> {
        vec![register_data_source(
            data_sources::accelerators::Accelerators,
        )]
    }
}

/// What each resource and data source needs of the Kubernetes API, by type
/// name (a type may have several entries; they add up). `docs/rbac.yaml` is
/// generated from it, and every registered type must have its entry.
pub fn permissions() -> Vec<(&'static str, &'static [Permission])> {
    vec![
        (
            "gpufleet_priority_class",
            resources::priority_class::PERMISSIONS,
        ),
        ("gpufleet_priority_class", NAMESPACE_FENCE),
        ("gpufleet_fleet", resources::fleet::PERMISSIONS),
        ("gpufleet_fleet", resources::fleet::NODE_CLASS_PERMISSIONS),
        ("gpufleet_fleet", SHARING_KEY),
        ("gpufleet_fleet", CLUSTER_POLICY),
        ("gpufleet_fleet", NAMESPACE_FENCE),
        ("gpufleet_fleet", resources::fleet::FLAVOR_PERMISSIONS),
        ("gpufleet_queue", resources::queue::PERMISSIONS),
        ("gpufleet_node_taint", resources::node_taint::PERMISSIONS),
        ("gpufleet_gpu_sharing", CLUSTER_POLICY),
        ("gpufleet_gpu_sharing", SHARING_KEY),
        (
            "gpufleet_node_sharing",
            resources::node_sharing::PERMISSIONS,
        ),
        ("gpufleet_node_sharing", SHARING_KEY),
        ("gpufleet_node_sharing", CLUSTER_POLICY),
        ("gpufleet_node_join", resources::node_join::PERMISSIONS),
        (
            "gpufleet_node_join",
            resources::node_join::SHARING_CONFIG_PERMISSIONS,
        ),
        (
            "gpufleet_node_join",
            resources::node_join::BOOTSTRAP_RBAC_PERMISSIONS,
        ),
        (
            "gpufleet_accelerators",
            data_sources::accelerators::PERMISSIONS,
        ),
    ]
}

/// The rule a 403's `message` says is missing, limited to the objects the
/// matching declaration names: how the connection explains denials.
fn missing_rule(message: &str) -> Option<String> {
    Denied::parse(message).map(|denied| denied.missing_rule(&permissions()))
}

/// What the sharing resources need to write their device-plugin
/// configuration key and restart the pods that read it.
const SHARING_KEY: &[Permission] = resources::sharing::writes::PERMISSIONS;
/// The admission policy and binding of `allowed_namespaces`.
const NAMESPACE_FENCE: &[Permission] = crate::kit::admission::PERMISSIONS;
/// The GPU Operator's ClusterPolicy, for the sharing resources that read or set it.
const CLUSTER_POLICY: &[Permission] = resources::sharing::cluster_policy::PERMISSIONS;

/// The namespace the generated Role is for: the GPU Operator's default one.
pub const RBAC_OPERATOR_NAMESPACE: &str = "gpu-operator";

/// `docs/rbac.yaml`: the roles granting exactly [`permissions`].
pub fn rbac_manifests() -> String {
    crate::kit::permissions::manifests(
        &crate::kit::permissions::rules(&permissions()),
        RBAC_OPERATOR_NAMESPACE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::FrameworkProvider;
    use crate::protocol::provider::{ImportTarget, ImportedResource, Provider};

    #[test]
    fn a_denial_is_explained_with_the_declared_rule() {
        let rule = missing_rule(
            "nodepools.karpenter.sh \"x\" is forbidden: User \"u\" cannot delete resource \"nodepools\" in API group \"karpenter.sh\" at the cluster scope",
        )
        .expect("an RBAC denial");
        assert!(
            rule.contains(
                "a ClusterRole needs the rule\n\n  - apiGroups: [\"karpenter.sh\"]\n    resources: [\"nodepools\"]\n    verbs: [\"delete\"]\n"
            ),
            "{rule}"
        );
        assert_eq!(missing_rule("denied by an admission webhook"), None);
    }

    #[test]
    fn every_type_declares_its_permissions() {
        let provider = FrameworkProvider::new(Gpufleet);
        let declared: Vec<&str> = permissions().iter().map(|(name, _)| *name).collect();
        let registered: Vec<String> = provider
            .object_schemas()
            .map(|(name, _)| name)
            .filter(|name| name != "provider")
            .collect();
        for name in &registered {
            assert!(
                declared.contains(&name.as_str()),
                "{name} declares no permissions in provider::permissions()"
            );
        }
        for name in &declared {
            assert!(
                registered.iter().any(|r| r == name),
                "{name} is not registered"
            );
        }
    }

    fn docs_rbac_yaml() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/rbac.yaml")
    }

    /// docs/rbac.yaml is what the declarations generate. It only compares:
    /// a check that rewrote its fixture would pass on the rerun whatever
    /// changed.
    #[test]
    fn docs_rbac_yaml_is_generated_from_the_declared_permissions() {
        let path = docs_rbac_yaml();
        let committed = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run `make rbac`", path.display()));
        let generated = rbac_manifests();
        if committed != generated {
            let first = committed
                .lines()
                .zip(generated.lines())
                .position(|(c, g)| c != g)
                .unwrap_or(committed.lines().count().min(generated.lines().count()));
            panic!(
                "{} is not what provider::permissions() generates (first difference at line {}); \
                 run `make rbac`, review the diff and commit it",
                path.display(),
                first + 1
            );
        }
    }

    /// `make rbac`: writes docs/rbac.yaml. Ignored, so only that target runs it.
    #[test]
    #[ignore = "writes docs/rbac.yaml; run by `make rbac`"]
    fn write_docs_rbac_yaml() {
        std::fs::write(docs_rbac_yaml(), rbac_manifests()).unwrap();
    }

    #[test]
    fn every_schema_and_identity_is_sound() {
        let provider = FrameworkProvider::new(Gpufleet);
        for (name, schema) in provider.object_schemas() {
            let problems = schema.check();
            assert!(problems.is_empty(), "{name}: {problems:#?}");
        }
        for (name, resource) in provider.resources() {
            let mut problems = resource.identity().check(resource.schema());
            problems.extend(
                resource
                    .list_schema()
                    .map(ObjectSchema::check)
                    .unwrap_or_default(),
            );
            assert!(problems.is_empty(), "{name}: {problems:#?}");
        }
    }

    /// An identity of `type_name` from JSON.
    fn identity(type_name: &str, json: serde_json::Value) -> Value {
        let provider = FrameworkProvider::new(Gpufleet);
        let (_, ty) = provider
            .schemas()
            .identities
            .iter()
            .find(|(n, _)| n == type_name)
            .map(|(n, s)| (n.clone(), s.value_type()))
            .unwrap();
        crate::protocol::codec::from_json(&json, &ty).unwrap()
    }

    fn import(type_name: &str, target: ImportTarget) -> (Vec<ImportedResource>, Diagnostics) {
        let provider = FrameworkProvider::new(Gpufleet);
        futures::executor::block_on(provider.import_resource_state(type_name, target))
    }

    #[test]
    fn every_resource_has_an_identity_and_imports_by_it_what_its_id_imports() {
        use serde_json::json;
        let cases = [
            (
                "gpufleet_priority_class",
                "inference",
                json!({"name": "inference"}),
            ),
            (
                "gpufleet_fleet",
                "gpu-training",
                json!({"name": "gpu-training"}),
            ),
            (
                "gpufleet_node_taint",
                "gpu-1",
                json!({"node_name": "gpu-1", "node_selector": null}),
            ),
            (
                "gpufleet_node_sharing",
                "mps:gpu-1",
                json!({"name": "mps", "node_name": "gpu-1", "node_selector": null}),
            ),
            (
                "gpufleet_node_sharing",
                "mps:pool=gpu,team=ml",
                json!({"name": "mps", "node_name": null, "node_selector": "pool=gpu,team=ml"}),
            ),
            ("gpufleet_gpu_sharing", "default", json!({"key": "default"})),
        ];
        let provider = FrameworkProvider::new(Gpufleet);
        let with_identity: Vec<&str> = provider
            .schemas()
            .identities
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        let resources: Vec<&str> = provider
            .schemas()
            .resources
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(with_identity, resources);
        for (type_name, id, expected) in cases {
            let expected = identity(type_name, expected);
            let (by_id, d) = import(type_name, ImportTarget::Id(id.into()));
            assert!(d.0.is_empty(), "{type_name} {id}: {d:?}");
            let (by_identity, d) = import(type_name, ImportTarget::Identity(expected.clone()));
            assert!(d.0.is_empty(), "{type_name} {id}: {d:?}");
            assert_eq!(by_id[0].identity, expected, "{type_name} {id}");
            assert_eq!(by_identity[0].identity, expected, "{type_name} {id}");
            assert_eq!(by_id[0].state, by_identity[0].state, "{type_name} {id}");
            assert_eq!(by_id[0].private, by_identity[0].private, "{type_name} {id}");
        }
    }

    #[test]
    fn an_identity_import_refuses_what_an_id_import_refuses_at_its_attribute() {
        use serde_json::json;
        let refused = |type_name: &str, json: serde_json::Value| {
            let (imported, d) =
                import(type_name, ImportTarget::Identity(identity(type_name, json)));
            assert!(imported.is_empty());
            d
        };
        let selector = refused(
            "gpufleet_node_taint",
            json!({"node_name": null, "node_selector": "pool=gpu"}),
        );
        assert_eq!(selector.located()[0].0, "node_name", "{selector:?}");
        let bad_name = refused("gpufleet_priority_class", json!({"name": "Not_A_Name"}));
        assert!(bad_name.0[0].detail.contains("Not_A_Name"), "{bad_name:?}");
        let missing = refused("gpufleet_fleet", json!({"name": null}));
        assert_eq!(missing.located()[0].0, "name");
        let other_key = refused("gpufleet_gpu_sharing", json!({"key": "node-x"}));
        assert!(other_key.0[0].detail.contains("`default`"), "{other_key:?}");
        let no_target = refused("gpufleet_node_sharing", json!({"name": "mps"}));
        assert!(
            no_target.0[0]
                .detail
                .contains("`node_name` or `node_selector`"),
            "{no_target:?}"
        );
    }
}
