//! Files of other projects, read at test time from their Go modules (module
//! cache, then the Go module proxy) as testbed/cluster.sh reads
//! the CRDs, so that nothing of theirs is copied into this repository.

use std::path::PathBuf;
use std::process::Command;

use crate::{repo_root, skipped};

/// The GPU Operator module and version cluster.sh pins
/// (`gpu_operator_module=` there), so tests and cluster read one snapshot.
pub fn gpu_operator_module() -> String {
    let script = repo_root().join("testbed/cluster.sh");
    let text = std::fs::read_to_string(&script).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix("gpu_operator_module="))
        .unwrap_or_else(|| panic!("{} pins no gpu_operator_module", script.display()))
        .to_string()
}

/// The Go toolchain, found as build.sh and cluster.sh find it: `$GO`, else
/// `go` on `PATH`, else /usr/local/go/bin/go.
fn go() -> PathBuf {
    if let Some(go) = std::env::var_os("GO") {
        return go.into();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("go"))
        .find(|go| go.is_file())
        .unwrap_or_else(|| "/usr/local/go/bin/go".into())
}

/// The extracted directory of `module@version` in the module cache,
/// downloaded on first use; the error says why there is none.
pub fn module_dir(module: &str) -> Result<PathBuf, String> {
    let go = go();
    // Outside any module, so no go.mod around decides what is downloaded.
    let out = Command::new(&go)
        .args(["mod", "download", "-json", module])
        .current_dir("/")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", go.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let why = || {
        format!(
            "`go mod download -json {module}` failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        )
    };
    if !out.status.success() {
        return Err(why());
    }
    let info: serde_json::Value = serde_json::from_str(&stdout).map_err(|_| why())?;
    let dir = PathBuf::from(info["Dir"].as_str().ok_or_else(why)?);
    if dir.is_dir() { Ok(dir) } else { Err(why()) }
}

/// The file `path` of the GPU Operator module cluster.sh pins; `None`,
/// after saying so (a failure under `make test`), when Go or the module
/// proxy is not available.
pub fn gpu_operator_file(what: &str, path: &str) -> Option<String> {
    let module = gpu_operator_module();
    match module_dir(&module) {
        Ok(dir) => {
            let file = dir.join(path);
            Some(
                std::fs::read_to_string(&file)
                    .unwrap_or_else(|e| panic!("{}: {e}", file.display())),
            )
        }
        Err(why) => {
            skipped(what, &why);
            None
        }
    }
}
