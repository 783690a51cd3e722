//! The binary says which release it is, from Cargo.toml's version: on
//! `--version`, and in a debug line at the handshake that the CLIs show in
//! their log (`TF_LOG_PROVIDER=debug`).

use std::process::Command;

use common::repo_root;
use common::terraform::{Workspace, cli_command, each_cli, run_command};

/// `version` of `[package]`, read from the file (not from the build).
fn cargo_toml_version() -> String {
    let manifest = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    manifest
        .lines()
        .skip_while(|l| l.trim() != "[package]")
        .find_map(|l| l.strip_prefix("version = "))
        .map(|v| v.trim_matches('"').to_string())
        .expect("[package] version in Cargo.toml")
}

#[test]
fn version_flag_prints_the_release_without_the_plugin_handshake() {
    let out = Command::new(common::provider_binary())
        .arg("--version")
        .env_remove("TF_PLUGIN_MAGIC_COOKIE")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "terraform-provider-gpufleet {} (plugin protocol 6)\n",
            cargo_toml_version()
        )
    );
}

#[test]
fn the_handshake_debug_log_names_the_release() {
    let expected = format!(
        "[DEBUG] gpufleet: terraform-provider-gpufleet {} serving plugin protocol 6 on unix /",
        cargo_toml_version()
    );
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config_raw(
            "terraform {\n  required_providers {\n    gpufleet = {\n      source = \"gpufleet/gpufleet\"\n    }\n  }\n}\n\ndata \"gpufleet_accelerators\" \"all\" {}\n",
        );
        ws.init();
        let mut command = cli_command(cli, ws.path(), &["validate", "-no-color"]);
        command.env("TF_LOG_PROVIDER", "debug");
        let run = run_command(cli, command);
        assert!(run.success, "{}: {}", cli.name, run.stderr);
        assert!(
            run.stderr.contains(&expected),
            "{}: no {expected:?} in the log:\n{}",
            cli.name,
            run.stderr
        );
    });
}
