//! The queue steps: two training teams share the 64-GPU training fleet
//! through Kueue (the root configuration's `training_teams`: a
//! `gpufleet_queue` of 32 GPUs each, in one cohort, the fleet a Kueue
//! flavor), their jobs carrying only the queue's label. They run once the
//! training fleet is empty, so Kueue's quota and Karpenter's limit count
//! the same GPUs, while chat-api keeps serving on the inference fleet.
//! Needs Kueue's manager (`cluster.sh up --kueue`).

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use serde_json::Value;

use super::lookups::{
    GPU, POOL, fleet_node_claims, is_running, label, node_map, node_of, nodes_of_pool, pods,
};
use super::{INFERENCE_NAMESPACE, Scenario, Steps, TRAINING_GPU_LIMIT, TRAINING_NAMESPACE};

/// The teams, each in a namespace of its own with a queue of that name.
pub const TEAMS: [&str; 2] = ["team-a", "team-b"];
/// GPUs of the training fleet each team's queue holds: together the
/// fleet's limit.
const TEAM_GPUS: i64 = TRAINING_GPU_LIMIT / 2;
/// The training fleet's flavor is named as the fleet.
const FLAVOR: &str = "training";

/// The root configuration's teams, as tfvars.
pub(crate) fn tfvars() -> String {
    format!(
        "training_teams = {{ {} }}\n",
        TEAMS.map(|t| format!("{t} = {TEAM_GPUS}")).join(", ")
    )
}

pub(crate) fn kueue(kind: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind),
        &format!("{}s", kind.to_lowercase()),
    )
}

/// Whether a status condition of `object` is `type_` with status True.
fn condition(object: &DynamicObject, type_: &str) -> Option<Value> {
    object.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

fn holds(object: &DynamicObject, type_: &str) -> bool {
    condition(object, type_).is_some_and(|c| c["status"] == "True")
}

impl Scenario {
    /// The teams' namespaces, made before the configuration that gives
    /// them queues (a LocalQueue needs its namespace), as a platform makes
    /// a team's namespace.
    pub(crate) async fn make_team_namespaces(&self) {
        let namespaces = Api::<Namespace>::all(self.client.clone());
        for team in TEAMS {
            let namespace: Namespace =
                serde_json::from_value(serde_json::json!({"metadata": {"name": team}})).unwrap();
            namespaces
                .create(&PostParams::default(), &namespace)
                .await
                .unwrap();
        }
        self.story.step(&format!(
            "the training teams' namespaces {}, for their queues",
            TEAMS.join(" and ")
        ));
    }

    /// 7. Training's own work ends (its namespace and chat-api-overflow
    ///    go): Karpenter removes the empty training nodes, so the queues
    ///    start from an empty fleet; chat-api keeps its inference node.
    ///    (Deleting the NodeClaims instead is no faster: Karpenter drains
    ///    and terminates them in about as long.)
    pub(crate) async fn training_work_ends(&self) {
        self.story.step(&format!(
            "7. the work of namespace {TRAINING_NAMESPACE} and chat-api-overflow end: Karpenter removes the empty training nodes; chat-api keeps serving"
        ));
        let _ = Api::<Namespace>::all(self.client.clone())
            .delete(TRAINING_NAMESPACE, &DeleteParams::default())
            .await;
        Api::<Deployment>::namespaced(self.client.clone(), INFERENCE_NAMESPACE)
            .delete("chat-api-overflow", &DeleteParams::default())
            .await
            .unwrap();
        self.wait(
            "Karpenter to remove the empty training nodes",
            180,
            async || {
                (nodes_of_pool(&self.client, "training").await.is_empty()
                    && fleet_node_claims(&self.client, "training").await == 0)
                    .then_some(())
            },
        )
        .await;
        self.story
            .phase("training fleet empty; chat-api still serving");
    }

    /// 8. The teams' queues on the empty training fleet: team A's jobs run
    ///    within its GPUs and on team B's idle ones, on nodes Karpenter
    ///    creates for them alone; one more waits suspended beyond the
    ///    cohort's 64 GPUs, with no pod and so no node; team B's job
    ///    reclaims B's GPUs by preempting team A's borrowing job, and runs
    ///    on the training fleet. Inference is untouched throughout.
    pub(crate) async fn queues_share_training_fleet(&self, steps: &Steps) {
        let [a, b] = TEAMS;
        let serving = self.chat_api_serving().await;
        let inference_nodes = self.pool_node_names("inference").await;

        self.story.step(&format!(
            "8. {a}-pretrain ({TEAM_GPUS} GPUs) in queue {a}: the Job carries only the queue's label, and Kueue admits it within {a}'s {TEAM_GPUS} GPUs"
        ));
        let pretrain = format!("{a}-pretrain");
        self.apply_queued(&steps["queues_within_quota"]).await;
        let within = self.wait_admitted(a, &pretrain).await;
        // Kueue evicts the most recently admitted first: the borrowing job
        // is admitted in a later second (condition times are in seconds).
        let admitted: Time = serde_json::from_value(
            condition(&within, "QuotaReserved").unwrap()["lastTransitionTime"].clone(),
        )
        .unwrap();
        let next_second = admitted.0 + jiff::SignedDuration::from_secs(1);
        self.wait("the next second", 2, async || {
            (jiff::Timestamp::now() >= next_second).then_some(())
        })
        .await;

        self.story.step(&format!(
            "8b. {a}-ablation ({TEAM_GPUS} GPUs more): {a} borrows {b}'s idle GPUs"
        ));
        let ablation = format!("{a}-ablation");
        self.apply_queued(&steps["queues_borrow"]).await;
        self.wait_admitted(a, &ablation).await;
        let per_job = TEAM_GPUS / 8;
        let running = self
            .wait_queued_running(a, &[&pretrain, &ablation], 2 * per_job)
            .await;
        self.assert_placed_by_flavor(&running).await;
        assert_eq!(
            self.borrowed(a).await,
            TEAM_GPUS,
            "{a} borrows {b}'s {TEAM_GPUS} GPUs"
        );
        // Karpenter made one node per admitted pod, no more.
        let nodes: BTreeSet<String> = running
            .iter()
            .map(|p| node_of(p).unwrap().to_string())
            .collect();
        assert_eq!(nodes.len(), running.len(), "one 8-GPU node per pod");
        assert_eq!(
            self.pool_node_names("training").await,
            nodes,
            "training nodes are the admitted pods' alone"
        );
        self.story.phase(&format!(
            "{a} runs {} GPUs ({TEAM_GPUS} borrowed from {b}) on {} training nodes Karpenter created for the admitted pods",
            2 * TEAM_GPUS,
            nodes.len()
        ));

        self.story.step(&format!(
            "8c. {a}-sweep (8 GPUs) beyond the cohort's {TRAINING_GPU_LIMIT}: it stays suspended, with no pod, so no NodeClaim and no node"
        ));
        let sweep = format!("{a}-sweep");
        self.apply_queued(&steps["queues_beyond_cohort"]).await;
        let verdict = self.wait_pending(a, &sweep).await;
        self.assert_suspended(a, &sweep).await;
        assert_eq!(
            fleet_node_claims(&self.client, "training").await,
            nodes.len(),
            "no NodeClaim for a suspended job"
        );
        assert_eq!(
            self.pool_node_names("training").await,
            nodes,
            "no node for a suspended job"
        );
        self.story.phase(&format!("{sweep} suspended: {verdict}"));

        self.story.step(&format!(
            "8d. {b}-pretrain ({TEAM_GPUS} GPUs) in queue {b}: Kueue reclaims {b}'s GPUs by preempting {a}'s borrowing job"
        ));
        let reclaiming = format!("{b}-pretrain");
        self.apply_queued(&steps["queues_reclaim"]).await;
        let preempted = self
            .wait(&format!("Kueue to preempt a job of {a}"), 60, async || {
                self.workloads(a).await.into_iter().find(|w| {
                    condition(w, "Preempted").is_some_and(|c| {
                        c["status"] == "True" && c["reason"] == "InCohortReclamation"
                    })
                })
            })
            .await;
        let preempted_job = job_of(&preempted);
        assert_eq!(
            preempted_job, ablation,
            "Kueue evicts the job admitted last: the borrowing one"
        );
        self.wait_admitted(b, &reclaiming).await;
        let b_running = self.wait_queued_running(b, &[&reclaiming], per_job).await;
        self.assert_placed_by_flavor(&b_running).await;
        self.assert_suspended(a, &ablation).await;
        self.assert_suspended(a, &sweep).await;
        let a_running = self.wait_queued_running(a, &[&pretrain], per_job).await;
        assert_eq!(self.borrowed(a).await, 0, "{a} back within its GPUs");
        let claims = fleet_node_claims(&self.client, "training").await;
        assert!(
            claims <= nodes.len(),
            "{claims} training NodeClaims: the limit held"
        );

        // Inference untouched: the same pods on the same nodes.
        assert_eq!(
            self.chat_api_serving().await,
            serving,
            "chat-api was disturbed"
        );
        assert_eq!(self.pool_node_names("inference").await, inference_nodes);
        self.assert_estates().await;
        self.story.phase(&format!(
            "{b} reclaimed its GPUs: Kueue preempted {preempted_job}; {reclaiming} ({} pods) and {pretrain} ({} pods) run on the training fleet; chat-api untouched",
            b_running.len(),
            a_running.len()
        ));
    }

    /// The teams' Jobs go (their pods with them); the teams' namespaces
    /// stay with their queues.
    pub(crate) async fn delete_team_jobs(&self) {
        for team in TEAMS {
            Api::<Job>::namespaced(self.client.clone(), team)
                .delete_collection(&DeleteParams::background(), &ListParams::default())
                .await
                .unwrap();
        }
    }

    /// Destroy left no ResourceFlavor, ClusterQueue or LocalQueue of the
    /// teams'.
    pub(crate) async fn assert_no_kueue_objects(&self) {
        let ours: BTreeSet<&str> = TEAMS.iter().copied().chain([FLAVOR]).collect();
        for kind in ["ResourceFlavor", "ClusterQueue", "LocalQueue"] {
            let left: Vec<String> =
                Api::<DynamicObject>::all_with(self.client.clone(), &kueue(kind))
                    .list(&ListParams::default())
                    .await
                    .unwrap()
                    .items
                    .into_iter()
                    .filter_map(|o| o.metadata.name)
                    .filter(|n| ours.contains(n.as_str()))
                    .collect();
            assert!(left.is_empty(), "{kind}s left behind: {left:?}");
        }
    }

    // ------------------------------------------------------------ helpers

    /// Creates a queued Job, checking it names nothing of the fleet.
    async fn apply_queued(&self, list: &str) {
        let parsed: Value = serde_json::from_str(list).unwrap();
        let items = parsed["items"].as_array().unwrap();
        assert_eq!(items.len(), 1, "{list}");
        let spec = &items[0]["spec"]["template"]["spec"];
        assert!(
            spec.get("nodeSelector").is_none()
                && spec.get("tolerations").is_none()
                && spec.get("priorityClassName").is_none(),
            "a queued job carries only the queue's label: {spec}"
        );
        self.apply_list(list).await;
    }

    async fn workloads(&self, team: &str) -> Vec<DynamicObject> {
        Api::<DynamicObject>::namespaced_with(self.client.clone(), team, &kueue("Workload"))
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
    }

    async fn workload(&self, team: &str, job: &str) -> Option<DynamicObject> {
        self.workloads(team)
            .await
            .into_iter()
            .find(|w| job_of(w) == job)
    }

    /// Waits for Kueue to admit `job`'s Workload in the team's queue, to
    /// the training fleet's flavor.
    async fn wait_admitted(&self, team: &str, job: &str) -> DynamicObject {
        let workload = self
            .wait(&format!("Kueue to admit {job}"), 60, async || {
                let w = self.workload(team, job).await?;
                (holds(&w, "QuotaReserved") && holds(&w, "Admitted")).then_some(w)
            })
            .await;
        let admission = &workload.data["status"]["admission"];
        assert_eq!(admission["clusterQueue"], team, "{job}: {admission}");
        assert_eq!(
            admission["podSetAssignments"][0]["flavors"][GPU], FLAVOR,
            "{job}: {admission}"
        );
        workload
    }

    /// Waits for Kueue's verdict that `job` does not fit: its Workload
    /// pending, no quota reserved. Returns Kueue's message.
    async fn wait_pending(&self, team: &str, job: &str) -> String {
        let verdict = self
            .wait(&format!("Kueue's verdict on {job}"), 60, async || {
                let w = self.workload(team, job).await?;
                let reserved = condition(&w, "QuotaReserved")?;
                (reserved["status"] == "False" && reserved["reason"] == "Pending")
                    .then(|| reserved["message"].as_str().unwrap_or_default().to_string())
            })
            .await;
        assert!(
            verdict.contains("insufficient unused quota"),
            "{job}: {verdict}"
        );
        verdict
    }

    /// The Job is suspended and has no pod, and its Workload holds no quota.
    async fn assert_suspended(&self, team: &str, job: &str) {
        let jobs = Api::<Job>::namespaced(self.client.clone(), team);
        self.wait(&format!("{job} suspended, without pods"), 60, async || {
            let live = jobs.get(job).await.unwrap();
            let suspended = live.spec.as_ref()?.suspend == Some(true);
            let pods = Api::<Pod>::namespaced(self.client.clone(), team)
                .list(&ListParams::default().labels(&format!("app={job}")))
                .await
                .unwrap()
                .items;
            (suspended && pods.is_empty()).then_some(())
        })
        .await;
        let workload = self.workload(team, job).await.unwrap();
        assert!(
            !holds(&workload, "QuotaReserved") && !holds(&workload, "Admitted"),
            "{job}: {:?}",
            workload.data["status"]
        );
    }

    /// Waits until the team's `jobs` run `count` pods in all, each on a
    /// training node.
    async fn wait_queued_running(&self, team: &str, jobs: &[&str], count: i64) -> Vec<Pod> {
        let running = self
            .wait(
                &format!("{} running", jobs.join(" and ")),
                120,
                async || {
                    let mut running = Vec::new();
                    for job in jobs {
                        running
                            .extend(pods(&self.client, job).await.into_iter().filter(is_running));
                    }
                    (running.len() as i64 == count).then_some(running)
                },
            )
            .await;
        let nodes = node_map(&self.client).await;
        for pod in &running {
            assert_eq!(pod.metadata.namespace.as_deref(), Some(team));
            self.assert_fleet_node(&nodes[node_of(pod).unwrap()], "training");
        }
        running
    }

    /// Kueue gave the admitted pods the training fleet's node selector and
    /// tolerations (the fleet's flavor), which their Jobs did not name.
    async fn assert_placed_by_flavor(&self, running: &[Pod]) {
        for pod in running {
            let spec = pod.spec.as_ref().unwrap();
            let selector = spec.node_selector.clone().unwrap_or_default();
            assert_eq!(
                selector.get(POOL).map(String::as_str),
                Some("training"),
                "{:?}",
                pod.metadata.name
            );
            assert!(
                spec.tolerations
                    .iter()
                    .flatten()
                    .any(|t| t.key.as_deref() == Some("workload")
                        && t.value.as_deref() == Some("training")),
                "{:?}: no training toleration",
                pod.metadata.name
            );
        }
    }

    /// The GPUs the team's ClusterQueue borrows from its cohort.
    async fn borrowed(&self, team: &str) -> i64 {
        let queue = Api::<DynamicObject>::all_with(self.client.clone(), &kueue("ClusterQueue"))
            .get(team)
            .await
            .unwrap();
        queue.data["status"]["flavorsUsage"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["name"] == FLAVOR)
            .flat_map(|f| f["resources"].as_array().cloned().unwrap_or_default())
            .filter(|r| r["name"] == GPU)
            .map(|r| r["borrowed"].as_str().map_or(0, |q| q.parse().unwrap()))
            .sum()
    }

    /// chat-api's pods, by uid, and their nodes: all running.
    async fn chat_api_serving(&self) -> BTreeSet<(String, String)> {
        let pods = pods(&self.client, "chat-api").await;
        assert!(pods.iter().all(is_running), "chat-api not serving");
        pods.iter()
            .map(|p| {
                (
                    p.metadata.uid.clone().unwrap(),
                    node_of(p).unwrap().to_string(),
                )
            })
            .collect()
    }

    async fn pool_node_names(&self, pool: &str) -> BTreeSet<String> {
        nodes_of_pool(&self.client, pool)
            .await
            .into_iter()
            .filter(|n| label(n, POOL) == Some(pool))
            .filter_map(|n| n.metadata.name)
            .collect()
    }
}

/// The Job a Workload stands for (its owner).
fn job_of(workload: &DynamicObject) -> String {
    workload
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.kind == "Job")
        .map(|o| o.name.clone())
        .unwrap_or_default()
}
