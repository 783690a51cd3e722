//! Finding the `terraform` and `tofu` CLIs, and running them with gpufleet
//! installed from the test mirror.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use super::PROVIDER_VERSION;
use crate::repo_root;

#[derive(Clone, Debug)]
pub struct Cli {
    /// `terraform` or `tofu`.
    pub name: &'static str,
    pub path: PathBuf,
    pub version: String,
}

/// The CLI `name`: the first of `candidates` that exists, else the one on
/// PATH; None when there is none. One that exists but cannot report its
/// version is broken, and that is an error, not a CLI to leave out.
pub fn find_cli(name: &'static str, candidates: &[PathBuf]) -> Option<Cli> {
    let path = candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        })?;
    Some(cli_at(name, &path))
}

impl Cli {
    /// Whether it knows resource identity: identities in state and
    /// `import { identity = {...} }` (Terraform and OpenTofu 1.12+).
    pub fn supports_identity(&self) -> bool {
        let mut parts = self
            .version
            .split('.')
            .map(|p| p.parse::<u32>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (1, 12)
    }
}

/// The CLI at `path`, which must start and say its version.
pub fn cli_at(name: &'static str, path: &Path) -> Cli {
    // The user's CLI configuration has nothing to say about the version,
    // and OpenTofu 1.12 prints a missing one's warning on stdout, before the JSON.
    let out = Command::new(path)
        .args(["version", "-json"])
        .env_remove("TF_CLI_CONFIG_FILE")
        .output()
        .unwrap_or_else(|e| panic!("{name} at {} cannot start: {e}", path.display()));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{name} at {} does not start ({}; `version -json` gave no JSON: {e}):\n{}{}",
            path.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let version = json["terraform_version"]
        .as_str()
        .unwrap_or_else(|| panic!("{name} at {}: no version in {json}", path.display()))
        .to_string();
    Cli {
        name,
        path: path.to_path_buf(),
        version,
    }
}

/// Every CLI available here: `terraform` from PATH, `tofu` as built by
/// `testbed/build.sh` (or from PATH). A missing one is skipped
/// with a notice, and is a failure under `make test` (GPUFLEET_REQUIRE_ALL).
pub fn clis() -> &'static [Cli] {
    static CLIS: OnceLock<Vec<Cli>> = OnceLock::new();
    CLIS.get_or_init(|| {
        let tools = repo_root().join("target/tools/bin");
        let mut found = Vec::new();
        for name in ["terraform", "tofu"] {
            match find_cli(name, &[tools.join(name)]) {
                Some(cli) => {
                    eprintln!(
                        "acceptance: using {} {} ({})",
                        cli.name,
                        cli.version,
                        cli.path.display()
                    );
                    found.push(cli);
                }
                None => crate::skipped(
                    &format!("every acceptance test with {name}"),
                    &format!(
                        "{name} is neither in {} nor on PATH (testbed/build.sh builds tofu; Terraform comes from PATH)",
                        tools.display()
                    ),
                ),
            }
        }
        assert!(!found.is_empty(), "neither terraform nor tofu found");
        found
    })
}

/// The newest Terraform here and every OpenTofu of [`clis`] that know
/// resource identity: `terraform` when it does, else the Terraform 1.13.3
/// that testbed/build.sh builds. A missing Terraform with
/// identity is skipped with a notice (a failure under GPUFLEET_REQUIRE_ALL).
pub fn identity_clis() -> &'static [Cli] {
    static CLIS: OnceLock<Vec<Cli>> = OnceLock::new();
    CLIS.get_or_init(|| {
        let mut found: Vec<Cli> = clis()
            .iter()
            .filter(|c| c.supports_identity())
            .cloned()
            .collect();
        if !found.iter().any(|c| c.name == "terraform") {
            let newer = repo_root().join("target/tools/bin/terraform-1.13.3");
            if newer.is_file() {
                let cli = cli_at("terraform", &newer);
                eprintln!(
                    "acceptance: identity tests use terraform {} ({})",
                    cli.version,
                    newer.display()
                );
                found.push(cli);
            } else {
                crate::skipped(
                    "resource identity tests with terraform",
                    &format!(
                        "the terraform on PATH predates identities (1.12) and {} is missing (testbed/build.sh builds it)",
                        newer.display()
                    ),
                );
            }
        }
        found
    })
}

/// A filesystem mirror holding the provider binary under both registries'
/// host names (`gpufleet/gpufleet` means registry.terraform.io to Terraform
/// and registry.opentofu.org to OpenTofu).
pub(super) fn provider_mirror() -> &'static Path {
    static MIRROR: OnceLock<PathBuf> = OnceLock::new();
    MIRROR.get_or_init(|| {
        let binary = crate::provider_binary();
        let mirror = repo_root().join(format!("target/test-mirror-{}", std::process::id()));
        for host in ["registry.terraform.io", "registry.opentofu.org"] {
            let dir = mirror.join(format!("{host}/gpufleet/gpufleet/{PROVIDER_VERSION}/linux_amd64"));
            std::fs::create_dir_all(&dir).unwrap();
            let target = dir.join(format!("terraform-provider-gpufleet_v{PROVIDER_VERSION}"));
            let _ = std::fs::remove_file(&target);
            std::os::unix::fs::symlink(&binary, &target).unwrap();
        }
        let config = format!(
            "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [\"registry.terraform.io/gpufleet/gpufleet\", \"registry.opentofu.org/gpufleet/gpufleet\"]\n  }}\n  direct {{\n    exclude = [\"registry.terraform.io/gpufleet/gpufleet\", \"registry.opentofu.org/gpufleet/gpufleet\"]\n  }}\n}}\n",
            mirror.display()
        );
        std::fs::write(mirror.join("cli.tfrc"), config).unwrap();
        mirror
    })
}

/// `cli` with `args` in `dir`, installing gpufleet from the test mirror and
/// never prompting.
pub fn cli_command(cli: &Cli, dir: &Path, args: &[&str]) -> Command {
    cli_command_with_config(cli, dir, &provider_mirror().join("cli.tfrc"), args)
}

/// As [`cli_command`], with another CLI configuration file (other
/// provider installation methods).
pub fn cli_command_with_config(cli: &Cli, dir: &Path, config: &Path, args: &[&str]) -> Command {
    let mut command = user_cli_command(cli, dir, args);
    command.env("TF_CLI_CONFIG_FILE", config);
    command
}

/// `cli` with `args` in `dir`, never prompting, with the user's CLI
/// configuration: gpufleet from wherever a plain `terraform init` finds it
/// (`make install`'s implied local mirror). A TF_CLI_CONFIG_FILE naming no
/// file is left out: it only adds a warning to every command.
pub(super) fn user_cli_command(cli: &Cli, dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(&cli.path);
    command
        .args(args)
        .current_dir(dir)
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_IN_AUTOMATION", "1")
        .env("TF_INPUT", "0")
        .env_remove("TF_LOG");
    if std::env::var_os("TF_CLI_CONFIG_FILE").is_some_and(|f| !Path::new(&f).is_file()) {
        command.env_remove("TF_CLI_CONFIG_FILE");
    }
    command
}

pub fn run_in(cli: &Cli, dir: &Path, args: &[&str]) -> Run {
    run_command(cli, cli_command(cli, dir, args))
}

pub fn run_command(cli: &Cli, mut command: Command) -> Run {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", cli.path.display()));
    Run::from(out)
}

pub struct Run {
    pub success: bool,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub(super) fn from(out: Output) -> Self {
        Self {
            success: out.status.success(),
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Runs `test` once per available CLI, naming the CLI in any failure.
pub fn each_cli(test: impl Fn(&Cli)) {
    for cli in clis() {
        eprintln!("--- with {} {}", cli.name, cli.version);
        test(cli);
    }
}

/// Runs `test` with each of [`identity_clis`].
pub fn each_identity_cli(test: impl Fn(&Cli)) {
    for cli in identity_clis() {
        eprintln!("--- with {} {}", cli.name, cli.version);
        test(cli);
    }
}
