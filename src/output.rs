//! Writing result files so that a failure never leaves a half-written file behind, and never
//! replaces what is not a regular file.
//!
//! What is at the path decides how it is written ([`Target`]): a new path or a regular file is
//! written to a temporary sibling and renamed into place; a symbolic link is followed (the link
//! stays, its target is replaced the same way); a character device, FIFO or socket is written
//! through (`--out /dev/stdout` prints, `--out /dev/null` discards, and the device is still a
//! device afterwards); a directory is refused. [`check_writable`] asks the same question before
//! a long job starts, so an output that can never be written is refused before any work.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// How many symbolic links one output path may pass through (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Where the bytes of an output path go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A new file or a regular file at this path (links followed): written to a temporary
    /// sibling and renamed over it.
    File(PathBuf),
    /// A character device, FIFO or socket: opened and written in place, never replaced.
    Stream(PathBuf),
}

impl Target {
    /// What `path` names: links are followed (a dangling link names the file it points at),
    /// a directory is an error.
    pub fn of(path: &Path) -> io::Result<Self> {
        // What the kernel finds at the end of the links first: `/dev/stdout` on a pipe is a
        // link to `/proc/self/fd/1`, whose own "target" (`pipe:[N]`) is no path to follow.
        if let Ok(meta) = fs::metadata(path) {
            let kind = meta.file_type();
            if !kind.is_file() && !kind.is_dir() {
                return Ok(Target::Stream(path.to_path_buf()));
            }
        }
        let mut path = path.to_path_buf();
        for _ in 0..MAX_LINKS {
            let meta = match fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Target::File(path)),
                Err(e) => return Err(e),
            };
            let kind = meta.file_type();
            if kind.is_symlink() {
                let points_at = fs::read_link(&path)?;
                path = match path.parent() {
                    Some(parent) if points_at.is_relative() => parent.join(points_at),
                    _ => points_at,
                };
            } else if kind.is_file() {
                return Ok(Target::File(path));
            } else if kind.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    format!("{} is a directory", path.display()),
                ));
            } else {
                return Ok(Target::Stream(path));
            }
        }
        Err(io::Error::other(format!(
            "{} passes through more than {MAX_LINKS} symbolic links",
            path.display()
        )))
    }
}

/// Checks, before a long job starts, that `path` can be written when the job ends: a file's
/// directory exists and takes a new file (a probe written, synced and removed, so a read-only
/// directory or a full disk is found now), a device opens for writing. A FIFO is not opened:
/// that would wait for its reader.
pub fn check_writable(path: &Path) -> io::Result<()> {
    match Target::of(path)? {
        Target::File(file) => {
            let probe = temporary_sibling(&file);
            let result = (|| {
                let mut out = create(&probe, true)?;
                out.write_all(&[0; 4096])?;
                out.sync_all()
            })();
            let _ = fs::remove_file(&probe);
            result
        }
        Target::Stream(stream) => {
            if is_fifo(&stream)? {
                Ok(())
            } else {
                fs::OpenOptions::new().write(true).open(&stream).map(drop)
            }
        }
    }
}

#[cfg(unix)]
fn is_fifo(path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::FileTypeExt as _;
    Ok(fs::metadata(path)?.file_type().is_fifo())
}

#[cfg(not(unix))]
fn is_fifo(_: &Path) -> io::Result<bool> {
    Ok(false)
}

/// Writes `path` through a temporary file, moved into place (or copied into a device) only
/// after `write` succeeded and the data reached the disk. On any error the temporary file is
/// removed and `path` is untouched.
pub fn write_atomically<F>(path: &Path, write: F) -> io::Result<()>
where
    F: FnOnce(&mut BufWriter<File>) -> io::Result<()>,
{
    Staged::write(path, write)?.commit()
}

/// A file written in full to a temporary file and not yet moved into place. Several can be
/// staged and then committed together, so a command that writes two files leaves neither when
/// either fails. Dropping an uncommitted one removes its temporary file.
#[derive(Debug)]
pub struct Staged {
    temp: PathBuf,
    target: Target,
    committed: bool,
}

impl Staged {
    /// Writes the future contents of `path` to a temporary file and syncs them to disk.
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
        let target = Target::of(path)?;
        // A device's temporary copy lives in the system's temporary directory (never in /dev),
        // owner-only whatever it holds.
        let (temp, private) = match &target {
            Target::File(file) => (temporary_sibling(file), private),
            Target::Stream(stream) => (std::env::temp_dir().join(temporary_name(stream)), true),
        };
        let staged = Staged {
            temp,
            target,
            committed: false,
        };
        let mut out = BufWriter::with_capacity(1 << 20, create(&staged.temp, private)?);
        write(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(staged)
    }

    /// Moves the file into place, or copies it into the device, FIFO or socket.
    pub fn commit(mut self) -> io::Result<()> {
        match &self.target {
            Target::File(file) => fs::rename(&self.temp, file)?,
            Target::Stream(stream) => {
                let mut from = File::open(&self.temp)?;
                let mut to = fs::OpenOptions::new().write(true).open(stream)?;
                io::copy(&mut from, &mut to)?;
                to.flush()?;
                let _ = fs::remove_file(&self.temp);
            }
        }
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
/// seen half-written. A secret is only ever a regular file.
pub fn create_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let staged = Staged::write_private(path, |out| out.write_all(bytes))?;
    match &staged.target {
        Target::File(file) => fs::hard_link(&staged.temp, file)?,
        Target::Stream(stream) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a regular file", stream.display()),
            ));
        }
    }
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

/// Creates `dir` (and its parents) for state only its owner may read: mode 0700 on Unix, and
/// an existing directory's mode narrowed to it.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// A temporary name beside `path`, unique to this process and call (a server running several
/// studies may write two files at once).
fn temporary_sibling(path: &Path) -> PathBuf {
    path.with_file_name(temporary_name(path))
}

fn temporary_name(path: &Path) -> String {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    format!(".{name}.partial-{}-{call}", std::process::id())
}

/// Writes `text` to `path` atomically.
pub fn write_text(path: &Path, text: &str) -> io::Result<()> {
    write_atomically(path, |out| out.write_all(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("privlogit-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn failure_leaves_nothing() {
        let dir = scratch("atomic");
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

    #[cfg(unix)]
    #[test]
    fn a_device_is_written_through_and_stays_a_device() {
        use std::os::unix::fs::FileTypeExt as _;
        let null = Path::new("/dev/null");
        assert_eq!(Target::of(null).expect("null"), Target::Stream(null.into()));
        check_writable(null).expect("null takes writes");
        write_text(null, "discarded").expect("written through");
        assert!(
            fs::metadata(null)
                .expect("null")
                .file_type()
                .is_char_device()
        );
        // /dev/full takes the open and refuses the bytes: the error reaches the caller.
        let full = Path::new("/dev/full");
        if full.exists() {
            assert!(write_text(full, "no room").is_err());
            assert!(
                fs::metadata(full)
                    .expect("full")
                    .file_type()
                    .is_char_device()
            );
        }
    }

    /// `--out /dev/stdout` with standard output on a pipe: `/proc/self/fd/N` of a pipe is a
    /// link whose target (`pipe:[N]`) names no file; the bytes go into the pipe.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_pipe_behind_a_proc_link_is_written_through() {
        use std::io::Read as _;
        use std::os::fd::AsRawFd as _;
        let (mut reader, writer) = io::pipe().expect("pipe");
        let path = PathBuf::from(format!("/proc/self/fd/{}", writer.as_raw_fd()));
        assert_eq!(
            Target::of(&path).expect("pipe"),
            Target::Stream(path.clone())
        );
        check_writable(&path).expect("a pipe takes writes");
        write_text(&path, "through the pipe").expect("written through");
        drop(writer);
        let mut got = String::new();
        reader.read_to_string(&mut got).expect("read");
        assert_eq!(got, "through the pipe");
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_followed_and_kept() {
        let dir = scratch("link");
        let real = dir.join("real.json");
        let link = dir.join("link.json");
        fs::write(&real, "old").expect("real");
        std::os::unix::fs::symlink("real.json", &link).expect("link");
        write_text(&link, "new").expect("through the link");
        assert!(
            fs::symlink_metadata(&link)
                .expect("link")
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&real).expect("real"), "new");
        // A dangling link names the file it points at, which is made.
        fs::remove_file(&real).expect("remove");
        write_text(&link, "made").expect("dangling link");
        assert_eq!(fs::read_to_string(&real).expect("real"), "made");
        // A link to a directory is refused, not replaced.
        let sub = dir.join("sub");
        fs::create_dir(&sub).expect("sub");
        let to_dir = dir.join("to_dir");
        std::os::unix::fs::symlink(&sub, &to_dir).expect("link");
        assert_eq!(
            write_text(&to_dir, "x").expect_err("directory").kind(),
            io::ErrorKind::IsADirectory
        );
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[cfg(unix)]
    #[test]
    fn a_read_only_directory_is_found_before_the_work() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = scratch("readonly");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o500)).expect("chmod");
        // Root writes through a mode of 0500: then /sys, which the kernel keeps read-only.
        let root = fs::write(dir.join("probe-as-root"), "").is_ok();
        let read_only = if root {
            PathBuf::from("/sys")
        } else {
            dir.clone()
        };
        let before = fs::read_dir(&read_only).expect("readable").count();
        assert!(check_writable(&read_only.join("model.json")).is_err());
        assert_eq!(fs::read_dir(&read_only).expect("readable").count(), before);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).expect("chmod");
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn a_missing_directory_is_found_before_the_work() {
        let dir = scratch("missing");
        let err = check_writable(&dir.join("no/such/dir/model.json")).expect_err("missing");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[cfg(unix)]
    #[test]
    fn state_directories_are_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = scratch("private-dir").join("state");
        private_dir(&dir).expect("made");
        let mode = fs::metadata(&dir).expect("dir").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        write_private(&dir.join("secret"), b"s").expect("secret");
        let mode = fs::metadata(dir.join("secret"))
            .expect("secret")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        fs::remove_dir_all(dir.parent().expect("parent")).expect("cleanup");
    }
}
