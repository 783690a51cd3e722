//! The seed scenario on real upstream components: the root configuration of
//! examples/training-and-inference applied with the real CLIs, Karpenter's
//! kwok provider turning its fleets into nodes, kube-scheduler placing the
//! workloads that examples/training-and-inference/workloads writes from the
//! configuration's outputs, and kwok playing the kubelet. Needs a cluster
//! started with `testbed/cluster.sh up --karpenter`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::terraform::{Cli, Workspace, clis, each_cli};
use common::tls_bootstrap::{self, JoinMaterial};
use common::{block_on, kube_client, kubeconfig, repo_root, unique_name};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Node, Pod, Secret};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use serde_json::Value;

const EXAMPLE: &str = "examples/training-and-inference";
const SERVER: &str = "simulated-8xh100-server";
const NAMESPACE: &str = "ml";
/// The scenario's fleets and the one instance type each may get
/// (testbed/karpenter/instance-types.json).
const FLEETS: [(&str, &str); 3] = [
    ("training", "h100-8gpu"),
    ("inference", "l4-1gpu"),
    ("general", "cpu-16core"),
];
const TRAINING_GPU_LIMIT: i64 = 64;
/// chat-api's replicas: one L4 time-sliced x4 holds them all.
const CHAT_API_REPLICAS: i64 = 4;
const POOL: &str = "karpenter.sh/nodepool";
const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
const GPU: &str = "nvidia.com/gpu";
/// Fast enough for a test: Karpenter removes empty nodes 5 s after they
/// empty (plus its own 10 s polling and 15 s validation), all at once.
const FAST_DISRUPTION: &str = "consolidate_after = \"5s\"\ndisruption_budget = \"100%\"\n";

// ------------------------------------------------------------------ the scenario

/// The whole scenario with the first CLI; with every other one, the shorter
/// check that apply, an empty second plan, workloads landing and destroy
/// work too. Running it all twice would add about three minutes to every
/// `make test` for no behaviour the first run has not shown: what differs
/// between the CLIs is their side of the protocol, which the short run
/// covers.
#[test]
fn training_and_inference_side_by_side() {
    let _no_policy = common::exclusive::no_cluster_policy();
    let (full, others) = clis().split_first().expect("a CLI");
    block_on(async {
        let client = kube_client().await;
        full_scenario(&client, full).await;
        for cli in others {
            short_scenario(&client, cli).await;
        }
    });
}

async fn full_scenario(client: &Client, cli: &Cli) {
    let mut clock = Phases::new(cli);
    let mut cleanup = Leftovers::scenario();
    reset(client).await;
    let mut cluster = apply_cluster(cli);
    let token = join_server(client, &cluster, &mut cleanup).await;
    wait_fleets_ready(client).await;
    let steps = workload_steps(cli, &cluster);
    clock.phase("apply, empty plan, workloads rendered from the outputs");

    // 1. The seed's workloads land where their selectors, tolerations and
    //    the fleets' requirements allow, on nodes Karpenter creates.
    apply_list(client, &steps["placement"]).await;
    let chat = wait_chat_api(client).await;
    // Time slicing x4: the four 1-GPU replicas share one L4, and Karpenter
    // (planning with the fleet's NodeOverlay) launched one node for them.
    let nodes = node_map(client).await;
    let chat_nodes: BTreeSet<&str> = chat.iter().map(|p| node_of(p).unwrap()).collect();
    assert_eq!(
        chat_nodes.len(),
        1,
        "four replicas on one L4: {chat_nodes:?}"
    );
    let inference_node = &nodes[*chat_nodes.first().unwrap()];
    assert_fleet_node(inference_node, "inference");
    assert_eq!(
        label(inference_node, "cfke.io/accelerator-count"),
        Some("1")
    );
    assert_eq!(
        advertised(inference_node),
        (CHAT_API_REPLICAS, CHAT_API_REPLICAS),
        "the node advertises 1 GPU x 4 replicas (capacity, allocatable)"
    );
    assert_planned_on_one_claim(client, &chat, "inference").await;
    let finetune = wait_for(client, "finetune-llm placed", 120, async || {
        pods(client, "finetune-llm")
            .await
            .into_iter()
            .find(|p| node_of(p).is_some())
    })
    .await;
    let finetune_node = node_of(&finetune).unwrap().to_string();
    let node = node_map(client).await.remove(&finetune_node).unwrap();
    assert_fleet_node(&node, "training");
    assert_eq!(gpus(&node), 8);
    assert_eq!(label(&node, "cfke.io/accelerator-name"), Some("H100"));
    assert_eq!(label(&node, "cfke.io/accelerator-count"), Some("8"));
    let eval = wait_running(client, "eval-on-server").await;
    assert_eq!(
        node_of(&eval),
        Some(SERVER),
        "eval runs on the tainted server"
    );
    let report = wait_running(client, "report-builder").await;
    let node = node_map(client)
        .await
        .remove(node_of(&report).unwrap())
        .unwrap();
    assert_fleet_node(&node, "general");
    assert_eq!(gpus(&node), 0, "a pod without tolerations gets no GPU node");
    // The GPU fleets are tainted, and the untainted fleet has no GPU type.
    let message = karpenter_gave_up(client, "stray-gpu-pod", "").await;
    assert!(
        message.contains("did not tolerate taint")
            && message.contains("no instance type has enough resources"),
        "{message}"
    );
    assert_unplaced(client, "stray-gpu-pod").await;
    let message = karpenter_gave_up(client, "l4-on-training", "").await;
    eprintln!("l4-on-training: {message}");
    assert!(message.contains("incompatible"), "{message}");
    assert_unplaced(client, "l4-on-training").await;
    assert_estates(client).await;
    clock.phase(
        "placement: Karpenter created 1 H100 training node, 1 L4 inference node (4 chat-api pods on its time-sliced GPU), 1 CPU node",
    );

    // 2. finetune-llm succeeds (kwok ends its pod after the 8 s it declares).
    wait_for(client, "finetune-llm to succeed", 120, async || {
        let job = Api::<Job>::namespaced(client.clone(), NAMESPACE)
            .get("finetune-llm")
            .await
            .unwrap();
        (job.status?.succeeded? == 1).then_some(())
    })
    .await;
    clock.phase("finetune-llm succeeded");

    // 3. The training fleet fills up to its 64-GPU limit: 7 pods of
    //    pretrain-70b and a notebook without a priority class.
    apply_list(client, &steps["fill_training_fleet"]).await;
    wait_for(
        client,
        "pretrain-70b and the notebook running",
        120,
        async || {
            let pretrain = pods(client, "pretrain-70b").await;
            let notebook = pods(client, "notebook").await;
            (pretrain.iter().filter(|p| is_running(p)).count() == 7
                && notebook.iter().all(is_running)
                && notebook.len() == 1)
                .then_some(())
        },
    )
    .await;
    let training = fleet_nodes(client, "training").await;
    assert_eq!(training.len(), 8, "64 GPUs are 8 nodes of 8");
    assert_eq!(training.iter().map(gpus).sum::<i64>(), TRAINING_GPU_LIMIT);
    assert_estates(client).await;
    clock.phase("training fleet full: 8 H100 nodes, 64 GPUs");

    // 4. One more training Job: Karpenter may not grow the fleet past its
    //    limit, and batch-training (preemptionPolicy Never) preempts nothing,
    //    not even the notebook at priority 0.
    apply_list(client, &steps["sweep"]).await;
    let sweep = wait_for(client, "sweep-lr created", 60, async || {
        pods(client, "sweep-lr").await.into_iter().next()
    })
    .await;
    let sweep_name = sweep.metadata.name.clone().unwrap();
    let message = karpenter_gave_up(client, &sweep_name, "exceed limits").await;
    assert_never_preempts(client, &sweep_name).await;
    let sweep = pod(client, &sweep_name).await.unwrap();
    assert!(node_of(&sweep).is_none(), "sweep-lr must wait");
    assert_no_nomination(&sweep);
    let notebook = pod(client, "notebook")
        .await
        .expect("notebook not preempted");
    assert!(
        is_running(&notebook) && notebook.metadata.deletion_timestamp.is_none(),
        "a batch-training pod must not preempt the priority-0 notebook"
    );
    assert_eq!(fleet_nodes(client, "training").await.len(), 8, "limit held");
    assert_eq!(fleet_node_claims(client, "training").await, 8, "limit held");
    clock.phase(&format!(
        "limit held, no preemption by training ({message})"
    ));

    // 5. The notebook ends; sweep-lr takes its GPUs.
    delete_pod(client, "notebook").await;
    let sweep = wait_for(client, "sweep-lr running", 60, async || {
        pod(client, &sweep_name).await.filter(is_running)
    })
    .await;
    assert_fleet_node(
        &node_map(client).await[node_of(&sweep).unwrap()],
        "training",
    );
    clock.phase("notebook gone, sweep-lr running in its place");

    // 6. Inference overflowing onto the full training fleet preempts a
    //    training pod; the training pod's replacement waits and never
    //    preempts the inference pod back.
    apply_list(client, &steps["overflow"]).await;
    let overflow = wait_running(client, "chat-api-overflow").await;
    let overflow_node = node_of(&overflow).unwrap().to_string();
    assert_fleet_node(&node_map(client).await[&overflow_node], "training");
    let victim = wait_for(client, "a preemption", 60, async || {
        events(client)
            .await
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("Preempted"))
    })
    .await;
    let victim_name = victim.involved_object.name.clone().unwrap();
    assert!(
        victim_name.starts_with("pretrain-70b-") || victim_name.starts_with("sweep-lr-"),
        "the victim must be a training pod: {victim_name}"
    );
    assert!(
        victim
            .message
            .as_deref()
            .is_some_and(|m| m.contains(&overflow_node)),
        "{victim:?}"
    );
    // The Job controller may replace its pod more than once (a pending
    // extra is deleted first), so any waiting training pod the scheduler has
    // tried stands for the replacement.
    let (replacement, verdict) = wait_for(
        client,
        "the preempted pod's replacement, tried by the scheduler",
        90,
        async || {
            let mut waiting = pods(client, "pretrain-70b").await;
            waiting.extend(pods(client, "sweep-lr").await);
            waiting.into_iter().find_map(|p| {
                let verdict = unschedulable(&p)?;
                (node_of(&p).is_none() && p.metadata.deletion_timestamp.is_none())
                    .then_some((p, verdict))
            })
        },
    )
    .await;
    let replacement_name = replacement.metadata.name.clone().unwrap();
    assert!(
        verdict.contains(NEVER_PREEMPTS),
        "{replacement_name}: the scheduler did not rule out preemption by policy: {verdict}"
    );
    assert_no_nomination(&replacement);
    let overflow_now = pod(client, overflow.metadata.name.as_deref().unwrap())
        .await
        .expect("the inference pod was preempted");
    assert!(is_running(&overflow_now) && node_of(&overflow_now) == Some(&overflow_node));
    assert_eq!(fleet_nodes(client, "training").await.len(), 8, "limit held");
    assert_estates(client).await;
    let placements = placements(client).await;
    clock.phase(&format!(
        "inference preempted {victim_name}; its replacement waits"
    ));

    // Karpenter has been reconciling the NodePools all along (status,
    // hash annotations): the configuration still matches the cluster.
    cluster.assert_plan_empty();

    // 7. Every job finishes and every pod goes: Karpenter removes the empty
    //    nodes of all three fleets.
    start_deleting_namespace(client).await;
    wait_for(
        client,
        "Karpenter to remove every empty fleet node",
        180,
        async || {
            let mut left = 0;
            for (fleet, _) in FLEETS {
                left += fleet_nodes(client, fleet).await.len();
            }
            (left == 0).then_some(())
        },
    )
    .await;
    clock.phase("workloads deleted; Karpenter removed every fleet node");
    wait_namespace_gone(client).await;

    // 8. Destroy leaves nothing behind but what was there before.
    cluster.destroy();
    assert_destroyed(client, &token).await;
    clock.phase("destroyed");
    eprintln!("{placements}");
    clock.done();
}

/// Apply, empty plan, workloads land on their fleets, destroy removes the
/// fleets and with them their nodes.
async fn short_scenario(client: &Client, cli: &Cli) {
    let mut clock = Phases::new(cli);
    let mut cleanup = Leftovers::scenario();
    reset(client).await;
    let mut cluster = apply_cluster(cli);
    let token = join_server(client, &cluster, &mut cleanup).await;
    wait_fleets_ready(client).await;
    let steps = workload_steps(cli, &cluster);
    apply_list(client, &steps["placement"]).await;
    let chat = wait_chat_api(client).await;
    let nodes = node_map(client).await;
    for pod in &chat {
        assert_fleet_node(&nodes[node_of(pod).unwrap()], "inference");
    }
    assert_planned_on_one_claim(client, &chat, "inference").await;
    let finetune = wait_for(client, "finetune-llm placed", 120, async || {
        pods(client, "finetune-llm")
            .await
            .into_iter()
            .find(|p| node_of(p).is_some())
    })
    .await;
    assert_fleet_node(
        &node_map(client).await[node_of(&finetune).unwrap()],
        "training",
    );
    assert_estates(client).await;
    cluster.assert_plan_empty();
    clock.phase("apply, placement, empty plan");
    delete_namespace(client).await;
    cluster.destroy();
    assert_destroyed(client, &token).await;
    clock.phase("destroyed (Karpenter removed the fleets' nodes with them)");
    clock.done();
}

/// chat-api's replicas, each asking for one GPU of the inference fleet.
async fn wait_chat_api(client: &Client) -> Vec<Pod> {
    let what = format!("{CHAT_API_REPLICAS} chat-api pods running");
    wait_for(client, &what, 120, async || {
        let pods = pods(client, "chat-api").await;
        (pods.len() == CHAT_API_REPLICAS as usize && pods.iter().all(is_running)).then_some(pods)
    })
    .await
}

/// Applies the root configuration with fast disruption settings.
fn apply_cluster(cli: &Cli) -> Workspace {
    let mut cluster = Workspace::new(cli);
    cluster
        .config_from(EXAMPLE)
        .env("KUBECONFIG", &kubeconfig())
        .file("terraform.tfvars", FAST_DISRUPTION);
    cluster.apply();
    cluster.assert_plan_empty();
    cluster
}

/// The workloads configuration, applied against the cluster's state: the
/// manifests of each step, by output name.
fn workload_steps(cli: &Cli, cluster: &Workspace) -> BTreeMap<String, String> {
    let mut workloads = Workspace::new(cli);
    // finetune-llm runs 8 s: long enough to be seen, short enough to wait for.
    workloads.config_from(&format!("{EXAMPLE}/workloads")).file(
        "terraform.tfvars",
        &format!(
            "cluster_state = \"{}\"\nfinetune_runs_for = \"8s\"\n",
            cluster.path().join("terraform.tfstate").display()
        ),
    );
    workloads.apply();
    workloads.assert_plan_empty();
    let outputs = workloads.outputs();
    outputs
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, o)| (name.clone(), o["value"].as_str().unwrap().to_string()))
        .collect()
}

// ------------------------------------------- Karpenter's instance types select

/// Karpenter compares a NodePool's requirement only with instance types that
/// define its key. The instance types of the test cluster define the GPU
/// labels on every type (the CPU-only one with DoesNotExist), so a fleet of
/// H100s gets an H100 node even for a pod that a cheaper L4 or CPU node
/// would fit, and a pod that needs an L4 there gets nothing.
#[test]
fn gpu_requirements_select_instance_types() {
    let _no_policy = common::exclusive::no_cluster_policy();
    each_cli(|cli| {
        block_on(async {
            let client = kube_client().await;
            let name = unique_name("h100-only");
            let taint = format!(
                "[{{ key = \"gpufleet.test/select\", value = \"{name}\", effect = \"NoSchedule\" }}]"
            );
            let mut ws = Workspace::new(cli);
            ws.config(&common::fixtures::fleet(
                "h100",
                &name,
                &format!("  accelerators = [\"H100\"]\n  taints = {taint}\n"),
            ));
            ws.apply();
            ws.assert_plan_empty();

            let _cleanup = Leftovers(vec![("namespace", name.clone())]);
            let namespace = Api::<Namespace>::all(client.clone());
            namespace
                .create(
                    &PostParams::default(),
                    &json_as(&format!(
                        r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}"}}}}"#
                    )),
                )
                .await
                .unwrap();
            let pods = Api::<Pod>::namespaced(client.clone(), &name);
            let pod = |pod: &str, gpus: u32, extra_selector: &str| {
                let limits = if gpus > 0 {
                    format!(r#","limits":{{"{GPU}":"{gpus}"}}"#)
                } else {
                    String::new()
                };
                json_as::<Pod>(&format!(
                    r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{pod}"}},"spec":{{
                        "nodeSelector":{{"{POOL}":"{name}"{extra_selector}}},
                        "tolerations":[{{"key":"gpufleet.test/select","operator":"Equal","value":"{name}","effect":"NoSchedule"}}],
                        "containers":[{{"name":"c","image":"registry.example/c:1",
                          "resources":{{"requests":{{"cpu":"1"}}{limits}}}}}]}}}}"#
                ))
            };
            for p in [
                pod("one-gpu", 1, ""),
                pod("no-gpu", 0, ""),
                pod("wants-l4", 1, r#","cfke.io/accelerator-name":"L4""#),
            ] {
                pods.create(&PostParams::default(), &p).await.unwrap();
            }
            for placed in ["one-gpu", "no-gpu"] {
                let p = wait_for(&client, placed, 120, async || {
                    pods.get_opt(placed).await.unwrap().filter(is_running)
                })
                .await;
                let node = Api::<Node>::all(client.clone())
                    .get(node_of(&p).unwrap())
                    .await
                    .unwrap();
                assert_eq!(
                    label(&node, INSTANCE_TYPE),
                    Some("h100-8gpu"),
                    "{placed}: an H100 fleet must not get a cheaper node"
                );
            }
            let refused = wait_for(&client, "Karpenter's verdict on wants-l4", 60, async || {
                karpenter_failure(&client, &name, "wants-l4").await
            })
            .await;
            assert!(refused.contains("incompatible"), "{refused}");
            assert!(node_of(&pods.get("wants-l4").await.unwrap()).is_none());
            let types: BTreeSet<String> = nodes_of_pool(&client, &name)
                .await
                .iter()
                .filter_map(|n| label(n, INSTANCE_TYPE).map(str::to_string))
                .collect();
            assert_eq!(types, BTreeSet::from(["h100-8gpu".to_string()]));

            namespace
                .delete(&name, &DeleteParams::default())
                .await
                .unwrap();
            ws.destroy();
            wait_for(
                &client,
                "the fleet's nodes to go with it",
                120,
                async || nodes_of_pool(&client, &name).await.is_empty().then_some(()),
            )
            .await;
        })
    });
}

// ------------------------------------------------------------------ checks

/// Where pods are allowed, by the taints they tolerate: training pods on
/// training nodes (fleet or the tainted server), inference pods on inference
/// nodes (overflow inference also on training nodes), pods tolerating
/// neither on no GPU node at all; and every fleet node of its one type.
async fn assert_estates(client: &Client) {
    let nodes = node_map(client).await;
    for node in nodes.values() {
        if let Some(fleet) = label(node, POOL)
            && FLEETS.iter().any(|(f, _)| *f == fleet)
        {
            assert_fleet_node(node, fleet);
        }
    }
    let training_gpus: i64 = nodes
        .values()
        .filter(|n| label(n, POOL) == Some("training"))
        .map(gpus)
        .sum();
    assert!(training_gpus <= TRAINING_GPU_LIMIT, "{training_gpus} GPUs");
    for pod in all_pods(client).await {
        let Some(node_name) = node_of(&pod) else {
            continue;
        };
        let node = &nodes[node_name];
        let estate = if node_name == SERVER {
            "training"
        } else {
            label(node, POOL).unwrap_or("none")
        };
        let tolerated: BTreeSet<&str> = pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_ref())
            .into_iter()
            .flatten()
            .filter(|t| t.key.as_deref() == Some("workload"))
            .filter_map(|t| t.value.as_deref())
            .collect();
        let allowed: &[&str] = match tolerated.iter().copied().collect::<Vec<_>>()[..] {
            [] => &["general"],
            ["training"] => &["training"],
            ["inference"] => &["inference"],
            _ => &["training", "inference"],
        };
        let name = pod.metadata.name.as_deref().unwrap();
        assert!(
            allowed.contains(&estate),
            "{name} (tolerates {tolerated:?}) is on {node_name} ({estate})"
        );
        if tolerated.is_empty() {
            assert_eq!(
                gpus(node),
                0,
                "{name} tolerates no GPU taint, but {node_name} has GPUs"
            );
        }
    }
}

/// A node Karpenter created for `fleet`, of the fleet's instance type.
fn assert_fleet_node(node: &Node, fleet: &str) {
    let name = node.metadata.name.as_deref().unwrap();
    assert_eq!(
        label(node, POOL),
        Some(fleet),
        "{name} is not a {fleet} node"
    );
    let expected = FLEETS.iter().find(|(f, _)| *f == fleet).unwrap().1;
    assert_eq!(
        label(node, INSTANCE_TYPE),
        Some(expected),
        "{name} of fleet {fleet} must be a {expected}"
    );
}

async fn assert_unplaced(client: &Client, app: &str) {
    for pod in pods(client, app).await {
        assert!(node_of(&pod).is_none(), "{app} must find no node");
    }
}

/// The scheduler nominates a node only for a pod that preempts.
fn assert_no_nomination(pod: &Pod) {
    let nominated = pod
        .status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref());
    assert!(
        nominated.is_none(),
        "{} was nominated to {nominated:?}: it would preempt",
        pod.metadata.name.as_deref().unwrap()
    );
}

async fn assert_destroyed(client: &Client, token_id: &str) {
    for (fleet, _) in FLEETS {
        assert!(
            live_node_pool(fleet).await.is_none(),
            "NodePool {fleet} left behind"
        );
    }
    for class in ["online-inference", "batch-training"] {
        let live = Api::<PriorityClass>::all(client.clone())
            .get_opt(class)
            .await
            .unwrap();
        assert!(live.is_none(), "PriorityClass {class} left behind");
    }
    wait_for(
        client,
        "the fleets' nodes and NodeClaims to go",
        120,
        async || {
            let mut left = 0;
            for (fleet, _) in FLEETS {
                left +=
                    fleet_nodes(client, fleet).await.len() + fleet_node_claims(client, fleet).await;
            }
            (left == 0).then_some(())
        },
    )
    .await;
    let device_plugin = Api::<ConfigMap>::namespaced(client.clone(), "gpu-operator")
        .get_opt("gpufleet-device-plugin")
        .await
        .unwrap();
    let keys: Vec<String> = device_plugin
        .and_then(|c| c.data)
        .into_iter()
        .flat_map(|d| d.into_keys())
        .collect();
    assert!(
        !keys.contains(&"fleet-inference".to_string()),
        "the inference fleet's device-plugin key left behind: {keys:?}"
    );
    let server = Api::<Node>::all(client.clone()).get(SERVER).await.unwrap();
    let taints: Vec<String> = server
        .spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .into_iter()
        .map(|t| format!("{}={}:{}", t.key, t.value.unwrap_or_default(), t.effect))
        .collect();
    assert_eq!(
        taints,
        [
            "workload=training:NoSchedule",
            "example.com/maintenance-window=sunday:PreferNoSchedule"
        ],
        "the joined server keeps the taints it registered with"
    );
    // Destroy revokes the join token.
    let secret = Api::<Secret>::namespaced(client.clone(), "kube-system")
        .get_opt(&format!("bootstrap-token-{token_id}"))
        .await
        .unwrap();
    assert!(secret.is_none(), "the join token outlives destroy");
    assert!(
        Api::<Namespace>::all(client.clone())
            .get_opt(NAMESPACE)
            .await
            .unwrap()
            .is_none()
    );
}

// ------------------------------------------------------------------ setup

/// Objects (kind, name) a test created outside Terraform, deleted when the
/// test ends, failed or not (through kubectl: no async runtime is needed in
/// `drop`). The scenario also removes its own before it starts.
struct Leftovers(Vec<(&'static str, String)>);

impl Leftovers {
    fn scenario() -> Self {
        Self(vec![
            ("namespace", NAMESPACE.to_string()),
            ("node", SERVER.to_string()),
        ])
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        let kubectl = repo_root().join("target/tools/bin/kubectl");
        for (kind, name) in &self.0 {
            let _ = std::process::Command::new(&kubectl)
                .arg(format!("--kubeconfig={}", kubeconfig()))
                .args(["delete", "--ignore-not-found", "--wait=false", kind, name])
                .output();
        }
    }
}

async fn reset(client: &Client) {
    delete_namespace(client).await;
    let nodes = Api::<Node>::all(client.clone());
    if nodes.get_opt(SERVER).await.unwrap().is_some() {
        nodes
            .delete(SERVER, &DeleteParams::default())
            .await
            .unwrap();
    }
    for (fleet, _) in FLEETS {
        assert!(
            live_node_pool(fleet).await.is_none(),
            "NodePool {fleet} exists: another run of the scenario (or `make demo`) uses this cluster"
        );
    }
}

/// The self-managed GPU server joins with the root configuration's join
/// material, as its kubelet's TLS bootstrap would (common::tls_bootstrap):
/// a Node of simulated-gpu-server.json's labels and status, which kwok then
/// runs, registered already carrying the training taint. Returns the id of
/// the token it joined with.
async fn join_server(client: &Client, cluster: &Workspace, cleanup: &mut Leftovers) -> String {
    let material = JoinMaterial::of(&cluster.output("training_server_join"));
    let manifest =
        std::fs::read_to_string(repo_root().join(EXAMPLE).join("simulated-gpu-server.json"))
            .unwrap();
    let csr = tls_bootstrap::join(&material, &json_as(&manifest)).await;
    cleanup.0.push(("csr", csr));
    let server = Api::<Node>::all(client.clone()).get(SERVER).await.unwrap();
    let training = server
        .spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .into_iter()
        .any(|t| t.key == "workload" && t.value.as_deref() == Some("training"));
    assert!(training, "the server registered with the training taint");
    material.id_and_secret().0.to_string()
}

/// Karpenter marks a NodePool Ready once it has resolved its node class;
/// that it does shows Karpenter runs at all.
async fn wait_fleets_ready(client: &Client) {
    for (fleet, _) in FLEETS {
        wait_for(
            client,
            &format!("NodePool {fleet} Ready (is Karpenter running? `cluster.sh up --karpenter`)"),
            60,
            async || {
                let pool = live_node_pool(fleet).await?;
                pool.data["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    .then_some(())
            },
        )
        .await;
    }
}

/// Creates every object of a Kubernetes List (JSON).
async fn apply_list(client: &Client, list: &str) {
    let list: Value = serde_json::from_str(list).unwrap();
    for item in list["items"].as_array().unwrap() {
        let api_version = item["apiVersion"].as_str().unwrap();
        let kind = item["kind"].as_str().unwrap();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, kind),
            &format!("{}s", kind.to_lowercase()),
        );
        let api: Api<DynamicObject> = match item["metadata"]["namespace"].as_str() {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let object: DynamicObject = serde_json::from_value(item.clone()).unwrap();
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("creating {kind} {:?}: {e}", item["metadata"]["name"]));
    }
}

async fn delete_namespace(client: &Client) {
    start_deleting_namespace(client).await;
    wait_namespace_gone(client).await;
}

async fn start_deleting_namespace(client: &Client) {
    let namespaces = Api::<Namespace>::all(client.clone());
    if namespaces.get_opt(NAMESPACE).await.unwrap().is_some() {
        let _ = namespaces.delete(NAMESPACE, &DeleteParams::default()).await;
    }
}

async fn wait_namespace_gone(client: &Client) {
    let namespaces = Api::<Namespace>::all(client.clone());
    wait_for(client, "namespace ml to go", 120, async || {
        namespaces
            .get_opt(NAMESPACE)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
}

async fn delete_pod(client: &Client, name: &str) {
    Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
}

// ------------------------------------------------------------------ lookups

async fn live_node_pool(name: &str) -> Option<DynamicObject> {
    common::fixtures::node_pool_api()
        .await
        .get_opt(name)
        .await
        .unwrap()
}

fn json_as<T: serde::de::DeserializeOwned>(json: &str) -> T {
    serde_json::from_str(json).unwrap()
}

fn label<'a>(node: &'a Node, key: &str) -> Option<&'a str> {
    node.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// The node's `nvidia.com/gpu` capacity: GPUs, or their shares under sharing.
fn gpus(node: &Node) -> i64 {
    advertised(node).0
}

/// The node's `nvidia.com/gpu` (capacity, allocatable).
fn advertised(node: &Node) -> (i64, i64) {
    let status = node.status.as_ref();
    let of = |list: Option<&BTreeMap<String, Quantity>>| {
        list.and_then(|l| l.get(GPU))
            .map_or(0, |q| q.0.parse().unwrap())
    };
    (
        of(status.and_then(|s| s.capacity.as_ref())),
        of(status.and_then(|s| s.allocatable.as_ref())),
    )
}

fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

fn is_running(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

async fn node_map(client: &Client) -> BTreeMap<String, Node> {
    Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|n| (n.metadata.name.clone().unwrap(), n))
        .collect()
}

async fn nodes_of_pool(client: &Client, pool: &str) -> Vec<Node> {
    Api::<Node>::all(client.clone())
        .list(&ListParams::default().labels(&format!("{POOL}={pool}")))
        .await
        .unwrap()
        .items
}

async fn fleet_nodes(client: &Client, fleet: &str) -> Vec<Node> {
    nodes_of_pool(client, fleet).await
}

fn node_claims(client: &Client) -> Api<DynamicObject> {
    let claims = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("karpenter.sh", "v1", "NodeClaim"),
        "nodeclaims",
    );
    Api::<DynamicObject>::all_with(client.clone(), &claims)
}

async fn fleet_node_claims(client: &Client, fleet: &str) -> usize {
    node_claims(client)
        .list(&ListParams::default().labels(&format!("{POOL}={fleet}")))
        .await
        .unwrap()
        .items
        .len()
}

/// How Karpenter's Nominated events name the NodeClaim it planned a pod on:
/// "Pod should schedule on: nodeclaim/NAME" (", node/NAME" once it has one;
/// karpenter, pkg/controllers/provisioning/scheduling/events.go,
/// NominatePodEvent, published as it creates the NodeClaim for pending pods
/// and for pods it places on one in flight).
const NOMINATED_ON_CLAIM: &str = "Pod should schedule on: nodeclaim/";

/// Karpenter's own record of what it planned for `pods`: every one was
/// nominated, all to one NodeClaim, of `fleet`. Not a count of NodeClaims at
/// some moment, which would also count any node launched while the
/// simulated device plugin had not yet advertised the first one's shares.
async fn assert_planned_on_one_claim(client: &Client, pods: &[Pod], fleet: &str) {
    let uids: BTreeSet<&str> = pods
        .iter()
        .map(|p| p.metadata.uid.as_deref().unwrap())
        .collect();
    let nominated = wait_for(client, "Karpenter's nominations", 60, async || {
        let mut claims: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for event in events(client).await {
            let (Some(uid), Some(message)) = (
                event.involved_object.uid.as_deref(),
                event.message.as_deref(),
            ) else {
                continue;
            };
            if event.reason.as_deref() != Some("Nominated") || !uids.contains(uid) {
                continue;
            }
            if let Some(rest) = message.strip_prefix(NOMINATED_ON_CLAIM) {
                let claim = rest.split(',').next().unwrap().to_string();
                claims.entry(uid.to_string()).or_default().insert(claim);
            }
        }
        (claims.len() == uids.len()).then_some(claims)
    })
    .await;
    let claims: BTreeSet<&String> = nominated.values().flatten().collect();
    assert_eq!(
        claims.len(),
        1,
        "Karpenter planned the pods on several NodeClaims: {nominated:?}"
    );
    let claim = node_claims(client)
        .get(claims.first().unwrap())
        .await
        .unwrap();
    assert_eq!(
        claim
            .metadata
            .labels
            .unwrap_or_default()
            .get(POOL)
            .map(String::as_str),
        Some(fleet),
        "the NodeClaim the pods were nominated to"
    );
}

/// The pods of one workload (label `app`), in the scenario's namespace.
async fn pods(client: &Client, app: &str) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .unwrap()
        .items
}

async fn all_pods(client: &Client) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

async fn pod(client: &Client, name: &str) -> Option<Pod> {
    Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .get_opt(name)
        .await
        .unwrap()
}

async fn events(client: &Client) -> Vec<Event> {
    Api::<Event>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

/// Karpenter's FailedScheduling message for a pod of `namespace`, if any.
async fn karpenter_failure(client: &Client, namespace: &str, pod: &str) -> Option<String> {
    Api::<Event>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|e| {
            e.involved_object.name.as_deref() == Some(pod)
                && e.reason.as_deref() == Some("FailedScheduling")
                && e.source.as_ref().and_then(|s| s.component.as_deref()) == Some("karpenter")
                && e.message.is_some()
        })
        .and_then(|e| e.message)
}

/// Waits until Karpenter has tried, and failed, to find a node for `pod`
/// (a pod name, or the `app` of a single pod), with `expected` in its message.
async fn karpenter_gave_up(client: &Client, pod: &str, expected: &str) -> String {
    wait_for(
        client,
        &format!("Karpenter's verdict on {pod}"),
        60,
        async || {
            karpenter_failure(client, NAMESPACE, pod)
                .await
                .filter(|m| m.contains(expected))
        },
    )
    .await
}

async fn wait_running(client: &Client, app: &str) -> Pod {
    wait_for(client, &format!("{app} running"), 120, async || {
        pods(client, app).await.into_iter().find(is_running)
    })
    .await
}

/// What kube-scheduler's DefaultPreemption plugin says of a pod whose
/// preemptionPolicy is Never, whatever the cluster looks like (kubernetes,
/// pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go:
/// PodEligibleToPreemptOthers, prefixed "preemption: " by PostFilter).
const NEVER_PREEMPTS: &str = "preemption: not eligible due to preemptionPolicy=Never.";

/// The scheduler's verdict on a pod it tried and found no node for, which
/// is also when it decides about preemption: the Unschedulable PodScheduled
/// condition's message, which ends with the preemption plugin's verdict.
fn unschedulable(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.reason.as_deref() == Some("Unschedulable"))?
        .message
        .clone()
}

async fn wait_unschedulable(client: &Client, name: &str) -> String {
    wait_for(client, &format!("{name} unschedulable"), 60, async || {
        unschedulable(&pod(client, name).await?)
    })
    .await
}

/// The scheduler tried `name`, found no node, and ruled preemption out for
/// the pod's own policy: not a moment that passed without a preemption but
/// the scheduler's record that it will not preempt.
async fn assert_never_preempts(client: &Client, name: &str) {
    let verdict = wait_unschedulable(client, name).await;
    assert!(
        verdict.contains(NEVER_PREEMPTS),
        "{name}: the scheduler did not rule out preemption by policy: {verdict}"
    );
}

/// Polls `probe` until it yields a value; on timeout fails with what the
/// cluster looks like.
async fn wait_for<T>(
    client: &Client,
    what: &str,
    seconds: u64,
    mut probe: impl AsyncFnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        if Instant::now() > deadline {
            panic!(
                "timed out after {seconds}s waiting for {what}\n{}",
                placements(client).await
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Nodes by fleet and pods by node: for failure messages and the log.
async fn placements(client: &Client) -> String {
    let nodes = node_map(client).await;
    let mut out = String::from("nodes:\n");
    for (name, node) in &nodes {
        let (capacity, allocatable) = advertised(node);
        out += &format!(
            "  {name}: fleet {}, {}, {} GPUs, {GPU} {capacity} (allocatable {allocatable})\n",
            label(node, POOL).unwrap_or("-"),
            label(node, INSTANCE_TYPE).unwrap_or("-"),
            label(node, "cfke.io/accelerator-count").unwrap_or("0"),
        );
    }
    out += "pods:\n";
    for pod in all_pods(client).await {
        let status = pod.status.as_ref();
        out += &format!(
            "  {}: {} on {}, priority {}\n",
            pod.metadata.name.as_deref().unwrap(),
            status.and_then(|s| s.phase.as_deref()).unwrap_or("-"),
            node_of(&pod).unwrap_or("(no node)"),
            pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0),
        );
    }
    out
}

/// Phase timings, printed as the test goes (visible with --nocapture).
struct Phases {
    cli: &'static str,
    start: Instant,
    last: Instant,
}

impl Phases {
    fn new(cli: &Cli) -> Self {
        eprintln!("scenario with {} {}", cli.name, cli.version);
        let now = Instant::now();
        Self {
            cli: cli.name,
            start: now,
            last: now,
        }
    }

    fn phase(&mut self, what: &str) {
        let now = Instant::now();
        eprintln!(
            "  [{:5.1}s +{:4.1}s] {what}",
            (now - self.start).as_secs_f64(),
            (now - self.last).as_secs_f64()
        );
        self.last = now;
    }

    fn done(&self) {
        eprintln!(
            "scenario with {}: {:.1}s",
            self.cli,
            self.start.elapsed().as_secs_f64()
        );
    }
}
