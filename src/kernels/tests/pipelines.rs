//! The host layer (`gpu::batch`, `gpu::pipeline`) against the real kernel table, on a real
//! device (lavapipe in CI): binding by name and its errors, every reflected entry point
//! building on the device at every override value the host may pick, and dispatch that
//! creates no buffers, layouts or pipelines once warm. (They live here, above `gpu/`, because
//! the override values are the kernels' business.)

use crate::data::Matrix;
use crate::error::Error;
use crate::gpu::batch::{Batch, Bind, Grid};
use crate::gpu::profile::Work;
use crate::gpu::shaders::{self, primitives::rows, EntryPoint, Shader};
use crate::gpu::tests::{gpu, random};
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels;
use crate::kernels::primitives::gemm::GemmConfig;
use crate::kernels::primitives::pairs;

/// `RowsParams` of rows.wgsl, as its wrapper lays it out.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct RowsParams {
    n_rows: u32,
    x_offset: u32,
    d: u32,
    n_indices: u32,
    grid_x: u32,
    _pad: [u32; 3],
}

/// A valid gather of one row: matrix rows, index pairs, output.
struct Gather {
    xg: GpuMatrix,
    indices: wgpu::Buffer,
    out: wgpu::Buffer,
    params: RowsParams,
}

fn gather(gpu: &Gpu) -> Gather {
    let x = random(8 * 3, 1);
    let xg = GpuMatrix::upload(gpu, &Matrix::new(&x, 3).unwrap()).unwrap();
    let indices = gpu.buffer_from("indices", &[[2u32, 0u32]], wgpu::BufferUsages::empty());
    let out = gpu.buffer_zeroed("out", 12);
    let params = RowsParams {
        n_rows: 8,
        x_offset: 0,
        d: 3,
        n_indices: 1,
        grid_x: 1,
        _pad: [0; 3],
    };
    Gather {
        xg,
        indices,
        out,
        params,
    }
}

fn gpu_error(r: crate::error::Result<()>) -> String {
    match r {
        Err(Error::Gpu(message)) => message,
        other => panic!("expected Error::Gpu, got {other:?}"),
    }
}

#[test]
fn buffers_are_bound_by_name_and_wrong_names_are_errors() {
    let gpu = gpu();
    let g = gather(&gpu);
    let x = g.xg.chunks()[0].bind();
    let (indices, out) = (Bind::Whole(&g.indices), Bind::Whole(&g.out));
    let grid = Grid { x: 1, y: 1 };
    let mut batch = Batch::new(&gpu, "names");
    let mut dispatch = |binds: &[(&str, Bind<'_>)]| {
        batch.dispatch(
            rows::GATHER_ROWS,
            &[],
            &g.params,
            binds,
            grid,
            Work::default(),
        )
    };
    let unknown = gpu_error(dispatch(&[
        ("x", x),
        ("indexes", indices),
        ("gathered", out),
    ]));
    assert!(
        unknown.contains("primitives/rows.wgsl::gather_rows has no buffer `indexes`")
            && unknown.contains("x, indices, gathered"),
        "{unknown}"
    );
    let missing = gpu_error(dispatch(&[("x", x), ("gathered", out)]));
    assert!(missing.contains("needs buffer `indices`"), "{missing}");
    let twice = gpu_error(dispatch(&[("x", x), ("x", x), ("indices", indices)]));
    assert!(twice.contains("`x` bound twice"), "{twice}");
    // The uniform is the parameter struct, never a buffer the caller names.
    let uniform = gpu_error(dispatch(&[
        ("params", x),
        ("indices", indices),
        ("gathered", out),
    ]));
    assert!(uniform.contains("no buffer `params`"), "{uniform}");
    // Bound by name, in any order: the row lands where the index pair says.
    dispatch(&[("gathered", out), ("indices", indices), ("x", x)]).unwrap();
    let h = batch.read(&g.out, 0, 12);
    let back = batch.finish().unwrap().f32s(h);
    assert_eq!(back, g.xg.to_host(&gpu).unwrap()[6..9]);
}

#[test]
fn parameters_and_overrides_are_checked_against_the_shader() {
    let gpu = gpu();
    let g = gather(&gpu);
    let binds = [
        ("x", g.xg.chunks()[0].bind()),
        ("indices", Bind::Whole(&g.indices)),
        ("gathered", Bind::Whole(&g.out)),
    ];
    let grid = Grid { x: 1, y: 1 };
    let mut batch = Batch::new(&gpu, "checks");
    let short = [0u32; 4];
    let size = gpu_error(batch.dispatch(
        rows::GATHER_ROWS,
        &[],
        &short,
        &binds,
        grid,
        Work::default(),
    ));
    assert!(
        size.contains("16 bytes for `RowsParams`, which has 32"),
        "{size}"
    );
    let unknown = [(kernels::FEATURE_WG_SIZE, 64)];
    let o = gpu_error(batch.dispatch(
        rows::GATHER_ROWS,
        &unknown,
        &g.params,
        &binds,
        grid,
        Work::default(),
    ));
    assert!(o.contains("has no override `FEATURE_WG_SIZE`"), "{o}");
    // An entry point sized by the host must be given its size.
    let moments = shaders::primitives::reduce::COLUMN_MOMENTS;
    let moment_binds = [
        ("x", g.xg.chunks()[0].bind()),
        ("shift", Bind::Whole(&g.out)),
        ("partial_sum", Bind::Whole(&g.out)),
        ("partial_sum_sq", Bind::Whole(&g.out)),
    ];
    let needs = gpu_error(batch.dispatch(
        moments,
        &[],
        &[0u32; 8],
        &moment_binds,
        grid,
        Work::default(),
    ));
    assert!(
        needs.contains("needs a value for override `FEATURE_WG_SIZE`"),
        "{needs}"
    );
}

/// Every entry point of every shader, at every override value the host may pick.
/// Whether `entry` uses subgroup operations (built only where the device has them).
fn needs_subgroups(entry: &EntryPoint) -> bool {
    entry.shader == shaders::assign::tiled_subgroup::ASSIGN_TILED_SUBGROUP.shader
}

fn every_kernel() -> Vec<(&'static EntryPoint, Vec<(&'static str, u32)>)> {
    let mut all = Vec::new();
    for shader in Shader::ALL {
        for &entry in shader.entry_points() {
            assert_eq!(entry.shader, shader);
            match entry.overrides {
                [] => all.push((entry, vec![])),
                [name] if *name == kernels::FEATURE_WG_SIZE => {
                    for wg in kernels::feature_wg_sizes() {
                        all.push((entry, vec![(*name, wg)]));
                    }
                }
                [name] if *name == pairs::PAIR_D4 => {
                    // Every padded row width the uniform kernels take.
                    for d in 1..=shaders::shared::pair_params::UNIFORM_MAX_D4 {
                        all.push((entry, vec![(*name, d)]));
                    }
                }
                [name] if *name == kernels::assign::texture::TEXTURE_BLOCKS => {
                    for blocks in [1, 2] {
                        all.push((entry, vec![(*name, blocks)]));
                    }
                }
                [name] if *name == kernels::assign::stream::STREAM_K => {
                    // Every K the small-K assignment takes.
                    for k in 1..=kernels::assign::SMALL_K as u32 {
                        all.push((entry, vec![(*name, k)]));
                    }
                }
                [name] if *name == kernels::centroids::update::SEGMENT_WEIGHTED => {
                    for weighted in [0, 1] {
                        all.push((entry, vec![(*name, weighted)]));
                    }
                }
                [name] if *name == kernels::mixture::estep::NORMALIZE_K => {
                    for k in 1..=kernels::mixture::estep::NORMALIZE_MAX_K as u32 {
                        all.push((entry, vec![(*name, k)]));
                    }
                }
                [name]
                    if *name == kernels::mixture::estep_tiled::ET_LANES_C
                        || *name == kernels::mixture::mstep::MOMENTS_LANES_C =>
                {
                    // Invocations along the components of the tiled diagonal E-step's and
                    // moments' tiles.
                    for lanes in [4, 8, 16] {
                        all.push((entry, vec![(*name, lanes)]));
                    }
                }
                [a, b] | [b, a]
                    if *a == kernels::mixture::estep::ESTEP_D4
                        && *b == kernels::mixture::estep::ESTEP_ROWS =>
                {
                    // Every padded row width the uniform diagonal E-step takes, at the rows
                    // per invocation the host gives it.
                    for d4 in 1..=shaders::mixture::estep::ESTEP_MAX_D4 {
                        let rows = kernels::mixture::estep::diag_uniform_rows(d4 as usize) as u32;
                        all.push((entry, vec![(*a, d4), (*b, rows)]));
                    }
                }
                [a, b] | [b, a] if *a == pairs::PAIR_D4 && *b == kernels::neighbors::knn::KNN_K => {
                    let max_k = kernels::neighbors::knn::KNN_UNIFORM_MAX_K as u32;
                    for d in 1..=shaders::shared::pair_params::UNIFORM_MAX_D4 {
                        for k in [1, 10, max_k] {
                            all.push((entry, vec![(*a, d), (*b, k)]));
                        }
                    }
                }
                [name] if *name == kernels::linalg::cholesky_qr::TRI_LEN => {
                    // The packed triangles of blocks small enough for any adapter's 16 KiB of
                    // workgroup memory (the host sizes them to p(p+1)/2).
                    for p in [1u32, 7, 64] {
                        all.push((entry, vec![(*name, p * (p + 1) / 2)]));
                    }
                }
                names if names.iter().all(|n| n.starts_with("GEMM_")) => {
                    for config in GemmConfig::ALL {
                        let values = config.overrides();
                        assert!(names.iter().all(|n| values.iter().any(|(v, _)| v == n)));
                        all.push((entry, values.to_vec()));
                    }
                }
                other => panic!("{}: no host values known for {other:?}", entry.label()),
            }
        }
    }
    all
}

#[test]
fn every_entry_point_builds_from_the_reflected_layout() {
    let gpu = gpu();
    // Kernels that use subgroup operations build only on devices with `Features::SUBGROUP`
    // (the host never asks for them elsewhere: `tiled_subgroup::runs`).
    let subgroups = gpu.subgroup_lanes().is_some();
    let built = |entry: &EntryPoint| subgroups || !needs_subgroups(entry);
    let all: Vec<_> = every_kernel()
        .into_iter()
        .filter(|(entry, _)| built(entry))
        .collect();
    for (entry, overrides) in &all {
        assert!(entry.uniform_size() > 0, "{}", entry.label());
        gpu.kernel(entry, overrides)
            .unwrap_or_else(|e| panic!("{} {overrides:?}: {e}", entry.label()));
    }
    let entry_points = Shader::ALL
        .iter()
        .flat_map(|s| s.entry_points())
        .filter(|e| built(e))
        .count();
    assert_eq!(gpu.cache.counts(), (entry_points, all.len()));
    // Asked again, nothing new is made.
    for (entry, overrides) in &all {
        gpu.kernel(entry, overrides).unwrap();
    }
    assert_eq!(gpu.cache.counts(), (entry_points, all.len()));
}

/// Gathers row n − 1 − i of `xg` into slot i of `out` with one dispatch per row: each
/// dispatch finds its row only through its own parameters (`x_offset`).
fn gather_one_by_one(gpu: &Gpu, xg: &GpuMatrix, out: &wgpu::Buffer, slot: u64) -> Vec<f32> {
    let (n, d) = (xg.n_rows(), xg.n_features());
    let first_row = gpu.buffer_from("pair", &[[0u32, 0u32]], wgpu::BufferUsages::empty());
    let mut batch = Batch::new(gpu, "one dispatch per row");
    for i in 0..n {
        let params = RowsParams {
            n_rows: n as u32,
            x_offset: ((n - 1 - i) * d) as u32,
            d: d as u32,
            n_indices: 1,
            grid_x: 1,
            _pad: [0; 3],
        };
        let binds = [
            ("x", xg.chunks()[0].bind()),
            ("indices", Bind::Whole(&first_row)),
            ("gathered", Bind::Range(out, i as u64 * slot, slot)),
        ];
        let grid = Grid { x: 1, y: 1 };
        batch
            .dispatch(
                rows::GATHER_ROWS,
                &[],
                &params,
                &binds,
                grid,
                Work::default(),
            )
            .unwrap();
    }
    let h = batch.read(out, 0, n as u64 * slot);
    let back = batch.finish().unwrap().f32s(h);
    back.chunks(slot as usize / 4)
        .flat_map(|s| s[..d].to_vec())
        .collect()
}

#[test]
fn every_dispatch_reads_its_own_parameters_and_warm_batches_create_nothing() {
    let gpu = gpu();
    // More dispatches than one page of parameter slots holds.
    let limits = gpu.device().limits();
    let stride = std::mem::size_of::<RowsParams>()
        .next_multiple_of(limits.min_uniform_buffer_offset_alignment as usize);
    let n = crate::gpu::uniforms::PAGE_BYTES as usize / stride + 10;
    let d = 3;
    let x = random(n * d, 7);
    let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    let slot = u64::from(limits.min_storage_buffer_offset_alignment).max(d as u64 * 4);
    let out = gpu.buffer_zeroed("gathered rows", n as u64 * slot);
    let expected: Vec<f32> = (0..n)
        .rev()
        .flat_map(|r| x[r * d..(r + 1) * d].to_vec())
        .collect();
    assert_eq!(gather_one_by_one(&gpu, &xg, &out, slot), expected);
    assert_eq!(gpu.uniform_pages.created(), 2);
    let counts = gpu.cache.counts();
    // Warm: the same work again makes no page, layout or pipeline.
    for _ in 0..3 {
        assert_eq!(gather_one_by_one(&gpu, &xg, &out, slot), expected);
    }
    assert_eq!(
        gpu.uniform_pages.created(),
        2,
        "a warm batch made new pages"
    );
    assert_eq!(
        gpu.cache.counts(),
        counts,
        "a warm batch made layouts or pipelines"
    );
}

#[test]
fn parameter_structs_of_the_wrong_size_do_not_compile() {
    // `check_params` runs in each wrapper's `const _` (a compile error there); at run time
    // the same check panics, which shows it rejects what the compiler would.
    shaders::check_params::<RowsParams>(rows::ENTRY_POINTS);
    let wrong = std::panic::catch_unwind(|| {
        shaders::check_params::<[u32; 7]>(rows::ENTRY_POINTS);
    });
    assert!(wrong.is_err());
}
