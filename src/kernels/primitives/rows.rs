//! Row gathering and padding, non-finite detection, normalisation and scaling by powers of two on the
//! device (`shaders/primitives/rows.wgsl`).

use std::borrow::Cow;

use bytemuck::{Pod, Zeroable};

use crate::error::{Error, Result};
use crate::gpu::batch::{Batch, Bind, Grid};
use crate::gpu::buffer::{Chunk, GpuMatrix};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::profile::Work;
use crate::gpu::shaders::{check_params, primitives::rows as wgsl, EntryPoint};
use crate::gpu::{Gpu, GpuInput, GpuVector};
use crate::kernels::ROW_WG_SIZE;

/// Twin of `RowsParams` in shaders/primitives/rows.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(crate) struct RowsParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    n_indices: u32,
    grid_x: u32,
    row_base: u32,
    scale: f32,
    stride: u32,
}

const _: () = check_params::<RowsParams>(wgsl::ENTRY_POINTS);

fn element_grid(gpu: &Gpu, elements: u64) -> Result<Grid> {
    gpu.grid(elements.div_ceil(ROW_WG_SIZE as u64))
}

/// Records copies of the given global rows of `m` into `out`: row `rows[i]` lands at row `i`
/// of `out` (which must hold `rows.len() * d` f32).
pub(crate) fn gather_rows(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    m: &GpuMatrix,
    rows: &[usize],
    out: &DeviceBuffer<f32>,
) -> Result<()> {
    let d = m.n_features();
    for chunk in m.chunks() {
        let pairs: Vec<[u32; 2]> = rows
            .iter()
            .enumerate()
            .filter(|(_, &r)| r >= chunk.row_start && r < chunk.row_start + chunk.n_rows)
            .map(|(i, &r)| [(r - chunk.row_start) as u32, i as u32])
            .collect();
        if pairs.is_empty() {
            continue;
        }
        let indices = DeviceBuffer::from_slice(gpu, "gather indices", &pairs);
        gather_chunk_rows(gpu, batch, chunk, d, &indices, out)?;
    }
    Ok(())
}

fn gather_chunk_rows(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    chunk: &Chunk,
    d: usize,
    indices: &DeviceBuffer<[u32; 2]>,
    out: &DeviceBuffer<f32>,
) -> Result<()> {
    let n_indices = indices.len();
    let grid = element_grid(gpu, (n_indices * d) as u64)?;
    let params = RowsParams {
        n_rows: chunk.n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        n_indices: n_indices as u32,
        grid_x: grid.x,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        wgsl::GATHER_ROWS,
        &[],
        &params,
        &[
            ("x", chunk.bind()),
            ("indices", indices.bind()),
            ("gathered", out.bind()),
        ],
        grid,
        Work::f32s(0.0, (2 * n_indices * (d + 1)) as f64),
    )
}

/// Records copies of `n_rows` rows of `d` values (from value `x_offset` of `x`) into `out`
/// as rows of `stride` values, zero after the d-th: the rows start on vec4 boundaries.
pub(crate) fn pad_rows(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    (x, x_offset): (Bind<'_>, u32),
    (n_rows, d, stride): (usize, usize, usize),
    out: &DeviceBuffer<f32>,
) -> Result<()> {
    let grid = element_grid(gpu, (n_rows * stride) as u64)?;
    let params = RowsParams {
        n_rows: n_rows as u32,
        x_offset,
        d: d as u32,
        grid_x: grid.x,
        stride: stride as u32,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        wgsl::PAD_ROWS,
        &[],
        &params,
        &[("x", x), ("gathered", out.bind())],
        grid,
        Work::f32s(0.0, (n_rows * (d + stride)) as f64),
    )
}

/// Reads the given global rows of `m` back to the host (row-major).
pub(crate) fn read_rows(gpu: &Gpu, m: &GpuMatrix, rows: &[usize]) -> Result<Vec<f32>> {
    gpu.scoped("gathering rows", || {
        let d = m.n_features();
        let out = DeviceBuffer::zeroed(gpu, "gathered rows", rows.len() * d);
        let mut batch = Batch::new(gpu, "read_rows");
        gather_rows(gpu, &mut batch, m, rows, &out)?;
        let h = batch.read_all(&out);
        Ok(batch.finish()?.f32s(h))
    })
}

impl GpuMatrix {
    /// Views `n_rows` x `n_features` f32 values of a caller's buffer, starting at
    /// `byte_offset`, without copying. The buffer needs `STORAGE` usage. The values are
    /// checked for NaN/inf on the device ([`Error::NonFinite`] gives row and column), by the
    /// `find_non_finite` kernel beside which this constructor lives (the host layer itself
    /// runs no kernel).
    ///
    /// Chunks start at any row: bindings are placed at the alignment boundary before the
    /// chunk and the kernels skip the gap.
    pub fn from_buffer(
        gpu: &Gpu,
        buffer: &wgpu::Buffer,
        byte_offset: u64,
        n_rows: usize,
        n_features: usize,
    ) -> Result<Self> {
        let m = Self::from_buffer_unchecked(gpu, buffer, byte_offset, n_rows, n_features)?;
        if let Some((row, col)) = find_non_finite(gpu, &m)? {
            return Err(Error::NonFinite {
                row,
                col,
                value: "NaN or inf".into(),
            });
        }
        Ok(m)
    }
}

/// One pass of `entry` over every value of `chunk` (rows of `d` features), reading the
/// chunk and writing what it finds to `found`.
fn scan_chunk(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    entry: &'static EntryPoint,
    chunk: &Chunk,
    d: usize,
    found: (&str, Bind<'_>),
) -> Result<()> {
    let values = chunk.n_rows * d;
    let grid = element_grid(gpu, values as u64)?;
    let params = RowsParams {
        n_rows: chunk.n_rows as u32,
        x_offset: chunk.x_offset,
        d: d as u32,
        grid_x: grid.x,
        ..Zeroable::zeroed()
    };
    batch.dispatch(
        entry,
        &[],
        &params,
        &[("x", chunk.bind()), found],
        grid,
        Work::f32s(values as f64, values as f64),
    )
}

/// The (row, column) of the first NaN or infinity in `m`, if any, found on the device.
pub(crate) fn find_non_finite(gpu: &Gpu, m: &GpuMatrix) -> Result<Option<(usize, usize)>> {
    let d = m.n_features();
    gpu.scoped("checking the data for NaN/inf", || {
        let mut batch = Batch::new(gpu, "find_non_finite");
        let mut handles = Vec::new();
        for chunk in m.chunks() {
            let first = DeviceBuffer::from_slice(gpu, "first non-finite", &[u32::MAX]);
            let found = ("first_non_finite", first.bind());
            scan_chunk(gpu, &mut batch, wgsl::FIND_NON_FINITE, chunk, d, found)?;
            handles.push((chunk.row_start, batch.read_all(&first)));
        }
        let back = batch.finish()?;
        Ok(handles.into_iter().find_map(|(row_start, h)| {
            let e = back.u32s(h)[0];
            (e != u32::MAX).then(|| (row_start + e as usize / d, e as usize % d))
        }))
    })
}

/// `m` with every row divided by its Euclidean norm, as a new matrix (the input is not
/// changed). A row of zeros has no direction: [`Error::InvalidParameter`] names the first.
pub(crate) fn normalize_rows(gpu: &Gpu, m: &GpuMatrix) -> Result<GpuMatrix> {
    let d = m.n_features();
    let first_zero = gpu.scoped("normalising rows", || {
        Ok(DeviceBuffer::from_slice(gpu, "first zero row", &[u32::MAX]))
    })?;
    let out = m.map_rows(
        gpu,
        d,
        "normalising rows",
        |batch, chunk, first, rows, out| {
            let grid = gpu.grid((rows as u64).div_ceil(ROW_WG_SIZE as u64))?;
            let params = RowsParams {
                n_rows: rows as u32,
                x_offset: chunk.x_offset + (first * d) as u32,
                d: d as u32,
                grid_x: grid.x,
                row_base: (chunk.row_start + first) as u32,
                ..Zeroable::zeroed()
            };
            batch.dispatch(
                wgsl::NORMALIZE_ROWS,
                &[],
                &params,
                &[
                    ("x", chunk.bind()),
                    ("normalized", out.bind()),
                    ("first_zero_row", first_zero.bind()),
                ],
                grid,
                Work::f32s((3 * rows * d) as f64, (3 * rows * d) as f64),
            )
        },
    )?;
    let first = gpu.scoped("normalising rows", || {
        let mut batch = Batch::new(gpu, "normalize_rows");
        let h = batch.read_all(&first_zero);
        Ok(batch.finish()?.u32s(h)[0])
    })?;
    if first != u32::MAX {
        return Err(Error::invalid(
            "data",
            format!(
                "row {first} is all zeros: it has no direction, so cosine K-Means cannot place it"
            ),
        ));
    }
    Ok(out)
}

/// The largest |value| of `m`, found on the device (data already checked finite).
pub(crate) fn max_abs(gpu: &Gpu, m: &GpuMatrix) -> Result<f32> {
    let d = m.n_features();
    let bits = gpu.run_batch("finding the data's largest value", |batch| {
        let bits = DeviceBuffer::<u32>::zeroed(gpu, "largest |value|", 1);
        for chunk in m.chunks() {
            scan_chunk(
                gpu,
                batch,
                wgsl::MAX_ABS,
                chunk,
                d,
                ("max_abs_bits", bits.bind()),
            )?;
        }
        Ok(bits)
    })?;
    Ok(f32::from_bits(bits.to_host_first(gpu)?))
}

/// `m` times `scale` (a power of two, so exact), as a new matrix chunked like `m`.
pub(crate) fn scale_rows(gpu: &Gpu, m: &GpuMatrix, scale: f32) -> Result<GpuMatrix> {
    gpu.scoped("scaling the data", || {
        let mut batch = Batch::new(gpu, "scaling the data");
        let out = scale_rows_in(gpu, &mut batch, m, scale)?;
        batch.finish()?;
        Ok(out)
    })
}

/// [`scale_rows`] recorded into `batch`: how an output computed on scaled data returns to
/// the caller's units within the caller's own command encoder.
pub(crate) fn scale_rows_in(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    m: &GpuMatrix,
    scale: f32,
) -> Result<GpuMatrix> {
    let d = m.n_features();
    m.map_rows_in(
        gpu,
        batch,
        d,
        "scaling the data",
        |batch, chunk, first, rows, out| {
            let grid = element_grid(gpu, (rows * d) as u64)?;
            let params = RowsParams {
                n_rows: rows as u32,
                x_offset: chunk.x_offset + (first * d) as u32,
                d: d as u32,
                grid_x: grid.x,
                scale,
                ..Zeroable::zeroed()
            };
            batch.dispatch(
                wgsl::SCALE_ROWS,
                &[],
                &params,
                &[("x", chunk.bind()), ("scaled", out.bind())],
                grid,
                Work::f32s((rows * d) as f64, (2 * rows * d) as f64),
            )
        },
    )
}

/// `v` times `scale` (a power of two), recorded into `batch`, as a new vector chunked alike:
/// per-row outputs computed on scaled data (squared distances) back in the caller's units.
pub(crate) fn scale_vector_in(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    v: &GpuVector<f32>,
    scale: f32,
) -> Result<GpuVector<f32>> {
    let mut chunks = Vec::with_capacity(v.chunks.len());
    for chunk in &v.chunks {
        let n = chunk.len();
        let out = DeviceBuffer::<f32>::zeroed(gpu, "scaled values", n);
        let grid = element_grid(gpu, n as u64)?;
        let params = RowsParams {
            n_rows: n as u32,
            d: 1,
            grid_x: grid.x,
            scale,
            ..Zeroable::zeroed()
        };
        batch.dispatch(
            wgsl::SCALE_ROWS,
            &[],
            &params,
            &[("x", chunk.bind()), ("scaled", out.bind())],
            grid,
            Work::f32s(n as f64, 2.0 * n as f64),
        )?;
        chunks.push(out);
    }
    Ok(GpuVector { chunks })
}

/// The rows of `x` in f32's comfortable range and the factor they were multiplied by: `x`
/// itself and 1 when its largest |value| lies in [`crate::data::F32_RANGE`], else a copy
/// times the power of two [`crate::data::range_scale`] picks (the largest value then in
/// [1, 2)). Every fit and evaluation runs on these rows and reports in the caller's units,
/// so data scaled by 1e-30 or 1e20 give the answers of unscaled data.
pub(crate) fn in_f32_range<'x>(gpu: &Gpu, x: &'x GpuMatrix) -> Result<(Cow<'x, GpuMatrix>, f32)> {
    let scale = crate::data::range_scale(max_abs(gpu, x)?);
    if scale == 1.0 {
        return Ok((Cow::Borrowed(x), 1.0));
    }
    Ok((Cow::Owned(scale_rows(gpu, x, scale)?), scale))
}

/// `x` on the device, multiplied by the power of two that brings the larger of its largest
/// |value| and `other_max` (a model's largest parameter, which meets the rows in the same
/// squares) into f32's comfortable range, and that factor. A host matrix is measured on the
/// host (no extra device pass); device data by one [`max_abs`] pass.
pub(crate) fn input_in_f32_range<'x>(
    gpu: &Gpu,
    x: &'x impl GpuInput,
    other_max: f32,
) -> Result<(Cow<'x, GpuMatrix>, f32)> {
    let host_max = x.as_source().and_then(|s| s.max_abs());
    let xg = x.on_gpu(gpu)?;
    let data_max = match host_max {
        Some(m) => m,
        None => max_abs(gpu, &xg)?,
    };
    let scale = crate::data::range_scale(data_max.max(other_max));
    if scale == 1.0 {
        return Ok((xg, 1.0));
    }
    Ok((Cow::Owned(scale_rows(gpu, &xg, scale)?), scale))
}
