//! Block power (subspace) iteration with Rayleigh–Ritz, for S given as a dense device matrix
//! or applied matrix-free as Xsᵀ(Xs·V) (parent module docs); spectral clustering runs the same
//! iteration on its normalised affinity ([`subspace_iteration`]).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::moments::gram_over_rows;
use super::Pca;
use crate::error::{Error, Result};
use crate::gpu::batch::{Batch, Bind};
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::projection;
use crate::linalg;
use crate::progress::OnIteration;
use crate::progress::{fit_done, Algorithm, Progress};

/// Fresh random rows in [−1, 1), made orthonormal.
fn random_orthonormal(rng: &mut ChaCha8Rng, p: usize, d: usize) -> Result<Vec<f64>> {
    let mut v: Vec<f64> = (0..p * d).map(|_| rng.random_range(-1.0..1.0)).collect();
    linalg::orthonormalize_rows(&mut v, p, d)?;
    Ok(v)
}

/// Orthonormalises `w` (p rows of d) in place; directions S annihilates (rank below p) are
/// refilled with random ones, which leaves the wanted leading subspace untouched.
fn orthonormalize_or_refill(w: &mut [f64], p: usize, d: usize, rng: &mut ChaCha8Rng) -> Result<()> {
    if linalg::orthonormalize_rows(w, p, d).is_ok() {
        return Ok(());
    }
    let norm = w.iter().map(|v| v * v).sum::<f64>().sqrt().max(1.0);
    for v in w.iter_mut() {
        *v += 1e-6 * norm * rng.random_range(-1.0..1.0);
    }
    linalg::orthonormalize_rows(w, p, d)
}

/// What a block power iteration runs for.
pub(crate) struct PowerSettings<'a> {
    /// Stop when every residual ‖S·u − θu‖ ≤ tol·|θ₁|.
    pub tol: f64,
    /// Iteration cap (not converging is [`Error::NotConverged`]).
    pub max_iter: usize,
    /// Seed of the random start.
    pub seed: u64,
    /// Whose iterations these are, for the progress events.
    pub algorithm: Algorithm,
    /// The progress callback.
    pub on_iteration: Option<&'a OnIteration>,
    /// What did not converge, for the error.
    pub what: &'static str,
}

impl<'a> From<&'a Pca> for PowerSettings<'a> {
    fn from(params: &'a Pca) -> Self {
        Self {
            tol: params.tol,
            max_iter: params.max_iter,
            seed: params.seed,
            algorithm: Algorithm::Pca,
            on_iteration: params.on_iteration.as_ref(),
            what: "PCA power iteration",
        }
    }
}

/// Block power iteration with Rayleigh–Ritz. `apply` maps p row vectors V (p x d) to the
/// rows of S·V (p x d). Returns the top `m` Ritz values, vectors (m x d) and iterations.
pub(crate) fn subspace_iteration(
    d: usize,
    m: usize,
    params: &PowerSettings<'_>,
    mut apply: impl FnMut(&[f64], usize) -> Result<Vec<f64>>,
) -> Result<(Vec<f64>, Vec<f64>, usize)> {
    let p = d.min((2 * m).max(m + 8));
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let mut v = random_orthonormal(&mut rng, p, d)?;
    let mut residual = f64::INFINITY;
    let progress = Progress::new(params.algorithm, 0, params.on_iteration);
    let began = std::time::Instant::now();
    let mut previous_top = f64::NAN;
    for it in 1..=params.max_iter {
        let mut w = apply(&v, p)?;
        let (theta, u) = linalg::rayleigh_ritz(&v, &w, p, d)?;
        // S·U = Yᵀ·W with Yᵀ = U·Vᵀ (V has orthonormal rows).
        let scale = theta[0].abs().max(f64::MIN_POSITIVE);
        residual = 0.0f64;
        for i in 0..m {
            let ui = &u[i * d..(i + 1) * d];
            let y: Vec<f64> = (0..p)
                .map(|r| {
                    ui.iter()
                        .zip(&v[r * d..(r + 1) * d])
                        .map(|(a, b)| a * b)
                        .sum()
                })
                .collect();
            let mut norm = 0.0;
            for j in 0..d {
                let su: f64 = (0..p).map(|r| y[r] * w[r * d + j]).sum();
                norm += (su - theta[i] * ui[j]).powi(2);
            }
            residual = residual.max(norm.sqrt() / scale);
        }
        let flow = progress.iteration(it, residual, theta[0] - previous_top);
        previous_top = theta[0];
        if residual <= params.tol || flow.is_break() {
            fit_done(params.algorithm, 0, d, it, residual <= params.tol, began);
            return Ok((theta[..m].to_vec(), u[..m * d].to_vec(), it));
        }
        orthonormalize_or_refill(&mut w, p, d, &mut rng)?;
        v = w;
    }
    Err(Error::NotConverged {
        what: params.what,
        residual,
        iterations: params.max_iter,
    })
}

/// W = S·V on the device for S (d x d, f32) already uploaded; V rows p x d.
pub(super) fn apply_dense(
    gpu: &Gpu,
    s: &wgpu::Buffer,
    d: usize,
    v: &[f64],
    p: usize,
) -> Result<Vec<f64>> {
    let w = gpu.scoped("PCA power iteration", || {
        let weights = transpose_f32(v, p, d);
        let weights = gpu.buffer_from("V transposed", &weights, wgpu::BufferUsages::empty());
        let zeros_in = gpu.buffer_zeroed("no shift", (d * 4) as u64);
        let zeros_out = gpu.buffer_zeroed("no shift", (p * 4) as u64);
        let out = gpu.buffer_zeroed("S·V", (d * p * 4) as u64);
        let mut batch = Batch::new(gpu, "S·V");
        projection::affine_matmul(
            gpu,
            &mut batch,
            Bind::Whole(s),
            0,
            d,
            d,
            p,
            &zeros_in,
            &weights,
            &zeros_out,
            &out,
        )?;
        let h = batch.read(&out, 0, (d * p * 4) as u64);
        Ok(batch.finish()?.f32s(h))
    })?;
    Ok(transpose_f64(&w, d, p))
}

/// W = Xsᵀ(Xs·V)/(N − ddof) on the device, never forming S; Xs = (X − c)/σ.
pub(super) fn apply_matrix_free(
    gpu: &Gpu,
    x: &GpuMatrix,
    center: &[f64],
    scale: &[f64],
    denom: f64,
    v: &[f64],
    p: usize,
) -> Result<Vec<f64>> {
    let d = x.n_features();
    // P = Xs·V = (X − c)·(V/σ)ᵀ, one buffer per chunk.
    let mut vt = vec![0.0f32; d * p];
    for r in 0..p {
        for j in 0..d {
            vt[j * p + r] = (v[r * d + j] / scale[j]) as f32;
        }
    }
    let shift: Vec<f32> = center.iter().map(|&c| c as f32).collect();
    let (shift, zeros_p, projected) = gpu.scoped("matrix-free projection", || {
        let weights = gpu.buffer_from("V/σ transposed", &vt, wgpu::BufferUsages::empty());
        let shift = gpu.buffer_from("centre", &shift, wgpu::BufferUsages::empty());
        let zeros_p = gpu.buffer_zeroed("no shift", (p * 4) as u64);
        let mut batch = Batch::new(gpu, "X·V");
        let mut projected = Vec::new();
        for chunk in x.chunks() {
            let out = gpu.buffer_zeroed("X·V", (chunk.n_rows * p * 4) as u64);
            projection::affine_matmul(
                gpu,
                &mut batch,
                chunk.bind(),
                chunk.x_offset,
                chunk.n_rows,
                d,
                p,
                &shift,
                &weights,
                &zeros_p,
                &out,
            )?;
            projected.push(out);
        }
        batch.finish()?;
        Ok((shift, zeros_p, projected))
    })?;
    let w = gram_over_rows(gpu, x, &shift, p, Some(&projected), &zeros_p)?;
    // w is d x p: row j of Xcᵀ P; divide by σ_j and `denom` (N − ddof), then rows per vector.
    let mut out = vec![0.0f64; p * d];
    for j in 0..d {
        for r in 0..p {
            out[r * d + j] = w[j * p + r] / scale[j] / denom;
        }
    }
    Ok(out)
}

fn transpose_f32(v: &[f64], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0f32; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = v[r * cols + c] as f32;
        }
    }
    t
}

fn transpose_f64(v: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0f64; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = v[r * cols + c] as f64;
        }
    }
    t
}
