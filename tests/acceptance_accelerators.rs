//! The `gpufleet_accelerators` data source through the real terraform and
//! tofu CLIs: what its filters select, what reaches outputs, and how bad
//! filter values are refused. It reads the built-in catalog and needs no
//! cluster: the provider here points at an address where nothing listens.

mod common;

use gpufleet::catalog::{self, Accelerator, Sharing};
use serde_json::{Value, json};

use common::terraform::{At, Cli, Workspace, assert_validate_fails, each_cli, provider_block_for};

/// A workspace whose provider has no reachable cluster.
fn workspace(cli: &Cli, body: &str) -> Workspace {
    let mut ws = Workspace::new(cli);
    let kubeconfig = ws.path().join("unreachable.kubeconfig");
    std::fs::write(&kubeconfig, common::unreachable_kubeconfig()).unwrap();
    ws.config_raw(&(provider_block_for(kubeconfig.to_str().unwrap(), "") + body));
    ws
}

/// A data source with `filters`, and an output of its names.
fn listing(name: &str, filters: &str) -> String {
    format!(
        "data \"gpufleet_accelerators\" \"{name}\" {{\n{filters}}}\n\noutput \"{name}\" {{\n  value = [for a in data.gpufleet_accelerators.{name}.accelerators : a.name]\n}}\n\n"
    )
}

/// The catalog entries for which `keep` holds, by name, in catalog order.
fn catalog_names(keep: impl Fn(&Accelerator) -> bool) -> Value {
    json!(
        catalog::all()
            .iter()
            .filter(|a| keep(a))
            .map(|a| a.name)
            .collect::<Vec<_>>()
    )
}

/// What the data source says about one model, from the catalog.
fn entry(a: &Accelerator) -> Value {
    let (major, minor) = a.compute_capability;
    json!({
        "name": a.name,
        "architecture": a.architecture.as_str(),
        "compute_capability": format!("{major}.{minor}"),
        "memory_gib": a.memory_gib,
        "time_slicing": a.supports(Sharing::TimeSlicing),
        "mps": a.supports(Sharing::Mps),
        "mig": a.supports(Sharing::Mig),
        "max_mps_clients": a.max_mps_clients(),
        "mig_profiles": a.mig_profiles.iter().map(|p| json!({
            "name": p.name,
            "max_instances": p.max_instances,
            "resource": catalog::mig_resource(p.name),
        })).collect::<Vec<_>>(),
        "mig_layouts": a.mig_layouts().into_iter().map(|l| json!({
            "name": l.name,
            "resources": l.resources().into_iter().map(|(k, v)| (k, json!(v))).collect::<serde_json::Map<_, _>>(),
        })).collect::<Vec<_>>(),
        "resource_names": a.resource_names(),
    })
}

/// Each filter, alone and combined, selects exactly the catalog entries that
/// pass it, in catalog order, and the outputs carry them through the CLI.
#[test]
fn filters_select_exactly_the_matching_models() {
    each_cli(|cli| {
        let body = [
            listing("every", ""),
            listing("mig", "  sharing = \"mig\"\n"),
            listing(
                "mps_80",
                "  sharing        = \"mps\"\n  min_memory_gib = 80\n",
            ),
            // Catalog names and aliases, in any case.
            listing("named", "  names = [\"h100\", \"a100-40g\"]\n"),
            listing("none", "  min_memory_gib = 10000\n"),
        ]
        .concat()
            + "output \"all_fields\" {\n  value = data.gpufleet_accelerators.every.accelerators\n}\n\n\
               output \"mig_filter\" {\n  value = data.gpufleet_accelerators.mig.sharing\n}\n";
        let mut ws = workspace(cli, &body);
        ws.apply();

        assert_eq!(ws.output("every"), catalog_names(|_| true));
        let mig = ws.output("mig");
        assert_eq!(mig, catalog_names(|a| a.supports(Sharing::Mig)));
        // What the catalog says of real GPUs: H100 and A100 partition, L4 does not.
        for model in ["H100", "A100-80GB"] {
            assert!(mig.as_array().unwrap().contains(&json!(model)), "{mig}");
        }
        assert!(!mig.as_array().unwrap().contains(&json!("L4")), "{mig}");
        assert_eq!(
            ws.output("mps_80"),
            catalog_names(|a| a.supports(Sharing::Mps) && a.memory_gib >= 80)
        );
        assert_eq!(ws.output("named"), json!(["A100-40GB", "H100"]));
        assert_eq!(ws.output("none"), json!([]));
        assert_eq!(ws.output("mig_filter"), json!("mig"));

        let all_fields = ws.output("all_fields");
        let expected: Vec<Value> = catalog::all().iter().map(entry).collect();
        assert_eq!(all_fields, json!(expected));
        let h100 = all_fields
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "H100")
            .unwrap();
        assert_eq!(
            (
                &h100["architecture"],
                &h100["compute_capability"],
                &h100["memory_gib"]
            ),
            (&json!("hopper"), &json!("9.0"), &json!(80))
        );
        assert!(
            h100["mig_profiles"]
                .as_array()
                .unwrap()
                .contains(&json!({"name": "1g.10gb", "max_instances": 7, "resource": "nvidia.com/mig-1g.10gb"})),
            "{h100}"
        );
    });
}

/// Bad filter values fail `validate` with one error, on the filter's line.
#[test]
fn bad_filter_values_are_rejected_on_their_line() {
    each_cli(|cli| {
        let cases = [
            (
                "  sharing = \"nvlink\"\n",
                "\"nvlink\" is not one of \"time_slicing\", \"mps\", \"mig\"",
                "sharing = \"nvlink\"",
            ),
            (
                "  min_memory_gib = -1\n",
                "-1 is outside 0..=10000",
                "min_memory_gib = -1",
            ),
            (
                "  min_memory_gib = 1.5\n",
                "1.5 is not a whole number",
                "min_memory_gib = 1.5",
            ),
            (
                "  names = [\"H10\"]\n",
                "unknown accelerator `H10`; did you mean `H100`?",
                "names = [\"H10\"]",
            ),
        ];
        for (filters, message, line) in cases {
            let mut ws = workspace(
                cli,
                &format!("data \"gpufleet_accelerators\" \"a\" {{\n{filters}}}\n"),
            );
            assert_validate_fails(&mut ws, message, At::Line(line));
        }
    });
}
