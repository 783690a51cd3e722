//! The one mapping from Kubernetes API errors to diagnostics, and the few
//! facts about errors the rest of the cluster layer decides on.

use crate::protocol::{Diagnostic, Diagnostics};

/// The HTTP status of an API error, if the server answered.
pub fn status(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// Whether a 404 says that the API itself (the group, version or resource)
/// does not exist. The API server answers an unknown API path with a plain
/// text "404 page not found" (kube reports it with a reason other than
/// `NotFound`), or with a `NotFound` status "the server could not find the
/// requested resource"; a missing object is a `NotFound` status naming it.
pub fn api_missing(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(response) => {
            response.code == 404
                && (response.reason != "NotFound"
                    || response
                        .message
                        .contains("the server could not find the requested resource"))
        }
        _ => false,
    }
}

/// Whether an error says the object does not exist (and its API does).
pub fn object_missing(error: &kube::Error) -> bool {
    status(error) == Some(404) && !api_missing(error)
}

/// The diagnostic for a failed API call on `cluster`. `action` says what was
/// being done (`create PriorityClass "online-inference"`), `kind` names the
/// API (`karpenter.sh/v1 NodePool`) for the not-installed case.
pub fn api_error(cluster: &str, action: &str, kind: &str, error: &kube::Error) -> Diagnostics {
    let (summary, detail) = match error {
        _ if api_missing(error) => (
            format!("{kind} is not installed"),
            format!(
                "Could not {action}: the API {kind} does not exist on {cluster}. Install its CustomResourceDefinition (for example Karpenter's CRDs) and try again."
            ),
        ),
        kube::Error::Api(response) => match response.code {
            403 => (
                "Permission denied by Kubernetes".to_string(),
                format!(
                    "Could not {action} on {cluster}: {}. Grant the user the provider runs as this permission (RBAC).",
                    response.message
                ),
            ),
            409 => (
                "Conflict with another writer".to_string(),
                format!("Could not {action} on {cluster}: {}", response.message),
            ),
            422 | 400 => (
                "Kubernetes rejected the object".to_string(),
                format!("Could not {action} on {cluster}: {}", response.message),
            ),
            _ => (
                format!("Kubernetes API error ({})", response.code),
                format!("Could not {action} on {cluster}: {}", response.message),
            ),
        },
        other => (
            "Cannot reach Kubernetes".to_string(),
            format!("Could not {action}: {cluster} did not answer: {other}"),
        ),
    };
    Diagnostic::error(summary, detail).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn error(reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Status::failure(message, reason).with_code(404).boxed())
    }

    #[test]
    fn a_missing_api_is_told_apart_from_a_missing_object() {
        let plain = error("Failed to parse error data", "404 page not found");
        let status = error(
            "NotFound",
            "the server could not find the requested resource",
        );
        let object = error("NotFound", "nodepools.karpenter.sh \"x\" not found");
        assert!(api_missing(&plain));
        assert!(api_missing(&status));
        assert!(!api_missing(&object));
        assert!(object_missing(&object));
        let d = api_error(
            "the cluster at https://k",
            "create NodePool \"x\"",
            "karpenter.sh/v1 NodePool",
            &plain,
        );
        assert_eq!(d.0[0].summary, "karpenter.sh/v1 NodePool is not installed");
        assert!(d.0[0].detail.contains("the cluster at https://k"));
    }
}
