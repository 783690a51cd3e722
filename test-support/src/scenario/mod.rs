//! The seed scenario on real upstream components, once for the system test
//! (tests/system/scenario.rs) and `make demo` (scripts/demo.rs): the root
//! configuration of examples/training-and-inference applied with a real
//! CLI, Karpenter's kwok provider turning its fleets into nodes,
//! kube-scheduler placing the workloads that
//! examples/training-and-inference/workloads writes from the
//! configuration's outputs, and kwok playing the kubelet. Every step
//! asserts what it shows, in the demo too. Needs a cluster started with
//! `testbed/cluster.sh up --karpenter --kueue` (`--karpenter=aws` for
//! [`Cloud::Ec2`], whose runs have no queues).

mod checks;
mod fleets;
pub mod lookups;
mod narrator;
mod queues;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use serde_json::Value;

use self::checks::{NEVER_PREEMPTS, assert_no_nomination};
use self::fleets::{CHAT_API_REPLICAS, Fleet};
pub use self::fleets::{Cloud, Sharing, karpenter_offers_ec2_types};
use self::lookups::{
    advertised_as, events, gpus, is_running, karpenter_failure, label, limit, live_node_pool,
    node_map, node_of, nodes_of_pool, pod, pods, unschedulable,
};
use self::narrator::Narrator;
pub use self::queues::TEAMS;
use crate::fixtures::Guard;
use crate::repo_root;
use crate::terraform::{Cli, Workspace};
use crate::tls_bootstrap::{self, JoinMaterial};

pub const EXAMPLE: &str = "examples/training-and-inference";
pub const SERVER: &str = "simulated-8xh100-server";
/// Where the workloads run (the workloads configuration's defaults): the
/// training fleets admit both, the inference fleet and class inference's
/// alone, the training class training's alone.
pub const TRAINING_NAMESPACE: &str = "training";
pub const INFERENCE_NAMESPACE: &str = "inference";
/// The workloads configuration makes these, and the end of the work
/// deletes them.
const WORKLOAD_NAMESPACES: [&str; 2] = [TRAINING_NAMESPACE, INFERENCE_NAMESPACE];
/// With the training teams' (the queue steps'), made before the
/// configuration that gives them queues and deleted after it.
pub const NAMESPACES: [&str; 4] = [TRAINING_NAMESPACE, INFERENCE_NAMESPACE, TEAMS[0], TEAMS[1]];
/// The ClusterPolicy the GPU Operator's Helm chart makes
/// ([`crate::helm::cluster_policy`] names it so).
const GPU_OPERATOR_POLICY: &str = "cluster-policy";
const TRAINING_GPU_LIMIT: i64 = 64;
/// Fast enough to watch: Karpenter removes empty nodes 5 s after they
/// empty (plus its own 10 s polling and 15 s validation), all at once.
const FAST_DISRUPTION: &str = "consolidate_after = \"5s\"\ndisruption_budget = \"100%\"\n";
/// finetune-llm's run: long enough to be seen, short enough to wait for.
const FINETUNE_RUNS_FOR: &str = "8s";

/// Whom the scenario runs for.
pub enum Audience {
    /// The system test: workspaces in temporary directories, and in the end
    /// destroy, checked to leave nothing.
    Test(Length),
    /// `make demo`: state in this directory, each step narrated as it
    /// starts, and the fleets left declared on the cluster, which stays up
    /// (`make demo-down` destroys them). A run destroys what an earlier one
    /// declared first.
    Demo(PathBuf),
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// Every step: placement, the training fleet full, its limit held, no
    /// preemption by training, preemption by inference, the training teams'
    /// queues (on the cfke instance types: the EC2 cluster runs no Kueue),
    /// consolidation.
    Full,
    /// Placement and an empty second plan only: what differs between CLIs
    /// is their side of the protocol, which this covers.
    Short,
}

pub struct Scenario {
    cli: Cli,
    kubeconfig: String,
    /// The kubeconfig the provider reads (KUBECONFIG of the CLI runs).
    provider_kubeconfig: String,
    client: Client,
    audience: Audience,
    cloud: Cloud,
    sharing: Sharing,
    story: Narrator,
}

/// The workloads' steps, by output name: each a Kubernetes List (JSON).
pub(crate) type Steps = BTreeMap<String, String>;

impl Scenario {
    /// The scenario with `cli` on the cluster of the admin `kubeconfig`.
    pub async fn new(cli: &Cli, kubeconfig: &str, audience: Audience) -> Self {
        Self {
            cli: cli.clone(),
            kubeconfig: kubeconfig.to_string(),
            provider_kubeconfig: kubeconfig.to_string(),
            client: crate::kube_client_at(kubeconfig).await,
            story: Narrator::new(
                cli,
                matches!(audience, Audience::Demo(_)),
                fleet_names(Cloud::Cfke),
            ),
            audience,
            cloud: Cloud::Cfke,
            sharing: Sharing::TimeSlicing,
        }
    }

    /// The fleets are written for `cloud`'s instance types (the made-up
    /// cfke ones unless told), which the cluster's Karpenter must offer.
    pub fn on(mut self, cloud: Cloud) -> Self {
        self.cloud = cloud;
        self.story.fleets = fleet_names(cloud);
        self
    }

    /// The inference fleet shares its GPUs this way (time slicing unless
    /// told). Only the short run takes other sharing: the full one's later
    /// steps count the seed's L4 shares.
    pub fn with_sharing(mut self, sharing: Sharing) -> Self {
        self.sharing = sharing;
        self
    }

    /// The scenario's fleets on its cloud, with its sharing.
    pub(crate) fn fleets(&self) -> Vec<Fleet> {
        self.cloud.fleets(self.sharing)
    }

    /// The provider reads `kubeconfig` instead of the admin's: the test
    /// runs it as the user bound only to docs/rbac.yaml's roles.
    pub fn with_provider_kubeconfig(mut self, kubeconfig: &str) -> Self {
        self.provider_kubeconfig = kubeconfig.to_string();
        self
    }

    /// Whether the run has the training teams' queues: the full one on the
    /// cfke instance types (the cluster of EC2's runs no Kueue).
    fn queues(&self) -> bool {
        self.length() == Length::Full && self.cloud == Cloud::Cfke
    }

    fn length(&self) -> Length {
        let length = match self.audience {
            Audience::Test(length) => length,
            Audience::Demo(_) => Length::Full,
        };
        assert!(
            length == Length::Short || self.sharing == Sharing::TimeSlicing,
            "the full scenario runs the seed's time slicing"
        );
        length
    }

    /// Waits for `probe`, showing progress in the demo.
    async fn wait<T>(&self, what: &str, seconds: u64, probe: impl AsyncFnMut() -> Option<T>) -> T {
        lookups::wait_showing(&self.client, Some(&self.story), what, seconds, probe).await
    }

    pub async fn play(self) {
        // The test removes what it made outside Terraform however it ends.
        let mut made = matches!(self.audience, Audience::Test(_)).then(|| {
            (
                Guard::of::<Namespace>(&NAMESPACES),
                Guard::of::<Node>(&[SERVER]),
                Guard::of::<CertificateSigningRequest>(&[]),
            )
        });
        self.reset().await;
        let helm_spec = self.install_gpu_operator().await;
        if self.queues() {
            self.make_team_namespaces().await;
        }
        let mut cluster = self.apply_cluster();
        let (token, csr) = self.join_server(&cluster).await;
        if let Some((_, _, csrs)) = &mut made {
            csrs.add(&csr);
        }
        self.wait_fleets_ready().await;
        let mut workloads = self.render_workloads(&cluster);
        let steps = outputs(&workloads);
        self.story
            .phase("apply, empty plan, workloads rendered from the outputs");

        self.placement(&steps).await;
        self.fences().await;
        let full = self.length() == Length::Full;
        if full {
            self.finetune_succeeds().await;
            self.fill_training_fleet(&steps).await;
            let sweep = self.sweep_waits(&steps).await;
            self.sweep_replaces_notebook(&sweep).await;
            self.overflow_preempts(&steps).await;
            if self.queues() {
                self.training_work_ends().await;
                self.queues_share_training_fleet(&steps).await;
            }
            self.story.summary(&self.client).await;
        }
        // Karpenter has been reconciling the NodePools all along (status,
        // hash annotations): the configuration still matches the cluster.
        self.story
            .line("\nA second plan of each configuration is empty:");
        for ws in [&mut cluster, &mut workloads] {
            ws.assert_plan_empty();
            self.story
                .line(&format!("  {}: no changes", ws.path().display()));
        }
        if full {
            self.consolidation().await;
        }

        match &self.audience {
            Audience::Test(_) => {
                self.delete_namespaces(&WORKLOAD_NAMESPACES).await;
                // The workloads read the cluster's state: they go first.
                workloads.destroy();
                cluster.destroy();
                if self.queues() {
                    // Destroy removed the LocalQueues of the teams'
                    // namespaces, which outlive it.
                    self.assert_no_kueue_objects().await;
                    self.delete_namespaces(&TEAMS).await;
                }
                self.assert_destroyed(&token).await;
                self.assert_gpu_operator_restored(&helm_spec).await;
                self.story
                    .phase("destroyed (Karpenter removed the fleets' nodes with them)");
            }
            Audience::Demo(dir) => {
                cluster.assert_plan_empty();
                self.story.line(&format!(
                    "\nThe fleets stay declared (state in {}, KUBECONFIG={}); `make demo-down` removes everything.",
                    dir.display(),
                    self.kubeconfig
                ));
            }
        }
        self.story.done();
    }

    // ---------------------------------------------------------------- the steps

    /// 1. The seed's workloads land where their selectors, tolerations and
    ///    the fleets' requirements allow, on nodes Karpenter creates.
    async fn placement(&self, steps: &Steps) {
        let (resource, gpus_per_node, advertised) = self.sharing.node();
        self.story.step(&format!(
            "1. finetune-llm (8 GPUs, training), chat-api (4 x 1 {resource}, inference: {}), eval-on-server, report-builder (no tolerations), and two pods no node may take",
            self.sharing.describe()
        ));
        self.apply_list(&steps["placement"]).await;
        let chat = self.wait_chat_api().await;
        // The four replicas share one node's GPUs (time slicing or MPS x4
        // on one L4, or MIG devices of 8 H100s), and Karpenter, planning
        // with the fleet's NodeOverlay, launched one node for them.
        let nodes = node_map(&self.client).await;
        let chat_nodes: BTreeSet<&str> = chat.iter().map(|p| node_of(p).unwrap()).collect();
        assert_eq!(
            chat_nodes.len(),
            1,
            "four replicas on {}: {chat_nodes:?}",
            self.sharing.describe()
        );
        let inference_node = &nodes[*chat_nodes.first().unwrap()];
        self.assert_fleet_node(inference_node, "inference");
        let gpu_labels = self.cloud.labels();
        assert_eq!(label(inference_node, gpu_labels.count), Some(gpus_per_node));
        assert_eq!(
            advertised_as(inference_node, resource),
            (advertised, advertised),
            "the node advertises {advertised} {resource} (capacity, allocatable)"
        );
        self.assert_planned_on_one_claim(&chat, "inference").await;
        let finetune = self
            .wait("finetune-llm placed", 120, async || {
                pods(&self.client, "finetune-llm")
                    .await
                    .into_iter()
                    .find(|p| node_of(p).is_some())
            })
            .await;
        let finetune_node = node_of(&finetune).unwrap().to_string();
        let node = node_map(&self.client).await.remove(&finetune_node).unwrap();
        self.assert_fleet_node(&node, "training");
        assert_eq!(gpus(&node), 8);
        assert_eq!(label(&node, gpu_labels.name), Some(self.cloud.h100()));
        assert_eq!(label(&node, gpu_labels.count), Some("8"));
        if let Some((resource, per_node)) = self.cloud.interconnect() {
            assert_eq!(
                limit(&finetune, resource),
                Some(per_node.to_string()),
                "finetune-llm asks for its node's {resource}"
            );
            assert_eq!(advertised_as(&node, resource).1, per_node);
        }
        let eval = self.wait_running("eval-on-server").await;
        assert_eq!(
            node_of(&eval),
            Some(SERVER),
            "eval runs on the tainted server"
        );
        let report = self.wait_running("report-builder").await;
        let node = node_map(&self.client)
            .await
            .remove(node_of(&report).unwrap())
            .unwrap();
        self.assert_fleet_node(&node, "general");
        assert_eq!(gpus(&node), 0, "a pod without tolerations gets no GPU node");
        // The GPU fleets are tainted, and the untainted fleet has no GPU type.
        let message = self.karpenter_gave_up("stray-gpu-pod", "").await;
        assert!(
            message.contains("did not tolerate taint")
                && message.contains("no instance type has enough resources"),
            "{message}"
        );
        self.assert_unplaced("stray-gpu-pod").await;
        let message = self.karpenter_gave_up("one-gpu-on-training", "").await;
        assert!(message.contains("incompatible"), "{message}");
        self.assert_unplaced("one-gpu-on-training").await;
        if self.cloud == Cloud::Ec2 {
            self.spot_training_placed().await;
        }
        self.assert_estates().await;
        self.story.phase(&format!(
            "placement: Karpenter created 1 H100 training node, 1 inference node ({}, holding the 4 chat-api pods), 1 CPU node",
            self.sharing.describe()
        ));
    }

    /// 1b. Only the workloads' namespaces may use the GPU fleets and the
    ///    priority classes: the API server refuses, in `default`, a pod
    ///    copying training's toleration, and in training's namespace a pod
    ///    naming online-inference, which would let it preempt training
    ///    (server-side dry runs: admission runs, nothing is stored). A new
    ///    policy takes about a second to take effect.
    async fn fences(&self) {
        self.story.step(&format!(
            "1b. a pod copying training's toleration in namespace default, and one naming online-inference in namespace {TRAINING_NAMESPACE}: the API server refuses both"
        ));
        let dry_run = PostParams {
            dry_run: true,
            ..Default::default()
        };
        let container =
            serde_json::json!([{"name": "main", "image": "registry.k8s.io/pause:3.10"}]);
        let copying = serde_json::json!({"tolerations": [
            {"key": "workload", "operator": "Equal", "value": "training", "effect": "NoSchedule"},
        ], "containers": container});
        let naming =
            serde_json::json!({"priorityClassName": "online-inference", "containers": container});
        // And the training teams' namespaces, where Kueue gives the teams'
        // jobs the fleet's tolerations.
        let mut training_users = vec![INFERENCE_NAMESPACE, TRAINING_NAMESPACE];
        if self.queues() {
            training_users.extend(TEAMS);
        }
        training_users.sort();
        let training_users: Vec<String> =
            training_users.iter().map(|n| format!("\"{n}\"")).collect();
        let training_fleet_allows = format!("namespaces {};", training_users.join(", "));
        let inference_class_allows = format!("namespace \"{INFERENCE_NAMESPACE}\";");
        for (name, namespace, spec, policy, allowed) in [
            (
                "copies-training",
                "default",
                copying,
                "gpufleet-fleet-training",
                training_fleet_allows,
            ),
            (
                "names-online-inference",
                TRAINING_NAMESPACE,
                naming,
                "gpufleet-class-online-inference",
                inference_class_allows,
            ),
        ] {
            let pods = Api::<Pod>::namespaced(self.client.clone(), namespace);
            let object: Pod = serde_json::from_value(
                serde_json::json!({"metadata": {"name": name}, "spec": spec}),
            )
            .unwrap();
            let refusal = self
                .wait(
                    &format!("{name} refused in {namespace}"),
                    15,
                    async || match pods.create(&dry_run, &object).await {
                        Err(kube::Error::Api(e)) if e.code == 403 => Some(e.message),
                        _ => None,
                    },
                )
                .await;
            assert!(
                refusal.contains(policy)
                    && refusal.contains(&allowed)
                    && refusal.contains(&format!("this workload in namespace {namespace} ")),
                "{name} in {namespace}: {refusal}"
            );
            self.story
                .line(&format!("  {name} in {namespace}: {refusal}"));
        }
        self.story.phase(&format!(
            "fences: the training fleets admit only namespaces {}, online-inference only {INFERENCE_NAMESPACE}",
            training_users.join(", ")
        ));
    }

    /// 2. finetune-llm succeeds (kwok ends its pod after the time it declares).
    async fn finetune_succeeds(&self) {
        self.story.step(&format!(
            "2. finetune-llm runs {FINETUNE_RUNS_FOR} and succeeds"
        ));
        let jobs = Api::<Job>::namespaced(self.client.clone(), TRAINING_NAMESPACE);
        self.wait("finetune-llm to succeed", 120, async || {
            let job = jobs.get("finetune-llm").await.unwrap();
            (job.status?.succeeded? == 1).then_some(())
        })
        .await;
        self.story.phase("finetune-llm succeeded");
    }

    /// 3. The training fleet fills up to its 64-GPU limit: 7 pods of
    ///    pretrain-70b and a notebook without a priority class.
    async fn fill_training_fleet(&self, steps: &Steps) {
        self.story.step(
            "3. pretrain-70b (7 x 8 GPUs) and a notebook without a priority class fill the training fleet to its 64-GPU limit",
        );
        self.apply_list(&steps["fill_training_fleet"]).await;
        self.wait("pretrain-70b and the notebook running", 120, async || {
            let pretrain = pods(&self.client, "pretrain-70b").await;
            let notebook = pods(&self.client, "notebook").await;
            (pretrain.iter().filter(|p| is_running(p)).count() == 7
                && notebook.iter().all(is_running)
                && notebook.len() == 1)
                .then_some(())
        })
        .await;
        let training = nodes_of_pool(&self.client, "training").await;
        assert_eq!(training.len(), 8, "64 GPUs are 8 nodes of 8");
        assert_eq!(training.iter().map(gpus).sum::<i64>(), TRAINING_GPU_LIMIT);
        self.assert_estates().await;
        self.story
            .phase("training fleet full: 8 H100 nodes, 64 GPUs");
    }

    /// 4. One more training Job: Karpenter may not grow the fleet past its
    ///    limit, and batch-training (preemptionPolicy Never) preempts
    ///    nothing, not even the notebook at priority 0. Returns the pod.
    async fn sweep_waits(&self, steps: &Steps) -> String {
        self.story.step(
            "4. sweep-lr (8 GPUs, batch-training) arrives: Karpenter may not exceed the limit, and batch-training never preempts, not even the notebook",
        );
        self.apply_list(&steps["sweep"]).await;
        let sweep = self
            .wait("sweep-lr created", 60, async || {
                pods(&self.client, "sweep-lr").await.into_iter().next()
            })
            .await;
        let sweep_name = sweep.metadata.name.clone().unwrap();
        let message = self.karpenter_gave_up(&sweep_name, "exceed limits").await;
        self.assert_never_preempts(&sweep_name).await;
        let sweep = pod(&self.client, &sweep_name).await.unwrap();
        assert!(node_of(&sweep).is_none(), "sweep-lr must wait");
        assert_no_nomination(&sweep);
        let notebook = pod(&self.client, "notebook")
            .await
            .expect("notebook not preempted");
        assert!(
            is_running(&notebook) && notebook.metadata.deletion_timestamp.is_none(),
            "a batch-training pod must not preempt the priority-0 notebook"
        );
        let training = nodes_of_pool(&self.client, "training").await;
        assert_eq!(training.len(), 8, "limit held");
        let claims = lookups::fleet_node_claims(&self.client, "training").await;
        assert_eq!(claims, 8, "limit held");
        self.story.phase(&format!(
            "limit held, no preemption by training ({message})"
        ));
        sweep_name
    }

    /// 5. The notebook ends; sweep-lr takes its GPUs.
    async fn sweep_replaces_notebook(&self, sweep_name: &str) {
        self.story
            .step("5. the notebook ends; sweep-lr takes its GPUs");
        Api::<Pod>::namespaced(self.client.clone(), TRAINING_NAMESPACE)
            .delete("notebook", &DeleteParams::default())
            .await
            .unwrap();
        let sweep = self
            .wait("sweep-lr running", 60, async || {
                pod(&self.client, sweep_name).await.filter(is_running)
            })
            .await;
        self.assert_fleet_node(
            &node_map(&self.client).await[node_of(&sweep).unwrap()],
            "training",
        );
        self.story
            .phase("notebook gone, sweep-lr running in its place");
    }

    /// 6. Inference overflowing onto the full training fleet preempts a
    ///    training pod; the training pod's replacement waits and never
    ///    preempts the inference pod back.
    async fn overflow_preempts(&self, steps: &Steps) {
        self.story.step(
            "6. chat-api-overflow (inference allowed onto training GPUs) arrives at the full training fleet: it preempts a training pod",
        );
        self.apply_list(&steps["overflow"]).await;
        let overflow = self.wait_running("chat-api-overflow").await;
        let overflow_node = node_of(&overflow).unwrap().to_string();
        self.assert_fleet_node(&node_map(&self.client).await[&overflow_node], "training");
        let victim = self
            .wait("a preemption", 60, async || {
                events(&self.client)
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
        // extra is deleted first), so any waiting training pod the scheduler
        // has tried stands for the replacement.
        let (replacement, verdict) = self
            .wait(
                "the preempted pod's replacement, tried by the scheduler",
                90,
                async || {
                    let mut waiting = pods(&self.client, "pretrain-70b").await;
                    waiting.extend(pods(&self.client, "sweep-lr").await);
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
        let overflow_now = pod(&self.client, overflow.metadata.name.as_deref().unwrap())
            .await
            .expect("the inference pod was preempted");
        assert!(is_running(&overflow_now) && node_of(&overflow_now) == Some(&overflow_node));
        let training = nodes_of_pool(&self.client, "training").await;
        assert_eq!(training.len(), 8, "limit held");
        self.assert_estates().await;
        self.story.phase(&format!(
            "inference preempted {victim_name}; its replacement waits"
        ));
    }

    /// 7 (9 after the queue steps). Every job finishes and every pod goes
    ///    (the teams' namespaces stay, with their queues): Karpenter removes
    ///    the empty nodes of all three fleets.
    async fn consolidation(&self) {
        let step = if self.queues() { 9 } else { 7 };
        self.story.step(&format!(
            "{step}. all work ends: the pods go, and Karpenter removes the empty nodes"
        ));
        let mut of_this_run = BTreeSet::new();
        for fleet in self.fleets() {
            for node in nodes_of_pool(&self.client, fleet.name).await {
                of_this_run.extend(node.metadata.name);
            }
        }
        self.start_deleting_namespaces(&WORKLOAD_NAMESPACES).await;
        if self.queues() {
            self.delete_team_jobs().await;
        }
        self.wait(
            "Karpenter to remove every empty fleet node",
            180,
            async || {
                let mut left = 0;
                for fleet in self.fleets() {
                    left += nodes_of_pool(&self.client, fleet.name).await.len();
                }
                (left == 0).then_some(())
            },
        )
        .await;
        self.story
            .phase("workloads deleted; Karpenter removed every fleet node");
        self.story.disruptions(&self.client, &of_this_run).await;
        self.wait_namespaces_gone(&WORKLOAD_NAMESPACES).await;
    }

    // ---------------------------------------------------------------- setup

    /// A clean start: no workloads, no joined server, no fleets. The demo
    /// first destroys what an earlier run of it declared; anything else
    /// holding the scenario's fleets is an error.
    /// The GPU Operator as its Helm chart installs it on a team's cluster:
    /// its ClusterPolicy, with `mig.strategy: single` and a device plugin
    /// reading no ConfigMap, made unless the cluster has it already. Returns
    /// its spec as found, which destroy must give back.
    async fn install_gpu_operator(&self) -> Value {
        let policies = crate::fixtures::cluster_policies(&self.client);
        if let Some(live) = policies.get_opt(GPU_OPERATOR_POLICY).await.unwrap() {
            return live.data["spec"].clone();
        }
        self.story.step(&format!(
            "the GPU Operator's ClusterPolicy {GPU_OPERATOR_POLICY:?} as its Helm chart installs it (mig.strategy single, the device plugin reading no ConfigMap)"
        ));
        let object = crate::helm::cluster_policy(None);
        crate::helm::install_cluster_policy(&self.client, &object).await;
        policies.get(GPU_OPERATOR_POLICY).await.unwrap().data["spec"].clone()
    }

    /// Destroy gave the ClusterPolicy's fields back as Helm wrote them; the
    /// test then removes the ClusterPolicy it made.
    async fn assert_gpu_operator_restored(&self, helm_spec: &Value) {
        let policies = crate::fixtures::cluster_policies(&self.client);
        let live = policies.get(GPU_OPERATOR_POLICY).await.unwrap();
        assert_eq!(
            &live.data["spec"], helm_spec,
            "destroy did not give the ClusterPolicy back as Helm wrote it"
        );
        policies
            .delete(GPU_OPERATOR_POLICY, &DeleteParams::default())
            .await
            .unwrap();
    }

    async fn reset(&self) {
        self.delete_namespaces(&NAMESPACES).await;
        if let Audience::Demo(dir) = &self.audience
            && dir.join("terraform.tfstate").is_file()
        {
            self.story.step(&format!(
                "destroying what an earlier run declared (state in {})",
                dir.display()
            ));
            let mut earlier = Workspace::kept_in(&self.cli, dir);
            earlier
                .env("KUBECONFIG", &self.provider_kubeconfig)
                .destroy();
            self.wait_fleets_gone().await;
        }
        let nodes = Api::<Node>::all(self.client.clone());
        if nodes.get_opt(SERVER).await.unwrap().is_some() {
            nodes
                .delete(SERVER, &DeleteParams::default())
                .await
                .unwrap();
        }
        for Fleet { name, .. } in self.fleets() {
            assert!(
                live_node_pool(&self.client, name).await.is_none(),
                "NodePool {name} exists: another run of the scenario (or `make demo`) uses this cluster"
            );
        }
    }

    /// A workspace for the configuration in `dir_in_example` of `EXAMPLE`
    /// ("" for its root): the test's own, or the demo's under its directory.
    fn workspace(&self, dir_in_example: &str) -> Workspace {
        let mut ws = match &self.audience {
            Audience::Test(_) => Workspace::new(&self.cli),
            Audience::Demo(dir) => Workspace::kept_in(&self.cli, &dir.join(dir_in_example)),
        };
        ws.config_from(&format!("{EXAMPLE}/{dir_in_example}"));
        ws
    }

    /// Applies the root configuration with fast disruption settings.
    fn apply_cluster(&self) -> Workspace {
        self.story.step(&format!(
            "{} {}: apply {EXAMPLE}",
            self.cli.name, self.cli.version
        ));
        let mut cluster = self.workspace("");
        cluster.env("KUBECONFIG", &self.provider_kubeconfig).file(
            "terraform.tfvars",
            &format!(
                "{FAST_DISRUPTION}{}{}{}",
                self.cloud.tfvars(),
                self.sharing.tfvars(),
                if self.queues() {
                    queues::tfvars()
                } else {
                    String::new()
                }
            ),
        );
        let run = cluster.apply();
        self.story.applied(&run.stdout);
        cluster
    }

    /// The workloads configuration, applied against the cluster's state.
    fn render_workloads(&self, cluster: &Workspace) -> Workspace {
        let mut workloads = self.workspace("workloads");
        workloads.file(
            "terraform.tfvars",
            &format!(
                "cluster_state = \"{}\"\nfinetune_runs_for = \"{FINETUNE_RUNS_FOR}\"\n",
                cluster.path().join("terraform.tfstate").display()
            ),
        );
        workloads.apply();
        workloads
    }

    /// The self-managed GPU server joins with the root configuration's join
    /// material, as its kubelet's TLS bootstrap would (tls_bootstrap): a
    /// Node of simulated-gpu-server.json's labels and status, which kwok
    /// then runs, registered already carrying the training taint. Returns
    /// the id of the token it joined with and the name of its CSR.
    async fn join_server(&self, cluster: &Workspace) -> (String, String) {
        let material = JoinMaterial::of(&cluster.output("training_server_join"));
        let manifest =
            std::fs::read_to_string(repo_root().join(EXAMPLE).join("simulated-gpu-server.json"))
                .unwrap();
        let server: Node = serde_json::from_str(&manifest).unwrap();
        let csr = tls_bootstrap::join(&material, &server).await;
        let server = Api::<Node>::all(self.client.clone())
            .get(SERVER)
            .await
            .unwrap();
        let training = server
            .spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .into_iter()
            .any(|t| t.key == "workload" && t.value.as_deref() == Some("training"));
        assert!(training, "the server registered with the training taint");
        self.story.step(&format!(
            "{SERVER} joined with the training_server_join token (CSR {csr}): registered with the training taint (the maintenance one is its own)"
        ));
        (material.id_and_secret().0.to_string(), csr)
    }

    /// Karpenter marks a NodePool Ready once it has resolved its node class;
    /// that it does shows Karpenter runs at all.
    async fn wait_fleets_ready(&self) {
        for Fleet { name, .. } in self.fleets() {
            self.wait(
                &format!(
                    "NodePool {name} Ready (is Karpenter running? `cluster.sh up --karpenter`)"
                ),
                60,
                async || {
                    let pool = live_node_pool(&self.client, name).await?;
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

    // ---------------------------------------------------------------- actions and waits

    /// Creates every object of a Kubernetes List (JSON).
    async fn apply_list(&self, list: &str) {
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
                Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
                None => Api::all_with(self.client.clone(), &resource),
            };
            let object: DynamicObject = serde_json::from_value(item.clone()).unwrap();
            api.create(&PostParams::default(), &object)
                .await
                .unwrap_or_else(|e| panic!("creating {kind} {:?}: {e}", item["metadata"]["name"]));
            self.story
                .line(&format!("    {kind} {} created", item["metadata"]["name"]));
        }
    }

    async fn delete_namespaces(&self, which: &[&str]) {
        self.start_deleting_namespaces(which).await;
        self.wait_namespaces_gone(which).await;
    }

    async fn start_deleting_namespaces(&self, which: &[&str]) {
        let namespaces = Api::<Namespace>::all(self.client.clone());
        for &namespace in which {
            if namespaces.get_opt(namespace).await.unwrap().is_some() {
                let _ = namespaces.delete(namespace, &DeleteParams::default()).await;
            }
        }
    }

    async fn wait_namespaces_gone(&self, which: &[&str]) {
        let namespaces = Api::<Namespace>::all(self.client.clone());
        let what = format!("namespaces {} to go", which.join(" and "));
        self.wait(&what, 120, async || {
            for &namespace in which {
                if namespaces.get_opt(namespace).await.unwrap().is_some() {
                    return None;
                }
            }
            Some(())
        })
        .await;
    }

    /// chat-api's replicas, each asking for one GPU of the inference fleet.
    async fn wait_chat_api(&self) -> Vec<Pod> {
        let what = format!("{CHAT_API_REPLICAS} chat-api pods running");
        self.wait(&what, 120, async || {
            let pods = pods(&self.client, "chat-api").await;
            (pods.len() == CHAT_API_REPLICAS as usize && pods.iter().all(is_running))
                .then_some(pods)
        })
        .await
    }

    async fn wait_running(&self, app: &str) -> Pod {
        self.wait(&format!("{app} running"), 120, async || {
            pods(&self.client, app).await.into_iter().find(is_running)
        })
        .await
    }

    /// Waits until Karpenter has tried, and failed, to find a node for `pod`
    /// (a pod name, or the `app` of a single pod), with `expected` in its
    /// message.
    async fn karpenter_gave_up(&self, pod: &str, expected: &str) -> String {
        self.wait(&format!("Karpenter's verdict on {pod}"), 60, async || {
            for namespace in NAMESPACES {
                let failure = karpenter_failure(&self.client, namespace, pod).await;
                if failure.as_ref().is_some_and(|m| m.contains(expected)) {
                    return failure;
                }
            }
            None
        })
        .await
    }
}

/// The names of `cloud`'s fleets, whatever the sharing.
fn fleet_names(cloud: Cloud) -> Vec<&'static str> {
    cloud
        .fleets(Sharing::TimeSlicing)
        .iter()
        .map(|f| f.name)
        .collect()
}

/// The workloads' outputs: the manifests of each step, by output name.
fn outputs(workloads: &Workspace) -> Steps {
    workloads
        .outputs()
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, o)| (name.clone(), o["value"].as_str().unwrap().to_string()))
        .collect()
}
