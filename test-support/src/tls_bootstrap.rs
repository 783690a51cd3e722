//! A server joining the cluster as a kubelet's TLS bootstrap does, with
//! nothing but what `gpufleet_node_join` outputs: it finds the cluster
//! through the signed `cluster-info` ConfigMap and the CA pin (kubeadm's
//! token discovery), asks for a node client certificate with the token, and
//! registers its Node with the certificate the controller-manager signed,
//! carrying the taints and labels of the kubelet fragment. Used by the
//! acceptance test of `gpufleet_node_join`, the scenario and `make demo`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Node, NodeSpec, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

/// What the server is given: the outputs of a `gpufleet_node_join`, as an
/// object with keys `token`, `endpoint`, `ca_cert_hash`, `kubelet_config`,
/// `node_labels_flag` and `kubeadm_join_command`.
pub struct JoinMaterial {
    pub token: String,
    pub endpoint: String,
    pub ca_cert_hash: String,
    pub kubelet_config: String,
    /// `--node-labels=...`; `None` without labels.
    pub node_labels_flag: Option<String>,
}

impl JoinMaterial {
    pub fn of(join: &serde_json::Value) -> Self {
        let text = |k: &str| {
            join[k]
                .as_str()
                .unwrap_or_else(|| panic!("{k} in {join}"))
                .to_string()
        };
        let command = text("kubeadm_join_command");
        assert!(
            command.contains(&format!("--token {}", text("token")))
                && command.contains(&text("ca_cert_hash")),
            "{command}"
        );
        Self {
            token: text("token"),
            endpoint: text("endpoint"),
            ca_cert_hash: text("ca_cert_hash"),
            kubelet_config: text("kubelet_config"),
            node_labels_flag: join["node_labels_flag"].as_str().map(str::to_string),
        }
    }

    pub fn id_and_secret(&self) -> (&str, &str) {
        self.token.split_once('.').expect("token is id.secret")
    }

    /// The taints and labels a kubelet registers with, from the fragment and the flag.
    pub fn registration(&self) -> (Vec<Taint>, BTreeMap<String, String>) {
        let fragment: serde_json::Value = serde_saphyr::from_str(&self.kubelet_config).unwrap();
        assert_eq!(fragment["kind"], "KubeletConfiguration");
        let taints: Vec<Taint> =
            serde_json::from_value(fragment["registerWithTaints"].clone()).unwrap();
        let labels = self
            .node_labels_flag
            .iter()
            .flat_map(|flag| {
                flag.strip_prefix("--node-labels=")
                    .unwrap_or_else(|| panic!("not a --node-labels flag: {flag}"))
                    .split(',')
            })
            .map(|pair| {
                let (k, v) = pair.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect();
        (taints, labels)
    }
}

fn pem_to_der(pem: &str) -> Vec<u8> {
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

fn ca_pem(der: &[u8]) -> String {
    format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        base64::engine::general_purpose::STANDARD.encode(der)
    )
}

/// kubeadm's pin: SHA-256 of the certificate's SubjectPublicKeyInfo.
fn pin(der: &[u8]) -> String {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let (_, certificate) = X509Certificate::from_der(der).unwrap();
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        certificate.tbs_certificate.subject_pki.raw,
    );
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// A client from a kubeconfig written on the spot.
pub async fn client_from(kubeconfig: &str) -> kube::Client {
    gpufleet::protocol::tls::install_crypto_provider();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

fn kubeconfig_yaml(server: &str, ca: Option<&[u8]>, user: serde_json::Value) -> String {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let cluster = match ca {
        Some(ca) => json!({"server": server, "certificate-authority-data": b64(ca)}),
        None => json!({"server": server, "insecure-skip-tls-verify": true}),
    };
    json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    })
    .to_string()
}

async fn wait_for<T>(what: &str, limit: Duration, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(start.elapsed() < limit, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// kubeadm's token discovery: read `cluster-info` without credentials and
/// without trusting the server, check the bootstrapsigner's detached JWS
/// (HS256 with the token secret, kid the token id) over its kubeconfig, and
/// check the CA in it against the pin. Returns the trusted CA (DER).
pub async fn discover(material: &JoinMaterial) -> Vec<u8> {
    let (id, secret) = material.id_and_secret();
    let untrusted = kubeconfig_yaml(&material.endpoint, None, json!({}));
    let (kubeconfig, jws) = wait_for(
        "the bootstrapsigner's signature",
        Duration::from_secs(60),
        async || {
            let info = Api::<ConfigMap>::namespaced(client_from(&untrusted).await, "kube-public")
                .get("cluster-info")
                .await
                .unwrap();
            let data = info.data.unwrap_or_default();
            let jws = data.get(&format!("jws-kubeconfig-{id}"))?.clone();
            Some((data["kubeconfig"].clone(), jws))
        },
    )
    .await;
    let (header, signature) = jws
        .split_once("..")
        .unwrap_or_else(|| panic!("not a detached JWS: {jws}"));
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header_json: serde_json::Value =
        serde_json::from_slice(&b64.decode(header).unwrap()).unwrap();
    assert_eq!(header_json["alg"], "HS256", "{header_json}");
    assert_eq!(header_json["kid"], id, "{header_json}");
    let signing_input = format!("{header}.{}", b64.encode(kubeconfig.as_bytes()));
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    ring::hmac::verify(
        &key,
        signing_input.as_bytes(),
        &b64.decode(signature).unwrap(),
    )
    .expect("cluster-info is signed with the token");
    let parsed: serde_json::Value = serde_saphyr::from_str(&kubeconfig).unwrap();
    let ca = base64::engine::general_purpose::STANDARD
        .decode(
            parsed["clusters"][0]["cluster"]["certificate-authority-data"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
    let ca = pem_to_der(std::str::from_utf8(&ca).unwrap());
    assert_eq!(pin(&ca), material.ca_cert_hash, "the CA matches the pin");
    ca
}

/// The kubeconfig of a client that authenticates with the token and trusts
/// only `ca` (clients live in one runtime, so callers pass kubeconfigs around).
pub fn token_kubeconfig(material: &JoinMaterial, ca: &[u8]) -> String {
    kubeconfig_yaml(
        &material.endpoint,
        Some(ca_pem(ca).as_bytes()),
        json!({"token": material.token}),
    )
}

/// A node client certificate request, as a kubelet makes it: the CSR's
/// name and the private key (PEM).
pub async fn request_certificate(
    kubeconfig: &str,
    node: &str,
) -> Result<(String, String), kube::Error> {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("system:node:{node}"));
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:nodes");
    let csr = params.serialize_request(&key).unwrap().pem().unwrap();
    let name = crate::unique_name("node-csr");
    let request = CertificateSigningRequest {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            ..Default::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(csr.into_bytes()),
            signer_name: "kubernetes.io/kube-apiserver-client-kubelet".into(),
            usages: Some(vec!["digital signature".into(), "client auth".into()]),
            ..Default::default()
        },
        status: None,
    };
    Api::<CertificateSigningRequest>::all(client_from(kubeconfig).await)
        .create(&PostParams::default(), &request)
        .await?;
    Ok((name, key.serialize_pem()))
}

/// Waits for the controller-manager to approve and sign CSR `name`, reading
/// it with the token as a kubelet does.
async fn signed_certificate(kubeconfig: &str, name: &str) -> String {
    wait_for(
        "the CSR approved and signed",
        Duration::from_secs(60),
        async || {
            let csr = Api::<CertificateSigningRequest>::all(client_from(kubeconfig).await)
                .get(name)
                .await
                .unwrap();
            let status = csr.status?;
            let conditions = status.conditions.unwrap_or_default();
            assert!(
                !conditions
                    .iter()
                    .any(|c| c.type_ == "Denied" || c.type_ == "Failed"),
                "{conditions:?}"
            );
            let certificate = status.certificate?;
            assert!(
                conditions
                    .iter()
                    .any(|c| c.type_ == "Approved" && c.status == "True")
            );
            Some(String::from_utf8(certificate.0).unwrap())
        },
    )
    .await
}

/// The TLS bootstrap, end to end, for `server`: a Node of the server's own
/// name, labels, annotations and status (what its kubelet and device plugin
/// would report). It registers itself with the signed certificate, with the
/// fragment's taints and the flag's labels added to its own, then reports
/// its status and Ready. Returns the name of its CSR.
pub async fn join(material: &JoinMaterial, server: &Node) -> String {
    let name = server.metadata.name.clone().expect("the server's name");
    let ca = discover(material).await;
    let bootstrap = token_kubeconfig(material, &ca);
    let (csr, key_pem) = request_certificate(&bootstrap, &name)
        .await
        .expect("the token may ask for a node client certificate");
    let certificate = signed_certificate(&bootstrap, &csr).await;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let kubelet = kubeconfig_yaml(
        &material.endpoint,
        Some(ca_pem(&ca).as_bytes()),
        json!({"client-certificate-data": b64(&certificate), "client-key-data": b64(&key_pem)}),
    );
    let (mut taints, labels) = material.registration();
    let spec = server.spec.clone().unwrap_or_default();
    taints.extend(spec.taints.unwrap_or_default());
    let mut own_labels = server.metadata.labels.clone().unwrap_or_default();
    own_labels.extend(labels);
    let registered = Node {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some(own_labels),
            annotations: server.metadata.annotations.clone(),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: Some(taints),
            ..Default::default()
        }),
        ..Default::default()
    };
    let own = Api::<Node>::all(client_from(&kubelet).await);
    own.create(&PostParams::default(), &registered)
        .await
        .expect("the node registers itself with its certificate");
    let mut status = serde_json::to_value(server.status.clone().unwrap_or_default()).unwrap();
    status["conditions"] =
        json!([{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}]);
    own.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&json!({ "status": status })),
    )
    .await
    .expect("the node reports its own status");
    csr
}
