//! Device scratch of the assignment's GEMM form (`shaders/assign/`, wrapper
//! [`assign`](crate::kernels::assign)), kept by callers that assign many times.

use super::args::Assignment;
use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::texture::FlatTexture;
use crate::gpu::Gpu;
use crate::kernels::centroids::sorted::SortCache;
use crate::kernels::centroids::update::UpdateTextures;

/// Device scratch of the GEMM form, kept by callers that assign many times (the K-Means
/// workspace) and made per call otherwise: the prepared centroid side, the recheck list, the
/// sorted update's buffers (GPUs), and on CPU-like adapters the flat textures (the rows'
/// mirror is copied once per chunk, until [`AssignScratch::rows_changed`]).
pub(crate) struct AssignScratch {
    pub(crate) prepared: DeviceBuffer<f32>,
    pub(crate) recheck: DeviceBuffer<u32>,
    pub(crate) textures: std::cell::RefCell<Option<Textures>>,
    /// The sorted update's scratch (GPUs), made on first use.
    pub(crate) sort: SortCache,
}

/// The flat textures of `assign_texture`.
pub(crate) struct Textures {
    /// Mirror of the rows, and the (buffer, byte offset) it mirrors when up to date.
    pub(crate) x: FlatTexture,
    x_of: Option<(wgpu::Buffer, u64)>,
    pub(crate) centroids: FlatTexture,
    pub(crate) prepared: FlatTexture,
}

/// Values of the prepared centroid side for K centroids of D features.
fn prepared_len(d: usize, k: usize) -> usize {
    let d4 = d.div_ceil(4);
    4 * (k * d4 + k + d4)
}

impl AssignScratch {
    /// Scratch for chunks of at most `max_rows` rows, D features and K centroids.
    pub(crate) fn new(gpu: &Gpu, max_rows: usize, d: usize, k: usize) -> Self {
        Self {
            prepared: DeviceBuffer::zeroed(gpu, "prepared centroids", prepared_len(d, k)),
            recheck: DeviceBuffer::zeroed(gpu, "recheck list", max_rows + 1),
            textures: std::cell::RefCell::new(None),
            sort: SortCache::default(),
        }
    }

    /// The recheck list's length, read back with the batch (tests: how many rows the GEMM
    /// form left undecided).
    #[cfg(test)]
    pub(crate) fn read_rechecked(&self, batch: &mut Batch<'_>) -> crate::gpu::batch::ReadHandle {
        batch.read_values(&self.recheck, 0, 1)
    }

    /// The rows behind the scratch's chunks changed (a new streamed piece): the rows' mirror
    /// is copied again on the next use.
    pub(crate) fn rows_changed(&self) {
        if let Some(t) = self.textures.borrow_mut().as_mut() {
            t.x_of = None;
        }
    }

    /// Runs `f` with the flat textures of `chunk`'s rows and of the centroids when this
    /// scratch holds an up-to-date mirror of the rows (CPU-like adapters, after an
    /// assignment through `assign_texture` or its trial), else with `None`. The centroids'
    /// texture is K x D or larger; the update copies the centroids it reads into it.
    pub(crate) fn with_update_textures<R>(
        &self,
        chunk: &Chunk,
        f: impl FnOnce(Option<&UpdateTextures<'_>>) -> R,
    ) -> R {
        let slot = self.textures.borrow();
        let start = chunk.bind_offset + 4 * chunk.x_offset as u64;
        let mirrored = slot
            .as_ref()
            .filter(|t| t.x_of.as_ref() == Some(&(chunk.buffer.clone(), start)));
        match mirrored {
            Some(t) => f(Some(&UpdateTextures {
                rows: &t.x,
                centroids: &t.centroids,
            })),
            None => f(None),
        }
    }

    /// Records the copies `assign_texture` needs before it runs on `chunk` (rows of D
    /// features, `rows` of them read).
    pub(crate) fn record_mirrors(
        &self,
        gpu: &Gpu,
        batch: &mut Batch<'_>,
        chunk: &Chunk,
        d: usize,
        to: &Assignment<'_>,
    ) -> Result<()> {
        let mut slot = self.textures.borrow_mut();
        let x_len = chunk.n_rows * d;
        let fits = |t: &FlatTexture, len| t.len() >= len;
        let ok = slot.as_ref().is_some_and(|t| {
            fits(&t.x, x_len)
                && fits(&t.centroids, to.k * d)
                && fits(&t.prepared, self.prepared.len())
        });
        if !ok {
            let make = |label, len| {
                FlatTexture::new(gpu, label, len).ok_or_else(|| {
                    Error::Gpu(format!("{label}: {len} values exceed the texture limits"))
                })
            };
            *slot = Some(Textures {
                x: make("rows texture", x_len)?,
                x_of: None,
                centroids: make("centroids texture", to.k * d)?,
                prepared: make("prepared centroids texture", self.prepared.len())?,
            });
        }
        let t = slot.as_mut().expect("made above");
        let start = chunk.bind_offset + 4 * chunk.x_offset as u64;
        if t.x_of.as_ref() != Some(&(chunk.buffer.clone(), start)) || t.x.len() != x_len {
            if t.x.len() != x_len {
                t.x = FlatTexture::new(gpu, "rows texture", x_len).expect("checked above");
            }
            batch.copy_to_texture(&chunk.buffer, start, &t.x);
            t.x_of = Some((chunk.buffer.clone(), start));
        }
        if t.centroids.len() != to.k * d {
            t.centroids = FlatTexture::new(gpu, "centroids texture", to.k * d).expect("fits");
        }
        batch.copy_to_texture(to.centroids.raw(), 0, &t.centroids);
        batch.copy_to_texture(self.prepared.raw(), 0, &t.prepared);
        Ok(())
    }
}
