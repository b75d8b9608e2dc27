//! Atomic output files: every write goes to a temporary file in the target's directory,
//! which is flushed, synced and then renamed over the target. A reader therefore sees either
//! the old file or the complete new one, never a half-written one, and a failed write leaves
//! the old file as it was. Used by [`crate::io`], the model files and [`crate::plot`].

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::error::{Error, Result};

/// Writes through a temporary file in the target's directory, then renames it over `path`.
pub(crate) fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&mut File>) -> io::Result<()>,
) -> Result<()> {
    let err = |e| Error::io(path, e);
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
    {
        let mut w = BufWriter::new(tmp.as_file_mut());
        write(&mut w).map_err(err)?;
        w.flush().map_err(err)?;
    }
    // Temp files are created owner-only; keep the old file's mode, or use the usual 0644,
    // so the result is not less readable than a plainly created file.
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => tmp
            .as_file()
            .set_permissions(m.permissions())
            .map_err(err)?,
        _ => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                tmp.as_file()
                    .set_permissions(std::fs::Permissions::from_mode(0o644))
                    .map_err(err)?;
            }
        }
    }
    // Synced before the rename, so a crash cannot leave a renamed but empty file.
    tmp.as_file().sync_all().map_err(err)?;
    // On failure the temp file is dropped, which deletes it.
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

/// Writes `text` to `path`, atomically.
///
/// Errors: [`Error::Io`] with `path` when writing fails; the old file is then untouched.
pub(crate) fn write_text(path: &Path, text: &str) -> Result<()> {
    write_atomic(path, |w| w.write_all(text.as_bytes()))
}
