//! A fleet's namespace fence beside Kueue, through the real terraform and
//! tofu CLIs, on the real API server with Kueue's real manager
//! (`cluster.sh up --kueue`): Kueue's own updates of a queued Job go
//! through the fence's ValidatingAdmissionPolicy like anyone's, so the
//! tolerations it injects must pass where the fleet is allowed, and its
//! evictions wherever the Job runs.

use std::time::{Duration, Instant};

use common::fixtures::{RUNS_FOR_AN_HOUR, fleet, live_job, wait_for_job};
use common::terraform::{Workspace, each_cli};
use common::{block_on, kube_client, skipped, unique_name};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kube::Api;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use serde_json::{Value, json};

use super::admission::{Namespaces, eventually, fleet_fence_turn, submit};

/// How long Kueue and the Job controller get for each step.
const KUEUE_STEP: Duration = Duration::from_secs(60);

/// Kueue's Workloads in `namespace`, for one `block_on` (the client lives
/// on its runtime).
async fn workloads(namespace: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Workload"),
        "workloads",
    );
    Api::namespaced_with(kube_client().await, namespace, &resource)
}

/// The Workloads Kueue made in `namespace`, or the error listing them.
fn list_workloads(namespace: &str) -> kube::Result<Vec<DynamicObject>> {
    block_on(async {
        let listed = workloads(namespace).await.list(&Default::default()).await;
        listed.map(|list| list.items)
    })
}

/// Whether Kueue runs on the test cluster (`cluster.sh up --kueue`).
fn kueue_running(test: &str) -> bool {
    let installed = list_workloads("default").is_ok();
    if !installed {
        skipped(
            test,
            "Kueue is not running on the test cluster (cluster.sh up --kueue)",
        );
    }
    installed
}

/// The fleet, tainted with its own name (so its fence refuses no other
/// test's pods) and offered to Kueue, fenced to `allowed`, and a queue of
/// 8 of its GPUs serving `served`.
fn config(fleet_name: &str, queue: &str, served: &str, allowed: &str) -> String {
    fleet(
        "f",
        fleet_name,
        &format!(
            "  accelerators      = [\"H100\"]\n  accelerator_count = {{ min = 8, max = 8 }}\n  limits            = {{ gpus = 64 }}\n  taints            = [{{ key = \"workload\", value = \"{fleet_name}\", effect = \"NoSchedule\" }}]\n  kueue_flavor      = true\n  allowed_namespaces = [\"{allowed}\"]\n"
        ),
    ) + &format!(
        "resource \"gpufleet_queue\" \"q\" {{\n  name       = \"{queue}\"\n  namespaces = [\"{served}\"]\n  quotas     = [{{ fleet = gpufleet_fleet.f.name, gpu_resource = gpufleet_fleet.f.gpu_resource, gpus = 8 }}]\n}}\n"
    )
}

/// A Job of one pod asking for 8 GPUs, its pod template `spec` added to.
/// Its pod runs for an hour (kwok's pod-complete stage waits that long), so
/// the Job is still there to evict when the test narrows the fence: without
/// the delay kwok completes it within seconds.
fn job(name: &str, labels: Value, spec: Value) -> Value {
    let mut template = json!({
        "restartPolicy": "Never",
        "containers": [{"name": "train", "image": "trainer", "resources": {
            "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "8"},
            "limits": {"nvidia.com/gpu": "8"},
        }}],
    });
    for (key, value) in spec.as_object().unwrap() {
        template[key] = value.clone();
    }
    let annotations: serde_json::Map<String, Value> = RUNS_FOR_AN_HOUR
        .iter()
        .map(|(key, value)| (key.to_string(), json!(value)))
        .collect();
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {"template": {"metadata": {"annotations": annotations}, "spec": template}}})
}

fn suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}

/// Whether a pod spec tolerates the fleet's taint and selects its nodes.
fn on_the_fleet(spec: &PodSpec, fleet_name: &str) -> bool {
    let selects = spec
        .node_selector
        .as_ref()
        .and_then(|s| s.get("karpenter.sh/nodepool"))
        .is_some_and(|pool| pool == fleet_name);
    let tolerates = spec.tolerations.iter().flatten().any(|t| {
        t.key.as_deref() == Some("workload")
            && t.value.as_deref() == Some(fleet_name)
            && t.effect.as_deref() == Some("NoSchedule")
    });
    selects && tolerates
}

/// The one Workload Kueue made for the Job in `namespace`.
fn workload_in(namespace: &str) -> DynamicObject {
    let mut all = list_workloads(namespace).unwrap();
    assert_eq!(all.len(), 1, "workloads in {namespace}: {all:?}");
    all.remove(0)
}

fn set_active(namespace: &str, workload: &str, active: bool) {
    block_on(async {
        let patch = Patch::Merge(json!({"spec": {"active": active}}));
        workloads(namespace)
            .await
            .patch(workload, &PatchParams::default(), &patch)
            .await
            .unwrap()
    });
}

fn admitted_by_kueue(workload: &DynamicObject) -> bool {
    workload.data["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Admitted" && c["status"] == "True")
}

/// Issue 35's promise beside Kueue: a Job carrying only its queue's label
/// gets the fleet's tolerations and node selector from Kueue, passes the
/// fence in its allowed namespace and gets its pod; a Job copying them by
/// hand in a namespace without a queue is refused at create. With the
/// fence narrowed away from the Job's namespace, Kueue can still evict the
/// Job (its suspension leaves the template alone, then it takes back what
/// it injected); admitted there again, the Job is refused its tolerations
/// and stays suspended.
#[test]
fn a_job_admitted_by_kueue_passes_the_fence_and_a_copy_elsewhere_does_not() {
    if !kueue_running("namespace fence beside Kueue") {
        return;
    }
    let _turn = fleet_fence_turn();
    each_cli(|cli| {
        let (fleet_name, queue) = (unique_name("kf-fleet"), unique_name("kf-queue"));
        let namespaces = Namespaces::new(&["kf-team", "kf-other"]);
        let [team, other] = [0, 1].map(|i| namespaces.0[i].as_str());
        let mut ws = Workspace::new(cli);
        ws.config(&config(&fleet_name, &queue, team, team));
        ws.apply();
        let policy = format!("gpufleet-fleet-{fleet_name}");

        // Copied by hand where no queue serves: refused at create, once the
        // policy is in effect.
        let copied = job(
            "copied",
            json!({}),
            json!({
                "tolerations": [{"key": "workload", "operator": "Equal", "value": fleet_name, "effect": "NoSchedule"}],
                "nodeSelector": {"karpenter.sh/nodepool": fleet_name},
            }),
        );
        eventually("the fence refuses the copied Job", || {
            refused_now(other, &copied)
        });
        let message = submit(other, &copied, true).expect_err("the copied Job was created");
        assert!(
            message.contains(&policy)
                && message.contains(&format!(
                    "Fleet {fleet_name:?} may be used only from namespace {team:?}"
                )),
            "{}: {message}",
            cli.name
        );

        // Queued in the team's namespace: Kueue admits it, injects the
        // fleet's tolerations and node selector, and its update passes.
        let queued = job(
            "queued",
            json!({"kueue.x-k8s.io/queue-name": queue}),
            json!({}),
        );
        submit(team, &queued, true).expect("the queued Job is created");
        let running = wait_for_job(team, "queued", "was unsuspended by Kueue", |j| {
            !suspended(j)
        });
        let template = running.spec.unwrap().template.spec.unwrap();
        assert!(
            on_the_fleet(&template, &fleet_name),
            "{}: Kueue did not inject the fleet's toleration and selector: {template:?}",
            cli.name
        );
        let start = Instant::now();
        let pod = loop {
            let pods = block_on(async {
                Api::<Pod>::namespaced(kube_client().await, team)
                    .list(&ListParams::default().labels("batch.kubernetes.io/job-name=queued"))
                    .await
                    .unwrap()
                    .items
            });
            if let Some(pod) = pods.into_iter().next() {
                break pod;
            }
            assert!(
                start.elapsed() < KUEUE_STEP,
                "{}: the Job controller created no pod in {team}",
                cli.name
            );
            std::thread::sleep(Duration::from_millis(300));
        };
        assert!(on_the_fleet(&pod.spec.unwrap(), &fleet_name));

        // The fence narrowed to another namespace: Kueue's eviction first
        // suspends the Job, its template untouched, then takes back the
        // tolerations; both pass.
        ws.config(&config(&fleet_name, &queue, team, other));
        ws.apply();
        eventually("the narrowed fence refuses in the team's namespace", || {
            refused_now(team, &copied)
        });
        let workload = workload_in(team).metadata.name.unwrap();
        set_active(team, &workload, false);
        let evicted = wait_for_job(team, "queued", "was evicted by Kueue", |j| {
            suspended(j)
                && !on_the_fleet(
                    j.spec.as_ref().unwrap().template.spec.as_ref().unwrap(),
                    &fleet_name,
                )
        });
        assert!(
            evicted
                .spec
                .unwrap()
                .template
                .spec
                .unwrap()
                .tolerations
                .is_none()
        );

        // Admitted again where the fleet is no longer allowed, the Job is
        // refused the fleet's tolerations and stays suspended.
        set_active(team, &workload, true);
        let start = Instant::now();
        while !admitted_by_kueue(&workload_in(team)) {
            assert!(
                start.elapsed() < KUEUE_STEP,
                "{}: not admitted again",
                cli.name
            );
            std::thread::sleep(Duration::from_millis(300));
        }
        std::thread::sleep(Duration::from_secs(3));
        assert!(
            suspended(&live_job(team, "queued")),
            "{}: Kueue started the Job where the fleet is not allowed",
            cli.name
        );

        block_on(async {
            Api::<Job>::namespaced(kube_client().await, team)
                .delete("queued", &DeleteParams::background())
                .await
                .unwrap()
        });
        let start = Instant::now();
        while !list_workloads(team).unwrap().is_empty() {
            assert!(start.elapsed() < KUEUE_STEP, "{}: workloads left", cli.name);
            std::thread::sleep(Duration::from_millis(300));
        }
        ws.destroy();
    });
}

/// Whether a create of `object` in `namespace` is refused now.
fn refused_now(namespace: &str, object: &Value) -> bool {
    submit(namespace, object, false).is_err()
}
