//! Where the two servers of a study between organizations keep what lets the study go on after
//! a lost party (`--state DIR`, `--resume`): the aggregator's checkpoint and the key holder's
//! key file, both named by the study id, both written atomically, both removed when the study
//! ends well.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::log::say;
use clap::Args;
use privlogit::output;
use privlogit::protocols::paillier::SecretKey;
use privlogit::protocols::secure::SecureError;
use privlogit::protocols::secure::checkpoint::Checkpoint;
use privlogit::protocols::secure::keyholder::{
    DecryptionBudget, KeyStore, decode_kept, encode_kept,
};

/// How a server keeps its state between restarts (shared by `keyholder` and `aggregator`).
#[derive(Debug, Args)]
pub struct StateArgs {
    /// Directory for this party's state: the aggregator's checkpoint, the key holder's key
    /// file (secret, mode 0600). Created if missing.
    #[arg(long, value_name = "DIR", default_value = "privlogit-state")]
    state: PathBuf,
    /// Continue the study from the state a lost run left (restart every party; the Nodes
    /// need nothing more than a restart).
    #[arg(long)]
    resume: bool,
}

impl StateArgs {
    /// Whether to continue from kept state.
    pub fn resume(&self) -> bool {
        self.resume
    }

    /// The file for `study` with `extension`, creating the directory.
    fn file(&self, study: &[u8; 32], extension: &str) -> Result<PathBuf> {
        fs::create_dir_all(&self.state).with_context(|| {
            format!("cannot create the state directory {}", self.state.display())
        })?;
        let id: String = study[..8].iter().map(|b| format!("{b:02x}")).collect();
        Ok(self.state.join(format!("study-{id}.{extension}")))
    }

    /// The aggregator's checkpoint file for `study`.
    pub fn checkpoint_file(&self, study: &[u8; 32]) -> Result<PathBuf> {
        self.file(study, "checkpoint")
    }

    /// The key holder's key file for `study`.
    pub fn key_file(&self, study: &[u8; 32]) -> Result<PathBuf> {
        self.file(study, "key")
    }
}

/// The checkpoint at `path`, if there is one.
pub fn read_checkpoint(path: &Path) -> Result<Option<Checkpoint>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let key = Checkpoint::key_of(&bytes).with_context(|| format!("{}", path.display()))?;
    let checkpoint =
        Checkpoint::from_bytes(&bytes, &key).with_context(|| format!("{}", path.display()))?;
    Ok(Some(checkpoint))
}

/// Refuses to start a study over a checkpoint of it that `--resume` would continue.
pub fn refuse_to_overwrite(path: &Path) -> Result<()> {
    if let Some(c) = read_checkpoint(path)? {
        bail!(
            "a checkpoint of this study exists ({}, after iteration {}): pass --resume to continue \
             it (restarting every party), or remove the file to start the study over",
            path.display(),
            c.progress.iterations()
        );
    }
    Ok(())
}

/// Removes a state file that is no longer needed (the study ended well).
pub fn remove(path: &Path) {
    if let Err(e) = fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        say!("warning: cannot remove {}: {e}", path.display());
    }
}

/// The key holder's key file: the study key and what is left of its decryption budget,
/// rewritten (atomically, owner-only) whenever the budget changes.
pub struct FileKeyStore {
    path: PathBuf,
    /// Whether a kept key may be taken up (`--resume`).
    resume: bool,
}

impl FileKeyStore {
    /// The store at `path`; with `resume`, a key kept there may be taken up.
    pub fn new(path: PathBuf, resume: bool) -> Self {
        Self { path, resume }
    }
}

fn store_error(path: &Path, e: impl std::fmt::Display) -> SecureError {
    SecureError::Protocol(format!("the key file {}: {e}", path.display()))
}

impl KeyStore for FileKeyStore {
    fn save(
        &mut self,
        session: u64,
        secret: &SecretKey,
        budget: &DecryptionBudget,
    ) -> Result<(), SecureError> {
        let bytes = encode_kept(session, secret, budget);
        output::write_private(&self.path, &bytes).map_err(|e| store_error(&self.path, e))
    }

    fn load(&mut self, session: u64) -> Result<Option<(SecretKey, DecryptionBudget)>, SecureError> {
        if !self.resume {
            return Ok(None);
        }
        let bytes = match privlogit::protocols::secret_file::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(SecureError::Protocol(e.to_string())),
        };
        let (kept, secret, budget) = decode_kept(&bytes).map_err(|e| store_error(&self.path, e))?;
        Ok((kept == session).then_some((secret, budget)))
    }
}
