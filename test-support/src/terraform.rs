//! Acceptance harness: runs the real `terraform` and `tofu` CLIs against the
//! provider binary cargo just built, in the spirit of terraform-plugin-testing.
//! Each workspace is a temp dir with its own state; the provider comes from a
//! filesystem mirror under `target/`, the way a user installs it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::{provider_kubeconfig, repo_root};

pub const PROVIDER_VERSION: &str = gpufleet::VERSION;

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
fn provider_mirror() -> &'static Path {
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
fn user_cli_command(cli: &Cli, dir: &Path, args: &[&str]) -> Command {
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

pub struct Workspace {
    pub cli: Cli,
    dir: Home,
    /// Extra environment for every CLI run (e.g. KUBECONFIG for a
    /// configuration whose provider block reads it).
    env: Vec<(String, String)>,
    initialized: bool,
    /// Something may exist in the cluster that this workspace's state owns.
    applied: bool,
}

/// Where a workspace lives, and so what becomes of it when it goes.
enum Home {
    /// A temporary directory, removed with the workspace, which destroys
    /// what its state holds first; gpufleet from the test mirror.
    Temporary(tempfile::TempDir),
    /// A directory that outlives the workspace, and so do the objects of its
    /// state (`make demo`'s target/demo); gpufleet from wherever a plain
    /// `terraform init` finds it.
    Kept(PathBuf),
}

impl Home {
    fn path(&self) -> &Path {
        match self {
            Home::Temporary(dir) => dir.path(),
            Home::Kept(dir) => dir,
        }
    }
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

const APPLY: &[&str] = &["apply", "-auto-approve", "-no-color", "-input=false"];
const DESTROY: &[&str] = &["destroy", "-auto-approve", "-no-color", "-input=false"];

/// How an import reaches the state.
#[derive(Clone, Copy, Debug)]
pub enum ImportBy {
    /// `terraform import ADDRESS ID`.
    Command,
    /// An `import {}` block, applied (Terraform 1.5+, OpenTofu 1.5+).
    Block,
    /// An `import {}` block with `identity = ID`, where the import's ID is
    /// the identity's HCL object (Terraform and OpenTofu 1.12+).
    Identity,
}

impl Workspace {
    pub fn new(cli: &Cli) -> Self {
        Self {
            cli: cli.clone(),
            dir: Home::Temporary(
                tempfile::Builder::new()
                    .prefix(&format!("gpufleet-{}-", cli.name))
                    .tempdir()
                    .unwrap(),
            ),
            env: Vec::new(),
            initialized: false,
            applied: false,
        }
    }

    /// A workspace in `dir` (created if missing) that keeps its state and
    /// the objects in it when it goes: for `make demo`, whose cluster stays
    /// up. The provider is found as a user's `terraform init` finds it; it
    /// may have been rebuilt under the same version since an earlier run,
    /// so the lock file that run wrote, with its checksum, is dropped.
    pub fn kept_in(cli: &Cli, dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let _ = std::fs::remove_file(dir.join(".terraform.lock.hcl"));
        Self {
            cli: cli.clone(),
            dir: Home::Kept(dir.to_path_buf()),
            env: Vec::new(),
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

    /// Copies the `.tf` files of a configuration in the repository (and of
    /// its subdirectories, e.g. a local module), leaving out its tests.
    pub fn config_from(&mut self, dir_in_repo: &str) -> &mut Self {
        fn copy(from: &Path, to: &Path) {
            std::fs::create_dir_all(to).unwrap();
            for entry in std::fs::read_dir(from).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap();
                if path.is_dir() && name != "tests" && name != ".terraform" {
                    copy(&path, &to.join(name));
                } else if path.extension().is_some_and(|e| e == "tf") {
                    std::fs::copy(&path, to.join(name)).unwrap();
                }
            }
        }
        copy(&repo_root().join(dir_in_repo), self.dir.path());
        self
    }

    /// Writes another file into the workspace (e.g. `terraform.tfvars`).
    pub fn file(&mut self, name: &str, content: &str) -> &mut Self {
        std::fs::write(self.dir.path().join(name), content).unwrap();
        self
    }

    pub fn env(&mut self, key: &str, value: &str) -> &mut Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    pub fn config_with_provider(&mut self, provider_extra: &str, body: &str) -> &mut Self {
        self.config_raw(&(provider_block(provider_extra) + body))
    }

    /// The configuration as written, preamble included.
    pub fn main_tf(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("main.tf")).unwrap()
    }

    /// The CLI with `args` in this workspace, ready to run or to spawn.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = match &self.dir {
            Home::Temporary(dir) => cli_command(&self.cli, dir.path(), args),
            Home::Kept(dir) => user_cli_command(&self.cli, dir, args),
        };
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    fn try_run(&self, args: &[&str]) -> std::io::Result<Run> {
        self.command(args).output().map(Run::from)
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.try_run(args)
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.cli.path.display()))
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

    /// Apply, then the check terraform-plugin-testing makes after every
    /// apply: a second plan is empty.
    pub fn apply(&mut self) -> Run {
        let run = self.apply_only();
        self.assert_plan_empty();
        run
    }

    /// [`Self::apply`] with `measure` around the apply alone, not the
    /// empty-plan check after it: to count what the apply itself costs.
    pub fn apply_measured<T>(&mut self, measure: impl FnOnce(&mut dyn FnMut()) -> T) -> T {
        let measured = measure(&mut || {
            self.apply_only();
        });
        self.assert_plan_empty();
        measured
    }

    /// Apply after which the plan is not expected to be empty, and `reason`
    /// says why; every other successful apply goes through [`Self::apply`].
    pub fn apply_expecting_changes(&mut self, reason: &str) -> Run {
        assert!(
            !reason.trim().is_empty(),
            "say why the plan after this apply may not be empty"
        );
        eprintln!(
            "{}: no empty-plan check after this apply: {reason}",
            self.cli.name
        );
        self.apply_only()
    }

    fn apply_only(&mut self) -> Run {
        self.init();
        self.applied = true;
        self.ok(APPLY)
    }

    /// Apply that must fail; returns what the CLI printed.
    pub fn apply_fails(&mut self) -> String {
        self.init();
        self.applied = true;
        let run = self.run(APPLY);
        assert!(
            !run.success,
            "apply unexpectedly succeeded:\n{}",
            run.stdout
        );
        run.stderr + &run.stdout
    }

    /// `validate -json` (needs no cluster): whether the configuration is
    /// valid, and its diagnostics.
    pub fn validate_json(&mut self) -> serde_json::Value {
        self.init();
        let run = self.run(&["validate", "-json", "-no-color"]);
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
            panic!(
                "{} validate -json gave no JSON ({e}):\n{}\n{}",
                self.cli.name, run.stdout, run.stderr
            )
        })
    }

    /// `validate` that must fail, for configurations with several errors
    /// that a test finds one by one; returns what the CLI printed.
    pub fn validate_fails(&mut self) -> String {
        self.init();
        let run = self.run(&["validate", "-no-color"]);
        assert!(
            !run.success,
            "{}: validate unexpectedly succeeded:\n{}",
            self.cli.name, run.stdout
        );
        run.stderr + &run.stdout
    }

    /// Plans into a saved plan file and reads it back as JSON.
    pub fn plan(&mut self) -> Plan {
        self.init();
        let run = self.run(&[
            "plan",
            "-out=gpufleet.tfplan",
            "-detailed-exitcode",
            "-no-color",
            "-input=false",
        ]);
        let has_changes = match run.code {
            0 => false,
            2 => true,
            _ => panic!(
                "{} plan failed ({}):\n{}\n{}",
                self.cli.name,
                self.dir.path().display(),
                run.stdout,
                run.stderr
            ),
        };
        let show = self.ok(&["show", "-json", "-no-color", "gpufleet.tfplan"]);
        Plan {
            cli: self.cli.name,
            has_changes,
            text: run.stdout,
            json: serde_json::from_str(&show.stdout).unwrap(),
        }
    }

    /// The check terraform-plugin-testing makes after every apply. The exit
    /// code says it (no saved plan to read back: this runs after every apply).
    pub fn assert_plan_empty(&mut self) {
        self.init();
        let run = self.run(&["plan", "-detailed-exitcode", "-no-color", "-input=false"]);
        assert!(
            run.code == 0,
            "{}: plan after apply is not empty (exit {}, {}):\n{}\n{}",
            self.cli.name,
            run.code,
            self.dir.path().display(),
            run.stdout,
            run.stderr
        );
    }

    /// A plan that must change something; what exactly, the caller checks
    /// on the returned plan.
    pub fn assert_plan_changes(&mut self) -> Plan {
        let plan = self.plan();
        assert!(
            plan.has_changes,
            "{}: expected a change, but the plan is empty",
            self.cli.name
        );
        plan
    }

    pub fn import(&mut self, address: &str, id: &str) {
        self.init();
        self.applied = true;
        self.ok(&["import", "-no-color", "-input=false", address, id]);
    }

    /// terraform-plugin-testing's ImportStateVerify: a new workspace with
    /// this one's configuration imports each `(address, id)` into an empty
    /// state; its plan is then empty, and its state equals this workspace's
    /// attribute by attribute, except the `not_importable` ones
    /// (`(attribute, why an import cannot know it)`). The objects stay this
    /// workspace's.
    pub fn assert_import_verifies(
        &self,
        imports: &[(&str, &str)],
        by: ImportBy,
        not_importable: &[(&str, &str)],
    ) {
        let mut imported = Workspace::new(&self.cli);
        match by {
            ImportBy::Command => {
                imported.config_raw(&self.main_tf());
                for (address, id) in imports {
                    imported.import(address, id);
                }
                imported.assert_plan_empty();
            }
            ImportBy::Block | ImportBy::Identity => {
                let blocks: String = imports
                    .iter()
                    .map(|(address, id)| match by {
                        ImportBy::Identity => {
                            format!("import {{\n  to       = {address}\n  identity = {id}\n}}\n\n")
                        }
                        _ => format!("import {{\n  to = {address}\n  id = \"{id}\"\n}}\n\n"),
                    })
                    .collect();
                imported.config_raw(&(blocks + &self.main_tf()));
                let out = imported.apply();
                let summary = format!(
                    "{} imported, 0 added, 0 changed, 0 destroyed",
                    imports.len()
                );
                assert!(
                    out.stdout.contains(&summary),
                    "{}: expected {summary:?}:\n{}",
                    self.cli.name,
                    out.stdout
                );
            }
        }
        // Both workspaces now hold the same objects; this one removes them.
        imported.forget();

        let (applied_state, imported_state) = (self.state(), imported.state());
        let mut differences = Vec::new();
        for (address, _) in imports {
            // However it was imported, the object has the identity apply gave it.
            let (applied, got) = (
                resource_in(&applied_state, address),
                resource_in(&imported_state, address),
            );
            for key in ["identity", "identity_schema_version"] {
                if applied.get(key) != got.get(key) {
                    differences.push(format!(
                        "{address} {key}: applied {}, imported {}",
                        json_or_absent(applied.get(key)),
                        json_or_absent(got.get(key))
                    ));
                }
            }
            let applied = values_in(&applied_state, address);
            let got = values_in(&imported_state, address);
            let (Some(applied), Some(got)) = (applied.as_object(), got.as_object()) else {
                panic!("{address}: values are not objects");
            };
            for (attribute, why) in not_importable {
                assert!(
                    !why.trim().is_empty(),
                    "say why {attribute} is not importable"
                );
                assert!(
                    applied.contains_key(*attribute),
                    "{address} has no attribute {attribute} to leave out"
                );
            }
            let attributes: std::collections::BTreeSet<&String> =
                applied.keys().chain(got.keys()).collect();
            for attribute in attributes {
                if not_importable.iter().any(|(a, _)| a == attribute) {
                    continue;
                }
                let (want, have) = (applied.get(attribute), got.get(attribute));
                if want != have {
                    differences.push(format!(
                        "{address}.{attribute}: applied {}, imported {}",
                        json_or_absent(want),
                        json_or_absent(have)
                    ));
                }
            }
        }
        assert!(
            differences.is_empty(),
            "{}: imported state differs from the applied state ({by:?}):\n  {}",
            self.cli.name,
            differences.join("\n  ")
        );
    }

    pub fn destroy(&mut self) {
        self.init();
        self.ok(DESTROY);
        self.applied = false;
    }

    /// Forgets the state without destroying (for a workspace that imported
    /// objects another workspace owns).
    pub fn forget(&mut self) {
        self.applied = false;
    }

    /// The root module's outputs, as `output -json` prints them.
    pub fn outputs(&self) -> serde_json::Value {
        let run = self.ok(&["output", "-json", "-no-color"]);
        serde_json::from_str(&run.stdout).unwrap()
    }

    /// `show -json` of the state: the values Terraform stored.
    pub fn state(&self) -> serde_json::Value {
        let run = self.ok(&["show", "-json", "-no-color"]);
        serde_json::from_str(&run.stdout).unwrap()
    }

    /// Attribute values of one resource in state.
    pub fn resource_values(&self, address: &str) -> serde_json::Value {
        values_in(&self.state(), address)
    }

    /// One resource as `show -json` gives it (values, `tainted`,
    /// `identity`, ...).
    pub fn resource(&self, address: &str) -> serde_json::Value {
        resource_in(&self.state(), address)
    }

    /// `terraform output -json NAME`.
    pub fn output(&self, name: &str) -> serde_json::Value {
        let run = self.ok(&["output", "-json", "-no-color", name]);
        serde_json::from_str(&run.stdout).unwrap()
    }
}

/// One resource of a `show -json` state.
fn resource_in(state: &serde_json::Value, address: &str) -> serde_json::Value {
    state["values"]["root_module"]["resources"]
        .as_array()
        .and_then(|resources| resources.iter().find(|r| r["address"] == address))
        .cloned()
        .unwrap_or_else(|| panic!("{address} not in state: {state}"))
}

/// Attribute values of one resource in a `show -json` state.
fn values_in(state: &serde_json::Value, address: &str) -> serde_json::Value {
    resource_in(state, address)["values"].clone()
}

fn json_or_absent(value: Option<&serde_json::Value>) -> String {
    value.map_or_else(|| "(absent)".to_string(), |v| v.to_string())
}

impl Drop for Workspace {
    /// A test that failed half-way still removes what it created, so the
    /// shared cluster stays clean for the tests after it. A destroy that
    /// fails says what it left and keeps the workspace to destroy it from;
    /// in a test that passed so far it fails the test.
    fn drop(&mut self) {
        if !self.applied || matches!(self.dir, Home::Kept(_)) {
            return;
        }
        let destroyed = self.try_run(DESTROY);
        if destroyed.as_ref().is_ok_and(|run| run.success) {
            return;
        }
        if let Home::Temporary(temporary) = &mut self.dir {
            temporary.disable_cleanup(true);
        }
        let left = self
            .try_run(&["state", "list"])
            .map(|run| run.stdout + &run.stderr)
            .unwrap_or_else(|e| format!("(state list failed: {e})"));
        let why = match destroyed {
            Ok(run) => run.stdout + &run.stderr,
            Err(e) => e.to_string(),
        };
        let message = format!(
            "cleanup: {} destroy failed; still in its state, so maybe still in the cluster:\n{}\
             destroy them with `{} destroy` in {} (kept, with TF_CLI_CONFIG_FILE={}). The error:\n{why}",
            self.cli.name,
            left,
            self.cli.path.display(),
            self.dir.path().display(),
            provider_mirror().join("cli.tfrc").display(),
        );
        if std::thread::panicking() {
            let _ = writeln!(std::io::stderr(), "{message}");
        } else {
            panic!("{message}");
        }
    }
}

/// A saved plan, as `show -json` gives it, and as the CLI printed it.
pub struct Plan {
    pub cli: &'static str,
    pub has_changes: bool,
    pub text: String,
    json: serde_json::Value,
}

impl Plan {
    fn change(&self, address: &str) -> &serde_json::Value {
        self.json["resource_changes"]
            .as_array()
            .and_then(|changes| changes.iter().find(|c| c["address"] == address))
            .unwrap_or_else(|| panic!("{}: {address} not in the plan:\n{}", self.cli, self.text))
    }

    /// The planned actions: `["create"]`, `["update"]`, `["delete", "create"]` (a
    /// replacement), `["no-op"]`, ...
    pub fn actions(&self, address: &str) -> Vec<String> {
        self.change(address)["change"]["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    }

    pub fn assert_actions(&self, address: &str, expected: &[&str]) {
        assert_eq!(
            self.actions(address),
            expected,
            "{}: planned actions of {address}:\n{}",
            self.cli,
            self.text
        );
    }

    /// The plan replaces `address` because of the attribute at `path` (and
    /// nothing else), e.g. `&["node_class", "kind"]`.
    pub fn assert_replaced_for(&self, address: &str, path: &[&str]) {
        self.assert_actions(address, &["delete", "create"]);
        assert_eq!(
            self.change(address)["change"]["replace_paths"],
            serde_json::json!([path]),
            "{}: replacement of {address} not (only) for {path:?}:\n{}",
            self.cli,
            self.text
        );
    }

    /// The value at `path` (`taints[1].value`, `labels["team"]`) before the
    /// change (the object as refreshed from the cluster), or None if absent.
    pub fn before(&self, address: &str, path: &str) -> Option<&serde_json::Value> {
        value_at(&self.change(address)["change"]["before"], path)
    }

    /// The value at `path` after the change (as configured).
    pub fn after(&self, address: &str, path: &str) -> Option<&serde_json::Value> {
        value_at(&self.change(address)["change"]["after"], path)
    }

    /// The plan updates `address` in place, changing the value at `path`
    /// (to a different or a not yet known value); returns the value before.
    pub fn assert_updates(&self, address: &str, path: &str) -> serde_json::Value {
        self.assert_actions(address, &["update"]);
        let before = self.before(address, path).cloned().unwrap_or_else(|| {
            panic!(
                "{}: {address}.{path} absent before:\n{}",
                self.cli, self.text
            )
        });
        assert_ne!(
            Some(&before),
            self.after(address, path),
            "{}: {address}.{path} does not change:\n{}",
            self.cli,
            self.text
        );
        before
    }

    /// The plan changes `path` of `address` from `before` (what the cluster
    /// has now) to `after` (the configuration).
    pub fn assert_change(
        &self,
        address: &str,
        path: &str,
        before: serde_json::Value,
        after: serde_json::Value,
    ) {
        assert_eq!(
            (self.before(address, path), self.after(address, path)),
            (Some(&before), Some(&after)),
            "{}: {address}.{path} should change from {before} to {after}:\n{}",
            self.cli,
            self.text
        );
    }
}

/// The value at `path` in `value`: attribute names joined by `.`, list
/// indexes and map keys in brackets (`taints[0].key`, `limits["nvidia.com/gpu"]`).
pub fn value_at<'a>(value: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    let mut current = value;
    let mut rest = path;
    while !rest.is_empty() {
        rest = rest.strip_prefix('.').unwrap_or(rest);
        if let Some(bracketed) = rest.strip_prefix('[') {
            let end = bracketed
                .find(']')
                .unwrap_or_else(|| panic!("unclosed [ in {path}"));
            let step = &bracketed[..end];
            current = match step.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                Some(key) => current.get(key)?,
                None => current.get(
                    step.parse::<usize>()
                        .unwrap_or_else(|_| panic!("bad index in {path}")),
                )?,
            };
            rest = &bracketed[end + 1..];
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            current = current.get(&rest[..end])?;
            rest = &rest[end..];
        }
    }
    Some(current)
}

/// Where a CLI places a diagnostic: the line of main.tf its range starts on.
#[derive(Clone, Copy, Debug)]
pub enum At<'a> {
    /// The one line of main.tf that contains this text.
    Line(&'a str),
    /// The header line of the configuration's one resource or data block.
    Block,
}

impl At<'_> {
    /// The 1-based line of `main_tf` this names.
    fn line(&self, main_tf: &str) -> usize {
        let is_header = |l: &str| l.starts_with("resource \"") || l.starts_with("data \"");
        let matching: Vec<usize> = main_tf
            .lines()
            .enumerate()
            .filter(|(_, l)| match self {
                At::Line(text) => l.contains(text),
                At::Block => is_header(l),
            })
            .map(|(i, _)| i + 1)
            .collect();
        assert_eq!(
            matching.len(),
            1,
            "{self:?} must name exactly one line of:\n{main_tf}"
        );
        matching[0]
    }
}

/// `validate` of `body` (after the provider preamble) must fail with one
/// error, whose summary or detail contains `message` (which names the
/// attribute path), placed by the CLI at the line `at` names.
pub fn assert_invalid(cli: &Cli, body: &str, message: &str, at: At) {
    let mut ws = Workspace::new(cli);
    ws.config(body);
    assert_validate_fails(&mut ws, message, at);
}

/// `validate` of the workspace's configuration must fail that way.
pub fn assert_validate_fails(ws: &mut Workspace, message: &str, at: At) {
    let result = ws.validate_json();
    assert!(
        result["valid"] == false,
        "{}: valid:\n{result:#}",
        ws.cli.name
    );
    let diagnostics = result["diagnostics"].as_array().unwrap().clone();
    assert_one_error(ws, &diagnostics, message, at);
}

/// `plan` of the workspace's configuration must fail the same way.
pub fn assert_plan_invalid(ws: &mut Workspace, message: &str, at: At) {
    ws.init();
    let run = ws.run(&["plan", "-json", "-no-color", "-input=false"]);
    assert!(
        !run.success,
        "{}: plan succeeded:\n{}",
        ws.cli.name, run.stdout
    );
    let diagnostics: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["type"] == "diagnostic")
        .map(|message| message["diagnostic"].clone())
        .collect();
    assert_one_error(ws, &diagnostics, message, at);
}

fn assert_one_error(ws: &Workspace, diagnostics: &[serde_json::Value], message: &str, at: At) {
    let cli = &ws.cli;
    let errors: Vec<&serde_json::Value> = diagnostics
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    assert!(
        errors.len() == 1,
        "{}: expected one error for {message:?}, got:\n{diagnostics:#?}",
        cli.name
    );
    let error = errors[0];
    let text = format!(
        "{}: {}",
        error["summary"].as_str().unwrap_or_default(),
        error["detail"].as_str().unwrap_or_default()
    );
    assert!(
        text.contains(message),
        "{}: expected {message:?} in: {text}",
        cli.name
    );
    let main_tf = ws.main_tf();
    let expected = at.line(&main_tf);
    let range = &error["range"];
    let line = range["start"]["line"].as_u64().map(|l| l as usize);
    let quoted = |l: usize| main_tf.lines().nth(l - 1).unwrap_or_default().to_string();
    assert!(
        range["filename"] == "main.tf" && line == Some(expected),
        "{} {}: {message:?} placed at {}, expected line {expected} ({at:?}: {:?}):\n{error:#}",
        cli.name,
        cli.version,
        line.map_or("no line".to_string(), |l| format!(
            "line {l} ({:?})",
            quoted(l)
        )),
        quoted(expected),
    );
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
