//! Compiled kernels, made once per device and cached in [`Gpu`]: a shader module per file, a
//! bind-group layout and pipeline layout per entry point (built from the reflected table in
//! [`shaders`](super::shaders), not derived by wgpu from the pipeline), and a compute
//! pipeline per entry point and choice of `override` values.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::context::Gpu;
use super::shaders::{BindingKind, EntryPoint, Shader};
use crate::error::{Error, Result};

/// A pipeline ready to dispatch, with the layout its bind groups are made for.
#[derive(Debug)]
pub(crate) struct Kernel {
    /// The compute pipeline.
    pub pipeline: wgpu::ComputePipeline,
    /// The layout of its (only) bind group, one entry per binding the entry point uses.
    pub bind_group_layout: wgpu::BindGroupLayout,
}

/// Override values in the order of `EntryPoint::overrides`.
type KernelKey = (Shader, &'static str, Vec<u32>);

/// An entry point's bind-group layout and the pipeline layout made of it.
type Layouts = (wgpu::BindGroupLayout, wgpu::PipelineLayout);

/// The per-device cache behind [`Gpu::kernel`].
pub(crate) struct KernelCache {
    modules: Mutex<HashMap<Shader, wgpu::ShaderModule>>,
    layouts: Mutex<HashMap<(Shader, &'static str), Layouts>>,
    kernels: Mutex<HashMap<KernelKey, Arc<Kernel>>>,
    /// Every runtime check on, whatever the shaders declare ([`SHADER_CHECKS_VAR`]).
    all_checks: std::sync::atomic::AtomicBool,
}

impl Default for KernelCache {
    fn default() -> Self {
        Self {
            modules: Mutex::default(),
            layouts: Mutex::default(),
            kernels: Mutex::default(),
            all_checks: std::env::var(SHADER_CHECKS_VAR)
                .is_ok_and(|v| v == "checked")
                .into(),
        }
    }
}

impl KernelCache {
    /// Builds every pipeline from now on with all runtime checks (`true`) or as the shaders
    /// declare (`false`), forgetting those built so far (the tests compare both).
    #[cfg(test)]
    pub(crate) fn set_all_checks(&self, on: bool) {
        self.all_checks
            .store(on, std::sync::atomic::Ordering::Relaxed);
        self.modules.lock().unwrap().clear();
        self.kernels.lock().unwrap().clear();
    }

    /// Layouts and pipelines made so far (a test checks that repeated dispatches make none).
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (usize, usize) {
        let layouts = self.layouts.lock().map_or(0, |l| l.len());
        let kernels = self.kernels.lock().map_or(0, |k| k.len());
        (layouts, kernels)
    }
}

/// The values of `entry`'s overrides, in its order, from `given`: every override it depends
/// on must be given once, and nothing else (a forgotten size would silently take the default).
fn override_values(entry: &EntryPoint, given: &[(&'static str, u32)]) -> Result<Vec<u32>> {
    for (i, (name, _)) in given.iter().enumerate() {
        if !entry.overrides.contains(name) {
            return Err(Error::Gpu(format!(
                "{} has no override `{name}` (it has: {})",
                entry.label(),
                list(entry.overrides.iter().copied())
            )));
        }
        if given[..i].iter().any(|(n, _)| n == name) {
            return Err(Error::Gpu(format!(
                "override `{name}` of {} given twice",
                entry.label()
            )));
        }
    }
    entry
        .overrides
        .iter()
        .map(|name| {
            given
                .iter()
                .find(|(n, _)| n == name)
                .map(|&(_, v)| v)
                .ok_or_else(|| {
                    Error::Gpu(format!(
                        "{} needs a value for override `{name}`",
                        entry.label()
                    ))
                })
        })
        .collect()
}

/// `a, b, c`, or `none`.
pub(crate) fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

impl Gpu {
    /// The cached kernel for `entry` with `overrides` (name, value), made on first use.
    /// Errors: [`Error::Gpu`] for an override the entry point does not have, or lacks.
    pub(crate) fn kernel(
        &self,
        entry: &'static EntryPoint,
        overrides: &[(&'static str, u32)],
    ) -> Result<Arc<Kernel>> {
        let values = override_values(entry, overrides)?;
        let key = (entry.shader, entry.name, values);
        if let Some(k) = self.cache.kernels.lock().unwrap().get(&key) {
            return Ok(k.clone());
        }
        let label = entry.label();
        let kernel = self.scoped(&format!("building {label}"), || {
            let module = self.shader_module(entry.shader);
            let (bind_group_layout, layout) = self.layouts(entry);
            let constants: Vec<(&str, f64)> = entry
                .overrides
                .iter()
                .zip(&key.2)
                .map(|(&name, &v)| (name, v as f64))
                .collect();
            let pipeline = self
                .device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(&label),
                    layout: Some(&layout),
                    module: &module,
                    entry_point: Some(entry.name),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants: &constants,
                        // Every kernel writes workgroup memory before reading it.
                        zero_initialize_workgroup_memory: false,
                    },
                    cache: None,
                });
            Ok(Arc::new(Kernel {
                pipeline,
                bind_group_layout,
            }))
        })?;
        self.cache
            .kernels
            .lock()
            .unwrap()
            .insert(key, kernel.clone());
        Ok(kernel)
    }

    fn shader_module(&self, shader: Shader) -> wgpu::ShaderModule {
        let mut modules = self.cache.modules.lock().unwrap();
        modules
            .entry(shader)
            .or_insert_with(|| {
                let desc = wgpu::ShaderModuleDescriptor {
                    label: Some(shader.name()),
                    source: wgpu::ShaderSource::Wgsl(shader.source().into()),
                };
                // SAFETY: `runtime_checks` leaves checks out only as the shader file declares
                // (`// @trusted:`, with the reason every index is in range, checked by the
                // tests' naga pass and run on every adapter the suite sees); no kernel loops
                // without a bound (every loop counts to a parameter or a constant).
                let all = self
                    .cache
                    .all_checks
                    .load(std::sync::atomic::Ordering::Relaxed);
                unsafe {
                    self.device
                        .create_shader_module_trusted(desc, runtime_checks(shader, all))
                }
            })
            .clone()
    }

    /// The bind-group and pipeline layouts of `entry`, shared by all its override values.
    fn layouts(&self, entry: &'static EntryPoint) -> Layouts {
        let mut layouts = self.cache.layouts.lock().unwrap();
        layouts
            .entry((entry.shader, entry.name))
            .or_insert_with(|| {
                let entries: Vec<wgpu::BindGroupLayoutEntry> = entry
                    .bindings
                    .iter()
                    .map(|b| wgpu::BindGroupLayoutEntry {
                        binding: b.binding,
                        visibility: wgpu::ShaderStages::COMPUTE,
                        ty: match b.kind {
                            BindingKind::Uniform { size, .. } => wgpu::BindingType::Buffer {
                                ty: wgpu::BufferBindingType::Uniform,
                                has_dynamic_offset: false,
                                min_binding_size: wgpu::BufferSize::new(size),
                            },
                            BindingKind::UniformData { size } => wgpu::BindingType::Buffer {
                                ty: wgpu::BufferBindingType::Uniform,
                                has_dynamic_offset: false,
                                min_binding_size: wgpu::BufferSize::new(size),
                            },
                            BindingKind::Storage { read_only } => wgpu::BindingType::Buffer {
                                ty: wgpu::BufferBindingType::Storage { read_only },
                                has_dynamic_offset: false,
                                // Checked against the shader's needs at dispatch.
                                min_binding_size: None,
                            },
                            BindingKind::Texture => wgpu::BindingType::Texture {
                                sample_type: wgpu::TextureSampleType::Float { filterable: false },
                                view_dimension: wgpu::TextureViewDimension::D2Array,
                                multisampled: false,
                            },
                        },
                        count: None,
                    })
                    .collect();
                let label = entry.label();
                let bind_group_layout =
                    self.device
                        .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                            label: Some(&label),
                            entries: &entries,
                        });
                let layout = self
                    .device
                    .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                        label: Some(&label),
                        bind_group_layouts: &[Some(&bind_group_layout)],
                        immediate_size: 0,
                    });
                (bind_group_layout, layout)
            })
            .clone()
    }
}

/// The variable that turns every runtime check back on (`checked`), read when a device is
/// wrapped: measurements of what the checks cost, and a debugging aid.
pub(crate) const SHADER_CHECKS_VAR: &str = "WGPU_UNSUPERVISED_SHADER_CHECKS";

/// The runtime checks a shader's pipelines are built with. wgpu's default
/// (`create_shader_module`) bounds every access and adds a counter to every loop (naga's
/// `force_loop_bounding`), which GPU compilers cannot unroll around: reported to slow compute
/// kernels 10-100x. A file that declares `// @trusted:` (every index in range by construction;
/// the reason is written there) gets none; a file that declares `// @checked:` (it indexes
/// with values read from a buffer) keeps the bounds checks and the integer-division guards but
/// no loop counters (its loops are bounded all the same). [`SHADER_CHECKS_VAR`]`=checked`
/// (`all`) restores wgpu's default for every shader.
pub(crate) fn runtime_checks(shader: Shader, all: bool) -> wgpu::ShaderRuntimeChecks {
    if all {
        return wgpu::ShaderRuntimeChecks::checked();
    }
    let mut checks = wgpu::ShaderRuntimeChecks::unchecked();
    if !shader.trusted() {
        checks.bounds_checks = true;
        checks.int_div_checks = true;
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shaders_keep_the_checks_they_declare() {
        // The assignment's tiles are trusted; the centroid update (indexed by labels) keeps
        // its bounds checks; neither keeps naga's loop counters, unless all are asked for.
        let tiled = runtime_checks(Shader::AssignTiled, false);
        assert!(!tiled.bounds_checks && !tiled.force_loop_bounding && !tiled.int_div_checks);
        let update = runtime_checks(Shader::CentroidsUpdate, false);
        assert!(update.bounds_checks && update.int_div_checks && !update.force_loop_bounding);
        assert!(Shader::ALL.iter().any(|s| s.trusted()));
        assert!(Shader::ALL.iter().any(|s| !s.trusted()));
        let all = runtime_checks(Shader::AssignTiled, true);
        assert!(all.bounds_checks && all.force_loop_bounding && all.int_div_checks);
    }
}
