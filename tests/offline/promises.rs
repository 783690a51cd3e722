//! Every sentence of README.md and docs/ that promises a warning or an
//! error (it says that something warns, fails, is refused, rejected or an
//! error) is listed in [`PROMISES`] with the tests that fail when it stops
//! holding. A new such sentence fails this test until it is listed; a
//! listed phrase no page says any more fails it too, and so does a test
//! name that is not a test. Sentences that use those words for what others
//! do, with no promise of gpufleet's, are in [`NOT_PROMISES`], with why.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::repo_root;

/// A phrase of the promising sentence (it covers every sentence that
/// contains it), and the test functions (under tests/ or src/) that hold it.
const PROMISES: &[(&str, &[&str])] = &[
    // Label schemes.
    (
        "a fleet `label_scheme` other than its node class's fails the plan",
        &[
            "a_scheme_contradicting_the_node_class_fails_at_label_scheme",
            "a_scheme_contradicting_the_node_class_is_refused_naming_the_labels",
        ],
    ),
    (
        "A scheme other than the node class's is refused",
        &["a_scheme_contradicting_the_node_class_is_refused_naming_the_labels"],
    ),
    (
        "What a scheme cannot express fails the plan, pointing at the attribute",
        &[
            "what_a_label_scheme_cannot_express_fails_the_plan",
            "network_bandwidth_is_refused_where_the_scheme_has_no_label",
            "names_memory_sizes_for_a_bare_model_name",
            "a_scheme_contradicting_the_node_class_fails_at_label_scheme",
        ],
    ),
    (
        "Without the bound the plan fails at `accelerators`",
        &["names_memory_sizes_for_a_bare_model_name"],
    ),
    (
        "The cfke and azure label schemes have no such label: the plan fails there",
        &["network_bandwidth_is_refused_where_the_scheme_has_no_label"],
    ),
    // The provider block.
    (
        "configuring the provider warns",
        &["insecure_turns_verification_off_and_warns"],
    ),
    // Fleets.
    (
        "One is refused only when it contradicts an attribute",
        &[
            "contradicting_raw_requirements_say_which_attribute_and_what_to_write",
            "raw_requirements_that_agree_with_attributes_are_kept",
        ],
    ),
    (
        "is kept when it agrees with the attribute, and refused when it contradicts it",
        &[
            "contradicting_raw_requirements_say_which_attribute_and_what_to_write",
            "raw_requirements_that_agree_with_attributes_are_kept",
        ],
    ),
    (
        "A strategy in the configuration that the cluster does not run at apply fails it with nothing written",
        &["single_as_helm_installs_it"],
    ),
    (
        "What NVIDIA refuses under the ClusterPolicy's strategy is a plan-time error",
        &[
            "single_refuses_only_layouts_of_several_types",
            "mps_is_refused_under_the_mixed_strategy",
            "mps_under_mixed_is_refused",
        ],
    ),
    (
        "MPS with a `mig_strategy = \"mixed\"` in the configuration fails at plan",
        &[
            "mps_under_mixed_is_refused",
            "mps_is_refused_under_the_mixed_strategy",
        ],
    ),
    (
        "the plan refuses a `gpus` limit there and names what binds",
        &["gpu_limits_that_never_bind"],
    ),
    (
        "a limit below one node's warns that nothing would launch",
        &["gpu_limits_that_never_bind"],
    ),
    (
        "A GPU Operator installed by its Helm chart reads none: the plan warns",
        &["sharing_nothing_reads_is_never_silent"],
    ),
    (
        "to warn when that shares GPUs",
        &["training_caveats_are_plan_warnings"],
    ),
    (
        "Creating a fleet whose NodePool exists already fails with a hint to import it",
        &[
            "creating_a_fleet_whose_node_pool_exists_fails_with_a_hint_to_import_it",
            "a_missing_node_pool_api_is_named",
        ],
    ),
    // GPU sharing.
    (
        "Refuse a pod asking for more than one shared device",
        &["mps_fails_larger_requests_unless_told_not_to"],
    ),
    (
        "under `mixed` each profile is its own resource (`nvidia.com/mig-1g.10gb`), and MPS is refused",
        &[
            "mps_under_mixed_is_refused",
            "single_refuses_only_layouts_of_several_types",
        ],
    ),
    (
        "under `mixed` each profile as its own resource (`nvidia.com/mig-1g.10gb`), and MPS is refused",
        &[
            "mps_under_mixed_is_refused",
            "mps_is_refused_under_the_mixed_strategy",
        ],
    ),
    (
        "the plan warns about each fleet without `gpu_sharing`",
        &["training_caveats_are_plan_warnings"],
    ),
    (
        "a warning says how to point a standalone device plugin at it",
        &["cluster_policy_fields_set_and_released"],
    ),
    (
        "MIG strategies (MPS with `mixed` is refused",
        &[
            "bad_settings_are_reported_at_their_attribute",
            "bad_combinations_fail_at_plan_time",
        ],
    ),
    (
        "`all-balanced` under `single` fails at `mig_layout`, MPS under `mixed` at `strategy`",
        &[
            "single_refuses_only_layouts_of_several_types",
            "mps_under_mixed_is_refused",
        ],
    ),
    (
        "Time slicing or MPS on a cluster whose GPU Operator reads no gpufleet ConfigMap warns at plan and fails at apply",
        &["sharing_nothing_reads_is_never_silent"],
    ),
    // Node join.
    (
        "the API server refuses it afterwards",
        &["a_server_joins_tainted_through_the_kubelet_tls_bootstrap"],
    ),
    (
        "else the apply fails naming that flag and keeps the token in state",
        &["an_api_server_without_bootstrap_token_authentication_is_named"],
    ),
    (
        "the apply fails naming `--enable-bootstrap-token-auth`",
        &["an_api_server_without_bootstrap_token_authentication_is_named"],
    ),
    (
        "unless the token authenticates within 10 seconds, the apply fails naming that flag",
        &["an_api_server_without_bootstrap_token_authentication_is_named"],
    ),
    (
        "Labels a kubelet may not set on its own node",
        &[
            "bad_tokens_durations_groups_and_labels_are_pointed_at",
            "the_kubelets_own_labels_are_allowed",
        ],
    ),
    // Node taints.
    (
        "An error inside a taint names its path",
        &["bad_taints_are_pointed_at"],
    ),
    (
        "simply drop out of `nodes`, without an error",
        &[
            "drift_shows_and_a_deleted_node_is_dropped_without_error",
            "selector_follows_matching_nodes",
        ],
    ),
    (
        "A selector that matches no node at all is not an error either",
        &["selector_follows_matching_nodes"],
    ),
    (
        "the apply fails with \"Node not found\"",
        &["drift_shows_and_a_deleted_node_is_dropped_without_error"],
    ),
    (
        "If an apply fails part way",
        &["node_taint_writes_refused_part_way_are_tracked"],
    ),
    (
        "an identity with `node_selector` alone is refused",
        &["identities_name_a_node_and_refuse_a_selector"],
    ),
    // Priority classes.
    (
        "Creating a class that already exists fails with a hint to import it",
        &["creating_a_class_that_exists_fails_with_a_hint_to_import_it"],
    ),
    (
        "are rejected by `terraform validate`, pointing at the attribute",
        &["rejects_reserved_values_bad_names_and_unknown_policies_with_paths"],
    ),
    (
        "classes (which this resource refuses to manage)",
        &["rejects_reserved_values_bad_names_and_unknown_policies_with_paths"],
    ),
    // Namespace fences (fleets and priority classes).
    (
        "the API server itself refuses, outside the allowed namespaces, pods and workloads",
        &[
            "a_fleet_fence_refuses_other_namespaces_at_admission",
            "a_priority_class_fence_refuses_other_namespaces_at_admission",
            "training_and_inference_side_by_side",
        ],
    ),
    (
        "refusing in other namespaces the workloads that would use them",
        &[
            "a_fleet_fence_refuses_other_namespaces_at_admission",
            "a_priority_class_fence_refuses_other_namespaces_at_admission",
        ],
    ),
    (
        "When this or `allowed_namespace_selector` is set, the API server refuses, in every other namespace",
        &[
            "a_fleet_fence_refuses_other_namespaces_at_admission",
            "a_priority_class_fence_refuses_other_namespaces_at_admission",
        ],
    ),
    (
        "Outside the allowed namespaces the API server refuses a Pod that would be let onto the fleet's nodes",
        &["a_fleet_fence_refuses_other_namespaces_at_admission"],
    ),
    (
        "make the API server itself refuse, outside the allowed namespaces, a Pod naming the class",
        &["a_priority_class_fence_refuses_other_namespaces_at_admission"],
    ),
    (
        "in the wrong namespace fails at once",
        &[
            "a_fleet_fence_refuses_other_namespaces_at_admission",
            "a_priority_class_fence_refuses_other_namespaces_at_admission",
        ],
    ),
    (
        "the namespaces it allows and the attributes to change",
        &[
            "a_fleet_fence_refuses_other_namespaces_at_admission",
            "a_priority_class_fence_refuses_other_namespaces_at_admission",
        ],
    ),
    (
        "What the API server does with a workload from a namespace not allowed",
        &[
            "a_fleet_fence_refuses_other_namespaces_at_admission",
            "a_priority_class_fence_refuses_other_namespaces_at_admission",
        ],
    ),
    (
        "`namespace_enforcement = \"warn\"` admits with a warning that",
        &[
            "a_fleet_fence_refuses_other_namespaces_at_admission",
            "a_priority_class_fence_refuses_other_namespaces_at_admission",
        ],
    ),
    (
        "a job in a namespace without a queue that copies them is refused at create",
        &["a_job_admitted_by_kueue_passes_the_fence_and_a_copy_elsewhere_does_not"],
    ),
    (
        "is refused the fleet's tolerations and stays suspended",
        &["a_job_admitted_by_kueue_passes_the_fence_and_a_copy_elsewhere_does_not"],
    ),
    (
        "One of `deny`, `warn`, `audit`",
        &["every_bad_input_fails_with_a_located_diagnostic_on_every_cli"],
    ),
    (
        "on an older API server the apply fails",
        &["a_namespace_fence_needs_kubernetes_1_30"],
    ),
    (
        "On an older API server the plan warns and the apply fails naming the version",
        &[
            "a_namespace_fence_needs_kubernetes_1_30",
            "an_unreachable_cluster_at_plan_leaves_the_fence_check_to_apply",
        ],
    ),
    (
        "so its fence can refuse only the pods that select it",
        &[
            "an_unreachable_cluster_at_plan_leaves_the_fence_check_to_apply",
            "a_fleet_fence_refuses_other_namespaces_at_admission",
        ],
    ),
    (
        "writes no warning into the policy's `status.typeChecking`",
        &[
            "a_fleet_fence_refuses_other_namespaces_at_admission",
            "a_priority_class_fence_refuses_other_namespaces_at_admission",
        ],
    ),
    // What the cluster lacks (tests/acceptance/prerequisites.rs).
    (
        "warns about each of these that the cluster lacks",
        &[
            "a_bare_cluster_lacks_each_prerequisite",
            "present_prerequisites_give_no_warning",
        ],
    ),
    (
        "Without it the apply fails before writing anything",
        &["a_bare_cluster_lacks_each_prerequisite"],
    ),
    (
        "warns when the cluster does not serve its kind, or when an EC2NodeClass or KWOKNodeClass",
        &[
            "a_bare_cluster_lacks_each_prerequisite",
            "present_prerequisites_give_no_warning",
        ],
    ),
    (
        "already warns that nothing reads it",
        &["a_bare_cluster_lacks_each_prerequisite"],
    ),
    (
        "warns that nothing reads the key",
        &["a_bare_cluster_lacks_each_prerequisite"],
    ),
    (
        "warns when a key known at plan is not in the device-plugin ConfigMap",
        &["present_prerequisites_give_no_warning"],
    ),
    (
        "warns when a `sharing_config` known at plan names no key",
        &["present_prerequisites_give_no_warning"],
    ),
    (
        "that plan does not warn about a key the ConfigMap lacks",
        &["present_prerequisites_give_no_warning"],
    ),
    // Node writes.
    (
        "When a node's write fails, no further write starts",
        &[
            "node_taint_writes_refused_part_way_are_tracked",
            "api_server_killed_mid_node_writes",
        ],
    ),
    // Queues.
    (
        "**Refused as Kueue refuses**",
        &[
            "kueue_s_refusals_are_refused_at_their_paths_naming_its_rule",
            "plan_warns_of_quotas_over_the_fleet_s_limit_and_refuses_what_kueue_refuses",
            "every_bad_input_fails_with_a_located_diagnostic_on_every_cli",
        ],
    ),
    (
        "add up to more of its GPU resource than the fleet's `limits` let it launch",
        &["plan_warns_of_quotas_over_the_fleet_s_limit_and_refuses_what_kueue_refuses"],
    ),
    (
        "a warning when a quota's `gpu_resource` is not what the fleet's nodes advertise",
        &["a_quota_in_whole_gpus_on_a_mig_fleet_is_warned_with_the_resource_to_use"],
    ),
    (
        "an error naming the resource when the fleet's pods request an interconnect resource",
        &["an_interconnect_resource_the_quota_does_not_cover_is_refused_by_name"],
    ),
    (
        "if admitted workloads still hold it then, the error names them",
        &["a_queued_job_is_held_then_admitted_onto_the_fleet_and_the_queue_updates_in_place"],
    ),
];

/// Sentences with those words that promise nothing of gpufleet's, and why.
const NOT_PROMISES: &[(&str, &str)] = &[
    (
        "NVIDIA's device plugin refuses layouts of several device types",
        "what NVIDIA's plugin does; the sentences after it say what gpufleet checks",
    ),
    (
        "NVIDIA's device plugin refuses MPS under it",
        "what NVIDIA's plugin does; gpufleet's refusal is listed where the page says it",
    ),
    (
        "decides what a MIG layout's devices are advertised as and what NVIDIA's device plugin refuses",
        "introduces the list of refusals after it, listed on its own",
    ),
];

/// The pages a user reads: README.md and every Markdown page under docs/.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    let mut found = vec![repo_root().join("README.md")];
    walk(&repo_root().join("docs"), &mut found);
    found.sort();
    found
}

/// The prose of a page as sentences: code blocks, tables, headings and
/// HTML left out; paragraphs and list items joined into one line each,
/// then cut after a full stop that a capital, a backtick or a parenthesis
/// follows.
fn sentences(page: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut in_code = false;
    for line in page.lines() {
        let line = line.trim();
        let list_item = line.starts_with("- ")
            || line.starts_with("* ")
            || line
                .split_once(". ")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok());
        let prose = !in_code
            && !line.is_empty()
            && !["```", "#", "|", "<", "---"]
                .iter()
                .any(|p| line.starts_with(p));
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if !prose || list_item {
            blocks.push(current.join(" "));
            current.clear();
        }
        if prose {
            current.push(line);
        }
    }
    blocks.push(current.join(" "));
    let mut found = Vec::new();
    for block in blocks.iter().filter(|b| !b.is_empty()) {
        let chars: Vec<char> = block.chars().collect();
        let mut start = 0;
        for i in 0..chars.len().saturating_sub(2) {
            let next = chars[i + 2];
            if chars[i] == '.'
                && chars[i + 1] == ' '
                && (next.is_uppercase() || "`(".contains(next))
            {
                found.push(chars[start..=i].iter().collect());
                start = i + 2;
            }
        }
        found.push(chars[start..].iter().collect());
    }
    found
}

/// Whether a sentence speaks of a warning or an error.
fn promises_a_diagnostic(sentence: &str) -> bool {
    sentence
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .any(|word| {
            word.starts_with("warn")
                || word.starts_with("refus")
                || word.starts_with("reject")
                || ["fail", "fails", "failed", "error", "errors"].contains(&word)
        })
}

/// The names of the `#[test]` functions under tests/ and src/.
fn test_functions() -> BTreeSet<String> {
    fn walk(dir: &Path, found: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let mut after_test_attribute = false;
                for line in text.lines().map(str::trim) {
                    if line.starts_with("#[test]") || line.starts_with("#[tokio::test") {
                        after_test_attribute = true;
                    } else if after_test_attribute && let Some(rest) = line.split("fn ").nth(1) {
                        found.insert(rest.split('(').next().unwrap().to_string());
                        after_test_attribute = false;
                    }
                }
            }
        }
    }
    let mut found = BTreeSet::new();
    walk(&repo_root().join("tests"), &mut found);
    walk(&repo_root().join("src"), &mut found);
    found
}

#[test]
fn every_promised_warning_and_error_has_its_tests() {
    let phrases: Vec<&str> = PROMISES
        .iter()
        .map(|(phrase, _)| *phrase)
        .chain(NOT_PROMISES.iter().map(|(phrase, _)| *phrase))
        .collect();
    let mut unlisted = Vec::new();
    let mut said = BTreeSet::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for sentence in sentences(&text)
            .into_iter()
            .filter(|s| promises_a_diagnostic(s))
        {
            let covering: Vec<&str> = phrases
                .iter()
                .copied()
                .filter(|phrase| sentence.contains(phrase))
                .collect();
            if covering.is_empty() {
                let page = page
                    .strip_prefix(repo_root())
                    .unwrap()
                    .display()
                    .to_string();
                unlisted.push(format!("{page}: {sentence}"));
            }
            said.extend(covering);
        }
    }
    assert!(
        unlisted.is_empty(),
        "sentences promising a warning or an error with no tests listed in tests/offline/promises.rs (add a phrase of each to PROMISES with its tests, or narrow it):\n{}",
        unlisted.join("\n")
    );
    let stale: Vec<&&str> = phrases.iter().filter(|p| !said.contains(*p)).collect();
    assert!(
        stale.is_empty(),
        "phrases no page says any more (remove them, or say it again): {stale:?}"
    );
    let tests = test_functions();
    let missing: Vec<&str> = PROMISES
        .iter()
        .flat_map(|(_, names)| names.iter().copied())
        .filter(|name| !tests.contains(*name))
        .collect();
    assert!(
        missing.is_empty(),
        "listed as holding a promise, but no #[test] function under tests/ or src/: {missing:?}"
    );
}
