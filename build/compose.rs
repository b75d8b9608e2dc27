//! `#import` composition of the WGSL kernels, shared by `build.rs` and `tests/shaders.rs`
//! (both include this file with `#[path]`; it needs nothing but `std`).
//!
//! Kernels are `shaders/NAME.wgsl` (a family of one file) and `shaders/FAMILY/NAME.wgsl` (a
//! kernel family's folder); pieces are `shaders/shared/NAME.wgsl` (primitives any kernel may
//! use) and `shaders/FAMILY/shared/NAME.wgsl` (code the kernels of one family share). A file
//! may hold lines of the form `#import piece` or `#import family/piece`; each is replaced by
//! the text of `shaders/shared/piece.wgsl` or `shaders/family/shared/piece.wgsl`, whose own
//! imports are expanded the same way.
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
    /// An `#import` line that does not name one piece (`name` or `family/name`, each
    /// `[a-z0-9_]+`).
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
                "{}: `{text}` is not `#import name` or `#import family/name` (each [a-z0-9_]+)",
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
    let snake = |part: &str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    let valid = rest.starts_with(char::is_whitespace)
        && match name.split_once('/') {
            Some((family, piece)) => snake(family) && snake(piece) && family != "shared",
            None => snake(name),
        };
    if !valid {
        return Err(ComposeError::BadDirective {
            at: at.clone(),
            text: text.trim().to_string(),
        });
    }
    Ok(Some(name.to_string()))
}

/// The file of piece `name`: `shared/NAME.wgsl`, or `FAMILY/shared/NAME.wgsl` for
/// `family/name`.
pub fn piece_path(shader_dir: &Path, name: &str) -> PathBuf {
    shader_dir.join(piece_relative(name))
}

/// [`piece_path`] relative to `shaders/`.
fn piece_relative(name: &str) -> PathBuf {
    match name.split_once('/') {
        Some((family, piece)) => Path::new(family)
            .join("shared")
            .join(format!("{piece}.wgsl")),
        None => Path::new("shared").join(format!("{name}.wgsl")),
    }
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
                    let shown = format!("// {} ({})", line.trim(), piece_relative(&name).display());
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

/// Composes `file` (a kernel or a piece under `shader_dir`) with its imports expanded.
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
    c.stack.extend(piece_name(shader_dir, file));
    let text = c.read(file, None)?;
    c.expand(file, &text)?;
    Ok(c.out)
}

/// The piece name a file has when it is a piece (`name` for `shared/name.wgsl`,
/// `family/name` for `family/shared/name.wgsl`), else `None`.
pub fn piece_name(shader_dir: &Path, file: &Path) -> Option<String> {
    let stem = file.file_stem()?.to_str()?.to_string();
    let dir = file.parent()?;
    if dir == shader_dir.join("shared") {
        return Some(stem);
    }
    let family_dir = dir.parent()?;
    let family = family_dir.file_name()?.to_str()?;
    (dir.file_name()? == "shared" && family_dir.parent()? == shader_dir)
        .then(|| format!("{family}/{stem}"))
}

/// One kernel or piece file of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShaderFile {
    /// The file.
    pub path: PathBuf,
    /// Its family's folder name; `None` for a kernel directly in `shaders/` or a piece of
    /// `shaders/shared/`.
    pub family: Option<String>,
    /// The file name without `.wgsl`.
    pub stem: String,
}

impl ShaderFile {
    /// `family_stem`, or `stem` outside a family: unique in the tree, a Rust identifier.
    pub fn ident(&self) -> String {
        match &self.family {
            Some(f) => format!("{f}_{}", self.stem),
            None => self.stem.clone(),
        }
    }

    /// The path relative to `shaders/` (`assign/tiled.wgsl`).
    pub fn relative(&self) -> String {
        match &self.family {
            Some(f) => format!("{f}/{}.wgsl", self.stem),
            None => format!("{}.wgsl", self.stem),
        }
    }
}

/// The family folders of `shaders/` (every folder but `shared`), sorted.
fn families(shader_dir: &Path) -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(shader_dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() && name != "shared" {
            out.push(name.to_string());
        }
    }
    out.sort();
    Ok(out)
}

/// The files of `dir` as members of `family`.
fn members(dir: &Path, family: Option<&str>) -> std::io::Result<Vec<ShaderFile>> {
    Ok(wgsl_files(dir)?
        .into_iter()
        .map(|path| ShaderFile {
            stem: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            family: family.map(str::to_string),
            path,
        })
        .collect())
}

/// The kernels: `shaders/*.wgsl`, then each family's `shaders/FAMILY/*.wgsl`.
pub fn kernel_files(shader_dir: &Path) -> std::io::Result<Vec<ShaderFile>> {
    let mut out = members(shader_dir, None)?;
    for family in families(shader_dir)? {
        out.extend(members(&shader_dir.join(&family), Some(&family))?);
    }
    Ok(out)
}

/// The pieces: `shaders/shared/*.wgsl`, then each family's `shaders/FAMILY/shared/*.wgsl`.
pub fn piece_files(shader_dir: &Path) -> std::io::Result<Vec<ShaderFile>> {
    let mut out = members(&shader_dir.join("shared"), None)?;
    for family in families(shader_dir)? {
        let dir = shader_dir.join(&family).join("shared");
        if dir.is_dir() {
            out.extend(members(&dir, Some(&family))?);
        }
    }
    Ok(out)
}

/// The `.wgsl` files directly in `dir`, sorted by name.
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

/// What a kernel file declares of the runtime checks its pipelines are built with: one line
/// `// @trusted: REASON` (every index the kernel computes is in range by construction, so
/// wgpu's bounds checks and loop counters are left out) or `// @checked: REASON` (it indexes
/// with values read from a buffer: bounds checks stay), with a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeChecks {
    /// `@trusted` rather than `@checked`.
    pub trusted: bool,
    /// Why.
    pub reason: String,
}

/// The one `@trusted` / `@checked` declaration of a kernel's text.
pub fn runtime_checks(text: &str) -> Result<RuntimeChecks, String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        for (marker, trusted) in [("// @trusted:", true), ("// @checked:", false)] {
            if let Some(reason) = line.strip_prefix(marker) {
                found.push(RuntimeChecks {
                    trusted,
                    reason: reason.trim().to_string(),
                });
            }
        }
    }
    match found.as_slice() {
        [one] if one.reason.len() >= 10 => Ok(one.clone()),
        [_] => Err("its `// @trusted:` or `// @checked:` line gives no reason".into()),
        [] => Err(
            "no `// @trusted: REASON` or `// @checked: REASON` line: say why the \
                   kernel's indices are in range, or that it indexes with data"
                .into(),
        ),
        _ => Err("more than one `// @trusted:` / `// @checked:` line".into()),
    }
}
