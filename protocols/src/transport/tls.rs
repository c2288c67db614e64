//! Mutual TLS 1.3 (rustls, ring provider) where each side accepts exactly the certificates the
//! study file names for the role it expects: pinned by fingerprint (a self-signed certificate
//! whose fingerprint the organizations exchanged is the trust anchor, as with SSH host keys;
//! no chains, names or dates), or issued by the consortium CA the study file names for the
//! party's name (chain, dates and name checked by webpki). Handshake signatures are verified
//! as usual, so presenting a certificate proves holding its key.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, DistinguishedName, Error, OtherError,
    ServerConfig, SignatureScheme,
};

use super::identity::{Fingerprint, Identity};
use super::roster::{Member, Role, Roster, Side};

/// The name the client asks for; unused by the pinned verifier, but rustls wants one.
pub(crate) const SERVER_NAME: &str = "privlogit.invalid";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Accepts the certificates of `roster`'s members in `role` (whoever connects to a listener)
/// or of exactly one member (the server a client dials).
#[derive(Debug)]
struct Pinned {
    roster: Arc<Roster>,
    accept: Accept,
    algorithms: WebPkiSupportedAlgorithms,
}

#[derive(Debug, Clone)]
enum Accept {
    Role(Role),
    Exactly(Member),
}

/// A refusal that names the certificate and what it is.
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

impl Pinned {
    fn new(roster: Arc<Roster>, accept: Accept) -> Self {
        Self {
            roster,
            accept,
            algorithms: provider().signature_verification_algorithms,
        }
    }

    fn check(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        side: Side,
    ) -> Result<(), Error> {
        let got = Fingerprint::of(end_entity);
        let refusal = match (
            &self.accept,
            self.roster.identify(end_entity, intermediates, side),
        ) {
            (Accept::Exactly(want), Ok(m)) if m == want => return Ok(()),
            (Accept::Role(role), Ok(m)) if m.role == *role => return Ok(()),
            (Accept::Exactly(_), Ok(m)) => {
                format!("certificate {got} is {m}'s, not the one expected here")
            }
            (Accept::Role(role), Ok(m)) => {
                format!("certificate {got} is {m}'s, which may not connect as a {role}")
            }
            (_, Err(why)) => why,
        };
        Err(Error::InvalidCertificate(CertificateError::Other(
            OtherError(Arc::new(Refused(refusal))),
        )))
    }
}

/// The handshake-signature methods both verifier traits have, the same for either side:
/// TLS 1.3 only, with the provider's algorithms.
macro_rules! handshake_signatures {
    () => {
        fn verify_tls12_signature(
            &self,
            _message: &[u8],
            _cert: &CertificateDer<'_>,
            _dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            Err(Error::General("TLS 1.2 is not offered".into()))
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.algorithms.supported_schemes()
        }
    };
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        self.check(end_entity, intermediates, Side::Server)
            .map(|()| ServerCertVerified::assertion())
    }

    handshake_signatures!();
}

impl ClientCertVerifier for Pinned {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        self.check(end_entity, intermediates, Side::Client)
            .map(|()| ClientCertVerified::assertion())
    }

    handshake_signatures!();
}

fn config_error(e: Error) -> std::io::Error {
    std::io::Error::other(format!("TLS configuration: {e}"))
}

/// The configuration of a listener that accepts `roster`'s parties in `role`.
pub(crate) fn server_config(
    identity: &Identity,
    roster: Arc<Roster>,
    role: Role,
) -> std::io::Result<Arc<ServerConfig>> {
    let verifier = Arc::new(Pinned::new(roster, Accept::Role(role)));
    let config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(config_error)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(identity.chain(), identity.private_key())
        .map_err(config_error)?;
    Ok(Arc::new(config))
}

/// The configuration of a client that dials `server`.
pub(crate) fn client_config(
    identity: &Identity,
    roster: Arc<Roster>,
    server: Member,
) -> std::io::Result<Arc<ClientConfig>> {
    let verifier = Arc::new(Pinned::new(roster, Accept::Exactly(server)));
    let config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(config_error)?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_client_auth_cert(identity.chain(), identity.private_key())
        .map_err(config_error)?;
    Ok(Arc::new(config))
}
