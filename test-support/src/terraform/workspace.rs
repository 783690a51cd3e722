//! A workspace: a configuration with its own state, run through one CLI,
//! and the checks every apply gets (a second plan is empty, import gives an
//! empty plan, destroy leaves nothing).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::cli::{cli_command, provider_mirror, user_cli_command};
use super::plan::Plan;
use super::{Cli, Run, provider_block};
use crate::repo_root;

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
