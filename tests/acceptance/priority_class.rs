//! `gpufleet_priority_class` through the real terraform and tofu CLIs
//! against the real API server.

use common::fixtures::{Guard, TRAINING, class, fleet, kubectl_apply, live_priority_class};
use common::terraform::{
    At, ImportBy, Workspace, assert_invalid, clis, each_cli, each_identity_cli,
};
use common::{block_on, kube_client, skipped, unique_name};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;

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
        assert_eq!(inference.value, Some(100000));
        assert_eq!(
            inference.preemption_policy.as_deref(),
            Some("PreemptLowerPriority")
        );
        let training = live_priority_class("batch-training").expect("batch-training exists");
        assert_eq!(training.value, Some(1000));
        assert_eq!(training.preemption_policy.as_deref(), Some("Never"));
        assert!(!training.global_default.unwrap_or(false));
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
        let plan = ws.assert_plan_changes();
        plan.assert_actions("gpufleet_priority_class.c", &["update"]);
        plan.assert_change(
            "gpufleet_priority_class.c",
            "description",
            json!("first"),
            json!("second"),
        );
        ws.apply();
        assert_eq!(
            live_priority_class(&name).unwrap().description.as_deref(),
            Some("second")
        );

        // Removing a label from the configuration removes it from the object.
        ws.config(&class("c", &name, 5000, "  description = \"second\"\n"));
        ws.apply();
        let object = live_priority_class(&name).unwrap();
        assert!(
            !object
                .metadata
                .labels
                .unwrap_or_default()
                .contains_key("team")
        );

        // value is immutable in Kubernetes: a change replaces the class.
        let uid = |name: &str| live_priority_class(name).unwrap().metadata.uid.unwrap();
        let first_uid = uid(&name);
        ws.config(&class("c", &name, 6000, "  description = \"second\"\n"));
        ws.assert_plan_changes()
            .assert_replaced_for("gpufleet_priority_class.c", &["value"]);
        ws.apply();
        assert_eq!(live_priority_class(&name).unwrap().value, Some(6000));
        let second_uid = uid(&name);
        assert_ne!(first_uid, second_uid, "value changed without a new object");

        // So is preemption_policy.
        ws.config(&class(
            "c",
            &name,
            6000,
            "  description = \"second\"\n  preemption_policy = \"Never\"\n",
        ));
        ws.assert_plan_changes()
            .assert_replaced_for("gpufleet_priority_class.c", &["preemption_policy"]);
        ws.apply();
        assert_eq!(
            live_priority_class(&name)
                .unwrap()
                .preemption_policy
                .as_deref(),
            Some("Never")
        );
        assert_ne!(
            uid(&name),
            second_uid,
            "preemption_policy changed without a new object"
        );

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
        let plan = ws.assert_plan_changes();
        let address = "gpufleet_priority_class.c";
        plan.assert_actions(address, &["update"]);
        plan.assert_change(
            address,
            "description",
            json!("edited by hand"),
            json!("ours"),
        );
        // Only our label, with its new value: the foreign one is no drift.
        plan.assert_change(
            address,
            "labels",
            json!({"team": "changed"}),
            json!({"team": "ml"}),
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

        // Someone deletes the class: the plan re-creates it.
        block_on(async {
            Api::<PriorityClass>::all(kube_client().await)
                .delete(&name, &DeleteParams::default())
                .await
                .unwrap();
        });
        ws.assert_plan_changes()
            .assert_actions("gpufleet_priority_class.c", &["create"]);
        ws.apply();
        assert!(live_priority_class(&name).is_some());
        ws.destroy();
    });
}

/// How CI pipelines detect drift: `plan -refresh-only -detailed-exitcode`
/// exits 0 when the object is as Terraform left it and 2 once someone
/// changed it (Terraform 1.10 to 1.14 exited 2 for a lone class that had
/// not changed while numbers went to it as msgpack integers).
#[test]
fn refresh_only_drift_check_exits_0_without_drift_and_2_with_it() {
    each_cli(|cli| {
        let name = unique_name("pc-refresh");
        let mut ws = Workspace::new(cli);
        ws.config(&class("c", &name, 300, "  description = \"ours\"\n"));
        ws.apply();
        let check = |ws: &mut Workspace| {
            ws.run(&[
                "plan",
                "-refresh-only",
                "-detailed-exitcode",
                "-no-color",
                "-input=false",
            ])
        };
        for attempt in ["after apply", "again"] {
            let run = check(&mut ws);
            assert_eq!(
                run.code, 0,
                "{} ({attempt}): refresh-only plan without drift:\n{}\n{}",
                cli.name, run.stdout, run.stderr
            );
        }

        block_on(async {
            let patch = json!({"description": "edited by hand"});
            Api::<PriorityClass>::all(kube_client().await)
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        });
        let run = check(&mut ws);
        assert_eq!(
            run.code, 2,
            "{}: refresh-only plan with drift:\n{}\n{}",
            cli.name, run.stdout, run.stderr
        );
        assert!(
            run.stdout.contains("edited by hand"),
            "{}: the drift is not shown:\n{}",
            cli.name,
            run.stdout
        );
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

        // `terraform import` by name, and an `import {}` block.
        for by in [ImportBy::Command, ImportBy::Block] {
            original.assert_import_verifies(&[("gpufleet_priority_class.c", &name)], by, &[]);
        }

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

        original.destroy();
        assert!(live_priority_class(&name).is_none());
    });
}

/// kubectl's copy of what it applied
/// (`kubectl.kubernetes.io/last-applied-configuration`) is kubectl's, never
/// configuration: a class made by `kubectl apply` imports, by command and
/// by block, without it and with an empty plan, and kubectl applying to a
/// class Terraform manages is no drift.
#[test]
fn kubectl_bookkeeping_never_enters_state() {
    const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
    let manifest = |name: &str| {
        format!(
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {name}\n  labels:\n    team: ml\n  annotations:\n    example.com/owner: platform\nvalue: 42\ndescription: made by kubectl\n"
        )
    };
    let body = |name: &str| {
        class(
            "c",
            name,
            42,
            "  description = \"made by kubectl\"\n  labels = { team = \"ml\" }\n  annotations = { \"example.com/owner\" = \"platform\" }\n",
        )
    };
    let has_last_applied = |name: &str| {
        live_priority_class(name)
            .and_then(|c| c.metadata.annotations)
            .is_some_and(|a| a.contains_key(LAST_APPLIED))
    };
    let address = "gpufleet_priority_class.c";
    each_cli(|cli| {
        let name = unique_name("pc-kubectl");
        let _guard = Guard::of::<PriorityClass>(&[&name]);
        kubectl_apply(&manifest(&name));
        assert!(has_last_applied(&name), "kubectl kept no record");
        let mut imported = Workspace::new(cli);
        imported.config(&body(&name));
        imported.import(address, &name);
        imported.assert_plan_empty();
        assert_eq!(
            imported.resource_values(address)["annotations"],
            json!({"example.com/owner": "platform"}),
            "{}",
            cli.name
        );
        imported.assert_import_verifies(&[(address, &name)], ImportBy::Block, &[]);
        imported.forget();

        // A class Terraform made, then applied by kubectl too: the refresh
        // finds nothing changed, and the annotation stays kubectl's.
        let name = unique_name("pc-kubectl-managed");
        let mut managed = Workspace::new(cli);
        managed.config(&body(&name));
        managed.apply();
        kubectl_apply(&manifest(&name));
        assert!(has_last_applied(&name), "kubectl kept no record");
        let run = managed.run(&[
            "plan",
            "-refresh-only",
            "-detailed-exitcode",
            "-no-color",
            "-input=false",
        ]);
        assert_eq!(
            run.code, 0,
            "{}: kubectl's record shows as drift:\n{}\n{}",
            cli.name, run.stdout, run.stderr
        );
        managed.assert_plan_empty();
        managed.apply();
        assert!(has_last_applied(&name), "an apply removed kubectl's record");
        managed.destroy();
    });
}

/// `providers schema -json` of a CLI that knows resource identity shows
/// an identity schema for every resource.
#[test]
fn every_resource_has_an_identity_schema() {
    each_identity_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config("");
        ws.init();
        let run = ws.run(&["providers", "schema", "-json"]);
        assert!(run.success, "{}", run.stderr);
        let schema: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let provider = schema["provider_schemas"]
            .as_object()
            .and_then(|p| p.values().next())
            .unwrap_or_else(|| panic!("no provider schema: {schema}"));
        let keys = |field: &str| -> Vec<String> {
            let mut keys: Vec<String> = provider[field]
                .as_object()
                .unwrap_or_else(|| panic!("{}: no {field} in {provider}", cli.name))
                .keys()
                .cloned()
                .collect();
            keys.sort();
            keys
        };
        assert_eq!(keys("resource_identity_schemas"), keys("resource_schemas"));
        let class = &provider["resource_identity_schemas"]["gpufleet_priority_class"];
        assert_eq!(class["version"], 0);
        assert_eq!(class["attributes"]["name"]["type"], "string");
        assert_eq!(class["attributes"]["name"]["required_for_import"], true);
    });
}

/// The identity is the class's name: in state after apply, unchanged by an
/// update in place; importing by identity gives the state and identity
/// that importing by name gives.
#[test]
fn identity_survives_updates_and_imports_the_class() {
    each_identity_cli(|cli| {
        let name = unique_name("pc-identity");
        let address = "gpufleet_priority_class.c";
        let mut ws = Workspace::new(cli);
        ws.config(&class("c", &name, 42, "  description = \"first\"\n"));
        ws.apply();
        let identity = json!({ "name": name });
        assert_eq!(ws.resource(address)["identity"], identity);

        ws.config(&class("c", &name, 42, "  description = \"second\"\n"));
        ws.assert_plan_changes()
            .assert_actions(address, &["update"]);
        ws.apply();
        assert_eq!(
            live_priority_class(&name).unwrap().description.as_deref(),
            Some("second")
        );
        assert_eq!(ws.resource(address)["identity"], identity);

        let by_identity = format!("{{ name = \"{name}\" }}");
        ws.assert_import_verifies(&[(address, &by_identity)], ImportBy::Identity, &[]);
        ws.assert_import_verifies(&[(address, &name)], ImportBy::Block, &[]);
        ws.destroy();
        assert!(live_priority_class(&name).is_none());
    });
}

/// State written without identities (by a CLI before 1.12, as by every
/// gpufleet release before identities) gets its identity from the next
/// refresh by a newer CLI of the same family, with nothing to change.
#[test]
fn state_without_identity_gets_one_with_nothing_to_change() {
    if !clis().iter().any(|c| !c.supports_identity()) {
        skipped(
            "state without identity",
            "every CLI here knows identities, so none writes state without one",
        );
        return;
    }
    each_identity_cli(|cli| {
        // Terraform's state and lock file name registry.terraform.io,
        // OpenTofu's registry.opentofu.org: one family writes, the same reads.
        let Some(old) = clis()
            .iter()
            .find(|c| c.name == cli.name && !c.supports_identity())
        else {
            eprintln!(
                "{}: no older {} here to write state without identities",
                cli.name, cli.name
            );
            return;
        };
        let name = unique_name("pc-no-identity");
        let address = "gpufleet_priority_class.c";
        let mut ws = Workspace::new(old);
        ws.config(&class("c", &name, 7, ""));
        ws.apply();
        assert!(ws.resource(address).get("identity").is_none());
        ws.cli = cli.clone();
        ws.assert_plan_empty();
        ws.apply();
        assert_eq!(ws.resource(address)["identity"], json!({ "name": name }));
        ws.destroy();
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
            assert_invalid(cli, &body, message, At::Line(source_line));
        }
    });
}

/// A user without RBAC permissions gets a diagnostic that says so and what
/// to do, and the plan of a new resource still works without any access.
#[test]
fn a_user_without_permissions_is_told_what_is_missing() {
    let limited = std::path::Path::new(&common::kubeconfig()).with_file_name("kubeconfig-limited");
    if !limited.exists() {
        skipped(
            "a_user_without_permissions_is_told_what_is_missing",
            &format!(
                "no {} (only clusters from testbed/cluster.sh have it)",
                limited.display()
            ),
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
        // Whatever happens, the class goes (the limited user could not delete it).
        let _guard = Guard::of::<PriorityClass>(&[&name]);
        ws.plan()
            .assert_actions("gpufleet_priority_class.c", &["create"]);
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
        let plan = ws.assert_plan_changes();
        plan.assert_actions("gpufleet_priority_class.c", &["create"]);
        plan.assert_actions("gpufleet_fleet.training", &["create"]);
        // Computed values workloads consume are known at plan time.
        assert_eq!(
            plan.after("gpufleet_fleet.training", "node_selector"),
            Some(&json!({"karpenter.sh/nodepool": "training"})),
            "{}",
            plan.text
        );
    });
}

/// The harness's own cleanup never fails silently: when the destroy on drop
/// fails (here the cluster became unreachable), it names what the state
/// still holds and keeps the workspace to destroy it from.
#[test]
fn a_failed_cleanup_names_what_it_left_and_where() {
    let cli = &common::terraform::clis()[0];
    let name = unique_name("pc-left");
    let _guard = Guard::of::<PriorityClass>(&[&name]);
    let mut ws = Workspace::new(cli);
    ws.config(&class("c", &name, 11, ""));
    ws.apply();
    let dir = ws.path().to_path_buf();
    let unreachable = dir.join("unreachable.kubeconfig");
    std::fs::write(&unreachable, common::unreachable_kubeconfig()).unwrap();
    ws.config_raw(
        &(common::terraform::provider_block_for(unreachable.to_str().unwrap(), "")
            + &class("c", &name, 11, "")),
    );
    let failure = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(ws)))
        .expect_err("a failed destroy on drop passed silently");
    let message = failure
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("gpufleet_priority_class.c")
            && message.contains(&dir.display().to_string()),
        "{message}"
    );
    assert!(
        dir.join("terraform.tfstate").exists(),
        "the workspace was not kept"
    );
    assert!(live_priority_class(&name).is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A value known only at apply time is checked too: `terraform validate`
/// cannot see it, and 3000000000 does not fit a PriorityClass's int32. The
/// apply must refuse it naming `value` and create no class (above all not
/// one whose value wrapped around to a negative priority). The CLIs validate
/// the configuration again during apply, once the value is known.
#[test]
fn a_value_known_only_at_apply_time_is_still_checked() {
    each_cli(|cli| {
        let name = unique_name("pc-late");
        let _guard = Guard::of::<PriorityClass>(&[&name]);
        let mut ws = Workspace::new(cli);
        ws.config(
            &("resource \"terraform_data\" \"v\" {\n  input = 3000000000\n}\n\n".to_string()
                + &class("c", &name, 0, "")
                    .replace("value = 0", "value = terraform_data.v.output")),
        );
        let out = ws.apply_fails();
        assert!(
            out.contains("value") && out.contains("3000000000"),
            "{}: {out}",
            cli.name
        );
        assert_eq!(
            live_priority_class(&name).map(|c| c.value),
            None,
            "{}: a class was created",
            cli.name
        );
        // The invalid configuration cannot even be destroyed; without it,
        // the destroy on drop removes terraform_data.v.
        ws.config("");
    });
}

/// Creating a class that exists already (applied with kubectl) fails with
/// a hint to import it, and leaves the class as it was.
#[test]
fn creating_a_class_that_exists_fails_with_a_hint_to_import_it() {
    each_cli(|cli| {
        let name = unique_name("pc-exists");
        let _guard = Guard::of::<PriorityClass>(&[&name]);
        kubectl_apply(&format!(
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {name}\nvalue: 7\n"
        ));
        let mut ws = Workspace::new(cli);
        ws.config(&class("c", &name, 1000, ""));
        let error = ws.apply_fails();
        assert!(
            error.contains("already exists") && error.contains("import it"),
            "{}: {error}",
            cli.name
        );
        assert_eq!(
            live_priority_class(&name).unwrap().value,
            Some(7),
            "{}",
            cli.name
        );
    });
}
