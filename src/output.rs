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
    let temp = temporary_sibling(path);
    let result = (|| {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&temp)?);
        write(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

fn temporary_sibling(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.partial-{}", std::process::id()))
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
