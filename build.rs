//! Build step for the WGSL kernels.
//!
//! Every kernel (`shaders/NAME.wgsl`, or `shaders/FAMILY/NAME.wgsl` in a kernel family's
//! folder) is composed with the pieces it `#import`s (`shaders/shared/`, or its family's
//! `shaders/FAMILY/shared/`; `build/compose.rs`), validated by naga after composition (errors
//! point at the original file and line, and fail the build), and reflected
//! (`build/reflect.rs`). The pieces are validated on their own too. Written to `OUT_DIR`:
//! each composed kernel as `NAME.wgsl` or `FAMILY_NAME.wgsl`, and `shaders.rs`, the table
//! that `src/gpu/shaders.rs` includes: the `Shader` enum, and per file a module (`NAME`, or
//! `FAMILY::NAME` inside a module per family) with its `u32` constants and, per entry point,
//! its bindings by name, workgroup size and overrides.

#[path = "build/compose.rs"]
mod compose;
#[path = "build/reflect.rs"]
mod reflect;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use reflect::{Kind, Reflection};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// One composed, validated, reflected file.
struct Module {
    /// Where it sits: family and stem (`assign` / `tiled` for `assign/tiled.wgsl`).
    file: compose::ShaderFile,
    /// Path relative to the crate, for messages and docs.
    shown: String,
    reflection: Reflection,
    /// The composed WGSL.
    source: String,
    /// Whether its pipelines leave out wgpu's runtime checks (kernels only).
    trusted: bool,
}

fn run() -> Result<(), String> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let out = PathBuf::from(std::env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let shader_dir = root.join("shaders");
    for watched in [
        "build.rs",
        "build/compose.rs",
        "build/reflect.rs",
        "shaders",
    ] {
        println!("cargo:rerun-if-changed={watched}");
    }
    let listing = |e: std::io::Error| format!("listing {}: {e}", shader_dir.display());
    let mut kernels = Vec::new();
    for file in compose::kernel_files(&shader_dir).map_err(listing)? {
        let module = build(&root, &shader_dir, file)?;
        write(
            &out.join(format!("{}.wgsl", module.file.ident())),
            &module.source,
        )?;
        kernels.push(module);
    }
    if kernels.is_empty() {
        return Err(format!("no kernels in {}", shader_dir.display()));
    }
    let mut pieces = Vec::new();
    for file in compose::piece_files(&shader_dir).map_err(listing)? {
        let piece = build(&root, &shader_dir, file)?;
        if !piece.reflection.entries.is_empty() {
            return Err(format!(
                "{} has entry points: shared pieces hold code for kernels, not kernels",
                piece.shown
            ));
        }
        pieces.push(piece);
    }
    write(&out.join("shaders.rs"), &table(&kernels, &pieces)?)
}

/// Composes, validates and reflects one file.
fn build(root: &Path, shader_dir: &Path, file: compose::ShaderFile) -> Result<Module, String> {
    let path = file.path.as_path();
    let shown = path
        .strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string();
    let composed = compose::compose(shader_dir, path).map_err(|e| e.to_string())?;
    for f in &composed.files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let (module, info) = reflect::validate(&shown, &composed)?;
    let reflection = reflect::reflect(&module, &info).map_err(|e| format!("{shown}: {e}"))?;
    let snake = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    if !snake(&file.stem) || !file.family.as_deref().is_none_or(snake) {
        return Err(format!("{shown}: file and folder names are snake_case"));
    }
    let trusted = match compose::piece_name(shader_dir, path) {
        Some(_) => false,
        None => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
            compose::runtime_checks(&text)
                .map_err(|e| format!("{shown}: {e}"))?
                .trusted
        }
    };
    Ok(Module {
        file,
        shown,
        reflection,
        source: composed.source,
        trusted,
    })
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    // Rewriting identical bytes would still bump the mtime and rebuild the crate.
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

fn camel(snake: &str) -> String {
    snake
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The generated Rust source.
fn table(kernels: &[Module], pieces: &[Module]) -> Result<String, String> {
    let mut s = String::from("// @generated by build.rs from shaders/**/*.wgsl. Do not edit.\n\n");
    let variant = |k: &Module| camel(&k.file.ident());
    let path = |k: &Module| match &k.file.family {
        Some(f) => format!("{f}::{}", k.file.stem),
        None => k.file.stem.clone(),
    };
    s += "/// The kernel files in `shaders/`, one variant each.\n";
    s += "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]\npub(crate) enum Shader {\n";
    for k in kernels {
        let _ = writeln!(s, "    /// `{}`.\n    {},", k.shown, variant(k));
    }
    s += "}\n\nimpl Shader {\n    /// Every kernel file (the tests walk the table).\n    #[cfg(test)]\n";
    let _ = writeln!(
        s,
        "    pub(crate) const ALL: [Shader; {}] = [",
        kernels.len()
    );
    for k in kernels {
        let _ = writeln!(s, "        Shader::{},", variant(k));
    }
    s += "    ];\n\n    /// The file's path under `shaders/` (`assign/tiled.wgsl`).\n";
    s += "    pub(crate) const fn name(self) -> &'static str {\n        match self {\n";
    for k in kernels {
        let _ = writeln!(
            s,
            "            Shader::{} => {:?},",
            variant(k),
            k.file.relative()
        );
    }
    s += "        }\n    }\n\n    /// The composed WGSL (imports expanded), validated by naga at build time.\n";
    s += "    pub(crate) const fn source(self) -> &'static str {\n        match self {\n";
    for k in kernels {
        let _ = writeln!(
            s,
            "            Shader::{} => include_str!(concat!(env!(\"OUT_DIR\"), \"/{}.wgsl\")),",
            variant(k),
            k.file.ident()
        );
    }
    s += "        }\n    }\n\n    /// Whether the file declares `// @trusted:` (pipelines without wgpu's bounds\n    /// checks and loop counters) rather than `// @checked:`.\n";
    s += "    pub(crate) const fn trusted(self) -> bool {\n        match self {\n";
    for k in kernels {
        let _ = writeln!(s, "            Shader::{} => {},", variant(k), k.trusted);
    }
    s += "        }\n    }\n\n    /// The compute entry points, in source order.\n    #[cfg(test)]\n";
    s += "    pub(crate) const fn entry_points(self) -> &'static [&'static EntryPoint] {\n        match self {\n";
    for k in kernels {
        let _ = writeln!(
            s,
            "            Shader::{} => {}::ENTRY_POINTS,",
            variant(k),
            path(k)
        );
    }
    s += "        }\n    }\n}\n";
    // Kernels outside a family, then one module per family holding its kernels and, in
    // `FAMILY::shared`, its pieces.
    for k in kernels.iter().filter(|k| k.file.family.is_none()) {
        s += &module(k, Some(&variant(k)))?;
    }
    let mut families: Vec<&str> = kernels
        .iter()
        .chain(pieces)
        .filter_map(|m| m.file.family.as_deref())
        .collect();
    families.sort_unstable();
    families.dedup();
    for family in families {
        let _ = writeln!(
            s,
            "\n/// The kernel family in `shaders/{family}/`.\npub(crate) mod {family} {{"
        );
        for k in kernels
            .iter()
            .filter(|k| k.file.family.as_deref() == Some(family))
        {
            s += &module(k, Some(&variant(k)))?;
        }
        let own: Vec<&Module> = pieces
            .iter()
            .filter(|p| p.file.family.as_deref() == Some(family))
            .collect();
        if !own.is_empty() {
            let _ = writeln!(
                s,
                "\n/// The pieces in `shaders/{family}/shared/`, each composed on its own.\npub(crate) mod shared {{"
            );
            for p in own {
                s += &module(p, None)?;
            }
            s += "}\n";
        }
        s += "}\n";
    }
    s += "\n/// The pieces in `shaders/shared/`, each composed on its own.\npub(crate) mod shared {\n";
    for p in pieces.iter().filter(|p| p.file.family.is_none()) {
        s += &module(p, None)?;
    }
    s += "}\n";
    Ok(s)
}

/// The module of one file: its constants and (for kernels) its entry points.
fn module(m: &Module, variant: Option<&str>) -> Result<String, String> {
    let what = if variant.is_some() {
        "its `u32` constants (imports included) and entry points"
    } else {
        "its `u32` constants (imports included)"
    };
    let mut s = format!("\n/// `{}`: {what}.\n", m.shown);
    s += "#[allow(dead_code)]\npub(crate) mod ";
    s += &m.file.stem;
    s += " {\n";
    if variant.is_some() {
        s += "    use crate::gpu::shaders::{Binding, BindingKind, EntryPoint, Shader};\n";
    }
    let mut names: Vec<String> = Vec::new();
    let mut claim = |name: String| {
        if names.contains(&name) {
            return Err(format!("{}: two generated items named {name}", m.shown));
        }
        names.push(name.clone());
        Ok(name)
    };
    for (name, value) in &m.reflection.constants {
        let name = claim(name.clone())?;
        let _ = writeln!(s, "    /// `const {name}` in the composed `{}`.", m.shown);
        let _ = writeln!(s, "    pub(crate) const {name}: u32 = {value};");
    }
    let Some(variant) = variant else {
        return Ok(s + "}\n");
    };
    let mut all = Vec::new();
    for e in &m.reflection.entries {
        let name = claim(e.name.to_ascii_uppercase())?;
        let _ = writeln!(s, "    /// Entry point `{}` of `{}`.", e.name, m.shown);
        let _ = writeln!(
            s,
            "    pub(crate) const {name}: &EntryPoint = &EntryPoint {{"
        );
        let _ = writeln!(s, "        shader: Shader::{variant},");
        let _ = writeln!(s, "        name: {:?},", e.name);
        let _ = writeln!(s, "        workgroup_size: {:?},", e.workgroup_size);
        let _ = writeln!(s, "        overrides: &{:?},", e.overrides);
        s += "        bindings: &[\n";
        for b in &e.bindings {
            let kind = match &b.kind {
                Kind::Uniform { struct_name, size } => {
                    format!("BindingKind::Uniform {{ struct_name: {struct_name:?}, size: {size} }}")
                }
                Kind::UniformData { size } => {
                    format!("BindingKind::UniformData {{ size: {size} }}")
                }
                Kind::Storage { read_only } => {
                    format!("BindingKind::Storage {{ read_only: {read_only} }}")
                }
                Kind::Texture => "BindingKind::Texture".to_string(),
            };
            let _ = writeln!(
                s,
                "            Binding {{ name: {:?}, binding: {}, kind: {kind} }},",
                b.name, b.binding
            );
        }
        s += "        ],\n    };\n";
        all.push(name);
    }
    claim("ENTRY_POINTS".to_string())?;
    let _ = writeln!(
        s,
        "    /// Every entry point of `{}`, in source order.\n    pub(crate) const ENTRY_POINTS: &[&EntryPoint] = &[{}];",
        m.shown,
        all.join(", ")
    );
    Ok(s + "}\n")
}
