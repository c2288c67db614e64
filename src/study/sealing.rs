//! The aggregator's checkpoint sealed and authenticated (ChaCha20-Poly1305, ring's AEAD) under
//! a key only the aggregator holds: derived from its identity's private key, or, in a study
//! over plain TCP (tests), drawn once into an owner-only file in its state directory.
//!
//! A checkpoint holds every iterate and the bound's inverse encrypted under the key holder's
//! key, so the key holder must not read it (shared backups, NFS) and nobody may change it: an
//! edited pooled mean would be resumed into a wrong published model. The study id is the
//! associated data, so a checkpoint of one study is refused by another.

use std::path::{Path, PathBuf};

use privlogit_protocols::transport::identity::Identity;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom as _, SystemRandom};
use zeroize::Zeroizing;

use crate::error::{Error, PlanError};
use crate::output;

/// What a sealed checkpoint starts with (an older, unsealed one starts with `PLCK`).
const MAGIC: &[u8; 4] = b"PLSC";
/// What the identity's key is asked for.
const PURPOSE: &[u8] = b"aggregator checkpoint seal";

/// The aggregator's sealing key for one study.
pub struct CheckpointSeal {
    key: Zeroizing<[u8; 32]>,
    study: [u8; 32],
}

impl std::fmt::Debug for CheckpointSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CheckpointSeal(..)")
    }
}

impl CheckpointSeal {
    /// The seal of `study`: from `identity` when there is one, else from the key file
    /// `fallback` (made owner-only on first use).
    pub fn new(
        identity: Option<&Identity>,
        fallback: &Path,
        study: [u8; 32],
    ) -> Result<Self, Error> {
        let key = match identity {
            Some(identity) => identity.derive_secret(PURPOSE),
            None => fallback_key(fallback)?,
        };
        Ok(Self { key, study })
    }

    /// `plain` sealed: the magic, a random nonce, the ciphertext and its tag.
    pub fn seal(&self, plain: &[u8]) -> Result<Vec<u8>, Error> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| Error::refused("the system's random source failed"))?;
        let mut body = plain.to_vec();
        self.cipher()
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(self.study),
                &mut body,
            )
            .map_err(|_| Error::refused("cannot seal the checkpoint"))?;
        let mut sealed = Vec::with_capacity(MAGIC.len() + NONCE_LEN + body.len());
        sealed.extend_from_slice(MAGIC);
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&body);
        Ok(sealed)
    }

    /// The checkpoint sealed in `sealed` (read from `path`), refused if anything in it changed,
    /// if another key sealed it or if it is of another study.
    pub fn open(&self, sealed: &[u8], path: &Path) -> Result<Zeroizing<Vec<u8>>, Error> {
        let refuse = |why: &'static str| {
            Error::from(PlanError::Sealed {
                path: path.to_path_buf(),
                why,
            })
        };
        if sealed.starts_with(b"PLCK") {
            return Err(refuse(
                "an unsealed checkpoint of an older privlogit, which nothing authenticates",
            ));
        }
        let Some(rest) = sealed.strip_prefix(MAGIC.as_slice()) else {
            return Err(refuse("not a privlogit checkpoint"));
        };
        if rest.len() < NONCE_LEN {
            return Err(refuse("the checkpoint is cut short"));
        }
        let (nonce, body) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce)
            .map_err(|_| refuse("the checkpoint is cut short"))?;
        let mut body = Zeroizing::new(body.to_vec());
        let plain_len = self
            .cipher()
            .open_in_place(nonce, Aad::from(self.study), &mut body)
            .map_err(|_| {
                refuse(
                    "the checkpoint does not authenticate: it was changed, or sealed by another \
                     aggregator identity or for another study",
                )
            })?
            .len();
        body.truncate(plain_len);
        Ok(body)
    }

    fn cipher(&self) -> LessSafeKey {
        let key = UnboundKey::new(&CHACHA20_POLY1305, self.key.as_slice())
            .expect("ChaCha20-Poly1305 takes a 32-byte key");
        LessSafeKey::new(key)
    }
}

/// The random key in `path`, made (owner-only) if there is none.
fn fallback_key(path: &Path) -> Result<Zeroizing<[u8; 32]>, Error> {
    let unreadable = |e: std::io::Error| Error::read(PathBuf::from(path), e);
    if !path.exists() {
        let mut fresh = Zeroizing::new([0u8; 32]);
        SystemRandom::new()
            .fill(fresh.as_mut_slice())
            .map_err(|_| Error::refused("the system's random source failed"))?;
        match output::create_private(path, fresh.as_slice()) {
            Ok(()) => return Ok(fresh),
            // Another study of this server made it first: read theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::write(path, e)),
        }
    }
    let bytes = privlogit_protocols::secret_file::read(path).map_err(unreadable)?;
    let key: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
        Error::from(PlanError::File {
            path: path.to_path_buf(),
            why: "a checkpoint sealing key must be 32 bytes",
        })
    })?;
    Ok(Zeroizing::new(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal(name: &str, study: u8) -> (CheckpointSeal, PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("privlogit-seal-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        output::private_dir(&dir).expect("dir");
        let key = dir.join("seal.key");
        (
            CheckpointSeal::new(None, &key, [study; 32]).expect("seal"),
            dir,
        )
    }

    #[test]
    fn a_sealed_checkpoint_opens_and_any_change_is_refused() {
        let (seal, dir) = seal("change", 1);
        let plain = b"PLCK pooled means 0.5 0.25".to_vec();
        let sealed = seal.seal(&plain).expect("sealed");
        assert!(
            !sealed.windows(6).any(|w| w == b"pooled"),
            "sealed, not signed"
        );
        let path = dir.join("study.checkpoint");
        assert_eq!(seal.open(&sealed, &path).expect("opens").as_slice(), plain);
        for at in [0, 4, 10, 20, sealed.len() - 1] {
            let mut changed = sealed.clone();
            changed[at] ^= 1;
            assert!(seal.open(&changed, &path).is_err(), "byte {at} changed");
        }
        assert!(seal.open(&sealed[..sealed.len() - 1], &path).is_err());
        // Another study's seal (same key file) refuses it: the study id is bound.
        let other = CheckpointSeal::new(None, &dir.join("seal.key"), [2; 32]).expect("seal");
        assert!(other.open(&sealed, &path).is_err());
        // An older, unsealed checkpoint is refused by name.
        let err = seal.open(b"PLCK\x01rest", &path).expect_err("unsealed");
        assert!(err.to_string().contains("unsealed"), "{err}");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[cfg(unix)]
    #[test]
    fn the_fallback_key_is_owner_only_and_kept() {
        use std::os::unix::fs::PermissionsExt as _;
        let (first, dir) = seal("fallback", 3);
        let again = CheckpointSeal::new(None, &dir.join("seal.key"), [3; 32]).expect("seal");
        let sealed = first.seal(b"x").expect("sealed");
        assert_eq!(again.open(&sealed, &dir).expect("opens").as_slice(), b"x");
        let mode = std::fs::metadata(dir.join("seal.key"))
            .expect("key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
