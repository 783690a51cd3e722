//! Requests one user sent, as the API server's audit log records them: the
//! test cluster audits user gpufleet-counted alone (testbed/cluster.sh,
//! logs/audit-counted.log, one JSON event per answered request), so a test
//! that runs the provider as that user counts the provider's own requests
//! and nobody else's, by verb and resource.
//!
//! Verbs are spelled as the API server's request metrics spell them (GET,
//! LIST, WATCH, POST, PUT, PATCH, DELETE, APPLY). The audit event says
//! `patch` for every patch; a server-side apply is the one patch that may
//! carry `force=true` (k8s.io/apimachinery, pkg/apis/meta/v1/validation,
//! ValidatePatchOptions: "may not be specified for non-apply patch"), and
//! gpufleet forces every apply. Requests without a resource are keyed by
//! their path without the slash: `api` and `apis` for discovery.

use std::collections::BTreeMap;
use std::io::{BufRead, Seek, SeekFrom};
use std::path::PathBuf;

/// The user whose requests the test cluster audits.
pub const COUNTED_USER: &str = "gpufleet-counted";

/// The kubeconfig of [`COUNTED_USER`], beside the test cluster's.
pub fn counted_kubeconfig() -> String {
    counted_kubeconfig_beside(&crate::kubeconfig())
}

/// The kubeconfig of [`COUNTED_USER`] of the cluster whose admin
/// kubeconfig is `kubeconfig` (a cluster of testbed/cluster.sh).
pub fn counted_kubeconfig_beside(kubeconfig: &str) -> String {
    cluster_file(kubeconfig, "kubeconfig-counted")
}

fn cluster_file(kubeconfig: &str, name: &str) -> String {
    std::path::Path::new(kubeconfig)
        .with_file_name(name)
        .to_string_lossy()
        .into_owned()
}

fn log_path(kubeconfig: &str) -> PathBuf {
    PathBuf::from(cluster_file(kubeconfig, "logs")).join("audit-counted.log")
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    /// Requests by verb and resource.
    pub requests: BTreeMap<(String, String), u64>,
    /// Of those, the ones refused with 409 Conflict (a write whose
    /// resourceVersion precondition failed), by resource.
    pub conflicts: BTreeMap<String, u64>,
}

impl Counts {
    /// Requests to one resource (`priorityclasses`), by verb.
    pub fn by_verb(&self, resource: &str) -> BTreeMap<String, u64> {
        self.requests
            .iter()
            .filter(|((_, r), _)| r == resource)
            .map(|((verb, _), &n)| (verb.clone(), n))
            .collect()
    }

    /// Discovery requests (`/api`, `/apis` and below them without a resource).
    pub fn discovery(&self) -> u64 {
        ["api", "apis"]
            .iter()
            .map(|d| self.by_verb(d).values().sum::<u64>())
            .sum()
    }
}

/// The verb and resource key of one audit event.
fn key(event: &serde_json::Value) -> (String, String) {
    let verb = event["verb"].as_str().unwrap_or_default();
    let uri = event["requestURI"].as_str().unwrap_or_default();
    let verb = match verb {
        "patch" if uri.contains("force=true") => "APPLY".to_string(),
        "create" => "POST".to_string(),
        "update" => "PUT".to_string(),
        other => other.to_uppercase(),
    };
    let object = &event["objectRef"];
    let resource = match (object["resource"].as_str(), object["subresource"].as_str()) {
        (Some(resource), None) => resource.to_string(),
        (Some(resource), Some(sub)) => format!("{resource}/{sub}"),
        (None, _) => {
            let path = uri.split('?').next().unwrap_or_default();
            let path = path.trim_start_matches('/');
            // Discovery below /apis (`/apis/<group>/<version>`) is discovery too.
            match path.split('/').next() {
                Some(top @ ("api" | "apis")) => top.to_string(),
                _ => path.to_string(),
            }
        }
    };
    (verb, resource)
}

/// What the audit log holds from `offset` on: the counts and the new end.
fn read_from(log: &std::path::Path, offset: u64) -> (Counts, u64) {
    let Ok(mut file) = std::fs::File::open(log) else {
        return (Counts::default(), 0);
    };
    let end = file.seek(SeekFrom::End(0)).unwrap();
    // A log rotated meanwhile starts again from the top.
    let offset = if end < offset { 0 } else { offset };
    file.seek(SeekFrom::Start(offset)).unwrap();
    let mut counts = Counts::default();
    let mut read = offset;
    for line in std::io::BufReader::new(file).lines() {
        let line = line.unwrap();
        read += line.len() as u64 + 1;
        let event: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("audit log line is not JSON ({e}): {line}"));
        assert_eq!(event["user"]["username"], COUNTED_USER, "{line}");
        if event["stage"] == "ResponseComplete" {
            let (verb, resource) = key(&event);
            if event["responseStatus"]["code"] == 409 {
                *counts.conflicts.entry(resource.clone()).or_insert(0) += 1;
            }
            *counts.requests.entry((verb, resource)).or_insert(0) += 1;
        }
    }
    (counts, read)
}

/// Runs `command` and returns the requests [`COUNTED_USER`] sent meanwhile.
pub fn counted(command: impl FnOnce()) -> Counts {
    counted_with(&crate::kubeconfig(), command).0
}

/// [`counted`] on the cluster whose admin kubeconfig is `kubeconfig`, with
/// what `command` returned.
pub fn counted_with<T>(kubeconfig: &str, command: impl FnOnce() -> T) -> (Counts, T) {
    let counted_kubeconfig = counted_kubeconfig_beside(kubeconfig);
    assert!(
        std::path::Path::new(&counted_kubeconfig).exists(),
        "no {counted_kubeconfig} beside the cluster's kubeconfig: the cluster predates the audited user (testbed/cluster.sh down && up)",
    );
    let log = log_path(kubeconfig);
    let start = std::fs::metadata(&log).map_or(0, |m| m.len());
    let returned = command();
    (read_from(&log, start).0, returned)
}
