//! PCA over a [`RowSource`] and from moments that merge: [`PcaMoments`],
//! [`IncrementalPca`], [`Pca::fit_source`], [`Pca::fit_moments`].
//!
//! The moments of a set of rows are the count n, the mean μ and the co-moment
//! M = Σ(x − μ)(x − μ)ᵀ. Two sets merge by the pairwise formulas of Chan, Golub and LeVeque
//! (1979): with δ = μ_b − μ_a and n = n_a + n_b,
//!
//! ```text
//! μ = μ_a + δ·n_b/n,    M = M_a + M_b + δδᵀ·n_a·n_b/n,
//! ```
//!
//! which never subtract large second moments (no E[xxᵀ] − μμᵀ cancellation). Every piece's
//! moments come from the same device passes as a resident fit (shifted column sums, then the
//! centred cross products in bounded blocks), so a streamed or incremental fit equals the
//! resident one within f32 rounding. From the moments, the scaled covariance about any
//! centre c follows on the host: S = (M + n(μ − c)(μ − c)ᵀ)/((n − ddof)·σᵢσⱼ).
//!
//! The matrix-free solver does not form S: a streamed matrix-free fit merges only the
//! diagonal of M (the variances) and then streams every S·V = Xsᵀ(Xs·V)/(n − ddof) of the
//! block power iteration, one pass per product.

use super::moments::{column_moments, gram_over_rows, Moments};
use super::power::apply_matrix_free;
use super::{Pca, PcaModel, PcaSolver};
use crate::error::{Error, Result};
use crate::gpu::stream::DeviceRows;
use crate::gpu::{Gpu, GpuMatrix};
use crate::source::{check_shape, RowSource};

/// Count, mean and co-moment of a set of rows; merge with [`PcaMoments::merge`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PcaMoments {
    /// Rows n.
    pub n: u64,
    /// Features D.
    pub n_features: usize,
    /// Per-feature mean μ.
    pub mean: Vec<f64>,
    /// The co-moment M = Σ(x − μ)(x − μ)ᵀ, D x D row-major; or only its diagonal (D values)
    /// for moments gathered for the matrix-free solver.
    pub comoment: Vec<f64>,
}

impl PcaMoments {
    /// The moments of `source` (one pass on the device; D x D co-moment when `full`, else
    /// only its diagonal).
    ///
    /// Errors: an empty source, a D x D matrix over the binding limit
    /// ([`Error::DeviceLimit`]), the source's and the GPU's errors.
    pub fn of(gpu: &Gpu, source: &(impl RowSource + ?Sized), full: bool) -> Result<Self> {
        let (n, d) = check_shape(source)?;
        let s_bytes = (d as u64).saturating_mul(d as u64).saturating_mul(4);
        if full && s_bytes > gpu.binding_byte_limit() {
            return Err(Error::DeviceLimit {
                what: format!("the {d} x {d} co-moment ({s_bytes} bytes)"),
                requested: s_bytes,
                limit_name: "max_storage_buffer_binding_size",
                limit: gpu.binding_byte_limit(),
            });
        }
        let rows = DeviceRows::new(gpu, source, 0, fixed_bytes(n, d))?;
        let mut total: Option<PcaMoments> = None;
        rows.pass(gpu, |piece, _| {
            let m = piece_moments(gpu, piece, full)?;
            match total.as_mut() {
                None => total = Some(m),
                Some(t) => t.merge(&m)?,
            }
            Ok(())
        })?;
        Ok(total.expect("a source has rows"))
    }

    /// Adds the moments of other rows (Chan, Golub and LeVeque; module docs).
    ///
    /// Errors: [`Error::FeatureMismatch`], or moments of different kinds (full and diagonal).
    pub fn merge(&mut self, other: &PcaMoments) -> Result<()> {
        self.check()?;
        other.check()?;
        if other.n_features != self.n_features {
            return Err(Error::FeatureMismatch {
                expected: self.n_features,
                found: other.n_features,
            });
        }
        if other.comoment.len() != self.comoment.len() {
            return Err(Error::invalid(
                "moments",
                "full and diagonal-only moments cannot be merged",
            ));
        }
        let d = self.n_features;
        let (na, nb) = (self.n as f64, other.n as f64);
        let n = na + nb;
        let delta: Vec<f64> = (0..d).map(|j| other.mean[j] - self.mean[j]).collect();
        let w = na * nb / n;
        let full = self.comoment.len() == d * d;
        for i in 0..d {
            if full {
                for j in 0..d {
                    self.comoment[i * d + j] += other.comoment[i * d + j] + delta[i] * delta[j] * w;
                }
            } else {
                self.comoment[i] += other.comoment[i] + delta[i] * delta[i] * w;
            }
            self.mean[i] += delta[i] * nb / n;
        }
        self.n += other.n;
        Ok(())
    }

    /// Checks that the parts fit together (moments may come from another machine): at least
    /// one row, D means, a D x D or diagonal co-moment, every value finite.
    ///
    /// Errors: [`Error::InvalidParameter`] named `moments`, saying which part is wrong.
    pub fn check(&self) -> Result<()> {
        let d = self.n_features;
        let bad = |what: &str| Err(Error::invalid("moments", format!("PCA moments: {what}")));
        if d == 0 || self.n == 0 {
            return bad("no rows or no features");
        }
        if self.mean.len() != d || !(self.comoment.len() == d || self.comoment.len() == d * d) {
            return bad("array lengths do not match n_features");
        }
        if !self
            .mean
            .iter()
            .chain(&self.comoment)
            .all(|v| v.is_finite())
        {
            return bad("values that are not finite");
        }
        Ok(())
    }

    /// The diagonal of M.
    fn diagonal(&self) -> Vec<f64> {
        let d = self.n_features;
        if self.comoment.len() == d * d {
            (0..d).map(|j| self.comoment[j * d + j]).collect()
        } else {
            self.comoment.clone()
        }
    }

    /// Means and population variances, as the resident fit's column moments.
    fn column(&self) -> Moments {
        let n = self.n as f64;
        Moments {
            mean: self.mean.clone(),
            var: self.diagonal().iter().map(|&m| (m / n).max(0.0)).collect(),
        }
    }

    /// S = (M + n(μ − c)(μ − c)ᵀ)/((n − ddof)·σᵢσⱼ), D x D (needs the full co-moment).
    fn covariance(&self, center: &[f64], scale: &[f64], ddof: usize) -> Vec<f64> {
        let d = self.n_features;
        let n = self.n as f64;
        let denom = n - ddof as f64;
        let off: Vec<f64> = (0..d).map(|j| self.mean[j] - center[j]).collect();
        let mut s = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..d {
                s[i * d + j] = (self.comoment[i * d + j] + n * off[i] * off[j])
                    / (denom * scale[i] * scale[j]);
            }
        }
        s
    }
}

/// Device bytes besides the rows of `n` x `d` data: the blocks' partial moments and cross
/// products (at most 64 MiB) and two D x D matrices.
fn fixed_bytes(n: usize, d: usize) -> u64 {
    let dd = (d * d * 4) as u64;
    let partials =
        ((n / 4096 + 1) as u64 * dd).min(64 << 20) + (n / 1024 + 1) as u64 * d as u64 * 8;
    partials + 2 * dd + 1024
}

/// True when host data of `n` x `d` must stream to stay within the memory budget.
pub(super) fn must_stream(gpu: &Gpu, n: usize, d: usize) -> bool {
    n as u64 * d as u64 * 4 + fixed_bytes(n, d) > gpu.memory_budget()
}

/// The moments of one piece on the device: column moments, then the cross products about
/// the f32-rounded mean c, moved to the mean: M_μ = M_c − n(μ − c)(μ − c)ᵀ.
fn piece_moments(gpu: &Gpu, x: &GpuMatrix, full: bool) -> Result<PcaMoments> {
    let (n, d) = (x.n_rows(), x.n_features());
    let m = column_moments(gpu, x)?;
    let nf = n as f64;
    let comoment = if full {
        let c: Vec<f32> = m.mean.iter().map(|&v| v as f32).collect();
        let shift = gpu.scoped("moment centre", || {
            Ok(gpu.buffer_from("moment centre", &c, wgpu::BufferUsages::empty()))
        })?;
        let mut g = gram_over_rows(gpu, x, &shift, d, None, &shift)?;
        let off: Vec<f64> = (0..d).map(|j| m.mean[j] - c[j] as f64).collect();
        for i in 0..d {
            for j in 0..d {
                g[i * d + j] -= nf * off[i] * off[j];
            }
        }
        g
    } else {
        m.var.iter().map(|&v| v * nf).collect()
    };
    Ok(PcaMoments {
        n: n as u64,
        n_features: d,
        mean: m.mean,
        comoment,
    })
}

impl Pca {
    /// Fits on a [`RowSource`] (a host matrix, [`RowChunks`](crate::source::RowChunks), a
    /// memory-mapped `.npy` file). Rows that fit the device-memory budget are uploaded once
    /// and fitted as by [`Pca::fit`]; otherwise one pass gathers the merged moments (module
    /// docs) and the full and power solvers work from S, while the matrix-free solver
    /// streams a pass per product S·V.
    ///
    /// Errors: those of [`Pca::fit`] and of the source.
    pub fn fit_source(&self, gpu: &Gpu, source: &(impl RowSource + ?Sized)) -> Result<PcaModel> {
        let (n, d) = check_shape(source)?;
        self.validate(n, d)?;
        let solver = self.resolve_solver(gpu, n, d)?;
        let rows = DeviceRows::new(gpu, source, 0, fixed_bytes(n, d))?;
        if let DeviceRows::Resident(x) = &rows {
            return self.fit(gpu, x);
        }
        let full = solver != PcaSolver::MatrixFree;
        let mut moments: Option<PcaMoments> = None;
        rows.pass(gpu, |piece, _| {
            let m = piece_moments(gpu, piece, full)?;
            match moments.as_mut() {
                None => moments = Some(m),
                Some(t) => t.merge(&m)?,
            }
            Ok(())
        })?;
        let moments = moments.expect("a source has rows");
        let denom = (n - self.ddof) as f64;
        self.fit_from(
            gpu,
            n,
            d,
            solver,
            &moments.column(),
            &mut |center, scale| Ok(moments.covariance(center, scale, self.ddof)),
            &mut |center, scale, v, p| {
                let mut sum = vec![0.0; p * d];
                rows.pass(gpu, |piece, _| {
                    let part = apply_matrix_free(gpu, piece, center, scale, denom, v, p)?;
                    for (s, x) in sum.iter_mut().zip(part) {
                        *s += x;
                    }
                    Ok(())
                })?;
                Ok(sum)
            },
        )
    }

    /// Fits from merged moments (from [`PcaMoments::of`] on each partition, or an
    /// [`IncrementalPca`]), with the full or power solver (the matrix-free one needs the rows).
    ///
    /// Errors: diagonal-only moments, the matrix-free solver, and those of [`Pca::fit`].
    pub fn fit_moments(&self, gpu: &Gpu, moments: &PcaMoments) -> Result<PcaModel> {
        moments.check()?;
        let (n, d) = (moments.n as usize, moments.n_features);
        self.validate(n, d)?;
        if moments.comoment.len() != d * d {
            return Err(Error::invalid(
                "moments",
                "fitting from moments needs the full D x D co-moment",
            ));
        }
        let solver = self.resolve_solver(gpu, n, d)?;
        if solver == PcaSolver::MatrixFree {
            return Err(Error::invalid(
                "solver",
                "the matrix-free solver needs the rows: use Full or Power with moments",
            ));
        }
        self.fit_from(
            gpu,
            n,
            d,
            solver,
            &moments.column(),
            &mut |center, scale| Ok(moments.covariance(center, scale, self.ddof)),
            &mut |_, _, _, _| Err(Error::invalid("solver", "matrix-free needs the rows")),
        )
    }
}

/// PCA fitted chunk by chunk: [`IncrementalPca::partial_fit`] merges each chunk's moments,
/// [`IncrementalPca::model`] fits from all seen so far. Unlike scikit-learn's
/// `IncrementalPCA` (an approximation by sequential SVD updates), the moments are exact, so
/// the model equals a full fit on all the chunks within f32 rounding.
///
/// ```
/// use wgpu_unsupervised::{datasets, Components, Gpu, IncrementalPca, Matrix, Pca};
///
/// let gpu = Gpu::new()?;
/// let rows = datasets::uniform(1000, 5, 3);
/// let mut inc = IncrementalPca::new(Pca::new(Components::Count(2)));
/// for chunk in rows.chunks(250 * 5) {
///     inc.partial_fit(&gpu, &Matrix::new(chunk, 5)?)?;
/// }
/// let full = Pca::new(Components::Count(2)).fit(&gpu, &Matrix::new(&rows, 5)?)?;
/// let (a, b) = (inc.model(&gpu)?.explained_variance().to_vec(), full.explained_variance());
/// assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-5 * y));
/// # Ok::<(), wgpu_unsupervised::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct IncrementalPca {
    params: Pca,
    moments: Option<PcaMoments>,
}

impl IncrementalPca {
    /// An incremental fit with these parameters (solver Full or Power, or Auto).
    pub fn new(params: Pca) -> Self {
        Self {
            params,
            moments: None,
        }
    }

    /// Adds the rows of `chunk` (any [`RowSource`]: a host matrix, chunks, a file).
    ///
    /// Errors: a chunk with another number of features ([`Error::FeatureMismatch`]), and
    /// those of [`PcaMoments::of`].
    pub fn partial_fit(&mut self, gpu: &Gpu, chunk: &(impl RowSource + ?Sized)) -> Result<()> {
        let m = PcaMoments::of(gpu, chunk, true)?;
        match self.moments.as_mut() {
            None => self.moments = Some(m),
            Some(t) => t.merge(&m)?,
        }
        Ok(())
    }

    /// The moments merged so far (none before the first chunk).
    pub fn moments(&self) -> Option<&PcaMoments> {
        self.moments.as_ref()
    }

    /// The model of every row seen so far.
    ///
    /// Errors: [`Error::EmptyData`] before any chunk, and those of [`Pca::fit_moments`].
    pub fn model(&self, gpu: &Gpu) -> Result<PcaModel> {
        let m = self.moments.as_ref().ok_or(Error::EmptyData {
            what: "incremental PCA",
            missing: "rows",
        })?;
        self.params.fit_moments(gpu, m)
    }
}
