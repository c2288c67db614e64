//! Reading secret files (a party's private key, the key holder's study key, a privacy
//! ledger's MAC key): as ssh does with its keys, a file that anyone but its owner may read or
//! write is refused, with the command that fixes it. privlogit writes its secrets with mode
//! 0600, so a wider mode means someone copied or changed the file carelessly.

use std::fs::File;
use std::io::{self, Read as _};
use std::path::Path;

use zeroize::Zeroizing;

/// The contents of the secret file `path`, wiped when dropped; refused when its mode lets
/// the group or others in.
pub fn read(path: &Path) -> io::Result<Zeroizing<Vec<u8>>> {
    let mut file = File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display())))?;
    check_private(&file, path)?;
    let mut bytes = Zeroizing::new(Vec::new());
    file.read_to_end(&mut bytes)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display())))?;
    Ok(bytes)
}

/// Refuses an open secret file whose mode gives the group or others any access (Unix; the
/// mode is read from the open file, so it is the file that will be read).
pub fn check_private(file: &File, path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = file.metadata()?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{p} holds a secret but others may read or change it (mode {mode:04o}); \
                     refused: run `chmod 600 {p}`",
                    p = path.display()
                ),
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = (file, path);
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    /// Mode 0600 reads; 0644 and 0660 are refused with the file's name and `chmod 600`.
    #[test]
    fn wide_modes_are_refused() {
        let dir = std::env::temp_dir().join(format!("privlogit-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("key.pem");
        std::fs::write(&path, b"secret").expect("write");
        for (mode, ok) in [(0o600, true), (0o400, true), (0o644, false), (0o660, false)] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
            match read(&path) {
                Ok(b) => assert!(ok && b.as_slice() == b"secret", "mode {mode:o}"),
                Err(e) => {
                    assert!(!ok, "mode {mode:o}: {e}");
                    let text = e.to_string();
                    assert!(text.contains(&path.display().to_string()), "{text}");
                    assert!(text.contains("chmod 600"), "{text}");
                }
            }
        }
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
