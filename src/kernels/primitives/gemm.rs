//! The tile core's shapes (`shaders/shared/gemm.wgsl`): which tile and register block the host
//! gives a product-shaped kernel, and which design an adapter gets. Every product-shaped
//! kernel runs on that one core: `assign_tiled`, `gram_tiled`, `affine_matmul`,
//! `mahalanobis_full`, `weighted_scatter_tiled`, `cluster_distance_sums` and the RBF product.
//!
//! The core's sizes are `override`s: `GEMM_LANES_M` x `GEMM_LANES_N` invocations, each owning
//! `GEMM_RM` x `GEMM_RN` outputs, staging `GEMM_DEPTH` depths of both operands at a time (the
//! K-step). The host picks one of [`GemmConfig::ALL`] (the tests compile every override value
//! and run every kernel at each of these), from the output's shape, or times them (the
//! assignment, the Gram product). The depth changes no bits: every output is one fma chain
//! over the depths in increasing order, however they are staged.
//!
//! Design: discrete, integrated and virtual GPUs run the GPU design (tiles staged in workgroup
//! memory) by fixed rules, whatever a CPU adapter would prefer; CPU adapters (lavapipe), where
//! a workgroup-memory or storage load is a loop over the SIMD lanes, have their own variants
//! (flat textures, uniform slices, one row per invocation), among which the autotuner picks.
//! `WGPU_UNSUPERVISED_DESIGN=gpu` or `=cpu` forces one (benchmarks of the GPU design on
//! lavapipe; anything else or unset: by adapter type).

use crate::gpu::batch::Bind;
use crate::gpu::buffer::Chunk;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::shaders::shared::gemm as wgsl;
use crate::gpu::Gpu;

/// One shape of the tile core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct GemmConfig {
    /// Invocations along the tile's rows (`GEMM_LANES_M`).
    pub lanes_m: u32,
    /// Invocations along its columns (`GEMM_LANES_N`).
    pub lanes_n: u32,
    /// Rows per invocation (`GEMM_RM`, 4 or 8).
    pub rm: u32,
    /// Columns per invocation (`GEMM_RN`, 4 or 8).
    pub rn: u32,
    /// Depths per stage (`GEMM_DEPTH`, 8 or 16).
    pub depth: u32,
}

impl GemmConfig {
    /// 128 x 128 outputs, 256 invocations of 8 x 8, 8 depths a stage: large products.
    pub(crate) const LARGE: Self = Self::new(16, 16, 8, 8, 8);
    /// [`GemmConfig::LARGE`] with 16 depths a stage (llama.cpp's K-step at 128 x 128): half
    /// the barriers and load rounds per FMA, 16.5 KiB of workgroup memory instead of 8.25.
    /// Timed against the others by the assignment's and the Gram product's autotuner.
    pub(crate) const LARGE_DEEP: Self = Self::new(16, 16, 8, 8, 16);
    /// 64 x 64 outputs, 64 invocations of 8 x 8: products with an edge below 128.
    pub(crate) const SMALL: Self = Self::new(8, 8, 8, 8, 8);
    /// 128 x 32 outputs, 128 invocations of 8 x 4: few output columns (projections on a few
    /// components).
    pub(crate) const NARROW: Self = Self::new(16, 8, 8, 4, 8);
    /// Every configuration the host may pick (GPUs time them on first use; the tests run
    /// each).
    pub(crate) const ALL: [Self; 4] = [Self::LARGE, Self::LARGE_DEEP, Self::SMALL, Self::NARROW];

    const fn new(lanes_m: u32, lanes_n: u32, rm: u32, rn: u32, depth: u32) -> Self {
        Self {
            lanes_m,
            lanes_n,
            rm,
            rn,
            depth,
        }
    }

    /// The override values of a dispatch (`GEMM_STAGE_VEC4S` sizes the stages in workgroup
    /// memory: `depth` rows of a padded tile edge).
    pub(crate) fn overrides(self) -> [(&'static str, u32); 6] {
        [
            ("GEMM_LANES_M", self.lanes_m),
            ("GEMM_LANES_N", self.lanes_n),
            ("GEMM_RM", self.rm),
            ("GEMM_RN", self.rn),
            ("GEMM_DEPTH", self.depth),
            ("GEMM_STAGE_VEC4S", self.stage_vec4s()),
        ]
    }

    /// vec4s of one operand's stage in workgroup memory.
    pub(crate) fn stage_vec4s(self) -> u32 {
        self.depth * wgsl::GEMM_ROW_VEC4S
    }

    /// Whether this device's workgroup memory holds both operands' stages and the few words
    /// a kernel keeps beside them: 8448 bytes at depth 8, 16 896 at depth 16, past the 16 KiB
    /// that WebGPU promises (so the deep tile is timed only where the adapter has more).
    pub(crate) fn fits(self, gpu: &Gpu) -> bool {
        let stages = 2 * u64::from(self.stage_vec4s()) * 16;
        stages + KERNEL_WORKGROUP_BYTES
            <= u64::from(gpu.device().limits().max_compute_workgroup_storage_size)
    }

    /// Every configuration of [`GemmConfig::ALL`] this device runs ([`GemmConfig::fits`]):
    /// what the autotuners time.
    pub(crate) fn all_fitting(gpu: &Gpu) -> Vec<Self> {
        Self::ALL.into_iter().filter(|c| c.fits(gpu)).collect()
    }

    /// Output rows of a tile.
    pub(crate) fn tile_m(self) -> usize {
        (self.lanes_m * self.rm) as usize
    }

    /// Output columns of a tile.
    pub(crate) fn tile_n(self) -> usize {
        (self.lanes_n * self.rn) as usize
    }

    /// The configuration for an output of `rows` x `cols`: a 128-wide tile when both edges
    /// fill one, 128 x 32 for at most 32 columns, 64 x 64 otherwise.
    pub(crate) fn for_shape(rows: usize, cols: usize) -> Self {
        if cols <= 32 && rows >= 128 {
            Self::NARROW
        } else if rows >= 128 && cols >= 128 {
            Self::LARGE
        } else {
            Self::SMALL
        }
    }
}

const _: () = assert!(wgsl::GEMM_TILE_MAX == 128 && wgsl::GEMM_DEPTH_MAX == 16);

/// Workgroup memory a tile-core kernel may keep beside the stages (a counter of changed
/// labels, a few flags): a generous bound, checked by `every_configuration_fits_...`.
const KERNEL_WORKGROUP_BYTES: u64 = 256;

#[cfg(test)]
thread_local! {
    /// The tests' choice of design on this thread, over the environment's and the adapter's.
    static DESIGN: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with the CPU-adapter design (`cpu_like`) or the GPU design forced on this thread:
/// the tests run whole fits in the GPU design on lavapipe without the process-wide
/// `WGPU_UNSUPERVISED_DESIGN`.
#[cfg(test)]
pub(crate) fn with_design<R>(cpu_like: bool, f: impl FnOnce() -> R) -> R {
    let was = DESIGN.replace(Some(cpu_like));
    let out = f();
    DESIGN.set(was);
    out
}

/// Whether this adapter gets the CPU-adapter variants (see the module docs).
pub(crate) fn cpu_like(gpu: &Gpu) -> bool {
    #[cfg(test)]
    if let Some(forced) = DESIGN.get() {
        return forced;
    }
    match std::env::var("WGPU_UNSUPERVISED_DESIGN").as_deref() {
        Ok("gpu") => false,
        Ok("cpu") => true,
        _ => gpu.info().device_type == "Cpu",
    }
}

/// The buffer behind a binding and the byte offset the binding starts at.
pub(crate) fn buffer_of<'a>(bind: Bind<'a>) -> Option<(&'a wgpu::Buffer, u64, u64)> {
    match bind {
        Bind::Whole(buffer) => Some((buffer, 0, buffer.size())),
        Bind::Range(buffer, offset, size) => Some((buffer, offset, size)),
        Bind::Texture(_) => None,
    }
}

/// The binding of an operand's range as vec4s, or `placeholder` under 16 bytes.
pub(crate) fn vec4_view<'a>(bind: Bind<'a>, placeholder: &'a DeviceBuffer<f32>) -> Bind<'a> {
    match buffer_of(bind) {
        Some((buffer, offset, size)) if size >= 16 => Bind::Range(buffer, offset, size / 16 * 16),
        _ => placeholder.bind(),
    }
}

/// The binding of the chunk's rows as vec4s (`x4`, `data4`, `queries4`): whole vec4s of the
/// chunk's range, or `placeholder` for a range under 16 bytes (then rows are never read as
/// vec4s).
pub(crate) fn rows_vec4<'a>(chunk: &'a Chunk, placeholder: &'a DeviceBuffer<f32>) -> Bind<'a> {
    vec4_view(chunk.bind(), placeholder)
}

/// A buffer of one vec4 to bind as `x4` where the rows are too short to be read as vec4s.
pub(crate) fn vec4_placeholder(gpu: &Gpu, chunk: &Chunk) -> DeviceBuffer<f32> {
    DeviceBuffer::zeroed(
        gpu,
        "x4 placeholder",
        if chunk.bind_size >= 16 { 1 } else { 4 },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_configuration_fits_the_staging_and_the_loads() {
        for c in GemmConfig::ALL {
            assert!(c.tile_m() <= wgsl::GEMM_TILE_MAX as usize);
            assert!(c.tile_n() <= wgsl::GEMM_TILE_MAX as usize);
            assert!([4, 8].contains(&c.rm) && [4, 8].contains(&c.rn));
            assert!([8, 16].contains(&c.depth) && c.depth <= wgsl::GEMM_DEPTH_MAX);
            let wg = (c.lanes_m * c.lanes_n) as usize;
            // The prefetch registers hold a stage's loads, and one invocation per tile row
            // finishes the rows (assign_tiled).
            for tile in [c.tile_m(), c.tile_n()] {
                assert!(
                    (tile * c.depth as usize / 4).div_ceil(wg) <= wgsl::GEMM_MAX_LOADS as usize
                );
                assert!(tile % 4 == 0);
                // The RBF product stages the tile's data rows GEMM_DEPTH at a time.
                assert!(tile % c.depth as usize == 0);
            }
            assert!(c.tile_m() <= wg);
            // assign_tiled merges a row's searches through 2 stages of scratch.
            assert!(c.tile_m() * 4 <= 2 * c.stage_vec4s() as usize);
        }
        assert_eq!(GemmConfig::for_shape(1000, 256), GemmConfig::LARGE);
        assert_eq!(GemmConfig::for_shape(1000, 16), GemmConfig::NARROW);
        assert_eq!(GemmConfig::for_shape(50, 256), GemmConfig::SMALL);
    }
}
