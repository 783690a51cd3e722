//! `gpufleet_priority_class` through the real terraform and tofu CLIs
//! against the real API server.

mod common;

use common::fixtures::{TRAINING, class, fleet, live_priority_class};
use common::terraform::{Workspace, assert_invalid, each_cli};
use common::{block_on, kube_client, unique_name};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};

/// The seed's two classes, with their exact names: inference preempts,
/// training never does. One CLI at a time, since the names are fixed.
#[test]
fn seed_classes_exactly_as_described() {
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config(
            &(class(
                "inference",
                "online-inference",
                100000,
                "  description = \"Latency-sensitive inference\"\n",
            ) + &class(
                "training",
                "batch-training",
                1000,
                "  preemption_policy = \"Never\"\n",
            )),
        );
        ws.apply();
        let inference = live_priority_class("online-inference").expect("online-inference exists");
        assert_eq!(inference.value, 100000);
        assert_eq!(
            inference.preemption_policy.as_deref(),
            Some("PreemptLowerPriority")
        );
        let training = live_priority_class("batch-training").expect("batch-training exists");
        assert_eq!(training.value, 1000);
        assert_eq!(training.preemption_policy.as_deref(), Some("Never"));
        assert!(!training.global_default.unwrap_or(false));
        ws.assert_plan_empty();
        ws.destroy();
        assert!(
            live_priority_class("online-inference").is_none()
                && live_priority_class("batch-training").is_none(),
            "destroy left objects behind"
        );
    });
}

#[test]
fn lifecycle_update_replace_and_destroy() {
    each_cli(|cli| {
        let name = unique_name("pc-life");
        let mut ws = Workspace::new(cli);
        let labels = "  labels = { team = \"ml\" }\n  annotations = { \"example.com/owner\" = \"platform\" }\n";
        ws.config(&class(
            "c",
            &name,
            5000,
            &format!("  description = \"first\"\n{labels}"),
        ));
        ws.apply();
        ws.assert_plan_empty();
        let values = ws.resource_values("gpufleet_priority_class.c");
        assert_eq!(values["id"], name.as_str());
        assert_eq!(values["preemption_policy"], "PreemptLowerPriority");

        // In-place update of a mutable field.
        ws.config(&class(
            "c",
            &name,
            5000,
            &format!("  description = \"second\"\n  global_default = false\n{labels}"),
        ));
        let plan = ws.assert_plan_changes("update in-place");
        assert!(!plan.contains("must be replaced"), "{plan}");
        ws.apply();
        assert_eq!(
            live_priority_class(&name).unwrap().description.as_deref(),
            Some("second")
        );
        ws.assert_plan_empty();

        // Removing a label from the configuration removes it from the object.
        ws.config(&class("c", &name, 5000, "  description = \"second\"\n"));
        ws.apply();
        ws.assert_plan_empty();
        let object = live_priority_class(&name).unwrap();
        assert!(
            !object
                .metadata
                .labels
                .unwrap_or_default()
                .contains_key("team")
        );

        // value is immutable in Kubernetes: a change replaces the class.
        ws.config(&class("c", &name, 6000, "  description = \"second\"\n"));
        ws.assert_plan_changes("must be replaced");
        ws.apply();
        assert_eq!(live_priority_class(&name).unwrap().value, 6000);
        ws.assert_plan_empty();

        // So is preemption_policy.
        ws.config(&class(
            "c",
            &name,
            6000,
            "  description = \"second\"\n  preemption_policy = \"Never\"\n",
        ));
        ws.assert_plan_changes("must be replaced");
        ws.apply();
        assert_eq!(
            live_priority_class(&name)
                .unwrap()
                .preemption_policy
                .as_deref(),
            Some("Never")
        );
        ws.assert_plan_empty();

        ws.destroy();
        assert!(
            live_priority_class(&name).is_none(),
            "destroy left {name} behind"
        );
    });
}

#[test]
fn drift_made_outside_terraform_shows_in_the_next_plan() {
    each_cli(|cli| {
        let name = unique_name("pc-drift");
        let mut ws = Workspace::new(cli);
        ws.config(&class(
            "c",
            &name,
            300,
            "  description = \"ours\"\n  labels = { team = \"ml\" }\n",
        ));
        ws.apply();

        // Someone edits our fields and adds their own label.
        block_on(async {
            let api = Api::<PriorityClass>::all(kube_client().await);
            let patch = serde_json::json!({
                "metadata": {"labels": {"team": "changed", "someone-else": "x"}},
                "description": "edited by hand",
            });
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        });
        let plan = ws.assert_plan_changes("edited by hand");
        assert!(plan.contains("\"changed\""), "{plan}");
        assert!(
            !plan.contains("someone-else"),
            "a foreign label showed as drift:\n{plan}"
        );
        ws.apply();
        let object = live_priority_class(&name).unwrap();
        assert_eq!(object.description.as_deref(), Some("ours"));
        let labels = object.metadata.labels.unwrap();
        assert_eq!(labels["team"], "ml");
        assert_eq!(
            labels["someone-else"], "x",
            "another writer's label was removed"
        );
        ws.assert_plan_empty();

        // Someone deletes the class: the plan re-creates it.
        block_on(async {
            Api::<PriorityClass>::all(kube_client().await)
                .delete(&name, &DeleteParams::default())
                .await
                .unwrap();
        });
        ws.assert_plan_changes("will be created");
        ws.apply();
        assert!(live_priority_class(&name).is_some());
        ws.assert_plan_empty();
        ws.destroy();
    });
}

#[test]
fn import_into_an_empty_state_gives_an_empty_plan() {
    each_cli(|cli| {
        let name = unique_name("pc-import");
        let body = class(
            "c",
            &name,
            42,
            "  preemption_policy = \"Never\"\n  description = \"imported\"\n  labels = { team = \"ml\" }\n",
        );
        let mut original = Workspace::new(cli);
        original.config(&body);
        original.apply();

        // `terraform import` by name.
        let mut imported = Workspace::new(cli);
        imported.config(&body);
        imported.import("gpufleet_priority_class.c", &name);
        imported.assert_plan_empty();
        assert_eq!(
            imported.resource_values("gpufleet_priority_class.c"),
            original.resource_values("gpufleet_priority_class.c")
        );

        // An `import {}` block (Terraform 1.5+, OpenTofu 1.5+).
        let mut block = Workspace::new(cli);
        block.config(&format!(
            "import {{\n  to = gpufleet_priority_class.c\n  id = \"{name}\"\n}}\n\n{body}"
        ));
        let out = block.apply();
        assert!(out.stdout.contains("1 imported"), "{}", out.stdout);
        block.assert_plan_empty();

        // Importing a class that does not exist is an error, not an empty state.
        let mut missing = Workspace::new(cli);
        missing.config(&class("c", "pc-does-not-exist", 1, ""));
        missing.init();
        let run = missing.run(&[
            "import",
            "-no-color",
            "gpufleet_priority_class.c",
            "pc-does-not-exist",
        ]);
        assert!(!run.success);
        assert!(run.stderr.contains("non-existent"), "{}", run.stderr);

        // The other workspaces share the object; the original removes it.
        imported.forget();
        block.forget();
        original.destroy();
        assert!(live_priority_class(&name).is_none());
    });
}

#[test]
fn bad_input_is_rejected_at_validate_time_with_the_attribute() {
    each_cli(|cli| {
        let cases = [
            (
                class("c", "too-high", 2_000_000_000, ""),
                "reserved for system",
                "value = 2000000000",
            ),
            (
                class("c", "Not_A_DNS_Name", 1, ""),
                "not a valid name",
                "name  = \"Not_A_DNS_Name\"",
            ),
            (
                class("c", "policy", 1, "  preemption_policy = \"Sometimes\"\n"),
                "is not one of",
                "preemption_policy = \"Sometimes\"",
            ),
            (
                class("c", "system-mine", 1, ""),
                "reserved",
                "name  = \"system-mine\"",
            ),
            (
                class("c", "fraction", 1, "").replace("value = 1", "value = 1.5"),
                "not a whole number",
                "value = 1.5",
            ),
            (
                class("c", "labels", 1, "  labels = { \"bad key!\" = \"x\" }\n"),
                "not a valid key",
                "labels = {",
            ),
        ];
        for (body, message, source_line) in cases {
            assert_invalid(cli, &body, message, Some(source_line));
        }
    });
}

/// A user without RBAC permissions gets a diagnostic that says so and what
/// to do, and the plan of a new resource still works without any access.
#[test]
fn a_user_without_permissions_is_told_what_is_missing() {
    let limited = std::path::Path::new(&common::kubeconfig()).with_file_name("kubeconfig-limited");
    if !limited.exists() {
        eprintln!(
            "skipped: no {} (only `make cluster` clusters have it)",
            limited.display()
        );
        return;
    }
    each_cli(|cli| {
        let name = unique_name("pc-rbac");
        let mut ws = Workspace::new(cli);
        ws.config_raw(
            &(common::terraform::provider_block_for(limited.to_str().unwrap(), "")
                + &class("c", &name, 7, "")),
        );
        let (changes, plan) = ws.plan_has_changes();
        assert!(changes && plan.contains("will be created"), "{plan}");
        let out = ws.apply_fails();
        assert!(out.contains("Permission denied by Kubernetes"), "{out}");
        assert!(
            out.contains("gpufleet-limited") && out.contains("RBAC"),
            "{out}"
        );
        assert!(live_priority_class(&name).is_none());
        ws.forget();
    });
}

/// Plan of new resources needs no cluster: the kubeconfig names an address
/// where nothing listens (the cluster may not exist yet).
#[test]
fn plan_of_new_resources_needs_no_reachable_cluster() {
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        let kubeconfig = ws.path().join("unreachable.kubeconfig");
        std::fs::write(&kubeconfig, common::unreachable_kubeconfig()).unwrap();
        ws.config_raw(
            &(common::terraform::provider_block_for(kubeconfig.to_str().unwrap(), "")
                + &class("c", "nowhere", 1, "")
                + &fleet("training", "training", TRAINING)),
        );
        let (changes, plan) = ws.plan_has_changes();
        assert!(changes, "{plan}");
        assert!(plan.contains("Plan: 2 to add"), "{plan}");
        // Computed values workloads consume are known at plan time.
        assert!(
            plan.contains("\"karpenter.sh/nodepool\" = \"training\""),
            "{plan}"
        );
    });
}
