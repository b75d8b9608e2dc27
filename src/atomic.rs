//! Atomic output files, alone or as a set.
//!
//! Every file is first written to a temporary file in its target's directory, flushed and
//! synced; only then is it renamed over the target. A reader therefore sees either the old
//! file or the complete new one, never a half-written one, and a failed write leaves the old
//! file as it was. [`OutputSet`] does this for several files at once: all are staged first,
//! and the renames happen only in [`OutputSet::commit`], so a command that fails before it
//! (or is dropped) leaves no new file and changes no existing one. Used by [`crate::io`], the
//! model files and [`crate::plot`].

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The directory a file named `path` goes into.
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The OS error of `e` without the temporary path the `tempfile` crate adds to its errors
/// ("... at path \"dir/.tmpXYZ\""), so that messages name the user's file and directory
/// only.
fn plain(e: io::Error) -> io::Error {
    if let Some(code) = e.raw_os_error() {
        return io::Error::from_raw_os_error(code);
    }
    let text = e.to_string();
    match text.rfind(" at path \"") {
        Some(cut) => io::Error::new(e.kind(), text[..cut].to_string()),
        None => e,
    }
}

/// One file written to its temporary name, waiting to be renamed over its target.
struct Staged {
    /// The target.
    path: PathBuf,
    /// The complete, synced temporary file beside it.
    tmp: tempfile::NamedTempFile,
}

/// Writes through a temporary file in the target's directory; the rename is left to the
/// caller.
fn stage(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&mut File>) -> io::Result<()>,
) -> Result<Staged> {
    let err = |e| Error::io(path, e);
    let dir = directory_of(path);
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| {
        let e = plain(e);
        err(io::Error::new(
            e.kind(),
            format!("cannot create a file in directory {}: {e}", dir.display()),
        ))
    })?;
    {
        let mut w = BufWriter::new(tmp.as_file_mut());
        write(&mut w).map_err(|e| err(plain(e)))?;
        w.flush().map_err(|e| err(plain(e)))?;
    }
    // Temp files are created owner-only; keep the old file's mode, or use the usual 0644,
    // so the result is not less readable than a plainly created file.
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => tmp
            .as_file()
            .set_permissions(m.permissions())
            .map_err(|e| err(plain(e)))?,
        _ => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                tmp.as_file()
                    .set_permissions(std::fs::Permissions::from_mode(0o644))
                    .map_err(|e| err(plain(e)))?;
            }
        }
    }
    // Synced before the rename, so a crash cannot leave a renamed but empty file.
    tmp.as_file().sync_all().map_err(|e| err(plain(e)))?;
    Ok(Staged {
        path: path.to_path_buf(),
        tmp,
    })
}

/// Writes through a temporary file in the target's directory, then renames it over `path`.
pub(crate) fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&mut File>) -> io::Result<()>,
) -> Result<()> {
    let mut set = OutputSet::new();
    set.add(path, write)?;
    set.commit()
}

/// Writes `text` to `path`, atomically.
///
/// Errors: [`Error::Io`] with `path` when writing fails; the old file is then untouched.
pub(crate) fn write_text(path: &Path, text: &str) -> Result<()> {
    write_atomic(path, |w| w.write_all(text.as_bytes()))
}

/// Output files written as one set: each is written in full to a temporary file beside its
/// target as it is added, and [`OutputSet::commit`] renames them all over their targets at
/// the end. Until then no target is touched, and dropping the set (because a later step of
/// the work failed) deletes the temporary files: nothing new is left behind and no existing
/// file changes.
///
/// If a rename fails during the commit, the targets already renamed are put back as they
/// were (an old file is kept as a hard link until the commit is over; a new one is removed),
/// so a failed commit changes nothing either. On a file system without hard links an
/// overwritten file cannot be put back; the commit then still renames in order and reports
/// the first failure.
///
/// ```no_run
/// use wgpu_unsupervised::io::OutputSet;
///
/// let mut outputs = OutputSet::new();
/// outputs.labels("labels.npy".as_ref(), &[0, 1, 1])?;  // written to a temporary file
/// outputs.text("report.txt".as_ref(), "3 rows\n")?;    // another one
/// outputs.commit()?;                                  // both renamed into place
/// # Ok::<(), wgpu_unsupervised::Error>(())
/// ```
#[derive(Default)]
pub struct OutputSet {
    staged: Vec<Staged>,
}

impl std::fmt::Debug for OutputSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let targets: Vec<&Path> = self.staged.iter().map(|s| s.path.as_path()).collect();
        f.debug_struct("OutputSet")
            .field("targets", &targets)
            .finish()
    }
}

/// A target renamed during a commit, and how to undo it.
struct Renamed {
    path: PathBuf,
    /// The old file, kept under a temporary name (a hard link); `None` when there was none.
    backup: Option<tempfile::TempPath>,
}

impl OutputSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The targets staged so far, in order.
    pub fn targets(&self) -> impl Iterator<Item = &Path> {
        self.staged.iter().map(|s| s.path.as_path())
    }

    /// Stages a file whose bytes `write` produces.
    ///
    /// Errors: [`Error::Io`] naming `path` when the temporary file cannot be created or
    /// written (the set is then as it was).
    pub(crate) fn add(
        &mut self,
        path: &Path,
        write: impl FnOnce(&mut BufWriter<&mut File>) -> io::Result<()>,
    ) -> Result<()> {
        let staged = stage(path, write)?;
        self.staged.push(staged);
        Ok(())
    }

    /// Stages `text` for `path`.
    ///
    /// Errors: [`Error::Io`] naming `path` when it cannot be staged.
    pub fn text(&mut self, path: &Path, text: &str) -> Result<()> {
        self.add(path, |w| w.write_all(text.as_bytes()))
    }

    /// Renames every staged file over its target, in the order they were added.
    ///
    /// Errors: [`Error::Io`] naming the target whose rename failed; the targets renamed
    /// before it are then restored (see the type's docs).
    pub fn commit(self) -> Result<()> {
        let mut done: Vec<Renamed> = Vec::with_capacity(self.staged.len());
        for Staged { path, tmp } in self.staged {
            let backup = match std::fs::symlink_metadata(&path) {
                Ok(m) if !m.is_dir() => tempfile::Builder::new()
                    .prefix(".wgpu-unsupervised-old")
                    .make_in(directory_of(&path), |link| std::fs::hard_link(&path, link))
                    .ok()
                    .map(tempfile::NamedTempFile::into_temp_path),
                _ => None,
            };
            if let Err(e) = tmp.persist(&path) {
                restore(done);
                return Err(Error::io(&path, plain(e.error)));
            }
            done.push(Renamed { path, backup });
        }
        // The backups are deleted as they drop.
        Ok(())
    }
}

/// Puts the targets of a failed commit back as they were, last first.
fn restore(done: Vec<Renamed>) {
    for Renamed { path, backup } in done.into_iter().rev() {
        let _ = match backup {
            Some(old) => old.persist(&path).map_err(|e| e.error),
            None => std::fs::remove_file(&path),
        };
    }
}
