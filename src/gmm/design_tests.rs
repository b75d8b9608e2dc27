//! Fits in the GPU design (the tiled E-step of diagonal factors, the tiled diagonal moments,
//! the split of the augmented scatter) against the CPU-adapter design on this adapter, and
//! with the responsibilities cut into many windows against one window: the same bits where
//! the kernels are bit-identical twins, the same fit within f32 rounding where the sums are
//! cut or split elsewhere. (The f64 reference is held against windowed fits in
//! `tests/gpu/gmm_window.rs`.)

use std::collections::BTreeMap;

use super::window::{window_bytes, RESP_WINDOW_BYTES};
use super::workspace::{Purpose, Workspace};
use crate::gpu::tests::{gpu, random};
use crate::kernels::primitives::gemm::with_design;
use crate::{CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit, Matrix, ProfileClock};

/// Rows around K well-separated centres, with a per-feature spread.
fn blobs(n: usize, d: usize, k: usize, seed: u64) -> Vec<f32> {
    let centres = random(k * d, seed);
    let noise = random(n * d, seed + 1);
    (0..n * d)
        .map(|e| {
            let (i, j) = (e / d, e % d);
            12.0 * centres[(i % k) * d + j] + (noise[e] - 0.5) * (1.0 + j as f32 / d as f32)
        })
        .collect()
}

/// Dispatches of each kernel in a fit.
type Ran = BTreeMap<&'static str, usize>;

/// Dispatches of `kernel` in `ran`.
fn count(ran: &Ran, kernel: &str) -> usize {
    ran.get(kernel).copied().unwrap_or(0)
}

/// A fit of six EM iterations in the CPU-adapter design (`cpu_like`) or the GPU design, from
/// random responsibilities, or (seeds 3 and 6) from one-hot ones of K-Means or k-means++
/// labels, with responsibilities in windows of `window_bytes` when
/// given (a fit's window is at most one chunk), and the kernels it ran.
fn fit(
    t: CovarianceType,
    x: &[f32],
    d: usize,
    k: usize,
    seed: u64,
    cpu_like: bool,
    window_bytes: Option<u64>,
) -> (GaussianMixtureModel, Ran) {
    let gpu = gpu();
    let params = GaussianMixture::new(k)
        .covariance(t)
        .init(match seed {
            3 => GmmInit::KMeans,
            6 => GmmInit::KMeansPlusPlus,
            _ => GmmInit::Random,
        })
        .seed(seed)
        .tol(0.0)
        .max_iter(6);
    with_design(cpu_like, || {
        // Rows upload in one chunk; the workspace made after it cuts its window to this.
        let xg = crate::GpuMatrix::upload(&gpu, &Matrix::new(x, d).unwrap()).unwrap();
        if let Some(bytes) = window_bytes {
            gpu.set_max_chunk_bytes(bytes);
        }
        let (model, profile) = gpu
            .profile(ProfileClock::WallClock, || params.fit(&gpu, &xg))
            .unwrap();
        let mut ran = Ran::new();
        for r in &profile.dispatches {
            *ran.entry(r.kernel).or_default() += 1;
        }
        (model, ran)
    })
}

/// Relative difference of `a` from `b`.
fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-30)
}

/// The largest difference of `a` from `b`, relative to `b`'s largest magnitude.
fn max_rel(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(1e-30_f64, |m, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
        / scale
}

/// Whether `a` is the fit of `b` within f32 rounding (lower bound, means, covariances,
/// almost every label).
fn assert_close(a: &GaussianMixtureModel, b: &GaussianMixtureModel, what: &str) {
    let lb = rel(a.lower_bound(), b.lower_bound());
    assert!(lb < 1e-5, "{what}: lower bound off by {lb:e}");
    let m = max_rel(a.means(), b.means());
    assert!(m < 1e-4, "{what}: means off by {m:e}");
    let c = max_rel(a.covariances(), b.covariances());
    assert!(c < 1e-3, "{what}: covariances off by {c:e}");
    let flips = a
        .labels()
        .iter()
        .zip(b.labels())
        .filter(|(p, q)| p != q)
        .count();
    assert!(
        flips <= a.labels().len() / 200,
        "{what}: {flips} labels differ"
    );
    assert_eq!(a.n_iter(), b.n_iter(), "{what}");
}

#[test]
fn gpu_design_and_windows_give_the_fit_of_the_cpu_design() {
    // (type, rows, D, K, seed): D = 64 splits the augmented scatter for Full and Tied
    // (three 64 x 64 tiles for D + 1 = 65, one for 64); the others are awkward sizes.
    let cases = [
        (CovarianceType::Diag, 1100, 30, 5, 1),
        (CovarianceType::Spherical, 900, 7, 19, 2),
        (CovarianceType::Diag, 700, 64, 3, 3),
        (CovarianceType::Full, 700, 64, 3, 4),
        (CovarianceType::Tied, 600, 64, 2, 5),
        (CovarianceType::Full, 1000, 5, 4, 6),
        (CovarianceType::Tied, 800, 9, 6, 7),
        (CovarianceType::Spherical, 1300, 40, 70, 8),
    ];
    for (t, n, d, k, seed) in cases {
        let x = blobs(n, d, k, seed);
        let what = format!("{t:?} n {n} d {d} k {k}");
        // 256 rows of responsibilities a window: several windows, several blocks.
        let small = Some(256 * 4 * k as u64);
        let (cpu, cpu_ran) = fit(t, &x, d, k, seed, true, None);
        let (gpu_design, gpu_ran) = fit(t, &x, d, k, seed, false, None);
        let (cpu_windows, cpu_windows_ran) = fit(t, &x, d, k, seed, true, small);
        let (windows, windows_ran) = fit(t, &x, d, k, seed, false, small);
        let diagonal = matches!(t, CovarianceType::Diag | CovarianceType::Spherical);
        let split = !diagonal && d == 64;
        // The GPU design's E-step ran, and only there. (`weighted_moments_tiled` is the
        // native moments kernel of both designs: the CPU design's autotuner times it against
        // its uniform twin and may keep it, more often on a loaded machine.)
        assert_eq!(
            count(&cpu_ran, "estep_diag_tiled"),
            0,
            "{what}: estep_diag_tiled in the CPU design"
        );
        if diagonal {
            assert!(
                count(&gpu_ran, "estep_diag_tiled") > 0,
                "{what}: {gpu_ran:?}"
            );
        }
        // The initial M-step's first moments, then (split) one per iteration.
        let moments = count(&gpu_ran, "weighted_moments_tiled");
        assert!(moments > 6 * split as usize, "{what}: {gpu_ran:?}");
        // A pass's E-step per window: several windows.
        let estep = |ran: &Ran| {
            ran.iter()
                .filter(|(name, _)| name.starts_with("mahalanobis") || **name == "estep_diag_tiled")
                .map(|(_, c)| c)
                .sum::<usize>()
        };
        assert!(
            estep(&windows_ran) >= 3 * estep(&gpu_ran),
            "{what}: few windows"
        );
        assert!(
            estep(&cpu_windows_ran) >= 3 * estep(&cpu_ran),
            "{what}: few windows"
        );
        if split {
            // The scatter and the first moments from two sums: f32 rounding of the other
            // (the same bits where fma is not fused, as on lavapipe).
            assert_close(&gpu_design, &cpu, &format!("{what}: GPU design"));
        } else {
            // Bit-identical kernels: the same model.
            assert_eq!(gpu_design, cpu, "{what}: the GPU design differs");
        }
        // Windows cut at whole blocks of the M-step sums: the same blocks, the same sums.
        assert_eq!(windows, gpu_design, "{what}: windows in the GPU design");
        assert_eq!(cpu_windows, cpu, "{what}: windows in the CPU design");
    }
}

/// The responsibilities' bytes and segments of the workspaces of a fit over `x`, of an
/// evaluation that keeps every responsibility and of one that keeps the rows' log p and
/// labels only, on `gpu` as it is set.
fn footprints(
    gpu: &crate::Gpu,
    xg: &crate::GpuMatrix,
    k: usize,
    t: CovarianceType,
) -> [(u64, usize); 3] {
    [Purpose::Fit, Purpose::Responsibilities, Purpose::RowOutputs].map(|purpose| {
        Workspace::new(gpu, xg, k, t, purpose)
            .unwrap()
            .responsibility_footprint()
    })
}

#[test]
fn a_fit_keeps_one_window_of_responsibilities_and_evaluation_all() {
    // 64 KiB bindings: rows in chunks of 3 276, windows of 1 280 rows (five blocks of 256)
    // of 12 responsibilities, where the N x K matrix takes 432 000 bytes.
    let (n, d, k) = (9000, 5, 12);
    let gpu = gpu();
    gpu.set_max_chunk_bytes(64 << 10);
    let x = blobs(n, d, 4, 11);
    let xg = crate::GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    for t in CovarianceType::ALL {
        let [(fit, windows), (all, segments), (rows, row_windows)] = footprints(&gpu, &xg, k, t);
        // Scores and labels keep a window of whole blocks of 256 rows too, never N x K.
        assert!(
            rows <= fit && rows % (256 * 4 * k as u64) == 0,
            "{t:?}: {rows}"
        );
        assert!(row_windows >= 8, "{t:?}: {row_windows} windows");
        assert_eq!(fit, 1280 * 4 * k as u64, "{t:?}");
        assert_eq!(fit, window_bytes(&gpu, n, k, d, t), "{t:?}");
        assert!(windows >= 8, "{t:?}: {windows} windows");
        assert_eq!(all, (n * k * 4) as u64, "{t:?}");
        assert!(segments >= 3, "{t:?}: {segments}");
    }
    // Without a forced binding, rows whose N x K exceed RESP_WINDOW_BYTES: one window of
    // whole blocks within it.
    let (n, d, k) = (300_000, 2, 40);
    let gpu = crate::gpu::tests::gpu();
    let x = random(n * d, 12);
    let xg = crate::GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    let [(fit, windows), _, _] = footprints(&gpu, &xg, k, CovarianceType::Diag);
    assert!(fit <= RESP_WINDOW_BYTES && fit > RESP_WINDOW_BYTES - 256 * 4 * k as u64 * 2);
    assert!(
        windows >= 2 && (n * k * 4) as u64 > RESP_WINDOW_BYTES,
        "{windows}"
    );
}

#[test]
#[ignore = "user scale on lavapipe: a minute or more"]
fn a_user_scale_fit_stays_in_one_window() {
    // 1M x 16, K = 20, Diag, 5 iterations: 80 MB of N x K responsibilities against a window
    // of RESP_WINDOW_BYTES, in both designs (the same bits: twins).
    let (n, d, k) = (1_000_000, 16, 20);
    let gpu = gpu();
    let x = blobs(n, d, k, 13);
    let xg = crate::GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
    let [(fit, windows), _, _] = footprints(&gpu, &xg, k, CovarianceType::Diag);
    assert!(
        fit <= RESP_WINDOW_BYTES && windows >= 3,
        "{fit} bytes, {windows} windows"
    );
    let params = GaussianMixture::new(k)
        .covariance(CovarianceType::Diag)
        .init(GmmInit::Random)
        .seed(5)
        .tol(0.0)
        .max_iter(5);
    let models = [true, false].map(|cpu_like| {
        with_design(cpu_like, || {
            let t = std::time::Instant::now();
            let m = params.fit(&gpu, &xg).unwrap();
            eprintln!(
                "cpu_like {cpu_like}: {:.1} s, lower bound {}, window {fit} bytes in {windows} \
                 segments (N x K: {} bytes)",
                t.elapsed().as_secs_f64(),
                m.lower_bound(),
                n * k * 4
            );
            m
        })
    });
    assert_eq!(models[0], models[1]);
    assert_eq!(models[0].n_iter(), 5);
}

#[test]
fn scores_and_labels_in_a_window_are_the_bits_of_the_kept_responsibilities() {
    // predict, score_samples and score keep a window of responsibilities (Purpose::RowOutputs),
    // evaluate_gpu every one of them: the same labels, log p and mean log-likelihood bits, in
    // both designs, for every covariance type, two seeds, with rows cut into many windows
    // (64 KiB bindings) and not.
    let (n, d, k) = (9000, 5, 12);
    for (seed, binding) in [(21u64, Some(64u64 << 10)), (22, None)] {
        // A device of its own (gpu() opens one a call): the bindings set here stay here.
        let gpu = gpu();
        if let Some(bytes) = binding {
            gpu.set_max_chunk_bytes(bytes);
        }
        let x = blobs(n, d, 4, seed);
        let m = Matrix::new(&x, d).unwrap();
        for t in CovarianceType::ALL {
            for cpu_like in [true, false] {
                with_design(cpu_like, || {
                    let params = GaussianMixture::new(k)
                        .covariance(t)
                        .init(GmmInit::Random)
                        .seed(seed)
                        .max_iter(3);
                    let model = params.fit(&gpu, &m).unwrap();
                    let all = model.evaluate_gpu(&gpu, &m).unwrap();
                    let what = format!("{t:?}, seed {seed}, {binding:?}, cpu_like {cpu_like}");
                    let labels = model.predict(&gpu, &m).unwrap();
                    assert_eq!(labels, all.labels.to_host(&gpu).unwrap(), "{what}");
                    let log_p = model.score_samples(&gpu, &m).unwrap();
                    let kept = all.log_density.to_host(&gpu).unwrap();
                    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&log_p), bits(&kept), "{what}");
                    let score = model.score(&gpu, &m).unwrap();
                    assert_eq!(score.to_bits(), all.mean_log_likelihood.to_bits(), "{what}");
                });
            }
        }
    }
}
