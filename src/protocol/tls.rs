//! AutoMTLS as go-plugin does it: the client passes its certificate in
//! `PLUGIN_CLIENT_CERT`; we serve TLS with a fresh self-signed certificate
//! for `localhost` and accept exactly that client certificate, nothing else.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};

/// Our server certificate: DER (for the handshake line) and the TLS config.
pub struct ServerTls {
    pub certificate_der: Vec<u8>,
    pub config: Arc<ServerConfig>,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("PLUGIN_CLIENT_CERT holds no PEM certificate")]
    NoClientCertificate,
    #[error("cannot create the server certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("cannot set up TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

pub fn server_tls(client_cert_pem: &str) -> Result<ServerTls, TlsError> {
    let client_cert = CertificateDer::from_pem_slice(client_cert_pem.as_bytes())
        .map_err(|_| TlsError::NoClientCertificate)?;
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])?;
    let certificate_der = generated.cert.der().to_vec();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        generated.signing_key.serialize_der(),
    ));

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(PinnedClientCertificate {
        certificate: client_cert.into_owned(),
        algorithms: provider.signature_verification_algorithms,
    });
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![CertificateDer::from(certificate_der.clone())], key)?;
    // grpc-go clients insist on HTTP/2 being negotiated through ALPN.
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(ServerTls {
        certificate_der,
        config: Arc::new(config),
    })
}

/// Accepts one client certificate, byte for byte. go-plugin's certificate is
/// a self-signed CA used as a leaf, which WebPKI path validation refuses, and
/// pinning is the stricter check anyway: only the process that started us
/// holds its key.
#[derive(Debug)]
struct PinnedClientCertificate {
    certificate: CertificateDer<'static>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for PinnedClientCertificate {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.certificate.as_ref() {
            Ok(ClientCertVerified::assertion())
        } else {
            Err(rustls::Error::General(
                "client certificate is not the one in PLUGIN_CLIENT_CERT".into(),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Installs ring as the process-wide rustls provider (kube's client needs one).
pub fn install_crypto_provider() {
    let _ = CryptoProvider::install_default(rustls::crypto::ring::default_provider());
}
