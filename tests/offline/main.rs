//! The offline tier: everything that needs no cluster, with the real
//! terraform and tofu CLIs where there is one to drive (each CLI that is
//! missing is skipped with a notice, a failure under `make test`).
//! `make test-fast` runs it with the unit tests.

mod accelerators;
mod bad_input;
mod docs;
mod example_module;
mod examples;
mod fuzz_corpus;
mod layout;
mod pci_ids;
mod promises;
mod protocol;
mod release;
mod supported_versions;
mod upstream_nvidia;
mod version;

/// The harness finds the provider binary where cargo says it built it.
#[test]
fn the_harness_runs_the_provider_cargo_built() {
    assert_eq!(
        common::provider_binary(),
        std::path::Path::new(env!("CARGO_BIN_EXE_terraform-provider-gpufleet"))
    );
}
