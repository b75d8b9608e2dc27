//! `#import` composition of the WGSL kernels, shared by `build.rs` and `tests/shaders.rs`
//! (both include this file with `#[path]`; it needs nothing but `std`).
//!
//! A kernel `shaders/NAME.wgsl` may hold lines of the form `#import piece`; each is replaced
//! by the text of `shaders/shared/piece.wgsl`, whose own imports are expanded the same way.
//! A piece is pulled in once per kernel (a later import of it expands to nothing, so pieces
//! can import what they need without clashing), and a piece that imports itself, directly or
//! through others, is an error. WGSL declarations are order-independent at module scope, so
//! where a piece lands does not matter.
//!
//! The composed text keeps a map from each of its lines to the file and line it came from,
//! so an error that naga reports in the composed module can point at the original source.

#![allow(dead_code)] // each includer uses its own part of the API

use std::fmt;
use std::path::{Path, PathBuf};

/// The directive, at the start of a line (after optional spaces).
const IMPORT: &str = "#import";

/// Where one line of a composed module came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file, as given to [`compose`] or found in `shared/`.
    pub file: PathBuf,
    /// 1-based line number in that file.
    pub line: usize,
}

/// A kernel with its imports expanded.
#[derive(Debug, Clone)]
pub struct Composed {
    /// The WGSL text to validate and compile.
    pub source: String,
    /// `lines[i]` is the origin of line `i + 1` of `source`.
    pub lines: Vec<Origin>,
    /// Every file read, the kernel first (for `cargo:rerun-if-changed`).
    pub files: Vec<PathBuf>,
}

impl Composed {
    /// The origin of 1-based line `line` of the composed source.
    pub fn origin(&self, line: usize) -> Option<&Origin> {
        line.checked_sub(1).and_then(|i| self.lines.get(i))
    }

    /// `file:line:column` in the original files for a byte offset of the composed source.
    pub fn locate(&self, offset: usize) -> String {
        let offset = offset.min(self.source.len());
        let prefix = &self.source[..offset];
        let line = prefix.matches('\n').count() + 1;
        let column = offset - prefix.rfind('\n').map_or(0, |p| p + 1) + 1;
        match self.origin(line) {
            Some(o) => format!("{}:{}:{column}", o.file.display(), o.line),
            None => format!("<composed>:{line}:{column}"),
        }
    }
}

/// Why a kernel could not be composed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComposeError {
    /// A file could not be read.
    Read {
        /// The file.
        file: PathBuf,
        /// The I/O error, as text.
        reason: String,
        /// The `#import` line that asked for it, if any.
        imported_at: Option<Origin>,
    },
    /// An `#import` line that does not name one piece (`[a-z0-9_]+`).
    BadDirective {
        /// The line.
        at: Origin,
        /// Its text.
        text: String,
    },
    /// A piece that imports itself, directly or through others.
    Cycle {
        /// The pieces on the way, the repeated one last.
        chain: Vec<String>,
        /// The `#import` line that closes the cycle.
        at: Origin,
    },
}

impl fmt::Display for ComposeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |o: &Origin| format!("{}:{}", o.file.display(), o.line);
        match self {
            ComposeError::Read {
                file,
                reason,
                imported_at,
            } => {
                write!(f, "cannot read {}: {reason}", file.display())?;
                if let Some(o) = imported_at {
                    write!(f, " (imported at {})", at(o))?;
                }
                Ok(())
            }
            ComposeError::BadDirective { at: o, text } => write!(
                f,
                "{}: `{text}` is not `#import name` with name in [a-z0-9_]",
                at(o)
            ),
            ComposeError::Cycle { chain, at: o } => {
                write!(f, "{}: import cycle {}", at(o), chain.join(" -> "))
            }
        }
    }
}

impl std::error::Error for ComposeError {}

/// The piece named by an `#import` line, `Ok(None)` for any other line.
fn import_of(text: &str, at: &Origin) -> Result<Option<String>, ComposeError> {
    let Some(rest) = text.trim_start().strip_prefix(IMPORT) else {
        return Ok(None);
    };
    let name = rest.trim();
    let valid = !name.is_empty()
        && rest.starts_with(char::is_whitespace)
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !valid {
        return Err(ComposeError::BadDirective {
            at: at.clone(),
            text: text.trim().to_string(),
        });
    }
    Ok(Some(name.to_string()))
}

/// The file of piece `name`.
pub fn piece_path(shader_dir: &Path, name: &str) -> PathBuf {
    shader_dir.join("shared").join(format!("{name}.wgsl"))
}

struct Composer<'a> {
    shader_dir: &'a Path,
    out: Composed,
    /// Pieces already expanded in this kernel.
    done: Vec<String>,
    /// Pieces being expanded, outermost first.
    stack: Vec<String>,
}

impl Composer<'_> {
    fn read(&mut self, file: &Path, imported_at: Option<&Origin>) -> Result<String, ComposeError> {
        let text = std::fs::read_to_string(file).map_err(|e| ComposeError::Read {
            file: file.to_path_buf(),
            reason: e.to_string(),
            imported_at: imported_at.cloned(),
        })?;
        self.out.files.push(file.to_path_buf());
        Ok(text)
    }

    fn expand(&mut self, file: &Path, text: &str) -> Result<(), ComposeError> {
        for (i, line) in text.lines().enumerate() {
            let at = Origin {
                file: file.to_path_buf(),
                line: i + 1,
            };
            match import_of(line, &at)? {
                None => self.push(line, at),
                Some(name) => {
                    if self.stack.contains(&name) {
                        let mut chain = self.stack.clone();
                        chain.push(name);
                        return Err(ComposeError::Cycle { chain, at });
                    }
                    if self.done.contains(&name) {
                        self.push(&format!("// {} (already imported)", line.trim()), at);
                        continue;
                    }
                    let path = piece_path(self.shader_dir, &name);
                    let piece = self.read(&path, Some(&at))?;
                    let shown = format!("// {} (shared/{name}.wgsl)", line.trim());
                    self.push(&shown, at);
                    self.stack.push(name.clone());
                    self.expand(&path, &piece)?;
                    self.stack.pop();
                    self.done.push(name);
                }
            }
        }
        Ok(())
    }

    fn push(&mut self, line: &str, at: Origin) {
        self.out.source.push_str(line);
        self.out.source.push('\n');
        self.out.lines.push(at);
    }
}

/// Composes `file` (a kernel in `shader_dir`, or a piece in `shader_dir/shared`) with its
/// imports expanded from `shader_dir/shared/`.
pub fn compose(shader_dir: &Path, file: &Path) -> Result<Composed, ComposeError> {
    let mut c = Composer {
        shader_dir,
        out: Composed {
            source: String::new(),
            lines: Vec::new(),
            files: Vec::new(),
        },
        done: Vec::new(),
        stack: Vec::new(),
    };
    // A piece composed on its own counts as being expanded, so importing itself is a cycle.
    let own_piece = file
        .parent()
        .is_some_and(|p| p == shader_dir.join("shared"))
        .then(|| file.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .flatten();
    c.stack.extend(own_piece);
    let text = c.read(file, None)?;
    c.expand(file, &text)?;
    Ok(c.out)
}

/// The `.wgsl` files directly in `dir`, sorted by name (the kernels when `dir` is `shaders/`,
/// the pieces when it is `shaders/shared/`).
pub fn wgsl_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "wgsl") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}
