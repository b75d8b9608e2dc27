//! Kernels with variants the autotuner chooses between: every variant must give the same
//! bits, or the choice would make results depend on timing.

use crate::data::Matrix;
use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::tests::{gpu, random};
use crate::gpu::tuning::Variant;
use crate::gpu::GpuMatrix;
use crate::kernels::assign::{record_assign, AssignScratch, AssignVariant, Assignment};

#[test]
fn assignment_variants_give_identical_bits() {
    let gpu = gpu();
    // K below, at and past the register block and the tile; D below and past a tile step;
    // rows past one workgroup of either variant; a ragged chunk offset.
    for (n, d, k, seed) in [
        (300, 3, 5, 1),
        (517, 17, 16, 2),
        (700, 40, 70, 3),
        (333, 70, 130, 4),
        (600, 64, 300, 5),
        (200, 1, 20, 6),
        (130, 257, 40, 7),
        (90, 16, 1, 8),
        // Few centroids at Fashion-MNIST's width: the streamed pieces, the last one partial
        // (and D not a multiple of 4: scalar loads).
        (150, 785, 10, 10),
        (70, 784, 3, 11),
        // Thousands of rows at every small K's edge: many workgroups, the last one partial.
        (4001, 36, 16, 12),
        (3000, 100, 2, 13),
        // K (D + 2) past llvmpipe's loop budget: the exact recheck runs in centroid runs.
        (120, 784, 100, 9),
    ] {
        let mut x = random(n * d, seed);
        // Ties: duplicate a centroid so the lowest index must win in both variants.
        let mut c = random(k * d, 100 + seed);
        c.copy_within(0..d, (k - 1) * d);
        x[..d].copy_from_slice(&c[..d]);
        // And a tie among the last centroids, which a recheck cut short would never reach:
        // from K = 5 three equal centroids, which the GEMM form's pair test cannot decide
        // (the pair of equal centroids above it decides without the recheck).
        if k >= 4 {
            c.copy_within((k - 2) * d..(k - 1) * d, (k - 3) * d);
            if k >= 5 {
                c.copy_within((k - 2) * d..(k - 1) * d, (k - 4) * d);
            }
            x[d..2 * d].copy_from_slice(&c[(k - 2) * d..(k - 1) * d]);
        }
        let lowest_of_last = if k >= 5 { k - 4 } else { k.saturating_sub(3) };
        gpu.set_max_chunk_bytes((n / 2 * d * 4) as u64);
        let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let centroids = DeviceBuffer::from_slice(&gpu, "centroids", &c);
        let mut results = Vec::new();
        let variants: Vec<AssignVariant> = AssignVariant::all()
            .into_iter()
            .filter(|&v| xg.chunks().iter().all(|c| v.runs(&gpu, c, (d, k), None)))
            .collect();
        assert_eq!(variants[0], AssignVariant::Registers);
        // Where the adapter's subgroups hold a tile row of 8 lanes (lavapipe's do), the
        // subgroup merge is among the variants held against the others.
        if gpu.subgroup_lanes().is_some_and(|lanes| lanes >= 8) {
            assert!(variants
                .iter()
                .any(|v| matches!(v, AssignVariant::TiledSubgroup(_))));
        }
        for &variant in &variants {
            let mut batch = Batch::new(&gpu, "variant");
            let mut handles = Vec::new();
            let mut scratches = Vec::new();
            let mut rechecks = Vec::new();
            for chunk in xg.chunks() {
                scratches.push(AssignScratch::new(&gpu, chunk.n_rows, d, k));
                let scratch = scratches.last().unwrap();
                let labels = DeviceBuffer::zeroed(&gpu, "labels", chunk.n_rows);
                let dist = DeviceBuffer::<f32>::zeroed(&gpu, "dist", chunk.n_rows);
                let changed = DeviceBuffer::zeroed(&gpu, "changed", 1);
                let to = Assignment {
                    centroids: &centroids,
                    k,
                    labels: &labels,
                    min_sq_dist: &dist,
                    changed: &changed,
                };
                record_assign(
                    &gpu,
                    &mut batch,
                    variant,
                    chunk,
                    chunk.n_rows,
                    d,
                    &to,
                    scratch,
                )
                .unwrap();
                handles.push((
                    batch.read_all(&labels),
                    batch.read_all(&dist),
                    batch.read_all(&changed),
                ));
                rechecks.push(scratch.read_rechecked(&mut batch));
            }
            let back = batch.finish().unwrap();
            if matches!(variant, AssignVariant::Tiled(_) | AssignVariant::Texture) {
                // The GEMM form decides nearly every row itself, the rows nearest a pair of
                // equal centroids (row 0 among them) by its pair test: only the rows nearest
                // the three equal ones (row 1 among them) and at most a few near ties of the
                // random data go to the recheck.
                let undecided: usize = rechecks.iter().map(|&h| back.u32s(h)[0] as usize).sum();
                let tied = if k >= 5 {
                    rows_labelled(&[lowest_of_last as u32], &back, &handles)
                } else {
                    0
                };
                assert!(
                    (undecided >= 1 || k < 5) && undecided <= tied + n / 20,
                    "{}: {undecided} of {n} rows rechecked, {tied} tied (d {d} k {k})",
                    variant.name()
                );
            }
            let got: Vec<(Vec<u32>, Vec<u32>, Vec<u32>)> = handles
                .into_iter()
                .map(|(l, m, ch)| (back.u32s(l), back.u32s(m), back.u32s(ch)))
                .collect();
            results.push(got);
        }
        for (variant, r) in variants.iter().zip(&results).skip(1) {
            assert_eq!(&results[0], r, "{}: n {n} d {d} k {k}", variant.name());
        }
        // Row 0 equals centroids 0 and k − 1: the lowest index, at distance 0; row 1
        // equals centroids k − 4 (from K = 5), k − 3 and k − 2.
        assert_eq!(results[0][0].0[0], 0);
        assert_eq!(results[0][0].1[0], 0);
        if k >= 4 {
            assert_eq!(
                results[0][0].0[1] as usize, lowest_of_last,
                "n {n} d {d} k {k}"
            );
            assert_eq!(results[0][0].1[1], 0);
        }
        gpu.set_max_chunk_bytes(u64::MAX);
    }
}

/// Rows whose label is one of the `tied` centroids, each the lowest of duplicated ones (from
/// this variant's own labels, which the caller then checks against the first variant's).
fn rows_labelled(
    tied: &[u32],
    back: &crate::gpu::batch::Readback,
    handles: &[(
        crate::gpu::batch::ReadHandle,
        crate::gpu::batch::ReadHandle,
        crate::gpu::batch::ReadHandle,
    )],
) -> usize {
    handles
        .iter()
        .map(|&(l, _, _)| back.u32s(l).iter().filter(|v| tied.contains(v)).count())
        .sum()
}

/// Variants to tune among, by name.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Trial {
    Slow,
    Fast,
}

impl Variant for Trial {
    const FAMILY: &'static str = "test kernel";
    fn name(self) -> &'static str {
        match self {
            Trial::Slow => "slow",
            Trial::Fast => "fast",
        }
    }
}

/// A family whose trials fail.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Failing;

impl Variant for Failing {
    const FAMILY: &'static str = "failing";
    fn name(self) -> &'static str {
        "a"
    }
}

#[test]
fn the_tuner_times_once_per_key_and_keeps_the_fastest() {
    let gpu = gpu();
    let mut calls = Vec::new();
    let candidates = [Trial::Slow, Trial::Fast];
    let chosen = gpu
        .tuned(&candidates, (100, 300), |v| {
            calls.push(v);
            Ok(if v == Trial::Fast { 1.0 } else { 2.0 })
        })
        .unwrap();
    assert_eq!(chosen, Trial::Fast);
    // A warm-up and two timed runs each.
    use Trial::{Fast, Slow};
    assert_eq!(calls, [Slow, Slow, Slow, Fast, Fast, Fast]);
    // The same class (sizes rounded up to powers of two) is not timed again.
    let again = gpu
        .tuned(&candidates, (128, 257), |_| panic!("timed twice"))
        .unwrap();
    assert_eq!(again, Fast);
    assert!(gpu.tuning_choices().contains(&(
        "test kernel [slow|fast]".into(),
        "128x512".into(),
        "fast".into()
    )));
    // Each candidate's best time is kept once, the choice marked (other tests' trials on a
    // shared device are left out by their family).
    let trials: Vec<_> = gpu
        .tuning_trials()
        .into_iter()
        .filter(|t| t.family == "test kernel [slow|fast]")
        .map(|t| (t.variant, t.seconds, t.chosen, t.class))
        .collect();
    assert_eq!(
        trials,
        [
            ("slow", 2.0, false, [128, 512]),
            ("fast", 1.0, true, [128, 512])
        ]
    );
    // A failing trial is an error, and nothing is cached.
    let failed = gpu.tuned(&[Failing], (1, 1), |_| {
        Err(crate::error::Error::Gpu("trial failed".into()))
    });
    assert!(failed.is_err());
    assert!(!gpu
        .tuning_choices()
        .iter()
        .any(|c| c.0.starts_with("failing")));
    assert!(!gpu
        .tuning_trials()
        .iter()
        .any(|t| t.family.starts_with("failing")));
    // No candidates: an error, not a panic.
    let none: [Trial; 0] = [];
    assert!(gpu.tuned(&none, (1, 1), |_| Ok(1.0)).is_err());
}

#[test]
fn gram_variants_give_identical_bits() {
    use crate::kernels::products::covariance::{
        record_gram, runs, GramBlocks, GramVariant, Operand,
    };
    let gpu = gpu();
    // (rows, A columns, B columns or None for the symmetric product, block rows): two
    // 64-tiles, a rectangular product, and rows wide enough for three slices per block.
    for (n, da, db, block_rows, seed) in [
        (150, 70, None, 40, 11),
        (97, 100, Some(7), 32, 12),
        (90, 1000, None, 40, 13),
        (300, 12, None, 64, 14),
        (200, 1, None, 50, 15),
        (260, 136, None, 100, 16),
        (70, 8, Some(130), 30, 17),
    ] {
        let cols_b = db.unwrap_or(da);
        // A starts 5 rows into its buffer, as a chunk inside a caller's buffer may.
        let a_vals = random((n + 5) * da, seed);
        let b_vals = random(n * cols_b, seed + 1);
        let a_buf = DeviceBuffer::from_slice(&gpu, "a", &a_vals);
        let b_buf = DeviceBuffer::from_slice(&gpu, "b", &b_vals);
        let a_shift = DeviceBuffer::from_slice(&gpu, "a shift", &random(da, seed + 2));
        let b_shift = DeviceBuffer::from_slice(&gpu, "b shift", &random(cols_b, seed + 3));
        let a = Operand {
            bind: a_buf.bind(),
            offset: (5 * da) as u32,
            cols: da,
            shift: &a_shift,
        };
        let b = Operand {
            bind: if db.is_some() { &b_buf } else { &a_buf }.bind(),
            offset: if db.is_some() { 0 } else { (5 * da) as u32 },
            cols: cols_b,
            shift: if db.is_some() { &b_shift } else { &a_shift },
        };
        let mut results = Vec::new();
        let variants: Vec<GramVariant> = GramVariant::all()
            .into_iter()
            .filter(|&v| runs(v, &a, db.is_none()))
            .collect();
        for &variant in &variants {
            let partials =
                DeviceBuffer::zeroed(&gpu, "partials", n.div_ceil(block_rows) * da * cols_b);
            let mut batch = Batch::new(&gpu, "gram variant");
            let out = GramBlocks {
                block_rows,
                block_offset: 0,
                upper_only: db.is_none(),
                partials: &partials,
            };
            record_gram(&gpu, &mut batch, variant, n, &a, &b, &out).unwrap();
            let h = batch.read_all(&partials);
            results.push(batch.finish().unwrap().u32s(h));
        }
        assert!(results[0].iter().any(|&v| v != 0));
        assert!(variants.len() >= 3, "{variants:?}");
        for (variant, r) in variants.iter().zip(&results).skip(1) {
            assert!(
                &results[0] == r,
                "{}: n {n} a {da} b {cols_b}",
                variant.name()
            );
        }
    }
}

#[test]
fn mahalanobis_variants_give_identical_bits() {
    use crate::gpu::shaders::mixture::estep as wgsl;
    use crate::kernels::mixture::estep::{record_mahalanobis, Components, Segment};
    let gpu = gpu();
    // (rows, D, K, factor): the one-row kernel (D <= 16) and the tiled one (D > 16) for Full,
    // Tied (one shared factor), Diag: rows not a multiple of the diagonal twin's rows per
    // invocation, D not a multiple of 4, its largest D, and K past one slice (D = 128: 16
    // components a slice; D = 1: 2048).
    for (n, d, k, kind, seed) in [
        (300, 5, 3, "full", 21),
        (260, 40, 13, "full", 22),
        (200, 64, 4, "tied", 23),
        (333, 30, 11, "diag", 24),
        (70, 128, 37, "diag", 25),
        (45, 1, 2100, "diag", 26),
    ] {
        let x = random(n * d, seed);
        let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let means = DeviceBuffer::from_slice(&gpu, "means", &random(k * d, seed + 1));
        let (full, stride) = match kind {
            "full" => (true, d * d),
            "tied" => (true, 0),
            _ => (false, d),
        };
        // Upper-triangular factors with zeros below the diagonal, as the host sends them.
        let mut prec = random(k.max(1) * d * d, seed + 2);
        if full {
            for (e, v) in prec.iter_mut().enumerate() {
                let (i, j) = ((e % (d * d)) / d, e % d);
                if i > j {
                    *v = 0.0;
                }
            }
        }
        prec.truncate(match kind {
            "full" => k * d * d,
            "tied" => d * d,
            _ => k * d,
        });
        let precisions = DeviceBuffer::from_slice(&gpu, "precisions", &prec);
        let comps = Components {
            means: &means,
            precisions: &precisions,
            prec_stride: stride,
            full,
        };
        let (native, twin) = match (full, d <= 16) {
            (true, true) => (
                wgsl::MAHALANOBIS_FULL_SMALL_D,
                wgsl::MAHALANOBIS_FULL_UNIFORM,
            ),
            (true, false) => (wgsl::MAHALANOBIS_FULL, wgsl::MAHALANOBIS_FULL_UNIFORM),
            _ => (wgsl::MAHALANOBIS_DIAG, wgsl::MAHALANOBIS_DIAG_UNIFORM),
        };
        let mut results = Vec::new();
        for variant in [native, twin] {
            let resp = DeviceBuffer::zeroed(&gpu, "resp", n * k);
            let chunk = &xg.chunks()[0];
            let seg = Segment {
                chunk,
                first: 0,
                n_rows: n,
                resp: &resp,
            };
            let mut batch = Batch::new(&gpu, "mahalanobis variant");
            record_mahalanobis(&gpu, &mut batch, variant, &seg, d, k, &comps).unwrap();
            let h = batch.read_all(&resp);
            results.push(batch.finish().unwrap().u32s(h));
        }
        assert!(results[0].iter().all(|&v| f32::from_bits(v) > 0.0));
        assert!(
            results[0] == results[1],
            "{}: n {n} d {d} k {k} {kind}",
            native.name
        );
    }
}

#[test]
fn normalize_variants_give_identical_bits() {
    use crate::kernels::mixture::estep::{
        record_normalize, RowOutputs, Segment, NORMALIZE_MAX_K, NORMALIZE_ROWS,
    };
    let gpu = gpu();
    // K = 1, between, and the small-K kernel's largest; rows past one block; a component of
    // weight zero (cₖ = −∞), and every component of weight zero (log p = −∞).
    for (n, k, zero_weights, seed) in [
        (300, 1, 0, 31),
        (700, 7, 1, 32),
        (257, NORMALIZE_MAX_K, 0, 33),
        (40, 3, 3, 34),
    ] {
        // Squared norms of the size EM meets (a few to a few hundred).
        let q: Vec<f32> = random(n * k, seed)
            .iter()
            .map(|v| 200.0 * v.abs())
            .collect();
        let mut log_const = random(k, seed + 1);
        for c in log_const.iter_mut().take(zero_weights) {
            *c = f32::NEG_INFINITY;
        }
        let log_const = DeviceBuffer::from_slice(&gpu, "log_const", &log_const);
        let xg = GpuMatrix::upload(&gpu, &Matrix::new(&vec![0.0; n], 1).unwrap()).unwrap();
        let mut results = Vec::new();
        for small_k in [false, true] {
            let resp = DeviceBuffer::from_slice(&gpu, "resp", &q);
            let log_density = DeviceBuffer::<f32>::zeroed(&gpu, "log p", n);
            let labels = DeviceBuffer::<u32>::zeroed(&gpu, "labels", n);
            let blocks = DeviceBuffer::<f32>::zeroed(&gpu, "blocks", n.div_ceil(NORMALIZE_ROWS));
            let seg = Segment {
                chunk: &xg.chunks()[0],
                first: 0,
                n_rows: n,
                resp: &resp,
            };
            let out = RowOutputs {
                log_density: &log_density,
                labels: &labels,
                block_log_density: &blocks,
                block_offset: 0,
            };
            let mut batch = Batch::new(&gpu, "normalize variant");
            record_normalize(&gpu, &mut batch, &seg, k, &log_const, &out, small_k).unwrap();
            let h = [
                batch.read_all(&resp),
                batch.read_all(&log_density),
                batch.read_all(&labels),
                batch.read_all(&blocks),
            ];
            let back = batch.finish().unwrap();
            results.push(h.map(|h| back.u32s(h)));
        }
        // Responsibilities that sum to one, so the inputs exercised the exp path.
        if zero_weights < k {
            let r = &results[0][0];
            assert!((0..n).all(|i| {
                let s: f32 = r[i * k..(i + 1) * k]
                    .iter()
                    .map(|&v| f32::from_bits(v))
                    .sum();
                (s - 1.0).abs() < 1e-5
            }));
        }
        assert!(
            results[0] == results[1],
            "n {n} k {k} zero weights {zero_weights}"
        );
    }
}
