//! The release files (`make release`, scripts/release.sh) as a provider
//! registry serves them, and as users install them: from a filesystem mirror
//! in both of its layouts, with each CLI, checked against the checksums a
//! lock file records.
//!
//! `make test` packages the debug binary this run built, stripped as the
//! release profile strips, through the same script: a release build costs
//! minutes, packaging seconds. `make test-long` points GPUFLEET_RELEASE_DIST
//! at the real release (target/release/dist) and runs these tests against it.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;
use sha2::{Digest, Sha256};

use common::repo_root;
use common::terraform::{
    Cli, PROVIDER_VERSION, Run, cli_command_with_config, each_cli, run_command,
};

const PLATFORM: &str = "linux_amd64";
const TRIPLE: &str = "x86_64-unknown-linux-gnu";
/// Terraform and OpenTofu resolve `gpufleet/gpufleet` on different hosts.
const HOSTS: [&str; 2] = ["registry.terraform.io", "registry.opentofu.org"];

fn base() -> String {
    format!("terraform-provider-gpufleet_{PROVIDER_VERSION}")
}
fn zip_name() -> String {
    format!("{}_{PLATFORM}.zip", base())
}
fn executable_name() -> String {
    format!("terraform-provider-gpufleet_v{PROVIDER_VERSION}")
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Terraform's `h1:` hash of an unpacked package: SHA-256 over the lines
/// "<sha256 hex>  <path>\n" of every file, sorted by path (Go's dirhash).
fn h1(package_dir: &Path) -> String {
    fn files(root: &Path, dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(root, &path, found);
            } else {
                found.push(
                    path.strip_prefix(root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    let mut names = Vec::new();
    files(package_dir, package_dir, &mut names);
    names.sort();
    let summary: String = names
        .iter()
        .map(|name| {
            let content = std::fs::read(package_dir.join(name)).unwrap();
            format!("{}  {name}\n", sha256_hex(&content))
        })
        .collect();
    format!(
        "h1:{}",
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(summary.as_bytes()))
    )
}

/// A release directory: the one GPUFLEET_RELEASE_DIST names, or this run's
/// debug binary packaged into a temp dir.
struct Release {
    dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

/// The debug binary without its symbols and debug info, as the release
/// profile's `strip = true` leaves a release binary (a sixth of the size, so
/// zipping and unzipping it stays cheap).
fn stripped_binary(into: &Path) -> PathBuf {
    let stripped = into.join("terraform-provider-gpufleet");
    let out = Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(common::provider_binary())
        .output()
        .expect("strip (binutils) is needed");
    assert!(
        out.status.success(),
        "strip failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stripped
}

/// scripts/release.sh packaging `binary` into `out`, unsigned, under `umask`.
fn package_command(binary: &Path, out: &Path, umask: &str) -> Command {
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg("umask \"$0\" && exec bash scripts/release.sh \"$@\"")
        .arg(umask)
        .arg("--binary")
        .arg(binary)
        .arg("--out")
        .arg(out)
        .arg(TRIPLE)
        .env_remove("GPUFLEET_SIGNING_KEY")
        .current_dir(repo_root());
    command
}

fn succeed(mut command: Command) {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "release.sh failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn release() -> Release {
    if let Ok(dist) = std::env::var("GPUFLEET_RELEASE_DIST") {
        eprintln!("release: testing the files in {dist}");
        return Release {
            dir: PathBuf::from(dist),
            _temp: None,
        };
    }
    let temp = tempfile::tempdir().unwrap();
    let binary = stripped_binary(temp.path());
    let dir = temp.path().join("dist");
    succeed(package_command(&binary, &dir, "022"));
    Release {
        dir,
        _temp: Some(temp),
    }
}

/// `name  ->  sha256` from a SHA256SUMS file.
fn read_sums(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let (sum, name) = line.split_once("  ").expect("'<sha256>  <name>' lines");
            (name.to_string(), sum.to_string())
        })
        .collect()
}

/// The content of one zip entry.
fn unzip_entry(zip: &Path, name: &str) -> Vec<u8> {
    let out = Command::new("unzip")
        .arg("-p")
        .arg(zip)
        .arg(name)
        .output()
        .expect("unzip");
    assert!(
        out.status.success(),
        "unzip -p {} {name} failed",
        zip.display()
    );
    out.stdout
}

#[test]
fn release_files_are_what_the_registry_expects() {
    let release = release();
    let base = base();
    let mut names: Vec<String> = std::fs::read_dir(&release.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("{base}_")))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            format!("{base}_SHA256SUMS"),
            format!("{base}_linux_amd64.zip"),
            format!("{base}_manifest.json"),
        ],
        "in {}",
        release.dir.display()
    );

    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(release.dir.join(format!("{base}_manifest.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(
        manifest,
        serde_json::json!({"version": 1, "metadata": {"protocol_versions": ["6.0"]}})
    );

    let sums = read_sums(&release.dir.join(format!("{base}_SHA256SUMS")));
    let listed: Vec<&str> = sums.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        listed,
        [
            format!("{base}_linux_amd64.zip"),
            format!("{base}_manifest.json")
        ]
    );
    for (name, sum) in &sums {
        assert_eq!(
            &sha256_hex(&std::fs::read(release.dir.join(name)).unwrap()),
            sum,
            "{name} does not match its SHA256SUMS line"
        );
    }

    // One executable entry under the name Terraform looks for, with the
    // commit's time; nothing else (no directories, no extra fields).
    let zip = release.dir.join(zip_name());
    let info = Command::new("zipinfo")
        .arg("-T")
        .arg(&zip)
        .output()
        .expect("zipinfo");
    let listing = String::from_utf8_lossy(&info.stdout);
    let entries: Vec<&str> = listing
        .lines()
        .filter(|l| l.starts_with('-') || l.starts_with('d'))
        .collect();
    assert_eq!(entries.len(), 1, "{listing}");
    let fields: Vec<&str> = entries[0].split_whitespace().collect();
    assert_eq!(fields[0], "-rwxr-xr-x", "{listing}");
    assert_eq!(
        fields[4], "b-",
        "entry has extra fields (uid, gid, timestamps): {listing}"
    );
    assert_eq!(fields[fields.len() - 1], executable_name(), "{listing}");

    // The binary inside is this release: it reports Cargo.toml's version.
    let unpacked = tempfile::tempdir().unwrap();
    let executable = unpacked.path().join(executable_name());
    std::fs::write(&executable, unzip_entry(&zip, &executable_name())).unwrap();
    std::fs::set_permissions(
        &executable,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let out = Command::new(&executable).arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("terraform-provider-gpufleet {PROVIDER_VERSION} (plugin protocol 6)")
    );
}

/// Packaging depends on nothing but the binary and the commit: not on the
/// binary's file time, the time zone, the umask or when it runs.
#[test]
fn packaging_the_same_binary_twice_gives_the_same_files() {
    let temp = tempfile::tempdir().unwrap();
    let binary = stripped_binary(temp.path());
    let first = temp.path().join("first");
    succeed(package_command(&binary, &first, "022"));

    let file = std::fs::File::options().write(true).open(&binary).unwrap();
    file.set_modified(
        std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000),
    )
    .unwrap();
    drop(file);
    let second = temp.path().join("second");
    let mut command = package_command(&binary, &second, "077");
    // Five hours behind UTC, as a POSIX rule (needs no time zone database).
    command.env("TZ", "EST+5");
    succeed(command);

    for name in [format!("{}_SHA256SUMS", base()), zip_name()] {
        assert!(
            std::fs::read(first.join(&name)).unwrap() == std::fs::read(second.join(&name)).unwrap(),
            "{name} differs between two packagings of one binary"
        );
    }
}

/// Stops the gpg-agent that gpg started for a temporary GNUPGHOME.
struct GpgHome(PathBuf);

impl Drop for GpgHome {
    fn drop(&mut self) {
        let _ = Command::new("gpgconf")
            .args(["--kill", "gpg-agent"])
            .env("GNUPGHOME", &self.0)
            .output();
    }
}

#[test]
fn sums_are_signed_when_a_key_is_given() {
    let temp = tempfile::tempdir().unwrap();
    let home = GpgHome(temp.path().join("gnupg"));
    std::fs::create_dir(&home.0).unwrap();
    std::fs::set_permissions(&home.0, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let gpg = |args: &[&str]| {
        let out = Command::new("gpg")
            .env("GNUPGHOME", &home.0)
            .args(["--batch", "--quiet"])
            .args(args)
            .output()
            .expect("gpg (GnuPG) is needed");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (ok, out) = gpg(&[
        "--passphrase",
        "",
        "--quick-gen-key",
        "gpufleet release test <release-test@gpufleet.invalid>",
        "ed25519",
        "sign",
        "never",
    ]);
    assert!(ok, "gpg --quick-gen-key: {out}");
    let (_, keys) = gpg(&["--with-colons", "--list-secret-keys"]);
    let fingerprint = keys
        .lines()
        .find_map(|l| l.strip_prefix("fpr:"))
        .map(|rest| rest.trim_matches(':').to_string())
        .expect("the new key's fingerprint");

    let binary = stripped_binary(temp.path());
    let dist = temp.path().join("dist");
    let package = |key: Option<&str>| {
        let mut command = package_command(&binary, &dist, "022");
        command.env("GNUPGHOME", &home.0);
        if let Some(key) = key {
            command.env("GPUFLEET_SIGNING_KEY", key);
        }
        succeed(command);
    };
    package(Some(&fingerprint));

    let sums = dist.join(format!("{}_SHA256SUMS", base()));
    let signature = dist.join(format!("{}_SHA256SUMS.sig", base()));
    let (ok, out) = gpg(&[
        "--verify",
        signature.to_str().unwrap(),
        sums.to_str().unwrap(),
    ]);
    assert!(ok, "the signature does not verify: {out}");
    assert!(out.contains("Good signature"), "{out}");

    let tampered = temp.path().join("tampered");
    let mut text = std::fs::read_to_string(&sums).unwrap();
    text = text.replacen(&text[..8], "00000000", 1);
    std::fs::write(&tampered, text).unwrap();
    let (ok, out) = gpg(&[
        "--verify",
        signature.to_str().unwrap(),
        tampered.to_str().unwrap(),
    ]);
    assert!(!ok, "a changed SHA256SUMS still verifies: {out}");

    // Without a key the SHA256SUMS is written anew and an old signature of
    // it would be a lie: it goes.
    package(None);
    assert!(sums.exists() && !signature.exists());
}

/// The `hashes` of the one provider in a lock file.
fn lock_hashes(lock_file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(lock_file).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("\"h1:") || l.starts_with("\"zh:"))
        .map(|l| l.trim_end_matches(',').trim_matches('"').to_string())
        .collect()
}

fn lock_file(address: &str, hashes: &[&str]) -> String {
    let lines: String = hashes.iter().map(|h| format!("    \"{h}\",\n")).collect();
    format!(
        "provider \"{address}\" {{\n  version = \"{PROVIDER_VERSION}\"\n  hashes = [\n{lines}  ]\n}}\n"
    )
}

fn mirror_config(dir: &Path, mirror: &Path) -> PathBuf {
    let included = HOSTS
        .map(|h| format!("\"{h}/gpufleet/gpufleet\""))
        .join(", ");
    let config = dir.join("cli.tfrc");
    std::fs::write(
        &config,
        format!(
            "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [{included}]\n  }}\n  direct {{\n    exclude = [{included}]\n  }}\n}}\n",
            mirror.display()
        ),
    )
    .unwrap();
    config
}

/// A configuration that makes the provider run on `validate`.
const CONFIGURATION: &str = "terraform {\n  required_providers {\n    gpufleet = {\n      source = \"gpufleet/gpufleet\"\n    }\n  }\n}\n\ndata \"gpufleet_accelerators\" \"mig\" {\n  sharing = \"mig\"\n}\n\noutput \"mig_capable\" {\n  value = [for a in data.gpufleet_accelerators.mig.accelerators : a.name]\n}\n";

struct Client<'a> {
    cli: &'a Cli,
    dir: tempfile::TempDir,
    config: PathBuf,
}

impl<'a> Client<'a> {
    fn new(cli: &'a Cli, mirror: &Path) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.tf"), CONFIGURATION).unwrap();
        let config = mirror_config(dir.path(), mirror);
        Self { cli, dir, config }
    }
    fn run(&self, args: &[&str]) -> Run {
        run_command(
            self.cli,
            cli_command_with_config(self.cli, self.dir.path(), &self.config, args),
        )
    }
    fn lock_path(&self) -> PathBuf {
        self.dir.path().join(".terraform.lock.hcl")
    }
}

#[test]
fn installs_from_packed_and_unpacked_mirrors_with_the_locked_checksums() {
    let release = release();
    let zip = release.dir.join(zip_name());
    let zip_sum = read_sums(&release.dir.join(format!("{}_SHA256SUMS", base())))
        .into_iter()
        .find(|(name, _)| *name == zip_name())
        .map(|(_, sum)| sum)
        .expect("the zip in SHA256SUMS");
    let executable = unzip_entry(&zip, &executable_name());

    // Packed: the zips and the JSON indexes, as `terraform providers mirror`
    // lays them out. Unpacked: the package extracted under VERSION/PLATFORM.
    let temp = tempfile::tempdir().unwrap();
    let packed = temp.path().join("packed");
    let unpacked = temp.path().join("unpacked");
    for host in HOSTS {
        let package = unpacked.join(format!(
            "{host}/gpufleet/gpufleet/{PROVIDER_VERSION}/{PLATFORM}"
        ));
        std::fs::create_dir_all(&package).unwrap();
        let out = Command::new("unzip")
            .arg("-q")
            .arg(&zip)
            .arg("-d")
            .arg(&package)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "unzip: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let h1 = h1(&unpacked.join(format!(
        "{}/gpufleet/gpufleet/{PROVIDER_VERSION}/{PLATFORM}",
        HOSTS[0]
    )));
    let zh = format!("zh:{zip_sum}");
    for host in HOSTS {
        let dir = packed.join(format!("{host}/gpufleet/gpufleet"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&zip, dir.join(zip_name())).unwrap();
        let index = serde_json::json!({"versions": {PROVIDER_VERSION: {}}});
        std::fs::write(
            dir.join("index.json"),
            serde_json::to_string_pretty(&index).unwrap(),
        )
        .unwrap();
        let archives =
            serde_json::json!({"archives": {PLATFORM: {"url": zip_name(), "hashes": [h1]}}});
        std::fs::write(
            dir.join(format!("{PROVIDER_VERSION}.json")),
            serde_json::to_string_pretty(&archives).unwrap(),
        )
        .unwrap();
    }
    let layouts = [("packed", &packed), ("unpacked", &unpacked)];

    each_cli(|cli| {
        let host = if cli.name == "tofu" {
            HOSTS[1]
        } else {
            HOSTS[0]
        };
        let address = format!("{host}/gpufleet/gpufleet");

        // What `providers lock` records from either layout is the h1: of
        // the package's content, the same for both.
        for (layout, mirror) in layouts {
            let client = Client::new(cli, mirror);
            let mirror_arg = format!("-fs-mirror={}", mirror.display());
            let platform_arg = format!("-platform={PLATFORM}");
            let run = client.run(&["providers", "lock", "-no-color", &mirror_arg, &platform_arg]);
            assert!(
                run.success,
                "{} providers lock ({layout}):\n{}{}",
                cli.name, run.stdout, run.stderr
            );
            assert_eq!(
                lock_hashes(&client.lock_path()),
                std::slice::from_ref(&h1),
                "{} lock from the {layout} mirror",
                cli.name
            );
        }

        // A lock file with the h1: above and the zh: a registry install
        // records from SHA256SUMS: init installs from either layout without
        // changing it, and the installed provider runs.
        for (layout, mirror) in layouts {
            let client = Client::new(cli, mirror);
            let lock = lock_file(&address, &[&h1, &zh]);
            std::fs::write(client.lock_path(), &lock).unwrap();
            let run = client.run(&["init", "-lockfile=readonly", "-input=false", "-no-color"]);
            assert!(
                run.success,
                "{} init from the {layout} mirror:\n{}{}",
                cli.name, run.stdout, run.stderr
            );
            let installed = client
                .dir
                .path()
                .join(format!(
                    ".terraform/providers/{address}/{PROVIDER_VERSION}/{PLATFORM}"
                ))
                .join(executable_name());
            assert!(
                std::fs::read(&installed).unwrap() == executable,
                "{layout}: installed binary differs from the zip's"
            );
            let run = client.run(&["validate", "-no-color"]);
            assert!(
                run.success,
                "{} validate ({layout}):\n{}{}",
                cli.name, run.stdout, run.stderr
            );
            assert_eq!(std::fs::read_to_string(client.lock_path()).unwrap(), lock);
        }

        // zh: alone is checked against the zip itself.
        let client = Client::new(cli, &packed);
        std::fs::write(client.lock_path(), lock_file(&address, &[&zh])).unwrap();
        let run = client.run(&["init", "-lockfile=readonly", "-input=false", "-no-color"]);
        assert!(
            run.success,
            "{} init, zh: only:\n{}{}",
            cli.name, run.stdout, run.stderr
        );

        // Checksums of some other package: both layouts are refused.
        let other_h1 = format!(
            "h1:{}",
            base64::engine::general_purpose::STANDARD.encode([0u8; 32])
        );
        let other_zh = format!("zh:{}", "0".repeat(64));
        for (layout, mirror) in layouts {
            let client = Client::new(cli, mirror);
            std::fs::write(
                client.lock_path(),
                lock_file(&address, &[&other_h1, &other_zh]),
            )
            .unwrap();
            let run = client.run(&["init", "-lockfile=readonly", "-input=false", "-no-color"]);
            let output = run.stdout + &run.stderr;
            assert!(
                !run.success,
                "{} installed from the {layout} mirror despite wrong checksums:\n{output}",
                cli.name
            );
            assert!(
                output.contains("checksum"),
                "{} ({layout}): {output}",
                cli.name
            );
        }
    });
}
