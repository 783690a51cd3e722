//! The scenario's fleets and what their nodes may be, on each cloud whose
//! instance types the test cluster's Karpenter offers and with each way
//! the inference fleet shares its GPUs.

use gpufleet::catalog::{LabelKeys, LabelScheme};

use super::lookups;

/// chat-api's replicas: one L4 time-sliced x4 holds them all.
pub(crate) const CHAT_API_REPLICAS: i64 = 4;

/// The instance types the cluster's Karpenter offers, and the label scheme
/// the scenario's fleets are written in for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cloud {
    /// testbed/karpenter/instance-types.json's three made-up types with
    /// Cloudfleet's labels (`testbed/cluster.sh up --karpenter`).
    Cfke,
    /// EC2's instance types with karpenter-provider-aws's labels
    /// (`testbed/cluster.sh up --karpenter=aws`), where the example's
    /// training fleet also asks for 3200 Gbps per node (p5.48xlarge's, AWS's
    /// P5 page) and it declares a spot training fleet of A100s.
    Ec2,
}

/// Whether the cluster's Karpenter offers EC2's instance types
/// (`testbed/cluster.sh up --karpenter=aws` names them in the cluster's
/// `env` file); says `what` was skipped when it does not.
pub fn karpenter_offers_ec2_types(what: &str) -> bool {
    let env = std::path::Path::new(&crate::kubeconfig()).with_file_name("env");
    let offered = std::fs::read_to_string(&env).unwrap_or_default();
    let ec2 = offered
        .lines()
        .any(|l| l.starts_with("instance_types=") && l.contains("aws-instance-types"));
    if !ec2 {
        crate::skipped(
            what,
            &format!(
                "{} names no EC2 instance types: start the cluster with `testbed/cluster.sh up --karpenter=aws`",
                env.display()
            ),
        );
    }
    ec2
}

/// A fleet of the scenario: its NodePool and what its nodes may be.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fleet {
    pub(crate) name: &'static str,
    /// Instance types, or EC2 families (a type's name before the dot), its
    /// nodes may be.
    pub(crate) types: &'static [&'static str],
    /// The `karpenter.sh/capacity-type` of its nodes, where the fleet sets it.
    pub(crate) capacity_type: Option<&'static str>,
}

impl Fleet {
    const fn of(name: &'static str, types: &'static [&'static str]) -> Self {
        Self {
            name,
            types,
            capacity_type: None,
        }
    }

    /// Whether a node of `instance_type` may belong to the fleet.
    pub(crate) fn allows(&self, instance_type: &str) -> bool {
        let family = instance_type.split('.').next().unwrap();
        self.types.contains(&instance_type) || self.types.contains(&family)
    }
}

impl Cloud {
    pub(crate) const fn scheme(self) -> LabelScheme {
        match self {
            Self::Cfke => LabelScheme::Cfke,
            Self::Ec2 => LabelScheme::Aws,
        }
    }

    /// The node labels of the GPU model and count under the scheme.
    pub(crate) const fn labels(self) -> LabelKeys {
        self.scheme().label_keys()
    }

    /// What the root configuration's variables add for this cloud.
    pub(crate) fn tfvars(self) -> &'static str {
        match self {
            Self::Cfke => "",
            Self::Ec2 => {
                "label_scheme = \"aws\"\ntraining_network_bandwidth_min_gbps = 3200\nspot_training = { gpu_models = [\"A100-40GB\", \"A100-80GB\"], gpus_per_node = 8, gpu_limit = 16 }\n"
            }
        }
    }

    /// The value of the GPU-name label on an 8xH100 node: the made-up
    /// type's, and karpenter-provider-aws's, which lower-cases the name EC2
    /// gives the GPU (pkg/providers/instancetype/types.go).
    pub(crate) const fn h100(self) -> &'static str {
        match self {
            Self::Cfke => "H100",
            Self::Ec2 => "h100",
        }
    }

    /// The resource a training pod requests for its node's interconnect,
    /// and how many a training node has: on EC2 the EFA interfaces of
    /// p5.48xlarge, 32 (AWS's P5 page; EFA's: pods ask for
    /// `vpc.amazonaws.com/efa`).
    pub(crate) const fn interconnect(self) -> Option<(&'static str, i64)> {
        match self {
            Self::Cfke => None,
            Self::Ec2 => Some(("vpc.amazonaws.com/efa", 32)),
        }
    }

    /// The fleets, with the types their nodes may be: on EC2, as AWS's
    /// instance type pages list the GPUs (P5: 8 H100 in p5.48xlarge, one in
    /// p5.4xlarge; P4d: A100 40 GB; P4de: A100 80 GB; G6 and Gr6: L4, their
    /// fractional G6f and Gr6f left out; M7i: no GPU). Inference is
    /// on-demand and the spot fleet spot, as the example sets them.
    pub(crate) fn fleets(self, sharing: Sharing) -> Vec<Fleet> {
        let (training, l4, general): (&[&str], &[&str], &[&str]) = match self {
            Self::Cfke => (&["h100-8gpu"], &["l4-1gpu"], &["cpu-16core"]),
            Self::Ec2 => (&["p5.48xlarge"], &["g6", "gr6"], &["m7i"]),
        };
        let inference = match sharing {
            Sharing::TimeSlicing | Sharing::Mps => l4,
            Sharing::Mig => training,
        };
        let mut fleets = vec![
            Fleet::of("training", training),
            Fleet {
                capacity_type: Some("on-demand"),
                ..Fleet::of("inference", inference)
            },
            Fleet::of("general", general),
        ];
        if self == Self::Ec2 {
            fleets.push(Fleet {
                capacity_type: Some("spot"),
                ..Fleet::of("training-spot", &["p4d", "p4de"])
            });
        }
        fleets
    }
}

/// How the inference fleet shares its GPUs in a run (the example's
/// `inference` variable).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// The seed's: 1-GPU L4 nodes, each GPU time-sliced for 4 pods.
    TimeSlicing,
    /// 1-GPU L4 nodes under CUDA MPS for 4 clients.
    Mps,
    /// 8-GPU H100 nodes split `all-1g.10gb`: 7 MIG devices per GPU.
    Mig,
}

impl Sharing {
    /// The example's `inference` variable for this sharing.
    pub(crate) fn tfvars(self) -> &'static str {
        match self {
            Self::TimeSlicing => "",
            Self::Mps => {
                "inference = { gpu_models = [\"L4\"], gpus_per_node = 1, sharing = { strategy = \"mps\", replicas = 4 } }\n"
            }
            Self::Mig => {
                "inference = { gpu_models = [\"H100\"], gpus_per_node = 8, sharing = { strategy = \"mig\", mig_layout = \"all-1g.10gb\" } }\nmig_strategy = \"mixed\"\n"
            }
        }
    }

    /// The resource a chat-api replica asks for, the GPUs of an inference
    /// node and how many of the resource it advertises.
    pub(crate) fn node(self) -> (&'static str, &'static str, i64) {
        match self {
            Self::TimeSlicing | Self::Mps => (lookups::GPU, "1", CHAT_API_REPLICAS),
            Self::Mig => ("nvidia.com/mig-1g.10gb", "8", 56),
        }
    }

    /// The inference node as the narration says it.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::TimeSlicing => "one L4 time-sliced x4",
            Self::Mps => "one L4 shared by MPS for 4 clients",
            Self::Mig => "one 8xH100 node split into 56 MIG devices (all-1g.10gb)",
        }
    }
}
