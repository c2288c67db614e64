//! Where the two servers of a study between organizations keep what lets the study go on after
//! a lost party (`state`, `resume`): the aggregator's checkpoint and the key holder's key file,
//! both named by the study id, both written atomically, both removed when the study ends well.

use std::fs;
use std::path::{Path, PathBuf};

use privlogit_protocols::paillier::{PublicKey, SecretKey};
use privlogit_protocols::secure::SecureError;
use privlogit_protocols::secure::checkpoint::Checkpoint;
use privlogit_protocols::secure::keyholder::{
    DecryptionBudget, KeyStore, decode_kept, encode_kept,
};

use crate::error::{Error, PlanError};
use crate::output;
use crate::progress::Say;
use crate::study::sealing::CheckpointSeal;

/// A server's state directory.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    /// The directory `dir` (created when a file is first asked for).
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The file for `study` with `extension`, creating the directory (owner-only: it holds
    /// secrets and ciphertexts under the other server's key).
    fn file(&self, study: &[u8; 32], extension: &str) -> Result<PathBuf, Error> {
        output::private_dir(&self.dir).map_err(|e| Error::Io {
            what: "cannot create the state directory",
            path: self.dir.clone(),
            source: e,
        })?;
        let id: String = study[..8].iter().map(|b| format!("{b:02x}")).collect();
        Ok(self.dir.join(format!("study-{id}.{extension}")))
    }

    /// The aggregator's checkpoint file for `study`.
    pub fn checkpoint_file(&self, study: &[u8; 32]) -> Result<PathBuf, Error> {
        self.file(study, "checkpoint")
    }

    /// Where the aggregator keeps a finished study's result that its output could not take.
    pub fn result_file(&self, study: &[u8; 32]) -> Result<PathBuf, Error> {
        self.file(study, "result")
    }

    /// The key that seals the aggregator's checkpoints when it has no identity (plain TCP).
    pub fn seal_key_file(&self) -> Result<PathBuf, Error> {
        output::private_dir(&self.dir).map_err(|e| Error::Io {
            what: "cannot create the state directory",
            path: self.dir.clone(),
            source: e,
        })?;
        Ok(self.dir.join("aggregator-seal.key"))
    }

    /// The key holder's key file for `study`.
    pub fn key_file(&self, study: &[u8; 32]) -> Result<PathBuf, Error> {
        self.file(study, "key")
    }

    /// Other studies' files with `extension` in the directory (not `mine`), sorted: what a
    /// resume that finds nothing for its own study points at (a study file edited since the
    /// interruption is another study).
    pub fn others(&self, mine: &Path, extension: &str) -> Vec<PathBuf> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.as_path() != mine)
            .filter(|p| p.extension().is_some_and(|e| e == extension))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("study-"))
            })
            .collect();
        found.sort();
        found
    }
}

/// A note for a resume that found nothing of its own study but `others` of other studies.
pub fn other_studies_note(others: &[PathBuf], what: &str) -> Option<String> {
    (!others.is_empty()).then(|| {
        let names: Vec<String> = others.iter().map(|p| p.display().to_string()).collect();
        format!(
            "note: the state directory keeps another study's {what} ({}): a study file changed \
             since the interruption (a shared setting, a party, an address) makes another study, \
             which starts from the beginning; resume with the first run's file, or remove what is \
             no longer needed",
            names.join(", ")
        )
    })
}

/// The checkpoint at `path`, if there is one, opened with `seal` (refused if it does not
/// authenticate).
pub fn read_checkpoint(path: &Path, seal: &CheckpointSeal) -> Result<Option<Checkpoint>, Error> {
    let sealed = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::read(path, e)),
    };
    let bytes = seal.open(&sealed, path)?;
    let checkpoint = Checkpoint::key_of(&bytes)
        .and_then(|key| Checkpoint::from_bytes(&bytes, &key))
        .map_err(|source| PlanError::Checkpoint {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(Some(checkpoint))
}

/// Writes `checkpoint` to `path`, sealed with `seal`, owner-only.
pub fn write_checkpoint(
    path: &Path,
    seal: &CheckpointSeal,
    checkpoint: &Checkpoint,
) -> std::io::Result<()> {
    let key = PublicKey::from_bytes(&checkpoint.key)
        .or_else(|_| PublicKey::from_bytes_insecure_for_tests(&checkpoint.key))
        .map_err(std::io::Error::other)?;
    let plain = zeroize::Zeroizing::new(checkpoint.to_bytes(&key));
    let sealed = seal.seal(&plain).map_err(std::io::Error::other)?;
    output::write_private(path, &sealed)
}

/// Refuses to start a study over a checkpoint of it that `resume` would continue.
pub fn refuse_to_overwrite(path: &Path, seal: &CheckpointSeal) -> Result<(), Error> {
    if let Some(c) = read_checkpoint(path, seal)? {
        return Err(PlanError::CheckpointExists {
            path: path.to_path_buf(),
            iterations: c.progress.iterations(),
        }
        .into());
    }
    Ok(())
}

/// Removes a state file that is no longer needed (the study ended well).
pub fn remove(path: &Path, say: Say<'_>) {
    if let Err(e) = fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        say(&format!("warning: cannot remove {}: {e}", path.display()));
    }
}

/// The key holder's key file: the study key and what is left of its decryption budget,
/// rewritten (atomically, owner-only) whenever the budget changes.
pub struct FileKeyStore {
    path: PathBuf,
    /// Whether a kept key may be taken up (`resume`).
    resume: bool,
}

impl FileKeyStore {
    /// The store at `path`; with `resume`, a key kept there may be taken up.
    pub fn new(path: PathBuf, resume: bool) -> Self {
        Self { path, resume }
    }
}

fn store_error(path: &Path, e: impl std::fmt::Display) -> SecureError {
    SecureError::KeyStore {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

impl KeyStore for FileKeyStore {
    fn save(
        &mut self,
        session: u64,
        (secret, budget): (&SecretKey, &DecryptionBudget),
    ) -> Result<(), SecureError> {
        let bytes = encode_kept(session, secret, budget);
        output::write_private(&self.path, &bytes).map_err(|e| store_error(&self.path, e))
    }

    fn load(&mut self, session: u64) -> Result<Option<(SecretKey, DecryptionBudget)>, SecureError> {
        if !self.resume {
            return Ok(None);
        }
        let bytes = match privlogit_protocols::secret_file::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(store_error(&self.path, e)),
        };
        let (kept, secret, budget) = decode_kept(&bytes).map_err(|e| store_error(&self.path, e))?;
        Ok((kept == session).then_some((secret, budget)))
    }
}
