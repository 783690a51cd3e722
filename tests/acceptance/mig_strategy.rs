//! MIG fleets and node sharings on the cluster a team has: the GPU
//! Operator's ClusterPolicy as its Helm chart leaves it (`mig.strategy:
//! single`, a device plugin reading no ConfigMap), whose
//! `spec.mig.strategy` every node's device plugin runs with. Each
//! configuration applies in one go from an empty state, its second plan is
//! empty, and destroy gives the ClusterPolicy back as Helm wrote it. Karpenter
//! launches the fleet's node, the simulated device plugin advertises what
//! NVIDIA's would, and the real scheduler binds a pod requesting the fleet's
//! `gpu_resource`. Each test holds the cluster's one ClusterPolicy
//! (`common::exclusive`).

use common::fixtures::{
    Guard, HelmClusterPolicy, cluster_policy_names, fleet, fleet_nodes_gone, node_pool_api,
    one_pod_on_fleet,
};
use common::terraform::{Cli, Workspace, each_cli};
use common::{block_on, kube_client, unique_name};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::DeleteParams;
use serde_json::json;

fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The cluster-wide sharing that sets `mixed`, which the fleets reference.
const MIXED: &str = "resource \"gpufleet_gpu_sharing\" \"cluster\" {\n  strategy     = \"none\"\n  mig_strategy = \"mixed\"\n}\n";
const REFERENCE: &str = "mig_strategy = gpufleet_gpu_sharing.cluster.mig_strategy, ";
/// The taint of the H100 fleet, which only the test's pod tolerates.
const TAINT: &str = "gpufleet.test/mig";

/// An 8×H100 fleet partitioned `all-1g.10gb` (`extra` goes into its
/// `gpu_sharing`), tainted so that only the test's pod lands there.
fn h100_fleet(name: &str, extra: &str) -> String {
    fleet(
        "h100",
        name,
        &format!(
            "  accelerators      = [\"H100\"]\n  accelerator_count = {{ min = 8, max = 8 }}\n  gpu_sharing       = {{ {extra}strategy = \"mig\", mig_layout = \"all-1g.10gb\" }}\n  taints            = [{{ key = \"{TAINT}\", value = \"{name}\", effect = \"NoSchedule\" }}]\n"
        ),
    )
}

/// An A100 80GB fleet partitioned `all-1g.20gb` and a node sharing
/// partitioning the servers labelled for the test (none here) `all-1g.10gb`.
fn a100_fleet_and_node_sharing(extra: &str) -> String {
    let a100 = fleet(
        "a100",
        &unique_name("a100"),
        &format!(
            "  accelerators               = [\"A100-80GB\"]\n  accelerator_memory_min_gib = 80\n  gpu_sharing                = {{ {extra}strategy = \"mig\", mig_layout = \"all-1g.20gb\" }}\n"
        ),
    );
    let name = unique_name("dgx");
    a100 + &format!(
        "resource \"gpufleet_node_sharing\" \"dgx\" {{\n  name          = \"{name}\"\n  node_selector = {{ \"gpufleet.test/server\" = \"{name}\" }}\n  {}strategy      = \"mig\"\n  mig_layout    = \"all-1g.10gb\"\n}}\n",
        extra.replace(", ", "\n  ")
    )
}

/// A pod requesting one `resource` on fleet `name`, bound by the scheduler
/// to a node Karpenter launched: the node's allocatable of `resource` and
/// of `nvidia.com/gpu`.
async fn schedule_one(client: &kube::Client, name: &str, resource: &str) -> (String, String) {
    let (_, allocatable) = one_pod_on_fleet(client, name, TAINT, resource).await;
    let of = |r: &str| allocatable.get(r).cloned().unwrap_or_default();
    let found = (of(resource), of("nvidia.com/gpu"));
    Api::<Namespace>::all(client.clone())
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    found
}

/// What the H100 fleet's state says its nodes advertise: `gpu_resource`,
/// `gpus_per_node_advertised` and the MIG strategy that decides them.
fn advertised(ws: &Workspace) -> (serde_json::Value, serde_json::Value, serde_json::Value) {
    let values = ws.resource_values("gpufleet_fleet.h100");
    (
        values["gpu_resource"].clone(),
        values["gpus_per_node_advertised"].clone(),
        values["gpu_sharing"]["mig_strategy"].clone(),
    )
}

/// That fleet `name` has no NodePool: nothing was written.
fn assert_no_node_pool(cli: &Cli, name: &str) {
    assert!(
        block_on(async { node_pool_api().await.get_opt(name).await.unwrap() }).is_none(),
        "{}: the NodePool was written",
        cli.name
    );
}

/// The ClusterPolicy's spec as Helm left it, for the comparison after
/// destroy.
fn spec_of(helm: &HelmClusterPolicy) -> serde_json::Value {
    helm.live().data["spec"].clone()
}

/// `gpufleet_gpu_sharing { mig_strategy = "mixed" }` with H100 and A100 MIG
/// fleets and a MIG node sharing, each referencing it: one apply, the H100
/// node advertises `nvidia.com/mig-1g.10gb` ×56, and destroy gives Helm's
/// `single` back.
#[test]
fn mixed_applies_in_one_go() {
    let _only_policy = common::exclusive::own_cluster_policy();
    each_cli(|cli| {
        let helm = HelmClusterPolicy::install(Some("single"));
        let helm_spec = spec_of(&helm);
        let name = unique_name("mig-mixed");
        let _guard = (
            Guard::node_pools(&[&name]),
            Guard::of::<Namespace>(&[&name]),
        );
        let mut ws = Workspace::new(cli);
        ws.config(
            &(MIXED.to_string()
                + &h100_fleet(&name, REFERENCE)
                + &a100_fleet_and_node_sharing(REFERENCE)),
        );
        ws.apply();
        assert_eq!(helm.live().data["spec"]["mig"]["strategy"], "mixed");
        assert_eq!(
            advertised(&ws),
            (json!("nvidia.com/mig-1g.10gb"), json!(56), json!("mixed")),
            "{}",
            cli.name
        );
        assert_eq!(
            ws.resource_values("gpufleet_fleet.a100")["gpu_resource"],
            "nvidia.com/mig-1g.20gb"
        );
        block_on(async {
            let client = kube_client().await;
            let found = schedule_one(&client, &name, "nvidia.com/mig-1g.10gb").await;
            assert_eq!(found, ("56".into(), "0".into()), "{}", cli.name);
        });
        ws.destroy();
        assert_eq!(
            spec_of(&helm),
            helm_spec,
            "{}: not as Helm left it",
            cli.name
        );
        block_on(async { fleet_nodes_gone(&kube_client().await, &name).await });
    });
}

/// The same fleets with no cluster-wide setting, on Helm's `single`: MIG
/// devices are GPUs, `gpu_resource = "nvidia.com/gpu"` with NVIDIA's
/// counts, and a pod requesting it is scheduled there; `all-balanced`
/// (several device types per GPU) is refused at plan, at its path, with
/// NVIDIA's reason.
#[test]
fn single_as_helm_installs_it() {
    let _only_policy = common::exclusive::own_cluster_policy();
    each_cli(|cli| {
        let mut helm = HelmClusterPolicy::install(Some("single"));
        let helm_spec = spec_of(&helm);
        let name = unique_name("mig-single");
        let _guard = (
            Guard::node_pools(&[&name]),
            Guard::of::<Namespace>(&[&name]),
        );
        let mut ws = Workspace::new(cli);
        let balanced = fleet(
            "balanced",
            &unique_name("balanced"),
            "  accelerators = [\"H100\"]\n  gpu_sharing  = { strategy = \"mig\", mig_layout = \"all-balanced\" }\n",
        );
        ws.config(&(h100_fleet(&name, "") + &balanced));
        let out = flat(&ws.apply_fails());
        let refused = out
            .split("Error: ")
            .find(|b| b.contains("with gpufleet_fleet.balanced,"))
            .unwrap_or_else(|| panic!("{}: all-balanced not refused: {out}", cli.name));
        assert!(
            refused.starts_with("MIG layout refused under the single MIG strategy")
                && refused.contains("invalid MIG configuration")
                && refused.contains("internal/rm/device_map.go")
                && refused.contains("gpu_sharing.mig_layout"),
            "{}: {refused}",
            cli.name
        );
        assert_no_node_pool(cli, &name);

        ws.config(&(h100_fleet(&name, "") + &a100_fleet_and_node_sharing("")));
        ws.apply();
        assert_eq!(
            advertised(&ws),
            (json!("nvidia.com/gpu"), json!(56), json!("single")),
            "{}",
            cli.name
        );
        assert_eq!(
            ws.resource_values("gpufleet_fleet.a100")["gpus_per_node_advertised"],
            serde_json::Value::Null
        );
        block_on(async {
            let client = kube_client().await;
            let found = schedule_one(&client, &name, "nvidia.com/gpu").await;
            assert_eq!(found.0, "56", "{}", cli.name);
        });
        // A `helm upgrade` to `mixed` shows in the next plan: the fleet's
        // nodes then advertise MIG devices, and its NodeOverlay must say so.
        helm.helm_upgrade("mixed");
        let plan = ws.assert_plan_changes();
        plan.assert_actions("gpufleet_fleet.h100", &["update"]);
        assert_eq!(
            plan.after("gpufleet_fleet.h100", "gpu_resource"),
            Some(&json!("nvidia.com/mig-1g.10gb")),
            "{}: {}",
            cli.name,
            plan.text
        );
        helm.helm_upgrade("single");
        ws.destroy();
        assert_eq!(spec_of(&helm), helm_spec, "{}", cli.name);
        block_on(async { fleet_nodes_gone(&kube_client().await, &name).await });

        // A strategy set in configuration that the cluster does not run (no
        // gpufleet_gpu_sharing sets it): the apply fails with nothing
        // written rather than make the nodes advertise other than planned.
        ws.config(&h100_fleet(&name, "mig_strategy = \"mixed\", "));
        let out = flat(&ws.apply_fails());
        assert!(
            out.contains("Error: MIG strategy not the cluster's")
                && out.contains("is planned for the MIG strategy `mixed`, but its nodes' device plugin runs with `single`")
                && out.contains("Nothing was written"),
            "{}: {out}",
            cli.name
        );
        assert_no_node_pool(cli, &name);
        ws.destroy();

        // Under `none` NVIDIA's plugin advertises the GPUs whole and none of
        // their MIG devices: it does not refuse it, so neither does the
        // plan, which warns.
        helm.helm_upgrade("none");
        ws.config(&h100_fleet(&name, ""));
        let plan = flat(&ws.plan().text);
        assert!(
            plan.contains("Warning: MIG devices not advertised"),
            "{}: {plan}",
            cli.name
        );
        ws.apply();
        assert_eq!(
            advertised(&ws),
            (json!("nvidia.com/gpu"), json!(8), json!("none")),
            "{}",
            cli.name
        );
        ws.destroy();
    });
}

fn mps_fleet(name: &str, extra: &str) -> String {
    fleet(
        "mps",
        name,
        &format!(
            "  accelerators = [\"L4\"]\n  gpu_sharing  = {{ {extra}strategy = \"mps\", replicas = 4 }}\n"
        ),
    )
}

/// Whether the device-plugin ConfigMap holds `key`.
fn has_key(key: &str) -> bool {
    block_on(async {
        let maps = Api::<ConfigMap>::namespaced(kube_client().await, "gpu-operator");
        maps.get_opt("gpufleet-device-plugin")
            .await
            .unwrap()
            .and_then(|m| m.data)
            .is_some_and(|d| d.contains_key(key))
    })
}

/// MPS next to `mixed`, which NVIDIA's device plugin refuses: with the
/// strategy in the configuration, at plan (a fleet and a node sharing);
/// with `mixed` only in the cluster (here set after the plan), at apply,
/// with nothing written; and destroy still works with `mixed` there, as the
/// plan only warns.
#[test]
fn mps_under_mixed_is_refused() {
    let _only_policy = common::exclusive::own_cluster_policy();
    each_cli(|cli| {
        let mut helm = HelmClusterPolicy::install(Some("single"));
        let name = unique_name("mps");
        let _guard = Guard::node_pools(&[&name]);
        let node_sharing = format!(
            "resource \"gpufleet_node_sharing\" \"mps\" {{\n  name          = \"{}\"\n  node_selector = {{ \"gpufleet.test/server\" = \"none\" }}\n  mig_strategy  = gpufleet_gpu_sharing.cluster.mig_strategy\n  strategy      = \"mps\"\n  replicas      = 4\n}}\n",
            unique_name("mps-node")
        );
        let mut ws = Workspace::new(cli);
        ws.config(&(MIXED.to_string() + &mps_fleet(&name, REFERENCE) + &node_sharing));
        let out = flat(&ws.apply_fails());
        for address in ["gpufleet_fleet.mps", "gpufleet_node_sharing.mps"] {
            assert!(
                out.split("Error: ")
                    .any(|b| b.starts_with("MPS with the mixed MIG strategy")
                        && b.contains(&format!("with {address},"))
                        && b.contains("using --mig-strategy=mixed is not supported with MPS")),
                "{}: {address} not refused at plan: {out}",
                cli.name
            );
        }
        assert_eq!(helm.live().data["spec"]["mig"]["strategy"], "single");

        // Planned on `single`; a helm upgrade sets `mixed` before the apply.
        ws.config(&mps_fleet(&name, ""));
        ws.plan();
        helm.helm_upgrade("mixed");
        let run = ws.run(&["apply", "-no-color", "-input=false", "gpufleet.tfplan"]);
        let out = flat(&(run.stderr + &run.stdout));
        assert!(
            !run.success
                && out.contains("Error: MPS with the mixed MIG strategy")
                && out.contains("Nothing was written"),
            "{}: {out}",
            cli.name
        );
        assert_no_node_pool(cli, &name);
        assert!(!has_key(&format!("fleet-{name}")), "{}", cli.name);
        ws.destroy();
    });
}

/// A half-failed apply: `gpufleet_gpu_sharing` sets `mixed` for a MIG fleet,
/// then an MPS fleet that depends on it only by `depends_on` (so its plan
/// read Helm's `single`) fails before writing. Destroy still works: nothing
/// of gpufleet's is left and the ClusterPolicy is back as Helm wrote it.
#[test]
fn destroy_after_a_half_failed_apply() {
    let _only_policy = common::exclusive::own_cluster_policy();
    each_cli(|cli: &Cli| {
        // What the cluster held before (a GPU Operator's own), besides the
        // test's.
        let held = block_on(async { cluster_policy_names(&kube_client().await).await });
        let helm = HelmClusterPolicy::install(Some("single"));
        let helm_spec = spec_of(&helm);
        let (mig, mps) = (unique_name("mig-half"), unique_name("mps-half"));
        let _guard = Guard::node_pools(&[&mig, &mps]);
        let mps_after = mps_fleet(&mps, "").replacen(
            "  accelerators",
            "  depends_on   = [gpufleet_gpu_sharing.cluster]\n  accelerators",
            1,
        );
        let mut ws = Workspace::new(cli);
        ws.config(&(MIXED.to_string() + &h100_fleet(&mig, REFERENCE) + &mps_after));
        let out = flat(&ws.apply_fails());
        assert!(
            out.contains("Error: MPS with the mixed MIG strategy")
                && out.contains("Nothing was written"),
            "{}: {out}",
            cli.name
        );
        assert_eq!(helm.live().data["spec"]["mig"]["strategy"], "mixed");
        ws.destroy();
        assert_eq!(
            spec_of(&helm),
            helm_spec,
            "{}: not as Helm left it",
            cli.name
        );
        block_on(async {
            let pools = node_pool_api().await;
            for name in [&mig, &mps] {
                assert!(pools.get_opt(name).await.unwrap().is_none(), "{name}");
            }
        });
        for key in [
            format!("fleet-{mig}"),
            format!("fleet-{mps}"),
            "default".into(),
        ] {
            assert!(!has_key(&key), "{}: key {key} left behind", cli.name);
        }
        let mut policies = block_on(async { cluster_policy_names(&kube_client().await).await });
        policies.retain(|name| *name != helm.0);
        assert_eq!(policies, held, "{}: ClusterPolicies", cli.name);
    });
}

/// Sharing on a cluster whose GPU Operator reads no gpufleet ConfigMap
/// (Helm's ClusterPolicy) is never silent, for a fleet and for a node
/// sharing alike: the plan warns and names the fix, the apply refuses
/// before writing anything; with a gpufleet_gpu_sharing they depend on,
/// one apply works.
#[test]
fn sharing_nothing_reads_is_never_silent() {
    let _only_policy = common::exclusive::own_cluster_policy();
    each_cli(|cli| {
        let _helm = HelmClusterPolicy::install(Some("single"));
        let name = unique_name("sliced");
        let _guard = Guard::node_pools(&[&name]);
        let sliced = |extra: &str| {
            fleet(
                "sliced",
                &name,
                &format!(
                    "{extra}  accelerators = [\"L4\"]\n  gpu_sharing  = {{ strategy = \"time_slicing\", replicas = 4 }}\n"
                ),
            )
        };
        let servers_name = unique_name("sliced-servers");
        let servers = |extra: &str| {
            format!(
                "resource \"gpufleet_node_sharing\" \"servers\" {{\n{extra}  name          = \"{servers_name}\"\n  node_selector = {{ \"gpufleet.test/server\" = \"{servers_name}\" }}\n  strategy      = \"time_slicing\"\n  replicas      = 4\n}}\n"
            )
        };
        let mut ws = Workspace::new(cli);
        ws.config(&(sliced("") + &servers("")));
        let plan = flat(&ws.plan().text);
        // One warning each; Terraform folds warnings of one summary into
        // the first, OpenTofu shows both.
        let warning = "Warning: Sharing not read by the device plugin";
        let warned_twice = plan.matches(warning).count() == 2
            || plan.matches(warning).count() == 1
                && plan.contains("(and one more similar warning elsewhere)");
        assert!(
            warned_twice
                && plan.contains("points the device plugin at no ConfigMap")
                && plan.contains("declare a gpufleet_gpu_sharing")
                && plan.contains("--set devicePlugin.config.name=gpufleet-device-plugin,devicePlugin.config.default=default"),
            "{}: {plan}",
            cli.name
        );
        let out = flat(&ws.apply_fails());
        assert!(
            out.matches("Error: Sharing not read by the device plugin")
                .count()
                == 2
                && out.contains("so nothing was written"),
            "{}: {out}",
            cli.name
        );
        assert_no_node_pool(cli, &name);
        assert!(!has_key(&format!("node-{servers_name}")), "{}", cli.name);
        let shared = "resource \"gpufleet_gpu_sharing\" \"cluster\" {\n  strategy = \"none\"\n}\n";
        let after_shared = "  depends_on   = [gpufleet_gpu_sharing.cluster]\n";
        ws.config(&(shared.to_string() + &sliced(after_shared) + &servers(after_shared)));
        ws.apply();
        ws.destroy();
    });
}
