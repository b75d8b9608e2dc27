//! Validation and reflection of composed WGSL with naga, shared by `build.rs` (which turns
//! the reflection into the Rust table of `src/gpu/shaders.rs`) and `tests/shaders.rs` (which
//! checks the same modules again). Include it next to `compose.rs` with `#[path]`.
//!
//! Reflection reads what the host needs to bind and build a kernel without reading WGSL: per
//! entry point, the resources it really uses (as wgpu would derive them), with their names,
//! binding numbers and kinds, the uniform struct's name and size, the workgroup size when it
//! is fixed and the `override`s it depends on; per module, its `u32` constants.

#![allow(dead_code)] // each includer uses its own part of the API

use naga::valid::{Capabilities, GlobalUse, ModuleInfo, ValidationFlags, Validator};
use naga::{AddressSpace, Expression, Handle, Literal, Module, Statement, StorageAccess};

use super::compose::Composed;

/// How an entry point sees one of its bindings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `var<uniform>` of a struct.
    Uniform {
        /// The struct's WGSL name.
        struct_name: String,
        /// Its size in bytes, as naga lays it out.
        size: u32,
    },
    /// `var<uniform>` of an array: data bound by name like a storage buffer (a slice of
    /// centroids, say), for adapters where uniform loads are cheaper.
    UniformData {
        /// Its size in bytes: the bound range must be exactly this large.
        size: u32,
    },
    /// `var<storage, read>` (`read_only`) or `var<storage, read_write>`.
    Storage {
        /// Declared without write access.
        read_only: bool,
    },
    /// `texture_2d_array<f32>`, read with `textureLoad` only (no sampler): rows of data
    /// mirrored into a texture for adapters whose texel fetches are cheaper than their
    /// storage loads (see `src/gpu/texture.rs`).
    Texture,
}

/// One resource an entry point uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The WGSL variable name, which the host binds by.
    pub name: String,
    /// `@binding(n)` (every resource is in `@group(0)`).
    pub binding: u32,
    /// Uniform or storage.
    pub kind: Kind,
}

/// One compute entry point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The function name.
    pub name: String,
    /// `@workgroup_size`, or `None` when an `override` sets it.
    pub workgroup_size: Option<[u32; 3]>,
    /// The overrides the entry point depends on (workgroup size or code), by name.
    pub overrides: Vec<String>,
    /// The resources it uses, by binding number.
    pub bindings: Vec<Binding>,
}

/// What the host needs to know about one composed module.
#[derive(Debug, Clone, PartialEq)]
pub struct Reflection {
    /// The compute entry points, in source order.
    pub entries: Vec<Entry>,
    /// Module-scope `const`s of type `u32`, by name, in source order.
    pub constants: Vec<(String, u32)>,
}

/// Parses and validates `composed`; errors name the original files and lines. `name` says
/// which module failed (e.g. `shaders/assign.wgsl`).
pub fn validate(name: &str, composed: &Composed) -> Result<(Module, ModuleInfo), String> {
    let source = &composed.source;
    let shown = format!("{name}, composed");
    let module = naga::front::wgsl::parse_str(source).map_err(|e| {
        let labels = e.labels().map(|(span, text)| (span, text.to_string()));
        report(
            name,
            composed,
            e.message(),
            labels,
            e.emit_to_string_with_path(source, &shown),
        )
    })?;
    // Subgroup operations are validated as an adapter with `Features::SUBGROUP` would take
    // them; the host builds such kernels only on those adapters.
    let info = Validator::new(
        ValidationFlags::all(),
        Capabilities::default() | Capabilities::SUBGROUP,
    )
    .subgroup_stages(naga::valid::ShaderStages::COMPUTE)
    .subgroup_operations(naga::valid::SubgroupOperationSet::all())
    .validate(&module)
    .map_err(|e| {
        report(
            name,
            composed,
            &e.as_inner().to_string(),
            e.spans().cloned(),
            e.emit_to_string_with_path(source, &shown),
        )
    })?;
    Ok((module, info))
}

/// An error message that lists every labelled span at its original file and line, then
/// naga's own rendering of the composed text.
fn report(
    name: &str,
    composed: &Composed,
    message: &str,
    labels: impl Iterator<Item = (naga::Span, String)>,
    rendered: String,
) -> String {
    let mut out = format!("{name}: {message}\n");
    for (span, text) in labels {
        if let Some(range) = span.to_range() {
            out.push_str(&format!("  {}: {text}\n", composed.locate(range.start)));
        }
    }
    out.push_str("naga, on the composed module:\n");
    out.push_str(&rendered);
    out
}

/// The entry points and constants of a validated module.
pub fn reflect(module: &Module, info: &ModuleInfo) -> Result<Reflection, String> {
    let mut entries = Vec::new();
    for (index, ep) in module.entry_points.iter().enumerate() {
        if ep.stage != naga::ShaderStage::Compute {
            return Err(format!("entry point {} is not a compute shader", ep.name));
        }
        let uses = info.get_entry_point(index);
        let mut bindings = Vec::new();
        for (handle, var) in module.global_variables.iter() {
            let (Some(rb), false) = (&var.binding, uses[handle] == GlobalUse::empty()) else {
                continue;
            };
            let name = var.name.clone().unwrap_or_default();
            if rb.group != 0 {
                return Err(format!(
                    "{}: `{name}` is in @group({}); the host binds only group 0",
                    ep.name, rb.group
                ));
            }
            let kind = match var.space {
                AddressSpace::Uniform
                    if !matches!(module.types[var.ty].inner, naga::TypeInner::Struct { .. }) =>
                {
                    Kind::UniformData {
                        size: module.types[var.ty].inner.size(module.to_ctx()),
                    }
                }
                AddressSpace::Uniform => Kind::Uniform {
                    struct_name: module.types[var.ty].name.clone().unwrap_or_default(),
                    size: module.types[var.ty].inner.size(module.to_ctx()),
                },
                AddressSpace::Storage { access } => Kind::Storage {
                    read_only: !access.contains(StorageAccess::STORE),
                },
                AddressSpace::Handle
                    if matches!(
                        module.types[var.ty].inner,
                        naga::TypeInner::Image {
                            dim: naga::ImageDimension::D2,
                            arrayed: true,
                            class: naga::ImageClass::Sampled {
                                kind: naga::ScalarKind::Float,
                                multi: false
                            },
                        }
                    ) =>
                {
                    Kind::Texture
                }
                other => {
                    return Err(format!(
                        "{}: `{name}` is in address space {other:?}; only uniform and storage buffers and texture_2d_array<f32> are bound",
                        ep.name
                    ))
                }
            };
            bindings.push(Binding {
                name,
                binding: rb.binding,
                kind,
            });
        }
        bindings.sort_by_key(|b| b.binding);
        let n_uniforms = bindings
            .iter()
            .filter(|b| matches!(b.kind, Kind::Uniform { .. }))
            .count();
        if n_uniforms > 1 {
            return Err(format!(
                "{} uses {n_uniforms} uniforms; the host passes one parameter struct",
                ep.name
            ));
        }
        entries.push(Entry {
            name: ep.name.clone(),
            workgroup_size: ep
                .workgroup_size_overrides
                .is_none()
                .then_some(ep.workgroup_size),
            overrides: overrides_of(module, ep),
            bindings,
        });
    }
    let constants = module
        .constants
        .iter()
        .filter_map(
            |(_, c)| match (&c.name, &module.global_expressions[c.init]) {
                (Some(name), Expression::Literal(Literal::U32(v))) => Some((name.clone(), *v)),
                _ => None,
            },
        )
        .collect();
    Ok(Reflection { entries, constants })
}

/// Names of the overrides `ep` depends on: in its workgroup size, in the code of its
/// function and of every function it calls, or in the size of a workgroup array they use.
fn overrides_of(module: &Module, ep: &naga::EntryPoint) -> Vec<String> {
    let mut found = Vec::new();
    for expr in ep.workgroup_size_overrides.iter().flatten().flatten() {
        global_overrides(module, *expr, &mut found);
    }
    let mut functions = Vec::new();
    calls(&ep.function.body, &mut functions);
    let mut i = 0;
    while i < functions.len() {
        let called = &module.functions[functions[i]];
        calls(&called.body, &mut functions);
        i += 1;
    }
    let bodies =
        std::iter::once(&ep.function).chain(functions.iter().map(|&f| &module.functions[f]));
    for function in bodies {
        for (_, expr) in function.expressions.iter() {
            match expr {
                Expression::Override(o) => found.push(*o),
                // A workgroup array sized by an override (its memory is the entry's).
                Expression::GlobalVariable(g) => {
                    let ty = &module.types[module.global_variables[*g].ty].inner;
                    if let naga::TypeInner::Array {
                        size: naga::ArraySize::Pending(o),
                        ..
                    } = ty
                    {
                        found.push(*o);
                    }
                }
                _ => {}
            }
        }
    }
    let mut names: Vec<String> = Vec::new();
    for o in found {
        let name = module.overrides[o].name.clone().unwrap_or_default();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Overrides in a module-scope expression (a workgroup size).
fn global_overrides(
    module: &Module,
    expr: Handle<Expression>,
    found: &mut Vec<Handle<naga::Override>>,
) {
    match module.global_expressions[expr] {
        Expression::Override(o) => found.push(o),
        Expression::Binary { left, right, .. } => {
            global_overrides(module, left, found);
            global_overrides(module, right, found);
        }
        Expression::Unary { expr, .. } | Expression::As { expr, .. } => {
            global_overrides(module, expr, found)
        }
        _ => {}
    }
}

/// Adds the functions called in `block` (and its nested blocks) to `found`, once each.
fn calls(block: &naga::Block, found: &mut Vec<Handle<naga::Function>>) {
    for statement in block.iter() {
        match statement {
            Statement::Call { function, .. } if !found.contains(function) => {
                found.push(*function);
            }
            Statement::Block(b) => calls(b, found),
            Statement::If { accept, reject, .. } => {
                calls(accept, found);
                calls(reject, found);
            }
            Statement::Switch { cases, .. } => {
                for case in cases {
                    calls(&case.body, found);
                }
            }
            Statement::Loop {
                body, continuing, ..
            } => {
                calls(body, found);
                calls(continuing, found);
            }
            _ => {}
        }
    }
}
