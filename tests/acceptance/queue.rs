//! `gpufleet_queue` and a fleet's `kueue_flavor` through the real terraform
//! and tofu CLIs, against the real API server with Kueue's real manager
//! (`cluster.sh up --kueue`): a job naming only its queue is held, then
//! admitted onto the fleet with the fleet's selector and tolerations.

use std::time::{Duration, Instant};

use common::fixtures::{
    RUNS_FOR_AN_HOUR, TRAINING, TestNamespace, class, fleet, kubectl_apply, kueue, kueue_running,
    live_job, live_node_pool, queue as queue_of, quota, wait_for_job,
};
use common::terraform::{ImportBy, Workspace, each_cli, each_identity_cli};
use common::{block_on, kube_client, unique_name};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::json;

fn live(kind: &str, plural: &str, namespace: Option<&str>, name: &str) -> Option<DynamicObject> {
    block_on(async {
        let client = kube_client().await;
        let resource = kueue(kind, plural);
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(client, ns, &resource),
            None => Api::all_with(client, &resource),
        };
        api.get_opt(name).await.unwrap()
    })
}

/// A Job of one pod asking for `gpus` GPUs that carries only the queue's
/// label: no node selector, no toleration.
fn queued_job(namespace: &str, name: &str, queue: &str, gpus: u32) {
    queued_job_of_class(namespace, name, queue, gpus, None);
}

/// [`queued_job`], its pods of priority class `class`.
fn queued_job_of_class(namespace: &str, name: &str, queue: &str, gpus: u32, class: Option<&str>) {
    let class = class
        .map(|c| format!("\n      priorityClassName: {c}"))
        .unwrap_or_default();
    let annotations: String = RUNS_FOR_AN_HOUR
        .iter()
        .map(|(key, value)| format!("\n        {key}: {value:?}"))
        .collect();
    kubectl_apply(&format!(
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: {namespace}
  labels:
    kueue.x-k8s.io/queue-name: {queue}
spec:
  template:
    metadata:
      annotations:{annotations}
    spec:
      restartPolicy: Never{class}
      containers:
        - name: train
          image: trainer
          resources:
            requests: {{ cpu: "1", memory: 1Gi, nvidia.com/gpu: "{gpus}" }}
            limits: {{ nvidia.com/gpu: "{gpus}" }}
"#
    ));
}

/// Waits until Kueue has no Workload left in `namespace` (the garbage
/// collector deletes a deleted Job's).
fn wait_for_no_workloads(namespace: &str) {
    let start = Instant::now();
    loop {
        let left = block_on(async {
            let api: Api<DynamicObject> = Api::namespaced_with(
                kube_client().await,
                namespace,
                &kueue("Workload", "workloads"),
            );
            api.list(&Default::default()).await.unwrap().items.len()
        });
        if left == 0 {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{left} workloads left in {namespace}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn delete_job(namespace: &str, name: &str) {
    block_on(async {
        Api::<Job>::namespaced(kube_client().await, namespace)
            .delete(name, &DeleteParams::background())
            .await
            .unwrap();
    });
}

/// A test's training fleet offered to Kueue, its queue (in a cohort of
/// its own) and the namespace the queue serves, made here and removed when
/// dropped.
struct Team {
    fleet: String,
    queue: String,
    namespace: TestNamespace,
}

impl Team {
    /// Names `<prefix>-fleet`, `<prefix>-team` and `<prefix>-ns`, unique.
    fn new(prefix: &str) -> Self {
        Self {
            fleet: unique_name(&format!("{prefix}-fleet")),
            queue: unique_name(&format!("{prefix}-team")),
            namespace: TestNamespace::new(&format!("{prefix}-ns")),
        }
    }

    /// The fleet, with `fleet_extra` lines, and the queue with `quotas`
    /// and `extra` lines.
    fn config_with(&self, fleet_extra: &str, quotas: &[String], extra: &str) -> String {
        fleet(
            "training",
            &self.fleet,
            &format!("{TRAINING}  kueue_flavor = true\n{fleet_extra}"),
        ) + &queue_of(
            "team",
            &self.queue,
            &self.namespace.0,
            quotas,
            &format!("  cohort     = \"{}-cohort\"\n{extra}", self.queue),
        )
    }

    /// The fleet, and the queue with a quota of `gpus` on it lending 8,
    /// and `extra` lines.
    fn config(&self, gpus: u32, extra: &str) -> String {
        self.config_with("", &[quota("training", gpus, "lending_limit = 8")], extra)
    }
}

#[test]
fn a_queued_job_is_held_then_admitted_onto_the_fleet_and_the_queue_updates_in_place() {
    if !kueue_running("queue lifecycle") {
        return;
    }
    each_cli(|cli| {
        let team = Team::new("q");
        let (fleet_name, queue, ns) = (&team.fleet, &team.queue, &team.namespace.0);
        let mut ws = Workspace::new(cli);
        ws.config(&team.config(8, ""));
        ws.apply();
        assert_eq!(
            ws.resource_values("gpufleet_queue.team")["queue_label"],
            json!({"kueue.x-k8s.io/queue-name": queue})
        );
        let flavor = live("ResourceFlavor", "resourceflavors", None, fleet_name)
            .expect("the fleet's flavor");
        assert_eq!(
            flavor.data["spec"]["nodeLabels"],
            json!({"karpenter.sh/nodepool": fleet_name})
        );
        let cq = live("ClusterQueue", "clusterqueues", None, queue).expect("the ClusterQueue");
        let gpu = &cq.data["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0];
        assert_eq!(gpu["name"], "nvidia.com/gpu");
        assert_eq!(gpu["nominalQuota"], "8");
        assert!(live("LocalQueue", "localqueues", Some(ns), queue).is_some());

        // A job beyond the quota is held (suspended: no pod), one within it
        // admitted with the fleet's node selector and toleration.
        queued_job(ns, "big", queue, 16);
        queued_job(ns, "fits", queue, 8);
        let fits = wait_for_job(ns, "fits", "was admitted", |j| {
            j.spec.as_ref().and_then(|s| s.suspend) == Some(false)
        });
        let pod = fits.spec.unwrap().template.spec.unwrap();
        assert_eq!(
            &pod.node_selector.unwrap()["karpenter.sh/nodepool"],
            fleet_name
        );
        let toleration = &pod.tolerations.unwrap()[0];
        assert_eq!(toleration.key.as_deref(), Some("workload"));
        assert_eq!(toleration.value.as_deref(), Some("training"));
        assert_eq!(live_job(ns, "big").spec.unwrap().suspend, Some(true));

        // A quota edited by hand shows in the plan and is put back.
        block_on(async {
            let api: Api<DynamicObject> =
                Api::all_with(kube_client().await, &kueue("ClusterQueue", "clusterqueues"));
            let mut resources =
                cq.data["spec"]["resourceGroups"][0]["flavors"][0]["resources"].clone();
            resources[0]["nominalQuota"] = json!("16");
            let patch = json!({"spec": {"resourceGroups": [{
                "coveredResources": cq.data["spec"]["resourceGroups"][0]["coveredResources"],
                "flavors": [{"name": fleet_name, "resources": resources}],
            }]}});
            api.patch(queue, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        });
        let plan = ws.assert_plan_changes();
        plan.assert_actions("gpufleet_queue.team", &["update"]);
        assert!(
            plan.text.contains("gpus") && plan.text.contains("16 -> 8"),
            "{}: the hand-edited quota does not show:\n{}",
            cli.name,
            plan.text
        );
        ws.apply();

        // Raising the quota is an update in place, and admits the held job.
        ws.config(&team.config(24, ""));
        ws.assert_plan_changes()
            .assert_actions("gpufleet_queue.team", &["update"]);
        ws.apply();
        wait_for_job(ns, "big", "was admitted after the quota grew", |j| {
            j.spec.as_ref().and_then(|s| s.suspend) == Some(false)
        });

        // Destroy while workloads are admitted: Kueue keeps the queue, and
        // the error names them within the queue's delete timeout.
        ws.config(&team.config(24, "  timeouts = { delete = \"3s\" }\n"));
        ws.apply();
        let run = ws.run(&["destroy", "-auto-approve", "-no-color", "-input=false"]);
        assert!(
            !run.success,
            "{}: destroy went through:\n{}",
            cli.name, run.stdout
        );
        let said = run.stderr.replace('\n', " ");
        assert!(
            said.contains("Kueue still holds") && said.contains(&format!("{ns}/job-big")),
            "{}: the error does not name the admitted workloads:\n{}",
            cli.name,
            run.stderr
        );
        assert!(
            live("ResourceFlavor", "resourceflavors", None, fleet_name).is_some(),
            "the fleet went before its queue"
        );
        // Once the jobs are gone, the queue, its LocalQueue, the flavor and
        // the fleet go.
        delete_job(ns, "big");
        delete_job(ns, "fits");
        wait_for_no_workloads(ns);
        ws.destroy();
        assert!(live("ClusterQueue", "clusterqueues", None, queue).is_none());
        assert!(live("LocalQueue", "localqueues", Some(ns), queue).is_none());
        assert!(live("ResourceFlavor", "resourceflavors", None, fleet_name).is_none());
    });
}

#[test]
fn import_by_name_and_identity_gives_an_empty_plan() {
    if !kueue_running("queue import") {
        return;
    }
    each_cli(|cli| {
        let team = Team::new("qi");
        let (fleet_name, queue) = (&team.fleet, &team.queue);
        let mut ws = Workspace::new(cli);
        ws.config(&team.config(16,
            "  preemption = { reclaim_within_cohort = \"Any\", within_queue = \"LowerPriority\" }\n",
        ));
        ws.apply();
        for by in [ImportBy::Command, ImportBy::Block] {
            ws.assert_import_verifies(
                &[
                    ("gpufleet_fleet.training", fleet_name),
                    ("gpufleet_queue.team", queue),
                ],
                by,
                &[],
            );
        }
        ws.destroy();
    });
    each_identity_cli(|cli| {
        let team = Team::new("qid");
        let (fleet_name, queue) = (&team.fleet, &team.queue);
        let mut ws = Workspace::new(cli);
        ws.config(&team.config(16, ""));
        ws.apply();
        assert_eq!(
            ws.resource("gpufleet_queue.team")["identity"],
            json!({"name": queue})
        );
        let identity = |name: &str| format!("{{ name = \"{name}\" }}");
        ws.assert_import_verifies(
            &[
                ("gpufleet_fleet.training", &identity(fleet_name)),
                ("gpufleet_queue.team", &identity(queue)),
            ],
            ImportBy::Identity,
            &[],
        );
        ws.destroy();
    });
}

/// Quotas on one fleet that add up to more GPUs than its `limits` let it
/// launch are warned about, with the numbers; a limit Kueue refuses without
/// a cohort is refused at plan.
#[test]
fn plan_warns_of_quotas_over_the_fleet_s_limit_and_refuses_what_kueue_refuses() {
    if !kueue_running("queue plan checks") {
        return;
    }
    each_cli(|cli| {
        let team = Team::new("qw");
        let (queue, ns) = (&team.queue, &team.namespace.0);
        let mut ws = Workspace::new(cli);
        ws.config(&team.config(48, ""));
        ws.apply();
        let second = queue_of(
            "other",
            &format!("{queue}-b"),
            ns,
            &["{ fleet = gpufleet_fleet.training.name, gpu_resource = \"nvidia.com/gpu\", gpus = 32 }".to_string()],
            "",
        );
        ws.config(&(team.config(48, "") + &second));
        let plan = ws.assert_plan_changes();
        let text = plan.text.replace('\n', " ");
        assert!(
            text.contains("Quotas over what the fleet can launch")
                && text.contains("add up to 80")
                && text.contains(&format!("{queue} 48"))
                && text.contains("over the 64"),
            "{}: no warning with the numbers:\n{}",
            cli.name,
            plan.text
        );

        let refused = second.replace("gpus = 32 }", "gpus = 32, borrowing_limit = 8 }");
        ws.config(&(team.config(48, "") + &refused));
        ws.init();
        let run = ws.run(&["plan", "-no-color", "-input=false"]);
        assert!(
            !run.success,
            "{}: a borrowing limit without a cohort planned",
            cli.name
        );
        assert!(
            run.stderr
                .replace('\n', " ")
                .contains("must be nil when cohort is empty"),
            "{}: {}",
            cli.name,
            run.stderr
        );
        ws.config(&team.config(48, ""));
        ws.destroy();
    });
}

/// Destroying a fleet alone while a queue lists its flavor (the queue
/// names the fleet by name, so Terraform does not order the two): Kueue
/// would keep the flavor, so the destroy waits within the fleet's delete
/// timeout, then fails naming the queue and the timeout with nothing
/// deleted, state and cluster still agreeing. Turning `kueue_flavor` off
/// meanwhile fails the same way, the flavor left as it was. Destroying both then
/// succeeds, the fleet waiting for the queue to let go.
#[test]
fn destroying_a_fleet_a_queue_uses_deletes_nothing_and_names_the_queue() {
    if !kueue_running("flavor in use") {
        return;
    }
    each_cli(|cli| {
        let team = Team::new("qf");
        let (fleet_name, queue) = (&team.fleet, &team.queue);
        let mut ws = Workspace::new(cli);
        // The quota names the fleet by name: no reference orders the two.
        let offered = team.config_with(
            "  timeouts = { delete = \"5s\", update = \"5s\" }\n",
            &[format!(
                "{{ fleet = \"{fleet_name}\", gpu_resource = \"nvidia.com/gpu\", gpus = 8 }}"
            )],
            "",
        );
        ws.config(&offered);
        ws.apply();
        // Whether the NodePool or flavor is there, not marked for deletion.
        let in_place = |object: Option<DynamicObject>, what: &str| {
            let object = object.unwrap_or_else(|| panic!("{}: the {what} is gone", cli.name));
            assert!(
                object.metadata.deletion_timestamp.is_none(),
                "{}: the {what} is marked for deletion",
                cli.name
            );
        };
        let flavor = || live("ResourceFlavor", "resourceflavors", None, fleet_name);

        // No longer offered to Kueue: the update fails naming the queue,
        // the flavor stays, and the plan still shows the change.
        ws.config(&offered.replace("kueue_flavor = true", "kueue_flavor = false"));
        let error = ws.apply_fails().replace('\n', " ");
        assert!(
            error.contains(&format!("{queue:?}")) && error.contains("is still offered to Kueue"),
            "{}: {error}",
            cli.name
        );
        in_place(flavor(), "flavor");
        ws.assert_plan_changes()
            .assert_actions("gpufleet_fleet.training", &["update"]);
        ws.config(&offered);
        ws.apply();

        let run = ws.run(&[
            "destroy",
            "-target=gpufleet_fleet.training",
            "-auto-approve",
            "-no-color",
            "-input=false",
        ]);
        assert!(
            !run.success,
            "{}: destroy went through:\n{}",
            cli.name, run.stdout
        );
        let said = run.stderr.replace('\n', " ");
        assert!(
            said.contains("ClusterQueues listing it")
                && said.contains(&format!("{queue:?}"))
                && said.contains("5.0s set by `timeouts.delete`")
                && said.contains("Nothing of fleet"),
            "{}: the error does not name the queue and the timeout:\n{}",
            cli.name,
            run.stderr
        );
        in_place(live_node_pool(fleet_name), "NodePool");
        in_place(flavor(), "flavor");
        ws.assert_plan_empty();

        // Both at once: the fleet waits for the queue's ClusterQueue to go.
        ws.destroy();
        assert!(live_node_pool(fleet_name).is_none());
        assert!(flavor().is_none());
        assert!(live("ClusterQueue", "clusterqueues", None, queue).is_none());
    });
}

/// Quantities as the user wrote them: Kueue's webhook serves `1.5` CPUs
/// back as `1500m` (the canonical form of k8s.io/apimachinery's
/// `resource.Quantity`), which is no change: the second plan is empty and
/// state keeps `1.5`; a different quantity still shows.
#[test]
fn quantities_keep_their_spelling_and_plan_no_change() {
    if !kueue_running("queue quantities") {
        return;
    }
    each_cli(|cli| {
        let team = Team::new("qq");
        let queue = &team.queue;
        let quantities = |cpu: &str| {
            team.config_with(
                "",
                &[quota(
                    "training",
                    8,
                    &format!(
                        "cpu = \"{cpu}\", memory = \"1.5Gi\", resources = {{ \"example.com/widget\" = \"2000m\" }}"
                    ),
                )],
                "  fair_sharing_weight = \"0.5\"\n",
            )
        };
        let mut ws = Workspace::new(cli);
        ws.config(&quantities("1.5"));
        ws.apply();
        let cq = live("ClusterQueue", "clusterqueues", None, queue).expect("the ClusterQueue");
        let served: Vec<&serde_json::Value> =
            cq.data["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| &r["nominalQuota"])
                .collect();
        assert_eq!(
            served,
            [&json!("8"), &json!("1500m"), &json!("1536Mi"), &json!("2")],
            "{}: Kueue no longer serves quantities in canonical form",
            cli.name
        );
        ws.assert_plan_empty();
        let quota = &ws.resource_values("gpufleet_queue.team")["quotas"][0];
        assert_eq!(
            (&quota["cpu"], &quota["memory"], &quota["resources"]),
            (
                &json!("1.5"),
                &json!("1.5Gi"),
                &json!({"example.com/widget": "2000m"})
            ),
            "{}",
            cli.name
        );
        ws.config(&quantities("1.6"));
        let plan = ws.assert_plan_changes();
        assert!(
            plan.text.contains("\"1.5\" -> \"1.6\""),
            "{}: {}",
            cli.name,
            plan.text
        );
        ws.destroy();
    });
}

/// Kueue orders and preempts a queue's jobs by their pods'
/// `priorityClassName` (kubernetes-sigs/kueue v0.17.0,
/// pkg/controller/jobframework/reconciler.go, ExtractPriority), so the
/// classes of `gpufleet_priority_class` mean the same to Kueue as to the
/// scheduler: with `within_queue = "LowerPriority"`, a high-priority job
/// evicts a low-priority one holding the quota.
#[test]
fn a_higher_priority_class_preempts_within_the_queue() {
    if !kueue_running("queue priorities") {
        return;
    }
    each_cli(|cli| {
        let team = Team::new("qp");
        let (queue, ns) = (&team.queue, &team.namespace.0);
        let (low, high) = (unique_name("qp-low"), unique_name("qp-high"));
        let mut ws = Workspace::new(cli);
        ws.config(
            &(team.config(8, "  preemption = { within_queue = \"LowerPriority\" }\n")
                + &class("low", &low, 100, "")
                + &class("high", &high, 1000, "")),
        );
        ws.apply();
        queued_job_of_class(ns, "low", queue, 8, Some(&low));
        wait_for_job(ns, "low", "was admitted", |j| {
            j.spec.as_ref().and_then(|s| s.suspend) == Some(false)
        });
        queued_job_of_class(ns, "high", queue, 8, Some(&high));
        wait_for_job(ns, "high", "was admitted over the low-priority job", |j| {
            j.spec.as_ref().and_then(|s| s.suspend) == Some(false)
        });
        assert_eq!(
            live_job(ns, "low").spec.unwrap().suspend,
            Some(true),
            "{}: the low-priority job was not preempted",
            cli.name
        );
        delete_job(ns, "low");
        delete_job(ns, "high");
        wait_for_no_workloads(ns);
        ws.destroy();
    });
}
