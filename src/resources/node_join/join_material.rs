//! The join material: what the provider's connection and the
//! configuration say about joining, computed rather than stored in the
//! cluster (the API server, its CA and pin, the join command, the kubelet's
//! taints and labels).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Model, TaintSpec};
use crate::kit::Cluster;
use crate::protocol::{Diagnostic, Diagnostics};

/// The label the NVIDIA device plugin reads a node's sharing configuration
/// key from (NVIDIA k8s-device-plugin, cmd/nvidia-device-plugin `--config-label`'s default).
const SHARING_LABEL: &str = "nvidia.com/device-plugin.config";

/// The node labels the kubelet registers with: `labels`, and the sharing
/// configuration key's label.
pub(super) fn node_labels(model: &Model) -> BTreeMap<String, String> {
    let mut labels = model.labels.clone().unwrap_or_default();
    if let Some(key) = &model.sharing_config {
        labels.insert(SHARING_LABEL.to_string(), key.clone());
    }
    labels
}

/// The KubeletConfiguration fragment: the taints the node registers with.
pub(super) fn kubelet_config(taints: &[TaintSpec]) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Fragment<'a> {
        api_version: &'static str,
        kind: &'static str,
        register_with_taints: Vec<BTreeMap<&'static str, &'a str>>,
    }
    let register_with_taints = taints
        .iter()
        .map(|t| {
            let mut taint =
                BTreeMap::from([("key", t.key.as_str()), ("effect", t.effect.as_str())]);
            if let Some(value) = &t.value {
                taint.insert("value", value.as_str());
            }
            taint
        })
        .collect();
    serde_saphyr::to_string(&Fragment {
        api_version: "kubelet.config.k8s.io/v1beta1",
        kind: "KubeletConfiguration",
        register_with_taints,
    })
    .expect("a KubeletConfiguration fragment serializes")
}

/// `sha256:<hex>` of the certificate's DER SubjectPublicKeyInfo, the pin
/// `kubeadm join --discovery-token-ca-cert-hash` takes (kubernetes
/// cmd/kubeadm/app/util/pubkeypin `Hash`).
pub fn ca_cert_hash(der: &[u8]) -> Result<String, String> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let (_, certificate) = X509Certificate::from_der(der)
        .map_err(|e| format!("the cluster CA certificate cannot be parsed: {e}"))?;
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        certificate.tbs_certificate.subject_pki.raw,
    );
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("sha256:{hex}"))
}

fn pem(der: &[u8]) -> String {
    use base64::Engine;
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
        .collect();
    format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        lines.join("\n")
    )
}

impl Model {
    /// Fills in what the cluster connection decides: the API server, its CA
    /// and pin, and the join command.
    pub(super) async fn join_material(&mut self, cluster: &Cluster) -> Result<(), Diagnostics> {
        let endpoint = cluster.kubernetes.connected_endpoint().await?;
        let (Some(server), Some(authority)) = (&endpoint.server, &endpoint.authority) else {
            return Err(
                no_join_material(&cluster.kubernetes.describe(), "no API server URL").into(),
            );
        };
        let Some(ca) = endpoint.ca_certificates.first() else {
            return Err(no_join_material(
                &endpoint.describe(),
                "no CA certificate (the kubeconfig's certificate-authority-data, or the provider's `cluster_ca_certificate`)",
            )
            .into());
        };
        let hash = ca_cert_hash(ca).map_err(|e| no_join_material(&endpoint.describe(), &e))?;
        self.api_server_endpoint = Some(server.clone());
        self.cluster_ca_certificate =
            Some(endpoint.ca_certificates.iter().map(|c| pem(c)).collect());
        self.kubeadm_join_command = self.token.as_ref().map(|token| {
            format!(
                "kubeadm join {authority} --token {token} --discovery-token-ca-cert-hash {hash}"
            )
        });
        self.ca_cert_hash = Some(hash);
        Ok(())
    }
}

fn no_join_material(cluster: &str, what: &str) -> Diagnostic {
    Diagnostic::error(
        "No join material",
        format!(
            "A server joining {cluster} needs its URL and CA to verify it, but the provider's connection has {what}."
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pin_is_the_sha256_of_the_public_key_info() {
        let key = rcgen::KeyPair::generate().unwrap();
        let ca = rcgen::CertificateParams::new(vec!["kubernetes".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let expected = ring::digest::digest(
            &ring::digest::SHA256,
            &rcgen::PublicKeyData::subject_public_key_info(&key),
        );
        let hex: String = expected
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(ca_cert_hash(ca.der()).unwrap(), format!("sha256:{hex}"));
        assert!(ca_cert_hash(b"not a certificate").is_err());
    }
}
