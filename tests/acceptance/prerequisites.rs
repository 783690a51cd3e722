//! What a plan says the cluster lacks (src/resources/fleet/prerequisites.rs,
//! the sharing's device plugin, a node join's `sharing_config`): each
//! warning on a cluster that lacks it, none where it is there, and the
//! apply that cannot succeed failing before it writes anything.

use std::path::PathBuf;
use std::process::Command;

use common::fixtures::{Guard, OperatorNamespace, fleet};
use common::terraform::{Workspace, each_cli, provider_block_for};
use common::{block_on, kube_client, repo_root, unique_name};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

const NODE_POOL_CRD: &str = "Warning: Karpenter's NodePool CRD is not installed";
const NODE_OVERLAY_CRD: &str = "Warning: Karpenter's NodeOverlay CRD is not installed";
const CLASS_KIND: &str = "Warning: Node class kind not installed";
const CLASS_OBJECT: &str = "Warning: Node class not found:";
const NO_READER: &str = "Warning: No device plugin to read the sharing";
const UNKNOWN_KEY: &str = "Warning: Unknown sharing configuration";

/// A shared fleet of the kwok node class every test cluster has.
fn shared_fleet(resource: &str, name: &str) -> String {
    fleet(
        resource,
        name,
        "  accelerators      = [\"L4\"]\n  accelerator_count = { min = 1, max = 1 }\n  gpu_sharing       = { strategy = \"time_slicing\", replicas = 2 }\n",
    )
}

/// `fleet` (of [`fleet`]) with another node class.
fn with_class(fleet: String, class: &str) -> String {
    let kwok = "{ group = \"karpenter.kwok.sh\", kind = \"KWOKNodeClass\", name = \"default\" }";
    assert!(fleet.contains(kwok), "{fleet}");
    fleet.replace(kwok, class)
}

fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A control plane of the test's own with no CRDs at all (`cluster.sh up
/// --bare`): no Karpenter, no GPU Operator. Stopped when it goes.
struct BareCluster {
    dir: PathBuf,
}

impl BareCluster {
    fn up() -> Self {
        let dir = repo_root().join("target").join(unique_name("bare-cluster"));
        let cluster = Self { dir };
        cluster.run("up", &["--bare"]);
        cluster
    }

    fn run(&self, command: &str, args: &[&str]) {
        let out = Command::new("bash")
            .arg(repo_root().join("testbed/cluster.sh"))
            .arg(command)
            .args(args)
            .env("GPUFLEET_CLUSTER_DIR", &self.dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cluster.sh {command} {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn kubeconfig(&self, which: &str) -> String {
        self.dir.join(which).to_string_lossy().into_owned()
    }

    /// The device-plugin ConfigMap, as its admin sees it.
    fn device_plugin_config(&self) -> Option<ConfigMap> {
        let path = self.kubeconfig("kubeconfig");
        block_on(async {
            let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .unwrap();
            let client = kube::Client::try_from(config).unwrap();
            Api::<ConfigMap>::namespaced(client, "gpu-operator")
                .get_opt("gpufleet-device-plugin")
                .await
                .unwrap()
        })
    }
}

impl Drop for BareCluster {
    fn drop(&mut self) {
        self.run("down", &[]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// On a cluster without Karpenter's CRDs, the node class's, the GPU
/// Operator or the device-plugin ConfigMap, the plan names each (for a
/// fleet's sharing, a node sharing's and the cluster-wide one), and the apply of the fleet fails
/// at its first call, before it writes its NodePool or its configuration
/// key.
#[test]
fn a_bare_cluster_lacks_each_prerequisite() {
    let cluster = BareCluster::up();
    let provider = provider_block_for(&cluster.kubeconfig("kubeconfig-provider"), "");
    each_cli(|cli| {
        let name = unique_name("bare");
        let fleet = shared_fleet("shared", &name);
        let join =
            "resource \"gpufleet_node_join\" \"server\" {\n  sharing_config = \"h100-mps\"\n}\n";
        let mut ws = Workspace::new(cli);
        ws.config_raw(&format!("{provider}{fleet}{join}"));
        let plan = ws.plan();
        let said = flat(&plan.text);
        for warning in [
            NODE_POOL_CRD,
            NODE_OVERLAY_CRD,
            CLASS_KIND,
            NO_READER,
            UNKNOWN_KEY,
        ] {
            assert_eq!(
                said.matches(warning).count(),
                1,
                "{}: {warning:?} once:\n{}",
                cli.name,
                plan.text
            );
        }
        assert!(
            said.contains("Install Karpenter")
                && said.contains("--set settings.featureGates.nodeOverlay=true")
                && said.contains("Install the CRDs of Karpenter's kwok provider")
                && said.contains("Install the NVIDIA GPU Operator")
                && said.contains("(which does not exist)")
                && said.contains("gpufleet_node_sharing writes key `node-NAME`"),
            "{}:\n{}",
            cli.name,
            plan.text
        );
        assert!(!said.contains(CLASS_OBJECT), "{}:\n{}", cli.name, plan.text);

        // Nor a node sharing's key, nor the cluster-wide one (a plan each:
        // Terraform shows one warning of a summary).
        for (sharing, what) in [
            (
                "resource \"gpufleet_node_sharing\" \"n\" {\n  name      = \"bare\"\n  node_name = \"gpu-1\"\n  strategy  = \"time_slicing\"\n  replicas  = 2\n}\n",
                "gpufleet_node_sharing \"bare\" shares its GPUs through key `node-bare`",
            ),
            (
                "resource \"gpufleet_gpu_sharing\" \"default\" {\n  strategy = \"time_slicing\"\n  replicas = 2\n}\n",
                "gpufleet_gpu_sharing (the cluster-wide default) shares its GPUs through key `default`",
            ),
        ] {
            ws.config_raw(&format!("{provider}{sharing}"));
            let said = flat(&ws.plan().text);
            assert!(
                said.contains(NO_READER) && said.contains(what),
                "{}:\n{said}",
                cli.name
            );
        }

        ws.config_raw(&format!("{provider}{fleet}"));
        let failed = flat(&ws.apply_fails());
        assert!(
            failed.contains("karpenter.sh/v1 NodePool is not installed"),
            "{}:\n{failed}",
            cli.name
        );
        assert_eq!(
            cluster.device_plugin_config(),
            None,
            "{}: the key was written",
            cli.name
        );
        assert_eq!(
            ws.state()["values"]["root_module"]["resources"],
            serde_json::Value::Null,
            "{}: state after the failed apply",
            cli.name
        );
    });
}

/// On the test cluster, which has Karpenter's CRDs, the kwok and EC2 node
/// classes' and KWOKNodeClass `default`, with the device-plugin ConfigMap
/// written: no prerequisite warning for a fleet of that class, a warning
/// for a KWOKNodeClass and an EC2NodeClass that do not exist, and for a
/// node join's `sharing_config` that names no key, but none for an
/// existing key or a node sharing's `config_key`, unknown until that is
/// applied.
#[test]
fn present_prerequisites_give_no_warning() {
    // Its node sharing is read through the device-plugin ConfigMap alone, so
    // no other test's ClusterPolicy (one that points the plugin nowhere) may
    // appear while it runs.
    let Some(_no_operator) = common::exclusive::no_gpu_operator(
        "prerequisites present on a cluster without the GPU Operator",
    ) else {
        return;
    };
    let (node, _node) = scratch_node();
    each_cli(|cli| {
        let ns = OperatorNamespace::new("prerequisites");
        let default = "resource \"gpufleet_gpu_sharing\" \"default\" {\n  strategy              = \"none\"\n  manage_cluster_policy = false\n}\n";
        let mut ws = Workspace::new(cli);
        ws.config_with_provider(&ns.provider(), default);
        ws.apply();

        let present = unique_name("present");
        let missing = unique_name("missing-class");
        let ec2 = unique_name("ec2-class");
        let sharing = format!(
            "resource \"gpufleet_node_sharing\" \"n\" {{\n  name      = \"{}\"\n  node_name = \"{node}\"\n  strategy  = \"time_slicing\"\n  replicas  = 2\n  depends_on = [gpufleet_gpu_sharing.default]\n}}\n",
            unique_name("joined")
        );
        let referenced = "resource \"gpufleet_node_join\" \"referenced\" {\n  sharing_config = gpufleet_node_sharing.n.config_key\n}\n";
        let body = format!(
            "{default}{}{}{}{sharing}{referenced}\
             resource \"gpufleet_node_join\" \"unknown\" {{\n  sharing_config = \"h100-mps\"\n}}\n\
             resource \"gpufleet_node_join\" \"existing\" {{\n  sharing_config = \"default\"\n}}\n",
            shared_fleet("present", &present),
            with_class(
                fleet("missing", &missing, "  accelerators = [\"L4\"]\n"),
                "{ group = \"karpenter.kwok.sh\", kind = \"KWOKNodeClass\", name = \"no-such-class\" }",
            ),
            with_class(
                fleet("ec2", &ec2, "  accelerators = [\"L4\"]\n"),
                "{ group = \"karpenter.k8s.aws\", kind = \"EC2NodeClass\", name = \"no-such-class\" }",
            ),
        );
        ws.config_with_provider(&ns.provider(), &body);
        let plan = ws.plan();
        let said = flat(&plan.text);
        for absent in [NODE_POOL_CRD, NODE_OVERLAY_CRD, NO_READER] {
            assert!(
                !said.contains(absent),
                "{}: {absent:?}:\n{}",
                cli.name,
                plan.text
            );
        }
        assert!(
            !said.contains(&format!("fleet {present:?}")),
            "{}: a warning about the fleet that has everything:\n{}",
            cli.name,
            plan.text
        );
        assert_eq!(
            said.matches(CLASS_OBJECT).count(),
            2,
            "{}:\n{}",
            cli.name,
            plan.text
        );
        for (class, fleet) in [
            ("KWOKNodeClass \"no-such-class\"", &missing),
            ("EC2NodeClass \"no-such-class\"", &ec2),
        ] {
            assert!(
                said.contains(&format!(
                    "{class} does not exist, so Karpenter launches no node for fleet \"{fleet}\""
                )),
                "{}: {class}:\n{}",
                cli.name,
                plan.text
            );
        }
        assert!(!said.contains(CLASS_KIND), "{}:\n{}", cli.name, plan.text);
        assert_eq!(
            said.matches(UNKNOWN_KEY).count(),
            1,
            "{}:\n{}",
            cli.name,
            plan.text
        );
        assert!(
            said.contains("Key `h100-mps` is not in ConfigMap")
                && said.contains("whose keys are `default`"),
            "{}:\n{}",
            cli.name,
            plan.text
        );

        // Applied, the node sharing's key is known and in the map.
        ws.config_with_provider(&ns.provider(), &format!("{default}{sharing}{referenced}"));
        ws.apply();
        let key = &ws.resource_values("gpufleet_node_sharing.n")["config_key"];
        let join = ws.resource_values("gpufleet_node_join.referenced");
        assert_eq!(&join["sharing_config"], key);
        // The servers register labelled with it.
        assert_eq!(&join["node_labels"]["nvidia.com/device-plugin.config"], key);
        let plan = ws.plan();
        assert!(!plan.has_changes, "{}:\n{}", cli.name, plan.text);
        assert!(
            !flat(&plan.text).contains("Warning:"),
            "{}:\n{}",
            cli.name,
            plan.text
        );
    });
}

fn scratch_node() -> (String, Guard) {
    let node = unique_name("prerequisites-node");
    let object = Node {
        metadata: ObjectMeta {
            name: Some(node.clone()),
            ..Default::default()
        },
        ..Default::default()
    };
    block_on(async {
        Api::<Node>::all(kube_client().await)
            .create(&PostParams::default(), &object)
            .await
    })
    .unwrap();
    let guard = Guard::of::<Node>(&[&node]);
    (node, guard)
}
