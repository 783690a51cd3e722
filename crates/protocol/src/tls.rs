//! AutoMTLS as go-plugin does it: the client passes its certificate in
//! `PLUGIN_CLIENT_CERT`; we serve TLS with a fresh self-signed certificate
//! for `localhost` and accept exactly that client certificate, nothing else.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{
    AlgorithmIdentifier, CertificateDer, InvalidSignature, PrivateKeyDer, PrivatePkcs8KeyDer,
    SignatureVerificationAlgorithm, UnixTime, alg_id,
};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};

/// Our server certificate: DER (for the handshake line) and the TLS config.
pub(crate) struct ServerTls {
    pub(crate) certificate_der: Vec<u8>,
    pub(crate) config: Arc<ServerConfig>,
}

/// Why AutoMTLS cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The client's certificate variable is not PEM.
    #[error("PLUGIN_CLIENT_CERT holds no PEM certificate")]
    NoClientCertificate,
    /// Generating our self-signed certificate failed.
    #[error("cannot create the server certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the configuration (protocol versions, key).
    #[error("cannot set up TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

/// A fresh server certificate and a TLS config that accepts only the
/// client certificate in `client_cert_pem` and negotiates HTTP/2.
pub(crate) fn server_tls(client_cert_pem: &str) -> Result<ServerTls, TlsError> {
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
        algorithms: with_p521(provider.signature_verification_algorithms),
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

/// go-plugin's client key is ECDSA P-521, which ring does not verify: a
/// client that finds its key's scheme missing from the server's list sends
/// no certificate at all. So we add ECDSA P-521 with SHA-512 (RustCrypto).
fn with_p521(base: WebPkiSupportedAlgorithms) -> WebPkiSupportedAlgorithms {
    static EXTENDED: OnceLock<WebPkiSupportedAlgorithms> = OnceLock::new();
    *EXTENDED.get_or_init(|| {
        const P521: &dyn SignatureVerificationAlgorithm = &EcdsaP521Sha512;
        let all: Vec<_> = base.all.iter().copied().chain([P521]).collect();
        let mapping: Vec<_> = base
            .mapping
            .iter()
            .copied()
            .chain([(SignatureScheme::ECDSA_NISTP521_SHA512, &[P521][..])])
            .collect();
        // Built once per process and needed for its whole life.
        WebPkiSupportedAlgorithms {
            all: Box::leak(all.into_boxed_slice()),
            mapping: Box::leak(mapping.into_boxed_slice()),
        }
    })
}

#[derive(Debug)]
struct EcdsaP521Sha512;

impl SignatureVerificationAlgorithm for EcdsaP521Sha512 {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        use p521::ecdsa::signature::Verifier;
        let key =
            p521::ecdsa::VerifyingKey::from_sec1_bytes(public_key).map_err(|_| InvalidSignature)?;
        let signature =
            p521::ecdsa::Signature::from_der(signature).map_err(|_| InvalidSignature)?;
        key.verify(message, &signature)
            .map_err(|_| InvalidSignature)
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::ECDSA_P521
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::ECDSA_SHA512
    }
}

/// Installs ring as the process-wide rustls provider (kube's client needs one).
pub fn install_crypto_provider() {
    let _ = CryptoProvider::install_default(rustls::crypto::ring::default_provider());
}

#[cfg(test)]
mod tests {
    use super::*;
    use p521::ecdsa::signature::Signer;

    #[test]
    fn verifies_p521_signatures_like_go_plugin_clients_make() {
        // A fixed scalar below the group order (its top byte holds one bit).
        let mut scalar = [7u8; 66];
        scalar[0] = 0;
        let signing = p521::ecdsa::SigningKey::from_slice(&scalar).unwrap();
        let public = p521::ecdsa::VerifyingKey::from(&signing).to_encoded_point(false);
        let signature: p521::ecdsa::Signature = signing.sign(b"handshake transcript");
        let der = signature.to_der();
        let alg = EcdsaP521Sha512;
        assert!(
            alg.verify_signature(public.as_bytes(), b"handshake transcript", der.as_bytes())
                .is_ok()
        );
        assert!(
            alg.verify_signature(public.as_bytes(), b"another transcript", der.as_bytes())
                .is_err()
        );
        assert!(
            alg.verify_signature(b"not a key", b"handshake transcript", der.as_bytes())
                .is_err()
        );
        let schemes =
            with_p521(rustls::crypto::ring::default_provider().signature_verification_algorithms)
                .supported_schemes();
        assert!(schemes.contains(&SignatureScheme::ECDSA_NISTP521_SHA512));
        assert!(schemes.contains(&SignatureScheme::ECDSA_NISTP256_SHA256));
    }
}
