//! Writing result files so that a failure never leaves a half-written file behind.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Writes `path` through a temporary file in the same directory, renamed into place only after
/// `write` succeeded and the data reached the disk. On any error the temporary file is removed
/// and `path` is untouched.
pub fn write_atomically<F>(path: &Path, write: F) -> io::Result<()>
where
    F: FnOnce(&mut BufWriter<File>) -> io::Result<()>,
{
    Staged::write(path, write)?.commit()
}

/// A file written in full to a temporary sibling and not yet moved into place. Several can be
/// staged and then committed together, so a command that writes two files leaves neither when
/// either fails. Dropping an uncommitted one removes its temporary file.
#[derive(Debug)]
pub struct Staged {
    temp: PathBuf,
    path: PathBuf,
    committed: bool,
    private: bool,
}

impl Staged {
    /// Writes the future contents of `path` to a temporary sibling and syncs them to disk.
    pub fn write<F>(path: &Path, write: F) -> io::Result<Self>
    where
        F: FnOnce(&mut BufWriter<File>) -> io::Result<()>,
    {
        Self::write_with(path, false, write)
    }

    /// [`Self::write`] for a secret: the file is readable by its owner only (mode 0600) from
    /// the moment it is created.
    pub fn write_private<F>(path: &Path, write: F) -> io::Result<Self>
    where
        F: FnOnce(&mut BufWriter<File>) -> io::Result<()>,
    {
        Self::write_with(path, true, write)
    }

    fn write_with<F>(path: &Path, private: bool, write: F) -> io::Result<Self>
    where
        F: FnOnce(&mut BufWriter<File>) -> io::Result<()>,
    {
        let staged = Staged {
            temp: temporary_sibling(path),
            path: path.to_path_buf(),
            committed: false,
            private,
        };
        let mut out = BufWriter::with_capacity(1 << 20, create(&staged.temp, staged.private)?);
        write(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(staged)
    }

    /// Moves the file into place.
    pub fn commit(mut self) -> io::Result<()> {
        fs::rename(&self.temp, &self.path)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// A new file, owner-only when `private` (on Unix).
fn create(path: &Path, private: bool) -> io::Result<File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    options.open(path)
}

/// Creates `path` with the secret `bytes`, readable by its owner only, failing with
/// `AlreadyExists` if it exists (two processes racing to make one key: one wins, the other
/// reads it). Written to a temporary sibling and linked into place, so the file is never
/// seen half-written.
pub fn create_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let staged = Staged::write_private(path, |out| out.write_all(bytes))?;
    fs::hard_link(&staged.temp, &staged.path)?;
    drop(staged); // removes the temporary name
    Ok(())
}

/// Writes the secret `bytes` to `path` atomically, readable by its owner only.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    Staged::write_private(path, |out| out.write_all(bytes))?.commit()
}

/// Writes `bytes` to `path` atomically.
pub fn write_bytes(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomically(path, |out| out.write_all(bytes))
}

/// A temporary name beside `path`, unique to this process and call (a server running several
/// studies may write two files at once).
fn temporary_sibling(path: &Path) -> PathBuf {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.partial-{}-{call}", std::process::id()))
}

/// Writes `text` to `path` atomically.
pub fn write_text(path: &Path, text: &str) -> io::Result<()> {
    write_atomically(path, |out| out.write_all(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("privlogit-atomic-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("temp dir");
        let target = dir.join("out.txt");
        let err = write_atomically(&target, |out| {
            out.write_all(b"half")?;
            Err(io::Error::other("boom"))
        });
        assert!(err.is_err());
        assert!(!target.exists());
        assert_eq!(fs::read_dir(&dir).expect("readable").count(), 0);
        write_text(&target, "whole").expect("writable");
        assert_eq!(fs::read_to_string(&target).expect("readable"), "whole");
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}
