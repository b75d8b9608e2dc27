//! The RBF product of spectral clustering (`affinity.rs`): every variant against f64 host
//! sums, with chunks, several column passes, uniform slices and data split into runs, data far
//! from the origin (the tiled product's shift), and past the size where llvmpipe's loop budget
//! (`GpuInfo::loop_back_edge_budget`) would cut a dispatch short.

use super::affinity::{rbf_times_block_with, RbfVariant};
use crate::data::Matrix;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::tests::{gpu, random};
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::primitives::gemm::GemmConfig;
use crate::kernels::primitives::pairs::UNIFORM_MAX_D;

/// A device whose data chunks hold `rows` rows of `d` features, or the shared one.
fn chunked<'a>(shared: &'a Gpu, own: &'a Gpu, rows: Option<usize>, d: usize) -> &'a Gpu {
    match rows {
        Some(rows) => {
            own.set_max_chunk_bytes((rows * d * 4) as u64);
            own
        }
        None => shared,
    }
}

/// A'·V in f64 from the f32 values (the reference), and per output the sum of the terms'
/// magnitudes Σ_{j ≠ q} w_qj |v_jc|: the scale that a sum's rounding error is relative to
/// (an output of signed terms may cancel to near zero).
fn rbf_host(x: &[f32], v: &[f32], d: usize, m: usize, gamma: f64) -> (Vec<f64>, Vec<f64>) {
    let n = x.len() / d;
    let (mut sum, mut scale) = (vec![0.0f64; n * m], vec![0.0f64; n * m]);
    for i in 0..n {
        for j in (0..n).filter(|&j| j != i) {
            let d2: f64 = (0..d)
                .map(|f| (x[i * d + f] as f64 - x[j * d + f] as f64).powi(2))
                .sum();
            let w = (-gamma * d2).exp();
            for c in 0..m {
                sum[i * m + c] += w * v[j * m + c] as f64;
                scale[i * m + c] += w * (v[j * m + c] as f64).abs();
            }
        }
    }
    (sum, scale)
}

/// The largest error of `gpu` against the f64 `host`, relative to each output's `scale`.
fn relative_error(gpu: &[f32], (host, scale): &(Vec<f64>, Vec<f64>)) -> f64 {
    assert_eq!(gpu.len(), host.len());
    gpu.iter()
        .zip(host.iter().zip(scale))
        .map(|(&g, (&h, &s))| (g as f64 - h).abs() / s.max(f64::MIN_POSITIVE))
        .fold(0.0, f64::max)
}

/// Every variant that runs `d` features: the tiled kernel in each tile shape (forced on
/// lavapipe too), and the uniform one where D fits its registers.
fn rbf_variants(d: usize) -> Vec<RbfVariant> {
    let tiled = GemmConfig::ALL.into_iter().map(RbfVariant::Tiled);
    let uniform = (d <= UNIFORM_MAX_D).then_some(RbfVariant::Uniform);
    tiled.chain(uniform).collect()
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Error bound of the f32 products against f64, relative to the terms' magnitudes: the
/// GEMM form's d² carries about u·D·(‖x_q − s‖² + ‖x_j − s‖²), the sums u·N.
const RBF_TOLERANCE: f64 = 1e-4;

#[test]
fn the_rbf_product_is_right_in_every_variant_at_every_chunking_and_block_width() {
    let gpu = gpu();
    // 70 rows of 1, 17 and 3 features; 40 columns take two passes of the uniform kernel's
    // 16 and of the 128 x 32 tile's 32; chunks of 23 rows leave partial tiles and
    // workgroups, and unaligned rows (scalar loads); 32 features in chunks of 100 rows load
    // as vec4s; 1100 rows of 31 features with 20 columns fill several uniform slices (16384
    // values: 528 rows); 2000 x 33 runs in several dispatches within llvmpipe's loop budget.
    for (n, d, m, chunk) in [
        (70, 1, 3, None),
        (70, 17, 40, Some(23)),
        (70, 3, 32, Some(23)),
        (300, 32, 17, Some(100)),
        (1100, 31, 20, Some(700)),
        (2000, 33, 5, None),
    ] {
        let gamma = 0.7 / d as f64;
        let x = random(n * d, d as u64);
        let v: Vec<f32> = random(n * m, 100 + m as u64)
            .iter()
            .map(|a| a - 0.5)
            .collect();
        let host = rbf_host(&x, &v, d, m, gamma);
        let own = crate::gpu::Gpu::new().unwrap();
        let g = chunked(&gpu, &own, chunk, d);
        let xg = GpuMatrix::upload(g, &Matrix::new(&x, d).unwrap()).unwrap();
        let vb = DeviceBuffer::from_slice(g, "block", &v);
        let mut tiled: Option<Vec<f32>> = None;
        let mut worst = [None::<f64>; 2];
        for variant in rbf_variants(d) {
            let out = rbf_times_block_with(g, &xg, gamma as f32, &vb, m, variant).unwrap();
            let what = format!("n = {n}, D = {d}, m = {m}, chunk {chunk:?}, {variant:?}");
            let err = relative_error(&out, &host);
            assert!(err <= RBF_TOLERANCE, "{what}: relative error {err:e}");
            let w = &mut worst[usize::from(variant == RbfVariant::Uniform)];
            *w = Some(w.unwrap_or(0.0).max(err));
            // Every tile shape sums each query in the same order: the same bits.
            if let RbfVariant::Tiled(_) = variant {
                match &tiled {
                    None => tiled = Some(out),
                    Some(t) => assert!(same_bits(t, &out), "{what}: not the first tile's bits"),
                }
            }
        }
        eprintln!("n = {n}, D = {d}, m = {m}: relative error (tiled, uniform) {worst:?}");
    }
}

#[test]
fn the_tiled_rbf_product_keeps_its_digits_far_from_the_origin_and_repeats_its_bits() {
    // Data offset by 1e3 with a spread of 1: the GEMM form without the shift would take d²
    // as the difference of norms near D·1e6, and f32 keeps about 0.06·D of it, more than the
    // distances themselves. N not a multiple of any tile; 17 and 40 columns take two column
    // passes of the 128 x 32 tile; two seeds.
    let gpu = gpu();
    let mut worst = 0.0f64;
    for (n, d, m) in [
        (77, 1, 1),
        (150, 3, 5),
        (150, 30, 17),
        (130, 130, 5),
        (100, 3, 40),
    ] {
        for seed in [1u64, 2] {
            let gamma = 0.5 / d as f64;
            let x: Vec<f32> = random(n * d, seed * 1000 + d as u64)
                .iter()
                .map(|a| 1e3 + a)
                .collect();
            let v: Vec<f32> = random(n * m, seed * 77 + m as u64)
                .iter()
                .map(|a| a - 0.5)
                .collect();
            let host = rbf_host(&x, &v, d, m, gamma);
            let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
            let vb = DeviceBuffer::from_slice(&gpu, "block", &v);
            for config in GemmConfig::ALL {
                let variant = RbfVariant::Tiled(config);
                let what = format!("n = {n}, D = {d}, m = {m}, seed {seed}, {config:?}");
                let out = rbf_times_block_with(&gpu, &xg, gamma as f32, &vb, m, variant).unwrap();
                let err = relative_error(&out, &host);
                assert!(err <= RBF_TOLERANCE, "{what}: relative error {err:e}");
                worst = worst.max(err);
                // The same input again: the same bits.
                let again = rbf_times_block_with(&gpu, &xg, gamma as f32, &vb, m, variant).unwrap();
                assert!(same_bits(&out, &again), "{what}: not the same bits twice");
            }
        }
    }
    eprintln!("largest relative error of the tiled RBF product, offset 1e3: {worst:e}");
}

#[test]
fn the_tiled_rbf_product_is_whole_past_llvmpipes_loop_budget() {
    // 3000 rows of 400 features: one invocation walking every data tile in one dispatch would
    // take about 30 back-edges a row, past llvmpipe's 65 535, and pairs would go missing; the
    // host dispatches the data in runs of whole tiles within the budget.
    let gpu = gpu();
    let (n, d, m) = (3000, 400, 2);
    let gamma = 1.0 / d as f64;
    let x = random(n * d, 5);
    let v: Vec<f32> = random(n * m, 6).iter().map(|a| a - 0.5).collect();
    let host = rbf_host(&x, &v, d, m, gamma);
    let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    let vb = DeviceBuffer::from_slice(&gpu, "block", &v);
    let variant = RbfVariant::Tiled(GemmConfig::NARROW);
    let out = rbf_times_block_with(&gpu, &xg, gamma as f32, &vb, m, variant).unwrap();
    let err = relative_error(&out, &host);
    assert!(err <= RBF_TOLERANCE, "relative error {err:e}");
}

#[test]
fn wide_rows_take_the_host_product_where_a_tile_would_outrun_the_loop_cap() {
    // 30 000 features: one tile of the tiled kernel takes about 150 000 back-edges, past
    // llvmpipe's 65 535 (it would cut the feature loop short and return wrong weights, the
    // "degree 0" spectral clustering once reported). CPU-like adapters compute the product on
    // the host instead; GPUs keep the tiled kernel. Two seeds, and a narrow D where the host
    // twin is held against the tiled kernel too.
    let gpu = gpu();
    let cpu_like = crate::kernels::primitives::gemm::cpu_like(&gpu);
    for (n, d, m, seed) in [(40, 30_000, 3, 1u64), (33, 30_001, 2, 2), (90, 19, 5, 3)] {
        let gamma = 0.5 / d as f64;
        let x = random(n * d, seed);
        let v: Vec<f32> = random(n * m, seed + 10).iter().map(|a| a - 0.5).collect();
        let host = rbf_host(&x, &v, d, m, gamma);
        let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let vb = DeviceBuffer::from_slice(&gpu, "block", &v);
        let chosen = RbfVariant::for_adapter(&gpu, n, d, m);
        if d > 10_000 {
            assert_eq!(chosen == RbfVariant::Host, cpu_like, "D = {d}: {chosen:?}");
        }
        let what = format!("n = {n}, D = {d}, seed {seed}");
        let out = super::affinity::rbf_times_block(&gpu, &xg, gamma as f32, &vb, m).unwrap();
        let err = relative_error(&out, &host);
        assert!(
            err <= RBF_TOLERANCE,
            "{what}, {chosen:?}: relative error {err:e}"
        );
        let twin = rbf_times_block_with(&gpu, &xg, gamma as f32, &vb, m, RbfVariant::Host);
        let twin = twin.unwrap();
        // f64 sums rounded once: within a few f32 units of the f64 reference.
        let err = relative_error(&twin, &host);
        assert!(err <= 1e-6, "{what}, host: relative error {err:e}");
        let again = rbf_times_block_with(&gpu, &xg, gamma as f32, &vb, m, RbfVariant::Host);
        assert!(
            same_bits(&twin, &again.unwrap()),
            "{what}: not the same bits twice"
        );
        if d > 10_000 && cpu_like {
            // Forced, the tiled kernel refuses rather than returning pairs cut short.
            let tiled = RbfVariant::Tiled(GemmConfig::NARROW);
            let refused = rbf_times_block_with(&gpu, &xg, gamma as f32, &vb, m, tiled);
            assert!(
                refused.is_err(),
                "{what}: the tiled kernel ran past the loop cap"
            );
        }
    }
}
