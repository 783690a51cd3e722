//! The configurations each workload is measured with: the same objects
//! through gpufleet, through hashicorp/kubernetes (the peer), as
//! `terraform_data` (Terraform's own cost per resource, no plugin) and, for
//! priority classes, through the plugin floor (benches/plugin-floor: a
//! provider made with HashiCorp's terraform-plugin-framework whose resource
//! has gpufleet_priority_class's schema and only stores it). One node taint
//! over many nodes is also measured as a person does it by hand, with
//! `kubectl taint nodes -l` (the anchor).

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Provider {
    Gpufleet,
    TerraformData,
    PluginFloor,
    Peer,
    /// `kubectl taint nodes -l ...`: no Terraform at all.
    Kubectl,
}

impl Provider {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Provider::Gpufleet => "gpufleet",
            Provider::TerraformData => "terraform_data",
            Provider::PluginFloor => "plugin-floor",
            Provider::Peer => "peer",
            Provider::Kubectl => "kubectl",
        }
    }

    /// Whether it has a configuration for `workload`: the plugin floor has
    /// priority classes only, kubectl the one taint over many nodes only,
    /// which the peer has no resource for.
    pub(crate) fn measures(self, workload: Workload) -> bool {
        match self {
            Provider::PluginFloor => matches!(workload, Workload::PriorityClasses(_)),
            Provider::Kubectl => matches!(workload, Workload::TaintOver(_)),
            Provider::Peer => !matches!(workload, Workload::TaintOver(_)),
            Provider::Gpufleet | Provider::TerraformData => true,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Workload {
    PriorityClasses(usize),
    Fleets(usize),
    Taints(usize),
    /// One `gpufleet_node_taint` whose selector matches this many nodes.
    TaintOver(usize),
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Workload::PriorityClasses(n) => write!(f, "{n} priority classes"),
            Workload::Fleets(n) => write!(f, "{n} fleets"),
            Workload::Taints(n) => write!(f, "taints on {n} nodes"),
            Workload::TaintOver(n) => write!(f, "one taint over {n} nodes"),
        }
    }
}

impl Workload {
    pub(crate) fn count(self) -> usize {
        match self {
            Workload::PriorityClasses(n)
            | Workload::Fleets(n)
            | Workload::Taints(n)
            | Workload::TaintOver(n) => n,
        }
    }

    /// The API resources (`apiserver_request_total`'s `resource`) its objects live in.
    pub(crate) fn api_resource(self) -> &'static str {
        match self {
            Workload::PriorityClasses(_) => "priorityclasses",
            Workload::Fleets(_) => "nodepools",
            Workload::Taints(_) | Workload::TaintOver(_) => "nodes",
        }
    }

    pub(crate) fn slug(self) -> String {
        match self {
            Workload::PriorityClasses(n) => format!("priority-classes-{n}"),
            Workload::Fleets(n) => format!("fleets-{n}"),
            Workload::Taints(n) => format!("taints-{n}"),
            Workload::TaintOver(n) => format!("taint-over-{n}"),
        }
    }
}

/// Names of the nodes the taint workload needs (`bench-node-0`, ...); the bench creates them.
pub(crate) const NODE_PREFIX: &str = "bench-node-";
/// Names of the nodes one taint goes over (`bench-wide-0`, ...), created by
/// the bench with [`WIDE_LABEL`].
pub(crate) const WIDE_PREFIX: &str = "bench-wide-";
/// The label that selects them, `key=value`.
pub(crate) const WIDE_LABEL: (&str, &str) = ("bench.gpufleet.dev/wide", "true");
/// The taint kubectl sets over them; gpufleet's is `gpufleet-bench-wide`.
pub(crate) const KUBECTL_TAINT: &str = "kubectl-bench-wide";

pub(crate) struct Versions<'a> {
    pub(crate) gpufleet: &'a str,
    pub(crate) peer: Option<&'a str>,
    /// The plugin floor's, which is the terraform-plugin-framework version it is built on.
    pub(crate) plugin_floor: Option<&'a str>,
}

/// `main.tf` for one provider and workload against `kubeconfig` (see
/// [`Provider::measures`]).
pub(crate) fn main_tf(
    provider: Provider,
    workload: Workload,
    kubeconfig: &str,
    versions: &Versions<'_>,
) -> String {
    let n = workload.count();
    let preamble = match provider {
        Provider::Gpufleet => format!(
            "terraform {{\n  required_providers {{\n    gpufleet = {{ source = \"gpufleet/gpufleet\", version = \"{}\" }}\n  }}\n}}\n\nprovider \"gpufleet\" {{\n  config_path = \"{kubeconfig}\"\n}}\n\n",
            versions.gpufleet
        ),
        Provider::Peer => format!(
            "terraform {{\n  required_providers {{\n    kubernetes = {{ source = \"hashicorp/kubernetes\", version = \"{}\" }}\n  }}\n}}\n\nprovider \"kubernetes\" {{\n  config_path = \"{kubeconfig}\"\n}}\n\n",
            versions.peer.expect("peer version")
        ),
        // No provider block: it has no configuration.
        Provider::PluginFloor => format!(
            "terraform {{\n  required_providers {{\n    pluginfloor = {{ source = \"gpufleet/pluginfloor\", version = \"{}\" }}\n  }}\n}}\n\n",
            versions.plugin_floor.expect("plugin floor version")
        ),
        Provider::TerraformData => String::new(),
        Provider::Kubectl => unreachable!("kubectl runs without a configuration"),
    };
    let body = match (provider, workload) {
        // The plugin floor's resource has gpufleet's schema, so the same configuration.
        (Provider::Gpufleet | Provider::PluginFloor, Workload::PriorityClasses(_)) => format!(
            "resource \"{}_priority_class\" \"c\" {{\n  count = {n}\n  name  = \"bench-pc-${{count.index}}\"\n  value = 1000 + count.index\n}}\n",
            if provider == Provider::Gpufleet {
                "gpufleet"
            } else {
                "pluginfloor"
            }
        ),
        (Provider::Peer, Workload::PriorityClasses(_)) => format!(
            "resource \"kubernetes_priority_class_v1\" \"c\" {{\n  count = {n}\n  metadata {{\n    name = \"bench-peer-pc-${{count.index}}\"\n  }}\n  value = 1000 + count.index\n}}\n"
        ),
        (Provider::TerraformData, Workload::PriorityClasses(_)) => format!(
            "resource \"terraform_data\" \"c\" {{\n  count = {n}\n  input = {{ name = \"bench-pc-${{count.index}}\", value = 1000 + count.index }}\n}}\n"
        ),
        (Provider::Gpufleet, Workload::Fleets(_)) => format!(
            "resource \"gpufleet_fleet\" \"f\" {{\n  count        = {n}\n  name         = \"bench-fleet-${{count.index}}\"\n  node_class   = {{ group = \"karpenter.kwok.sh\", kind = \"KWOKNodeClass\", name = \"default\" }}\n  accelerators = [\"H100\"]\n  taints       = [{{ key = \"workload\", value = \"training\", effect = \"NoSchedule\" }}]\n}}\n"
        ),
        // The NodePool gpufleet sends for the fleet above, field for field.
        (Provider::Peer, Workload::Fleets(_)) => format!(
            r#"resource "kubernetes_manifest" "f" {{
  count = {n}
  manifest = {{
    apiVersion = "karpenter.sh/v1"
    kind       = "NodePool"
    metadata   = {{ name = "bench-peer-fleet-${{count.index}}" }}
    spec = {{
      template = {{
        spec = {{
          nodeClassRef = {{ group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }}
          requirements = [{{ key = "cfke.io/accelerator-name", operator = "In", values = ["H100"] }}]
          taints       = [{{ key = "workload", value = "training", effect = "NoSchedule" }}]
          expireAfter  = "720h"
        }}
      }}
      disruption = {{
        consolidationPolicy = "WhenEmptyOrUnderutilized"
        consolidateAfter    = "0s"
        budgets             = [{{ nodes = "10%" }}]
      }}
    }}
  }}
}}
"#
        ),
        (Provider::TerraformData, Workload::Fleets(_)) => format!(
            "resource \"terraform_data\" \"f\" {{\n  count = {n}\n  input = {{\n    name         = \"bench-fleet-${{count.index}}\"\n    node_class   = {{ group = \"karpenter.kwok.sh\", kind = \"KWOKNodeClass\", name = \"default\" }}\n    accelerators = [\"H100\"]\n    taints       = [{{ key = \"workload\", value = \"training\", effect = \"NoSchedule\" }}]\n  }}\n}}\n"
        ),
        (Provider::Gpufleet, Workload::Taints(_)) => format!(
            "resource \"gpufleet_node_taint\" \"t\" {{\n  count     = {n}\n  node_name = \"{}${{count.index}}\"\n  taints    = [{{ key = \"gpufleet-bench\", value = \"x\", effect = \"NoSchedule\" }}]\n}}\n",
            NODE_PREFIX
        ),
        (Provider::Peer, Workload::Taints(_)) => format!(
            "resource \"kubernetes_node_taint\" \"t\" {{\n  count = {n}\n  metadata {{\n    name = \"{}${{count.index}}\"\n  }}\n  taint {{\n    key    = \"gpufleet-bench-peer\"\n    value  = \"x\"\n    effect = \"NoSchedule\"\n  }}\n  field_manager = \"bench-peer\"\n}}\n",
            NODE_PREFIX
        ),
        (Provider::TerraformData, Workload::Taints(_)) => format!(
            "resource \"terraform_data\" \"t\" {{\n  count = {n}\n  input = {{ node_name = \"{}${{count.index}}\", taints = [{{ key = \"gpufleet-bench\", value = \"x\", effect = \"NoSchedule\" }}] }}\n}}\n",
            NODE_PREFIX
        ),
        (Provider::Gpufleet, Workload::TaintOver(_)) => format!(
            "resource \"gpufleet_node_taint\" \"t\" {{\n  node_selector = {{ \"{}\" = \"{}\" }}\n  taints        = [{{ key = \"gpufleet-bench-wide\", value = \"x\", effect = \"NoSchedule\" }}]\n}}\n",
            WIDE_LABEL.0, WIDE_LABEL.1
        ),
        (Provider::TerraformData, Workload::TaintOver(_)) => format!(
            "resource \"terraform_data\" \"t\" {{\n  input = {{ node_selector = {{ \"{}\" = \"{}\" }}, taints = [{{ key = \"gpufleet-bench-wide\", value = \"x\", effect = \"NoSchedule\" }}] }}\n}}\n",
            WIDE_LABEL.0, WIDE_LABEL.1
        ),
        (Provider::PluginFloor | Provider::Kubectl | Provider::Peer, workload) => {
            unreachable!("{} has no configuration for {workload}", provider.label())
        }
    };
    preamble + &body
}
