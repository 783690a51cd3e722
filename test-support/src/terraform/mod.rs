//! Acceptance harness: runs the real `terraform` and `tofu` CLIs against the
//! provider binary cargo just built, in the spirit of terraform-plugin-testing.
//! Each workspace is a temp dir with its own state; the provider comes from a
//! filesystem mirror under `target/`, the way a user installs it.
//!
//! - [`cli`]: finding the CLIs and running them.
//! - [`workspace`]: a configuration with its state, and what happens to it.
//! - [`plan`]: a saved plan and the values in it.
//! - [`assertions`]: configurations that must be refused, and where.

mod assertions;
mod cli;
mod plan;
mod workspace;

pub use assertions::{At, assert_invalid, assert_plan_invalid, assert_validate_fails};
pub use cli::{
    Cli, Run, cli_at, cli_command, cli_command_with_config, clis, each_cli, each_identity_cli,
    find_cli, identity_clis, run_command, run_in,
};
pub use plan::{Plan, value_at};
pub use workspace::{ImportBy, Workspace};

use crate::provider_kubeconfig;

pub const PROVIDER_VERSION: &str = gpufleet::VERSION;

/// The preamble every configuration gets: provider requirement and a
/// provider block pointing at the cluster under test.
pub fn provider_block(extra: &str) -> String {
    provider_block_for(&provider_kubeconfig(), extra)
}

/// The preamble with the provider reading another kubeconfig (another user).
pub fn provider_block_for(kubeconfig: &str, extra: &str) -> String {
    format!(
        "terraform {{\n  required_providers {{\n    gpufleet = {{\n      source  = \"gpufleet/gpufleet\"\n      version = \"{PROVIDER_VERSION}\"\n    }}\n  }}\n}}\n\nprovider \"gpufleet\" {{\n  config_path = \"{kubeconfig}\"\n{extra}}}\n\n"
    )
}
