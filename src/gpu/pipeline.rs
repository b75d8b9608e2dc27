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
#[derive(Default)]
pub(crate) struct KernelCache {
    modules: Mutex<HashMap<Shader, wgpu::ShaderModule>>,
    layouts: Mutex<HashMap<(Shader, &'static str), Layouts>>,
    kernels: Mutex<HashMap<KernelKey, Arc<Kernel>>>,
}

impl KernelCache {
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
                self.device
                    .create_shader_module(wgpu::ShaderModuleDescriptor {
                        label: Some(shader.name()),
                        source: wgpu::ShaderSource::Wgsl(shader.source().into()),
                    })
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
