//! The `gpufleet_accelerators` data source through the real terraform and
//! tofu CLIs: what its filters select, what reaches outputs, and how bad
//! filter values are refused. It reads the built-in catalog and needs no
//! cluster: the provider here points at an address where nothing listens.

use serde_json::{Value, json};

use common::terraform::{At, Cli, Workspace, assert_validate_fails, each_cli, provider_block_for};

/// A workspace whose provider has no reachable cluster.
pub(crate) fn workspace(cli: &Cli, body: &str) -> Workspace {
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

/// The 24 models gpufleet supports, oldest architecture first as the data
/// source's documentation says: written out, so a model dropped, added or
/// moved fails here.
const EVERY_MODEL: [&str; 24] = [
    "P100",
    "V100-16GB",
    "V100-32GB",
    "T4",
    "T4G",
    "A100-40GB",
    "A100-80GB",
    "A30",
    "A10",
    "A10G",
    "A40",
    "L4",
    "L40",
    "L40S",
    "H100",
    "H200",
    "H20",
    "GH200",
    "B200",
    "GB200",
    "B300",
    "GB300",
    "RTX-PRO-6000",
    "RTX-PRO-4500",
];

/// H100 (SXM, 80 GB) as NVIDIA documents it: 80 GB (H100 datasheet),
/// compute capability 9.0, Hopper (CUDA GPUs list); time slicing, and MPS
/// with up to 48 clients from compute capability 7.5 on (NVIDIA
/// k8s-device-plugin, MPS sharing; CUDA MPS documentation); MIG profiles
/// and their instance counts from the MIG user guide's H100 table; layouts
/// as mig-manager's defaults name and fill them (GPU Operator,
/// assets/state-mig-manager/0400_configmap.yaml, which
/// tests/offline/upstream_nvidia.rs reads);
/// resources as the device plugin advertises them (`nvidia.com/mig-<profile>`,
/// `.shared` when renamed); its parts as the H100 datasheet and the PCI ID
/// Repository name them: the SXM5 module (device 0x2330) on HGX boards,
/// whose NVSwitch links every GPU to every other, and the PCIe card (0x2331),
/// both given every layout (mig-manager's device filters name both).
fn h100() -> Value {
    let profiles = [
        ("1g.10gb", 7),
        ("1g.10gb+me", 1),
        ("1g.20gb", 4),
        ("2g.20gb", 3),
        ("3g.40gb", 2),
        ("4g.40gb", 1),
        ("7g.80gb", 1),
    ];
    let resource = |p: &str| format!("nvidia.com/mig-{}", p.replace('+', "."));
    let mut layouts = vec![
        json!({"name": "all-disabled", "resources": {"nvidia.com/gpu": 1}}),
        json!({"name": "all-enabled", "resources": {}}),
        json!({"name": "all-balanced", "resources": {
            "nvidia.com/mig-1g.10gb": 2, "nvidia.com/mig-2g.20gb": 1, "nvidia.com/mig-3g.40gb": 1,
        }}),
    ];
    let mut resource_names = vec![json!("nvidia.com/gpu"), json!("nvidia.com/gpu.shared")];
    for (profile, count) in profiles {
        let name = resource(profile);
        layouts.push(json!({
            "name": format!("all-{}", profile.replace('+', ".")),
            "resources": {name.clone(): count},
        }));
        resource_names.push(json!(format!("{name}.shared")));
        resource_names.push(json!(name));
    }
    json!({
        "name": "H100",
        "architecture": "hopper",
        "compute_capability": "9.0",
        "memory_gib": 80,
        "time_slicing": true,
        "mps": true,
        "mig": true,
        "max_mps_clients": 48,
        "mig_profiles": profiles.iter().map(|(p, n)| json!({
            "name": p, "max_instances": n, "resource": resource(p),
        })).collect::<Vec<_>>(),
        "mig_layouts": layouts.clone(),
        "resource_names": resource_names,
        "parts": [
            {"name": "H100-SXM", "pci_device_id": "0x2330", "device_filter": "0x233010DE",
             "form": "sxm", "gpu_link": "nvswitch", "mig_layouts": layouts.clone()},
            {"name": "H100-PCIE", "pci_device_id": "0x2331", "device_filter": "0x233110DE",
             "form": "pcie", "gpu_link": "pcie", "mig_layouts": layouts},
        ],
    })
}

/// L4 as NVIDIA documents it: 24 GB (L4 datasheet), compute capability 8.9,
/// Ada Lovelace (CUDA GPUs list), no MIG (the MIG user guide does not list
/// it), time slicing and MPS with 48 clients (k8s-device-plugin).
fn l4() -> Value {
    json!({
        "name": "L4",
        "architecture": "ada-lovelace",
        "compute_capability": "8.9",
        "memory_gib": 24,
        "time_slicing": true,
        "mps": true,
        "mig": false,
        "max_mps_clients": 48,
        "mig_profiles": [],
        "mig_layouts": [],
        "resource_names": ["nvidia.com/gpu", "nvidia.com/gpu.shared"],
        "parts": [],
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

        assert_eq!(ws.output("every"), json!(EVERY_MODEL));
        // The GPUs NVIDIA's MIG user guide lists as MIG-capable.
        assert_eq!(
            ws.output("mig"),
            json!([
                "A100-40GB",
                "A100-80GB",
                "A30",
                "H100",
                "H200",
                "H20",
                "GH200",
                "B200",
                "GB200",
                "B300",
                "GB300",
                "RTX-PRO-6000"
            ])
        );
        // MPS (Volta and later) with at least 80 GB (datasheets: A100 80GB,
        // H100 80, H200 141, H20 96, GH200 96, B200 180, GB200 186, B300 and
        // GB300 288, RTX PRO 6000 96).
        assert_eq!(
            ws.output("mps_80"),
            json!([
                "A100-80GB",
                "H100",
                "H200",
                "H20",
                "GH200",
                "B200",
                "GB200",
                "B300",
                "GB300",
                "RTX-PRO-6000"
            ])
        );
        assert_eq!(ws.output("named"), json!(["A100-40GB", "H100"]));
        assert_eq!(ws.output("none"), json!([]));
        assert_eq!(ws.output("mig_filter"), json!("mig"));

        let all_fields = ws.output("all_fields");
        let fields = all_fields.as_array().unwrap();
        let names: Vec<&Value> = fields.iter().map(|a| &a["name"]).collect();
        assert_eq!(json!(names), json!(EVERY_MODEL));
        let model = |name: &str| fields.iter().find(|a| a["name"] == name).unwrap();
        assert_eq!(model("H100"), &h100(), "{}", cli.name);
        assert_eq!(model("L4"), &l4(), "{}", cli.name);
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
