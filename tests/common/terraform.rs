//! Acceptance harness: runs the real `terraform` and `tofu` CLIs against the
//! provider binary cargo just built, in the spirit of terraform-plugin-testing.
//! Each workspace is a temp dir with its own state; the provider comes from a
//! filesystem mirror under `target/`, the way a user installs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use super::{kubeconfig, repo_root};

pub const PROVIDER_VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Clone, Debug)]
pub struct Cli {
    /// `terraform` or `tofu`.
    pub name: &'static str,
    pub path: PathBuf,
    pub version: String,
}

fn find_cli(name: &'static str, candidates: &[PathBuf]) -> Option<Cli> {
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
    let out = Command::new(&path)
        .args(["version", "-json"])
        .output()
        .ok()?;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let version = json["terraform_version"].as_str()?.to_string();
    Some(Cli {
        name,
        path,
        version,
    })
}

/// Every CLI available here: `terraform` from PATH, `tofu` as built by
/// `tests/controlplane/build.sh` (or from PATH). GPUFLEET_REQUIRE_CLIS
/// (e.g. `terraform,tofu`, set by `make test`) turns a missing one into a failure.
pub fn clis() -> &'static [Cli] {
    static CLIS: OnceLock<Vec<Cli>> = OnceLock::new();
    CLIS.get_or_init(|| {
        let tools = repo_root().join("target/tools/bin");
        let found: Vec<Cli> = [
            find_cli("terraform", &[tools.join("terraform")]),
            find_cli("tofu", &[tools.join("tofu")]),
        ]
        .into_iter()
        .flatten()
        .collect();
        for cli in &found {
            eprintln!(
                "acceptance: using {} {} ({})",
                cli.name,
                cli.version,
                cli.path.display()
            );
        }
        let required = std::env::var("GPUFLEET_REQUIRE_CLIS").unwrap_or_default();
        for name in required.split(',').filter(|n| !n.is_empty()) {
            assert!(
                found.iter().any(|c| c.name == name),
                "required CLI {name} not found"
            );
        }
        assert!(!found.is_empty(), "neither terraform nor tofu found");
        found
    })
}

/// A filesystem mirror holding the provider binary under both registries'
/// host names (`gpufleet/gpufleet` means registry.terraform.io to Terraform
/// and registry.opentofu.org to OpenTofu).
fn provider_mirror() -> &'static Path {
    static MIRROR: OnceLock<PathBuf> = OnceLock::new();
    MIRROR.get_or_init(|| {
        let binary = PathBuf::from(env!("CARGO_BIN_EXE_terraform-provider-gpufleet"));
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

/// The preamble every configuration gets: provider requirement and a
/// provider block pointing at the cluster under test.
pub fn provider_block(extra: &str) -> String {
    provider_block_for(&kubeconfig(), extra)
}

/// The preamble with the provider reading another kubeconfig (another user).
pub fn provider_block_for(kubeconfig: &str, extra: &str) -> String {
    format!(
        "terraform {{\n  required_providers {{\n    gpufleet = {{\n      source  = \"gpufleet/gpufleet\"\n      version = \"{PROVIDER_VERSION}\"\n    }}\n  }}\n}}\n\nprovider \"gpufleet\" {{\n  config_path = \"{kubeconfig}\"\n{extra}}}\n\n"
    )
}

pub struct Workspace {
    pub cli: Cli,
    dir: tempfile::TempDir,
    initialized: bool,
    /// Something may exist in the cluster that this workspace's state owns.
    applied: bool,
}

pub struct Run {
    pub success: bool,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(out: Output) -> Self {
        Self {
            success: out.status.success(),
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Workspace {
    pub fn new(cli: &Cli) -> Self {
        Self {
            cli: cli.clone(),
            dir: tempfile::Builder::new()
                .prefix(&format!("gpufleet-{}-", cli.name))
                .tempdir()
                .unwrap(),
            initialized: false,
            applied: false,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `main.tf`: the provider preamble plus `body`.
    pub fn config(&mut self, body: &str) -> &mut Self {
        self.config_with_provider("", body)
    }

    /// Writes `main.tf` exactly as given (preamble included).
    pub fn config_raw(&mut self, content: &str) -> &mut Self {
        std::fs::write(self.dir.path().join("main.tf"), content).unwrap();
        self
    }

    pub fn config_with_provider(&mut self, provider_extra: &str, body: &str) -> &mut Self {
        std::fs::write(
            self.dir.path().join("main.tf"),
            provider_block(provider_extra) + body,
        )
        .unwrap();
        self
    }

    /// The CLI with `args` in this workspace, ready to run or to spawn.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.cli.path);
        command
            .args(args)
            .current_dir(self.dir.path())
            .env("TF_CLI_CONFIG_FILE", provider_mirror().join("cli.tfrc"))
            .env("CHECKPOINT_DISABLE", "1")
            .env("TF_IN_AUTOMATION", "1")
            .env("TF_INPUT", "0")
            .env_remove("TF_LOG");
        command
    }

    pub fn run(&self, args: &[&str]) -> Run {
        let out = self
            .command(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.cli.path.display()));
        Run::from(out)
    }

    /// Marks the workspace as holding objects (for a run made with
    /// [`Self::command`]), so that dropping it destroys them.
    pub fn holds_objects(&mut self) {
        self.applied = true;
    }

    fn ok(&self, args: &[&str]) -> Run {
        let run = self.run(args);
        assert!(
            run.success,
            "{} {} failed ({}):\n{}\n{}",
            self.cli.name,
            args.join(" "),
            self.dir.path().display(),
            run.stdout,
            run.stderr
        );
        run
    }

    pub fn init(&mut self) -> &mut Self {
        if !self.initialized {
            self.ok(&["init", "-no-color", "-input=false"]);
            self.initialized = true;
        }
        self
    }

    pub fn apply(&mut self) -> Run {
        self.init();
        self.applied = true;
        self.ok(&["apply", "-auto-approve", "-no-color", "-input=false"])
    }

    /// Apply that must fail; returns what the CLI printed.
    pub fn apply_fails(&mut self) -> String {
        self.init();
        self.applied = true;
        let run = self.run(&["apply", "-auto-approve", "-no-color", "-input=false"]);
        assert!(
            !run.success,
            "apply unexpectedly succeeded:\n{}",
            run.stdout
        );
        run.stderr + &run.stdout
    }

    /// `validate` that must fail (needs no cluster); returns the diagnostics text.
    pub fn validate_fails(&mut self) -> String {
        self.init();
        let run = self.run(&["validate", "-no-color"]);
        assert!(
            !run.success,
            "validate unexpectedly succeeded:\n{}",
            run.stdout
        );
        run.stderr + &run.stdout
    }

    /// Plans and says whether anything would change (`-detailed-exitcode`).
    pub fn plan_has_changes(&mut self) -> (bool, String) {
        self.init();
        let run = self.run(&["plan", "-detailed-exitcode", "-no-color", "-input=false"]);
        match run.code {
            0 => (false, run.stdout),
            2 => (true, run.stdout),
            _ => panic!(
                "{} plan failed:\n{}\n{}",
                self.cli.name, run.stdout, run.stderr
            ),
        }
    }

    /// The check terraform-plugin-testing makes after every apply.
    pub fn assert_plan_empty(&mut self) {
        let (changes, out) = self.plan_has_changes();
        assert!(
            !changes,
            "{}: plan after apply is not empty:\n{out}",
            self.cli.name
        );
    }

    pub fn assert_plan_changes(&mut self, expected: &str) -> String {
        let (changes, out) = self.plan_has_changes();
        assert!(
            changes,
            "{}: expected a change ({expected}), but plan is empty",
            self.cli.name
        );
        assert!(
            out.contains(expected),
            "{}: plan does not mention {expected:?}:\n{out}",
            self.cli.name
        );
        out
    }

    pub fn import(&mut self, address: &str, id: &str) {
        self.init();
        self.applied = true;
        self.ok(&["import", "-no-color", "-input=false", address, id]);
    }

    pub fn destroy(&mut self) {
        self.init();
        self.ok(&["destroy", "-auto-approve", "-no-color", "-input=false"]);
        self.applied = false;
    }

    /// Forgets the state without destroying (for a workspace that imported
    /// objects another workspace owns).
    pub fn forget(&mut self) {
        self.applied = false;
    }

    /// `show -json` of the state: the values Terraform stored.
    pub fn state(&self) -> serde_json::Value {
        let run = self.ok(&["show", "-json", "-no-color"]);
        serde_json::from_str(&run.stdout).unwrap()
    }

    /// Attribute values of one resource in state.
    pub fn resource_values(&self, address: &str) -> serde_json::Value {
        self.resource(address)["values"].clone()
    }

    /// One resource as `show -json` gives it (values, `tainted`, ...).
    pub fn resource(&self, address: &str) -> serde_json::Value {
        let state = self.state();
        let resources = state["values"]["root_module"]["resources"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        resources
            .into_iter()
            .find(|r| r["address"] == address)
            .unwrap_or_else(|| panic!("{address} not in state: {state}"))
    }
}

impl Drop for Workspace {
    /// A test that failed half-way still removes what it created, so the
    /// shared cluster stays clean for the tests after it.
    fn drop(&mut self) {
        if self.applied {
            let _ = self.run(&["destroy", "-auto-approve", "-no-color", "-input=false"]);
        }
    }
}

/// `validate` of `body` (after the provider preamble) must fail with
/// `message`; with `source_line`, Terraform must also quote that line of the
/// configuration, which is where the diagnostic's attribute path points.
pub fn assert_invalid(cli: &Cli, body: &str, message: &str, source_line: Option<&str>) {
    let mut ws = Workspace::new(cli);
    ws.config(body);
    let out = ws.validate_fails();
    assert!(
        out.contains(message),
        "{}: expected {message:?} in:\n{out}",
        cli.name
    );
    if let Some(line) = source_line {
        assert!(
            out.contains(line),
            "{}: diagnostic not placed at {line:?}:\n{out}",
            cli.name
        );
    }
}

/// Runs `test` once per available CLI, naming the CLI in any failure.
pub fn each_cli(test: impl Fn(&Cli)) {
    for cli in clis() {
        eprintln!("--- with {} {}", cli.name, cli.version);
        test(cli);
    }
}
