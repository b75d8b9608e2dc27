//! [`FlatTexture`]: a run of f32 values (rows of a matrix, centroids) mirrored into a texture
//! for adapters whose texel fetches are much cheaper than their storage-buffer loads.
//!
//! On lavapipe (Mesa's CPU driver) every storage-buffer or workgroup-memory load is a loop
//! over the SIMD lanes with a branch per lane, while a texel fetch is a plain gather: the
//! register-blocked products read their operands about 4x faster from a texture (measured,
//! BENCHMARKS.md). The layout is the one of `shaders/shared/texels.wgsl`: rgba32float texels
//! holding 4 consecutive values, `FLAT_ROW_TEXELS` texels (256 bytes, the row alignment of
//! buffer-to-texture copies) a texture row, `FLAT_LAYER_ROWS` rows a layer, so any run whose
//! start is 16-byte aligned copies in at most three commands, with no kernel.

use super::batch::{Batch, Bind};
use super::context::Gpu;
use super::shaders::shared::texels::{FLAT_LAYER_ROWS, FLAT_ROW_TEXELS};

/// Bytes of one texel (rgba32float).
const TEXEL_BYTES: u64 = 16;
/// Bytes of one texture row.
const ROW_BYTES: u64 = FLAT_ROW_TEXELS as u64 * TEXEL_BYTES;

/// A texture holding a run of f32 values in the flat layout (see the module docs).
#[derive(Debug)]
pub(crate) struct FlatTexture {
    texture: wgpu::Texture,
    view: wgpu::TextureView,
    /// Values it holds.
    len: usize,
}

impl FlatTexture {
    /// A texture for `len` values (a multiple of 4), or `None` when the device's texture
    /// limits cannot hold that many.
    pub(crate) fn new(gpu: &Gpu, label: &str, len: usize) -> Option<Self> {
        if !len.is_multiple_of(4) {
            return None;
        }
        let texels = (len / 4).max(1) as u64;
        let rows = texels.div_ceil(FLAT_ROW_TEXELS as u64);
        let layers = rows.div_ceil(FLAT_LAYER_ROWS as u64);
        let height = rows.min(FLAT_LAYER_ROWS as u64);
        let limits = gpu.device().limits();
        if layers > limits.max_texture_array_layers as u64
            || FLAT_LAYER_ROWS > limits.max_texture_dimension_2d
        {
            return None;
        }
        let texture = gpu.device().create_texture(&wgpu::TextureDescriptor {
            label: Some(label),
            size: wgpu::Extent3d {
                width: FLAT_ROW_TEXELS,
                height: height as u32,
                depth_or_array_layers: layers as u32,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba32Float,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        let view = texture.create_view(&wgpu::TextureViewDescriptor {
            label: Some(label),
            dimension: Some(wgpu::TextureViewDimension::D2Array),
            ..Default::default()
        });
        Some(Self { texture, view, len })
    }

    /// Values it holds.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The texture as a binding.
    pub(crate) fn bind(&self) -> Bind<'_> {
        Bind::Texture(&self.view)
    }

    /// Whether values of `buffer` from byte `offset` on can be copied into a flat texture:
    /// the copy starts on a texel boundary and the buffer may be copied from.
    pub(crate) fn can_copy_from(buffer: &wgpu::Buffer, offset: u64) -> bool {
        offset.is_multiple_of(TEXEL_BYTES) && buffer.usage().contains(wgpu::BufferUsages::COPY_SRC)
    }
}

impl Batch<'_> {
    /// Records the copy of the texture's values from `buffer`, starting at byte `offset` (see
    /// [`FlatTexture::can_copy_from`]): whole layers, then whole rows, then the last row.
    pub(crate) fn copy_to_texture(&mut self, buffer: &wgpu::Buffer, offset: u64, to: &FlatTexture) {
        let texels = (to.len / 4) as u64;
        let per_layer = FLAT_LAYER_ROWS as u64 * FLAT_ROW_TEXELS as u64;
        let full_layers = texels / per_layer;
        let rest = texels % per_layer;
        let full_rows = rest / FLAT_ROW_TEXELS as u64;
        let tail = rest % FLAT_ROW_TEXELS as u64;
        let mut parts = Vec::new();
        // (first texel, origin, extent) of each copy.
        if full_layers > 0 {
            parts.push((
                0,
                [0, 0, 0],
                [FLAT_ROW_TEXELS as u64, FLAT_LAYER_ROWS as u64, full_layers],
            ));
        }
        if full_rows > 0 {
            let first = full_layers * per_layer;
            parts.push((
                first,
                [0, 0, full_layers],
                [FLAT_ROW_TEXELS as u64, full_rows, 1],
            ));
        }
        if tail > 0 {
            let first = full_layers * per_layer + full_rows * FLAT_ROW_TEXELS as u64;
            parts.push((first, [0, full_rows, full_layers], [tail, 1, 1]));
        }
        for (first, origin, extent) in parts {
            self.copy_buffer_to_texture(
                wgpu::TexelCopyBufferInfo {
                    buffer,
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: offset + first * TEXEL_BYTES,
                        bytes_per_row: Some(ROW_BYTES as u32),
                        rows_per_image: Some(FLAT_LAYER_ROWS),
                    },
                },
                wgpu::TexelCopyTextureInfo {
                    texture: &to.texture,
                    mip_level: 0,
                    origin: wgpu::Origin3d {
                        x: origin[0] as u32,
                        y: origin[1] as u32,
                        z: origin[2] as u32,
                    },
                    aspect: wgpu::TextureAspect::All,
                },
                wgpu::Extent3d {
                    width: extent[0] as u32,
                    height: extent[1] as u32,
                    depth_or_array_layers: extent[2] as u32,
                },
            );
        }
    }
}
