//! The bootstrap token's parts as k8s.io/cluster-bootstrap defines them
//! (token/api, token/util): their format, generation, groups, durations, and
//! the node labels a kubelet may register with.

use jiff::SignedDuration;

use crate::framework::validators::Validator;
use crate::protocol::Diagnostic;

/// k8s.io/cluster-bootstrap token/util `validBootstrapTokenChars`.
pub(super) const TOKEN_CHARS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
/// k8s.io/cluster-bootstrap token/api `BootstrapTokenIDBytes`, `BootstrapTokenSecretBytes`.
pub(super) const ID_LENGTH: usize = 6;
pub(super) const SECRET_LENGTH: usize = 16;
/// A join credential is short-lived: at least long enough to boot a server,
/// at most a week; longer needs are what rotation is for.
const MIN_TTL: SignedDuration = SignedDuration::from_mins(5);
const MAX_TTL: SignedDuration = SignedDuration::from_hours(7 * 24);

/// `24h`, `90m`: a duration.
pub(super) fn parse_duration(text: &str) -> Result<SignedDuration, String> {
    text.parse::<SignedDuration>()
        .map_err(|_| format!("{text:?} is not a duration such as `24h` or `90m`"))
}

pub(super) fn ttl_validator() -> Validator {
    Validator::string_with(
        "A duration such as `24h` or `90m`, from 5m to 168h.",
        |text| {
            let ttl = parse_duration(text)?;
            if (MIN_TTL..=MAX_TTL).contains(&ttl) {
                Ok(())
            } else {
                Err(format!(
                    "{text:?} is outside 5m..=168h: a join token is short-lived (a token that never expires, kubeadm's ttl 0, is refused); rotate it with `rotate_when_expires_within` instead of making it long-lived"
                ))
            }
        },
    )
}

pub(super) fn window_validator() -> Validator {
    Validator::string_with(
        "A duration such as `2h`, not negative.",
        |text| match parse_duration(text)? {
            d if d.is_negative() => Err(format!("{text:?} is negative")),
            _ => Ok(()),
        },
    )
}

/// k8s.io/cluster-bootstrap token/api `BootstrapTokenIDPattern`
/// (`[a-z0-9]{6}`) and the secret's `[a-z0-9]{16}`.
pub(super) fn token_part(length: usize) -> impl Fn(&str) -> Result<(), String> {
    move |text| {
        if text.len() == length && text.bytes().all(|b| TOKEN_CHARS.contains(&b)) {
            Ok(())
        } else {
            Err(format!(
                "is not {length} characters of lower-case letters and digits ([a-z0-9]{{{length}}}, as k8s.io/cluster-bootstrap token/api requires)"
            ))
        }
    }
}

/// k8s.io/cluster-bootstrap token/api `BootstrapGroupPattern`:
/// `system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]`.
pub(super) fn check_group(group: &str) -> Result<(), String> {
    let rest = group.strip_prefix("system:bootstrappers:");
    let valid = rest.is_some_and(|rest| {
        (1..=256).contains(&rest.len())
            && rest
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-')
            && rest
                .bytes()
                .last()
                .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    });
    if valid {
        Ok(())
    } else {
        Err(format!(
            "{group:?} is not a bootstrap group: it must match system:bootstrappers:[a-z0-9:-]{{0,255}}[a-z0-9] (k8s.io/cluster-bootstrap token/api)"
        ))
    }
}

/// Labels a kubelet refuses to set on its own node with `--node-labels`
/// (k8s.io/kubernetes cmd/kubelet/app/options `ValidateKubeletFlags`, with
/// the allowed ones from k8s.io/kubelet pkg/apis `IsKubeletLabel`): keys in
/// the `kubernetes.io` or `k8s.io` namespaces (or their subdomains), except
/// the listed well-known labels and those under `kubelet.kubernetes.io` and
/// `node.kubernetes.io`.
fn check_kubelet_label(key: &str) -> Result<(), String> {
    const KUBELET_LABELS: &[&str] = &[
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
    ];
    const KUBELET_NAMESPACES: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];
    let in_domain = |namespace: &str, domain: &str| {
        namespace == domain || namespace.ends_with(&format!(".{domain}"))
    };
    let namespace = key.split_once('/').map_or("", |(prefix, _)| prefix);
    let kubernetes = in_domain(namespace, "kubernetes.io") || in_domain(namespace, "k8s.io");
    let allowed = KUBELET_LABELS.contains(&key)
        || KUBELET_NAMESPACES.iter().any(|ns| in_domain(namespace, ns));
    if kubernetes && !allowed {
        Err(format!(
            "{key:?}: a kubelet refuses to set labels in the 'kubernetes.io' or 'k8s.io' namespace with --node-labels unless they begin with an allowed prefix ({}) or are in the allowed set ({}); set such a label after the node joins",
            KUBELET_NAMESPACES.join(", "),
            KUBELET_LABELS.join(", ")
        ))
    } else {
        Ok(())
    }
}

pub(super) fn kubelet_labels() -> Validator {
    let labels = crate::cluster::names::labels();
    Validator::new(
        format!(
            "{} Keys a kubelet may set on its own node: none in the `kubernetes.io` or `k8s.io` namespaces but the kubelet's own (`kubernetes.io/arch`, `node.kubernetes.io/...`, ...).",
            labels.description()
        ),
        move |value| {
            labels.check(value)?;
            value
                .entries()
                .into_iter()
                .flatten()
                .try_for_each(|(key, _)| check_kubelet_label(key))
        },
    )
}

/// `count` characters drawn uniformly from [`TOKEN_CHARS`] by the operating
/// system's CSPRNG (k8s.io/cluster-bootstrap token/util `randBytes` draws
/// from crypto/rand the same way).
pub(super) fn random_token_part(count: usize) -> Result<String, Diagnostic> {
    use ring::rand::{SecureRandom, SystemRandom};
    let random = SystemRandom::new();
    let mut out = String::with_capacity(count);
    // Rejection sampling: 252 is the largest multiple of 36 below 256, so
    // every character is equally likely.
    let limit = 256 - 256 % TOKEN_CHARS.len();
    while out.len() < count {
        let mut byte = [0u8; 1];
        random.fill(&mut byte).map_err(|_| {
            Diagnostic::error(
                "Cannot generate a bootstrap token",
                "The operating system's random number generator failed.",
            )
        })?;
        if usize::from(byte[0]) < limit {
            out.push(char::from(
                TOKEN_CHARS[usize::from(byte[0]) % TOKEN_CHARS.len()],
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubelets_own_labels_are_allowed() {
        for key in [
            "kubernetes.io/arch",
            "node.kubernetes.io/instance-type",
            "gpu.node.kubernetes.io/model",
            "kubelet.kubernetes.io/x",
            "nvidia.com/gpu.product",
            "team",
        ] {
            assert_eq!(check_kubelet_label(key), Ok(()), "{key}");
        }
        for key in [
            "node-role.kubernetes.io/gpu",
            "kubernetes.io/role",
            "example.k8s.io/x",
            "node-restriction.kubernetes.io/pool",
        ] {
            assert!(check_kubelet_label(key).is_err(), "{key}");
        }
    }

    #[test]
    fn groups_follow_the_bootstrap_group_pattern() {
        assert!(check_group("system:bootstrappers:gpufleet").is_ok());
        assert!(check_group("system:bootstrappers:a:b-c1").is_ok());
        assert!(check_group("system:bootstrappers:").is_err());
        assert!(check_group("system:bootstrappers:x-").is_err());
        assert!(check_group("system:bootstrappers:X").is_err());
        assert!(check_group("system:bootstrappers").is_err());
    }

    #[test]
    fn generated_parts_are_random_and_of_the_token_alphabet() {
        let a = random_token_part(SECRET_LENGTH).unwrap();
        let b = random_token_part(SECRET_LENGTH).unwrap();
        assert_eq!(token_part(SECRET_LENGTH)(&a), Ok(()));
        assert_eq!(
            token_part(ID_LENGTH)(&random_token_part(ID_LENGTH).unwrap()),
            Ok(())
        );
        assert_ne!(a, b);
    }
}
