//! A party's identity: an ECDSA P-256 key pair and a certificate (rcgen), known to the others
//! by the certificate's SHA-256 fingerprint, which the study file names: self-signed, or
//! issued for the party's name by a consortium authority that the study file names instead
//! (`privlogit identity ca`, then `identity new --ca`).
//!
//! Files: `NAME.crt` (PEM certificate, public: hand its fingerprint to the other parties) and
//! `NAME.key` (PEM PKCS#8 private key, secret: mode 0600, never leaves the organization). Both
//! are written to a temporary name and renamed, so a failure leaves nothing half-written.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

/// The SHA-256 digest of a certificate's DER encoding, written `sha256:` and 64 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The fingerprint of a DER certificate.
    pub fn of(certificate_der: &[u8]) -> Self {
        Self(Sha256::digest(certificate_der).into())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl FromStr for Fingerprint {
    type Err = String;

    /// Accepts `sha256:` followed by 64 hex digits, optionally separated by colons (as
    /// `openssl x509 -fingerprint -sha256` prints them).
    fn from_str(s: &str) -> Result<Self, String> {
        let hex: String = s
            .trim()
            .strip_prefix("sha256:")
            .unwrap_or(s.trim())
            .chars()
            .filter(|&c| c != ':')
            .collect();
        if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!(
                "{s:?} is not a certificate fingerprint (sha256: and 64 hex digits)"
            ));
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex digits");
        }
        Ok(Self(out))
    }
}

/// A party's certificate and private key.
pub struct Identity {
    certificate: CertificateDer<'static>,
    /// PKCS#8 DER, wiped when dropped.
    key: Zeroizing<Vec<u8>>,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Identity({})", self.fingerprint())
    }
}

impl Identity {
    /// A new key pair and a self-signed certificate for `name` (its common name and DNS
    /// name), valid from now for ten years.
    pub fn generate(name: &str) -> io::Result<Self> {
        let key = rcgen::KeyPair::generate().map_err(bad_certificate)?;
        let certificate = party_params(name)?
            .self_signed(&key)
            .map_err(bad_certificate)?;
        Ok(Self {
            certificate: certificate.der().clone(),
            key: Zeroizing::new(key.serialize_der()),
        })
    }

    /// A consortium certificate authority: a key pair and a self-signed CA certificate (subject
    /// [`AUTHORITY_NAME`]), valid for ten years, that signs party certificates
    /// ([`Self::issue`]).
    pub fn generate_authority() -> io::Result<Self> {
        let key = rcgen::KeyPair::generate().map_err(bad_certificate)?;
        let certificate = authority_params()?
            .self_signed(&key)
            .map_err(bad_certificate)?;
        Ok(Self {
            certificate: certificate.der().clone(),
            key: Zeroizing::new(key.serialize_der()),
        })
    }

    /// A new key pair for `name` with a certificate this authority signs: the name as its DNS
    /// name, usable by both ends of a TLS connection, valid for ten years.
    pub fn issue(&self, name: &str) -> io::Result<Identity> {
        let authority_key =
            rcgen::KeyPair::try_from(self.key.as_slice()).map_err(bad_certificate)?;
        let issuer = rcgen::Issuer::new(authority_params()?, authority_key);
        let key = rcgen::KeyPair::generate().map_err(bad_certificate)?;
        let mut params = party_params(name)?;
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let certificate = params.signed_by(&key, &issuer).map_err(bad_certificate)?;
        Ok(Identity {
            certificate: certificate.der().clone(),
            key: Zeroizing::new(key.serialize_der()),
        })
    }

    /// Reads `PREFIX.crt` and `PREFIX.key`.
    pub fn load(prefix: &Path) -> io::Result<Self> {
        let (crt, key) = paths(prefix);
        let certificate = CertificateDer::from_pem_file(&crt).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not a PEM certificate ({e})", crt.display()),
            )
        })?;
        let pem = crate::secret_file::read(&key)?;
        let parsed = PrivatePkcs8KeyDer::from_pem_slice(&pem).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not a PEM PKCS#8 private key ({e})", key.display()),
            )
        })?;
        let identity = Self {
            certificate,
            key: Zeroizing::new(parsed.secret_pkcs8_der().to_vec()),
        };
        // A key from one identity beside another's certificate is named here, with both
        // files, rather than by TLS later as "keys may not be consistent".
        let signing =
            rustls::crypto::ring::sign::any_ecdsa_type(&identity.private_key()).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: not an ECDSA key ({e})", key.display()),
                )
            })?;
        rustls::sign::CertifiedKey::new(identity.chain(), signing)
            .keys_match()
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{} and {} are not one identity's: the key is not the certificate's \
                         (both files come from one `privlogit identity new`)",
                        key.display(),
                        crt.display()
                    ),
                )
            })?;
        Ok(identity)
    }

    /// Writes `PREFIX.crt` and `PREFIX.key` (0600), refusing to overwrite either.
    pub fn save(&self, prefix: &Path) -> io::Result<(PathBuf, PathBuf)> {
        let (crt, key) = paths(prefix);
        for p in [&crt, &key] {
            if p.exists() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists; not overwriting an identity", p.display()),
                ));
            }
        }
        let key_pem = Zeroizing::new(pem("PRIVATE KEY", &self.key));
        write_new(&key, key_pem.as_bytes(), true)?;
        write_new(
            &crt,
            pem("CERTIFICATE", &self.certificate).as_bytes(),
            false,
        )?;
        Ok((crt, key))
    }

    /// The certificate's fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(&self.certificate)
    }

    /// The certificate, DER.
    pub fn certificate(&self) -> &CertificateDer<'static> {
        &self.certificate
    }

    /// The chain this party presents in TLS: its certificate (an issued one chains straight to
    /// the authority, which every party has from the study file).
    pub(crate) fn chain(&self) -> Vec<CertificateDer<'static>> {
        vec![self.certificate.clone()]
    }

    /// An ECDSA P-256 / SHA-256 signature (ASN.1 DER) of `message` with this identity's key.
    pub fn sign(&self, message: &[u8]) -> io::Result<Vec<u8>> {
        let key = rustls::crypto::ring::sign::any_ecdsa_type(&self.private_key())
            .map_err(|e| io::Error::other(format!("the identity's key cannot sign: {e}")))?;
        let signer = key
            .choose_scheme(&[rustls::SignatureScheme::ECDSA_NISTP256_SHA256])
            .ok_or_else(|| io::Error::other("the identity's key is not ECDSA P-256"))?;
        signer
            .sign(message)
            .map_err(|e| io::Error::other(format!("signing failed: {e}")))
    }

    /// A 32-byte secret for `purpose`, derived from this identity's private key (HMAC-SHA256
    /// keyed by its PKCS#8 bytes): what only this party can compute, such as the key that seals
    /// the aggregator's checkpoints, with no other key file to keep.
    pub fn derive_secret(&self, purpose: &[u8]) -> Zeroizing<[u8; 32]> {
        use hmac::{Hmac, Mac as _};
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes a key of any length");
        mac.update(b"privlogit identity-derived secret v1\0");
        mac.update(purpose);
        Zeroizing::new(mac.finalize().into_bytes().into())
    }

    /// A copy of the private key for a TLS configuration.
    pub(crate) fn private_key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.to_vec()))
    }
}

/// Checks an ECDSA P-256 / SHA-256 signature made by the key of the DER certificate.
pub fn verify(certificate_der: &[u8], message: &[u8], signature: &[u8]) -> Result<(), String> {
    let der = CertificateDer::from(certificate_der);
    let cert = webpki::EndEntityCert::try_from(&der)
        .map_err(|e| format!("the certificate does not parse ({e:?})"))?;
    cert.verify_signature(webpki::ring::ECDSA_P256_SHA256, message, signature)
        .map_err(|e| format!("the signature does not verify ({e:?})"))
}

/// The subject of every consortium authority privlogit makes (the study file names which one
/// to trust, so one fixed name serves).
pub const AUTHORITY_NAME: &str = "privlogit consortium CA";

fn bad_certificate(e: rcgen::Error) -> io::Error {
    io::Error::other(format!("cannot make a certificate: {e}"))
}

/// Ten years from an hour ago.
fn validity(params: &mut rcgen::CertificateParams) {
    let now = std::time::SystemTime::now();
    params.not_before = (now - std::time::Duration::from_secs(3600)).into();
    params.not_after = (now + std::time::Duration::from_secs(10 * 366 * 86_400)).into();
}

/// A party's certificate: its name as common name and DNS name.
fn party_params(name: &str) -> io::Result<rcgen::CertificateParams> {
    let mut params =
        rcgen::CertificateParams::new(vec![name.to_string()]).map_err(bad_certificate)?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    validity(&mut params);
    Ok(params)
}

/// The authority's certificate: a CA that signs certificates (and nothing else).
fn authority_params() -> io::Result<rcgen::CertificateParams> {
    let mut params =
        rcgen::CertificateParams::new(Vec::<String>::new()).map_err(bad_certificate)?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, AUTHORITY_NAME);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    validity(&mut params);
    Ok(params)
}

fn paths(prefix: &Path) -> (PathBuf, PathBuf) {
    let with = |ext: &str| {
        let mut p = prefix.as_os_str().to_owned();
        p.push(ext);
        PathBuf::from(p)
    };
    (with(".crt"), with(".key"))
}

/// PEM armour (the `pem` crate, which rcgen uses too).
fn pem(label: &str, der: &[u8]) -> String {
    pem::encode(&pem::Pem::new(label, der.to_vec()))
}

/// Writes `bytes` to a temporary file beside `path`, then renames it into place.
fn write_new(path: &Path, bytes: &[u8], secret: bool) -> io::Result<()> {
    use std::io::Write as _;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(d) = dir {
        fs::create_dir_all(d)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = secret;
    let result = options.open(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    match result.and_then(|()| fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(io::Error::new(
                e.kind(),
                format!("cannot write {}: {e}", path.display()),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A saved identity loads back with the same fingerprint; the key file is private; an
    /// existing identity is not overwritten.
    #[test]
    fn save_and_load() {
        let dir = std::env::temp_dir().join(format!("privlogit-id-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let prefix = dir.join("hospital-a");
        let id = Identity::generate("hospital-a").expect("generates");
        id.save(&prefix).expect("saves");
        let back = Identity::load(&prefix).expect("loads");
        assert_eq!(back.fingerprint(), id.fingerprint());
        assert_eq!(*back.key, *id.key);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = fs::metadata(dir.join("hospital-a.key"))
                .expect("key")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(id.save(&prefix).is_err());
        // Another identity's key beside this certificate is refused naming both files.
        let other = Identity::generate("hospital-b").expect("generates");
        other.save(&dir.join("hospital-b")).expect("saves");
        fs::copy(dir.join("hospital-b.key"), dir.join("hospital-a.key")).expect("copy");
        let Err(e) = Identity::load(&prefix) else {
            panic!("a key that is not the certificate's must be refused")
        };
        let text = e.to_string();
        assert!(
            text.contains("hospital-a.key") && text.contains("hospital-a.crt"),
            "{text}"
        );
        assert!(text.contains("not one identity's"), "{text}");
        let _ = fs::remove_dir_all(&dir);
    }

    /// The fingerprint is SHA-256 of the DER certificate (FIPS 180-2 vector for "abc") and
    /// parses back from its display, with or without colons.
    #[test]
    fn fingerprint_format() {
        let f = Fingerprint::of(b"abc");
        let shown = f.to_string();
        assert_eq!(
            shown,
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(shown.parse::<Fingerprint>(), Ok(f));
        let colons: String = shown.as_bytes()[7..]
            .chunks(2)
            .map(|c| std::str::from_utf8(c).expect("hex").to_uppercase())
            .collect::<Vec<_>>()
            .join(":");
        assert_eq!(colons.parse::<Fingerprint>(), Ok(f));
        assert!("sha256:12".parse::<Fingerprint>().is_err());
    }
}
