//! The shader table: every kernel's composed WGSL and what naga reflected from it at build
//! time (`build.rs`).
//!
//! For each file `shaders/NAME.wgsl` there is a [`Shader`] variant and a module `NAME` here
//! holding the file's `u32` constants (those of its `#import`s included) and one
//! [`EntryPoint`] constant per entry point, named after it in capitals
//! (`assign::ASSIGN_NEAREST_CENTROID`). Wrappers bind buffers by the names an entry point
//! lists, and take sizes such as `TILE` from here, so nothing the shader decides is written
//! twice. `shared::NAME` holds the constants of each piece in `shaders/shared/`.

// The generated table: `Shader`, its methods, and one module per shader file.
include!(concat!(env!("OUT_DIR"), "/shaders.rs"));

/// How an entry point declares one of its bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BindingKind {
    /// `var<uniform>` of a struct: the dispatch's parameter struct.
    Uniform {
        /// The WGSL struct's name (its `#[repr(C)]` twin names it in its doc comment).
        struct_name: &'static str,
        /// Its size in bytes as naga lays it out: the twin's `size_of` must match.
        size: u64,
    },
    /// `var<uniform>` of an array: data bound by name, exactly `size` bytes.
    UniformData {
        /// Its size in bytes.
        size: u64,
    },
    /// `var<storage, read>` (`read_only`) or `var<storage, read_write>`.
    Storage {
        /// Declared without write access.
        read_only: bool,
    },
    /// `texture_2d_array<f32>` read by `textureLoad`: a [`FlatTexture`](super::texture::FlatTexture).
    Texture,
}

/// One buffer or texture an entry point uses (in `@group(0)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Binding {
    /// The WGSL variable name, by which wrappers bind it.
    pub name: &'static str,
    /// Its `@binding` number.
    pub binding: u32,
    /// Uniform or storage.
    pub kind: BindingKind,
}

/// One compute entry point, as reflected from the composed module.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct EntryPoint {
    /// The file it is in.
    pub shader: Shader,
    /// The function name.
    pub name: &'static str,
    /// `@workgroup_size`, or `None` when an `override` sets it.
    pub workgroup_size: Option<[u32; 3]>,
    /// The `override`s it depends on: the values a dispatch may set.
    pub overrides: &'static [&'static str],
    /// The buffers it uses, by binding number (the ones it does not use are not bound).
    pub bindings: &'static [Binding],
}

impl EntryPoint {
    /// The size in bytes of its uniform parameter struct, or 0 when it takes none. A `const
    /// fn`, so wrappers check their `#[repr(C)]` twins at compile time.
    pub(crate) const fn uniform_size(&self) -> usize {
        let mut i = 0;
        while i < self.bindings.len() {
            if let BindingKind::Uniform { size, .. } = self.bindings[i].kind {
                return size as usize;
            }
            i += 1;
        }
        0
    }

    /// Its uniform binding, if any.
    pub(crate) fn uniform(&self) -> Option<&'static Binding> {
        self.bindings
            .iter()
            .find(|b| matches!(b.kind, BindingKind::Uniform { .. }))
    }

    /// `family/file.wgsl::entry`, for labels and messages.
    pub(crate) fn label(&self) -> String {
        format!("{}::{}", self.shader.name(), self.name)
    }
}

/// Fails to compile unless `P` (a wrapper's `#[repr(C)]` twin) has exactly the size of the
/// uniform struct of every listed entry point: `const _: () = check_params::<P>(&[...]);`.
pub(crate) const fn check_params<P>(entries: &[&EntryPoint]) {
    let mut i = 0;
    while i < entries.len() {
        assert!(
            entries[i].uniform_size() == std::mem::size_of::<P>(),
            "a parameter struct's size differs from its shader's uniform struct"
        );
        i += 1;
    }
}
