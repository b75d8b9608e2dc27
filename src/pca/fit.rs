//! Every public fit of PCA ([`Pca::fit`], [`Pca::fit_source`], [`Pca::fit_moments`],
//! [`PcaMoments::of`], the public [`covariance`]), and the one place where a fit decides how
//! its rows live on the device: device data are used where they are; host data go through
//! [`DeviceRows`], uploaded once when they fit the memory budget, else streamed (one pass
//! gathers the merged moments, module `stats`, and the matrix-free solver streams a pass per
//! product S·V). Then the solver `Auto` resolves to, the eigenvectors by the chosen solver,
//! and the reported quantities (scikit-learn's).

use super::dense::{apply_dense, dense_steps_per_check, DenseRounds};
use super::power::{block_size, subspace_iteration, subspace_iteration_ahead};
use super::stats::{Moments, PcaMoments};
use super::stream::{moments_of, moments_on_device, pass_moments};
use super::workspace::{fixed_bytes, MatrixFreeProduct};
use super::{components_for_fraction, Components, Pca, PcaModel, PcaSolver};
use crate::error::{Error, Result};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::readback::PendingReadback;
use crate::gpu::stream::DeviceRows;
use crate::gpu::{Gpu, GpuInput, GpuMatrix};
use crate::kernels::primitives::rows::in_f32_range;
use crate::linalg;
use crate::linalg::SolverSettings;
use crate::origin::{Centred, Translate};
use crate::progress::Algorithm;
use crate::source::{check_shape, RowSource, Scaled};

/// The covariance S = (X − μ)ᵀ(X − μ)/(N − ddof) of host or device data, computed on the
/// device (one submission: the column moments, the f32 mean folded from them, the cross
/// products about it; module `stream`) and returned as D x D row-major f64. Errors: fewer than 2 rows, `ddof` > 1, a D x D matrix over the device's binding limit.
pub fn covariance(gpu: &Gpu, x: &impl GpuInput, ddof: usize) -> Result<Vec<f64>> {
    if let Some(c) = Centred::of_input(x, None)? {
        return covariance(gpu, &c, ddof);
    }
    let (n, d) = x.shape();
    Pca::new(Components::Count(1)).ddof(ddof).validate(n, d)?;
    let bytes = (d * d * 4) as u64;
    if bytes > gpu.binding_byte_limit() {
        return Err(Error::DeviceLimit {
            what: format!("the {d} x {d} covariance ({bytes} bytes)"),
            requested: bytes,
            limit_name: "max_storage_buffer_binding_size",
            limit: gpu.binding_byte_limit(),
        });
    }
    let x = x.on_gpu(gpu)?;
    let (x, scale) = in_f32_range(gpu, &x)?;
    let moments = moments_of(gpu, &x, true)?;
    let s = moments.covariance(&moments.mean, &vec![1.0; d], ddof);
    let to_caller = 1.0 / (scale as f64 * scale as f64);
    Ok(s.into_iter().map(|v| v * to_caller).collect())
}

impl Pca {
    /// The solver `Auto` resolves to for this data.
    pub(super) fn resolve_solver(&self, gpu: &Gpu, n: usize, d: usize) -> Result<PcaSolver> {
        let s_bytes = (d * d * 4) as u64;
        let s_fits = s_bytes <= gpu.binding_byte_limit() && s_bytes <= gpu.memory_budget();
        let wants_all = !matches!(self.components, Components::Count(_));
        let m = match self.components {
            Components::Count(m) => m,
            Components::Fraction(_) | Components::Mle => n.min(d),
        };
        let solver = match self.solver {
            PcaSolver::Auto if !s_fits => PcaSolver::MatrixFree,
            PcaSolver::Auto if wants_all || d <= 256 || 4 * m > d => PcaSolver::Full,
            PcaSolver::Auto => PcaSolver::Power,
            other => other,
        };
        if wants_all && solver != PcaSolver::Full {
            return Err(Error::invalid(
                "components",
                "a variance fraction or Minka's MLE needs the whole spectrum: use PcaSolver::Full or Components::Count",
            ));
        }
        if solver != PcaSolver::MatrixFree && !s_fits {
            return Err(Error::DeviceLimit {
                what: format!("the {d} x {d} covariance ({s_bytes} bytes)"),
                requested: s_bytes,
                limit_name: "max_storage_buffer_binding_size",
                limit: gpu.binding_byte_limit().min(gpu.memory_budget()),
            });
        }
        Ok(solver)
    }

    /// Fits on host or device data. Host data over the device-memory budget
    /// ([`Gpu::set_memory_budget`]) are streamed as by [`Pca::fit_source`].
    ///
    /// Errors: invalid parameters, fewer than 2 samples, a non-converging power iteration
    /// ([`Error::NotConverged`]), whitening a component of zero variance, and the GPU errors.
    pub fn fit(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<PcaModel> {
        if let Some(c) = Centred::of_input(x, None)? {
            return c.fit(self, |p, c| p.fit(gpu, c));
        }
        let (n, d) = x.shape();
        self.validate(n, d)?;
        let solver = self.resolve_solver(gpu, n, d)?;
        match x.as_source() {
            Some(source) => self.fit_rows(gpu, source, solver),
            None => {
                let x = x.on_gpu(gpu)?;
                let (x, scale) = in_f32_range(gpu, &x)?;
                Ok(self
                    .fit_resident(gpu, &x, solver)?
                    .rescaled(1.0 / scale as f64))
            }
        }
    }

    /// Fits on a [`RowSource`] (a host matrix, [`RowChunks`](crate::source::RowChunks), a
    /// `.npy` file read piece by piece, `io::NpyRows`). Rows that fit the device-memory
    /// budget are uploaded once and fitted as by [`Pca::fit`]; otherwise one pass gathers the
    /// merged moments (module docs of `stats`) and the full and power solvers work from S,
    /// while the matrix-free solver streams a pass per product S·V.
    ///
    /// Errors: those of [`Pca::fit`] and of the source.
    pub fn fit_source(&self, gpu: &Gpu, source: &(impl RowSource + ?Sized)) -> Result<PcaModel> {
        if let Some(c) = Centred::of_source(source, None)? {
            return c.fit(self, |p, c| p.fit_source(gpu, c));
        }
        let (n, d) = check_shape(source)?;
        self.validate(n, d)?;
        let solver = self.resolve_solver(gpu, n, d)?;
        self.fit_rows(gpu, source, solver)
    }

    /// Fits from merged moments (from [`PcaMoments::of`] on each partition, or an
    /// [`IncrementalPca`](crate::IncrementalPca)), with the full or power solver (the
    /// matrix-free one needs the rows).
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
        // The power solver's S·V products run in f32: moments of data far from 1 are
        // solved at a power-of-two scale, as the rows would be.
        let spread = moments.diagonal().iter().fold(0.0f64, |m, &c| m.max(c));
        let largest = moments
            .mean
            .iter()
            .fold((spread / n as f64).sqrt(), |m, v| m.max(v.abs()));
        let scale = crate::data::range_scale(largest as f32) as f64;
        let scaled;
        let moments = if scale == 1.0 {
            moments
        } else {
            scaled = moments.clone().rescaled(scale);
            &scaled
        };
        let model = self.fit_from(
            gpu,
            (n, d, solver),
            &moments.column(),
            Covariance::Host(&|center, scale| Ok(moments.covariance(center, scale, self.ddof))),
            &mut |_, _, _, _| Err(Error::invalid("solver", "matrix-free needs the rows")),
        )?;
        Ok(model.rescaled(1.0 / scale))
    }

    /// The fit of host rows: resident when they fit the budget, else streamed (decided
    /// once, by [`DeviceRows::new`]).
    fn fit_rows(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        solver: PcaSolver,
    ) -> Result<PcaModel> {
        let scaled = Scaled::of(source)?;
        let to_caller = 1.0 / scaled.scale() as f64;
        Ok(self
            .fit_rows_in_range(gpu, &scaled, solver)?
            .rescaled(to_caller))
    }

    /// [`Pca::fit_rows`] of rows in f32's comfortable range.
    fn fit_rows_in_range(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        solver: PcaSolver,
    ) -> Result<PcaModel> {
        let (n, d) = check_shape(source)?;
        // The matrix-free products hold X·V (p values a row) for a piece in flight and the
        // one being submitted.
        let row_extra = match solver {
            PcaSolver::MatrixFree => 2 * 4 * block_size(d, self.count()) as u64,
            _ => 0,
        };
        let rows = DeviceRows::new(gpu, source, row_extra, fixed_bytes(n, d))?;
        if let DeviceRows::Resident(x) = &rows {
            return self.fit_resident(gpu, x, solver);
        }
        let moments = pass_moments(gpu, &rows, solver != PcaSolver::MatrixFree)?;
        let denom = (n - self.ddof) as f64;
        self.fit_from(
            gpu,
            (n, d, solver),
            &moments.column(),
            Covariance::Host(&|center, scale| Ok(moments.covariance(center, scale, self.ddof))),
            &mut |center, scale, v, p| {
                MatrixFreeProduct::new(gpu, (center, scale), denom, v, p)?.over(&rows)
            },
        )
    }

    /// The fit of rows that are all on the device.
    fn fit_resident(&self, gpu: &Gpu, x: &GpuMatrix, solver: PcaSolver) -> Result<PcaModel> {
        let (n, d) = (x.n_rows(), x.n_features());
        let denom = (n - self.ddof) as f64;
        if solver == PcaSolver::Power {
            // The power solver uses S on the device only: it never comes to the host.
            if let Some((moments, comoment)) = moments_on_device(gpu, x)? {
                let on_device = |center: &[f64], scale: &[f64]| {
                    comoment.covariance(gpu, &moments, (center, scale), self.ddof)
                };
                return self.fit_from(
                    gpu,
                    (n, d, solver),
                    &moments.column(),
                    Covariance::Device(&on_device),
                    &mut |_, _, _, _| Err(Error::invalid("solver", "S is on the device")),
                );
            }
        }
        // The moments and, unless the solver is matrix-free, the co-moment: one submission.
        let moments = moments_of(gpu, x, solver != PcaSolver::MatrixFree)?;
        self.fit_from(
            gpu,
            (n, d, solver),
            &moments.column(),
            Covariance::Host(&|center, scale| Ok(moments.covariance(center, scale, self.ddof))),
            &mut |center, scale, v, p| {
                MatrixFreeProduct::new(gpu, (center, scale), denom, v, p)?.over_resident(x)
            },
        )
    }

    /// The fit from the column moments of the data: `covariance` forms S about a centre with
    /// a scale, `apply(center, scale, V, p)` computes S·V without forming S (matrix-free).
    #[allow(clippy::type_complexity)]
    fn fit_from<'g>(
        &self,
        gpu: &'g Gpu,
        (n, d, solver): (usize, usize, PcaSolver),
        moments: &Moments,
        covariance: Covariance<'_, 'g>,
        apply: &mut dyn FnMut(&[f64], &[f64], &[f64], usize) -> Result<Vec<f64>>,
    ) -> Result<PcaModel> {
        let center: Vec<f64> = if self.center {
            moments.mean.clone()
        } else {
            vec![0.0; d]
        };
        let scale: Vec<f64> = if self.standardize {
            moments
                .var
                .iter()
                .map(|&v| if v > 0.0 { v.sqrt() } else { 1.0 })
                .collect()
        } else {
            vec![1.0; d]
        };
        // trace(S): the second moment about the centre, per feature, scaled.
        let correction = n as f64 / (n - self.ddof) as f64;
        let total_variance: f64 = (0..d)
            .map(|j| {
                (moments.var[j] + (moments.mean[j] - center[j]).powi(2)) * correction
                    / (scale[j] * scale[j])
            })
            .sum();
        // Constant data have no variance to explain: ratios 0 rather than 0/0.
        let ratio_of = |v: f64| {
            if total_variance > 0.0 {
                v / total_variance
            } else {
                0.0
            }
        };
        let rank = n.min(d);
        let (values, vectors, m, n_iter) = match solver {
            PcaSolver::Full | PcaSolver::Auto => {
                let s = covariance.on_host(&center, &scale)?;
                let (mut values, vectors) = linalg::symmetric_eigen(&s, d)?;
                values.truncate(rank);
                for v in values.iter_mut() {
                    *v = v.max(0.0);
                }
                let m = match self.components {
                    Components::Count(m) => m,
                    Components::Fraction(f) => {
                        let ratio: Vec<f64> = values.iter().map(|&v| ratio_of(v)).collect();
                        components_for_fraction(&ratio, f)
                    }
                    Components::Mle => super::mle::infer_dimension(&values, n),
                };
                (values, vectors[..m * d].to_vec(), m, 0)
            }
            PcaSolver::Power => {
                let m = self.count();
                let (s_buf, formed) = covariance.on_device(gpu, &center, &scale)?;
                let p = block_size(d, m);
                let max_steps = dense_steps_per_check(gpu, d, p);
                let apply = |v: &[f64], p| apply_dense(gpu, &s_buf, d, v, p);
                let (values, vectors, it) = if max_steps > 1 {
                    let mut rounds = DenseRounds::new(gpu, &s_buf, d, p);
                    subspace_iteration_ahead(d, m, &self.into(), max_steps, &mut rounds, apply)?
                } else {
                    subspace_iteration(d, m, &self.into(), apply)?
                };
                if let Some(formed) = formed {
                    // Long done (every round queued behind it): a profile's timestamps.
                    formed.wait()?;
                }
                (values, vectors, m, it)
            }
            PcaSolver::MatrixFree => {
                let m = self.count();
                let (values, vectors, it) =
                    subspace_iteration(d, m, &self.into(), |v, p| apply(&center, &scale, v, p))?;
                (values, vectors, m, it)
            }
        };
        let mut components = vectors;
        linalg::flip_signs(&mut components, m, d);
        let explained_variance: Vec<f64> = values[..m].iter().map(|&v| v.max(0.0)).collect();
        let kept: f64 = explained_variance.iter().sum();
        // Noise: the mean of the eigenvalues left out (scikit-learn's noise_variance_).
        let noise_variance = if m < rank {
            let rest = if values.len() == rank {
                values[m..].iter().sum::<f64>()
            } else {
                total_variance - kept
            };
            (rest / (rank - m) as f64).max(0.0)
        } else {
            0.0
        };
        if self.whiten {
            warn_noise_floor(&explained_variance);
        }
        let denom = (n - self.ddof) as f64;
        Ok(PcaModel {
            params: Pca {
                on_iteration: None,
                ..self.clone()
            },
            solver,
            n_samples: n,
            n_features: d,
            n_components: m,
            explained_variance_ratio: explained_variance.iter().map(|&v| ratio_of(v)).collect(),
            singular_values: explained_variance
                .iter()
                .map(|v| (v * denom).sqrt())
                .collect(),
            explained_variance,
            components,
            mean: center,
            scale,
            noise_variance,
            total_variance,
            n_iter,
        })
    }

    /// Fits, then projects the training data: (model, N x M projections).
    pub fn fit_transform(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<(PcaModel, Vec<f32>)> {
        if x.f64_rows().is_some() {
            let model = self.fit(gpu, x)?;
            let z = model.transform(gpu, x)?;
            return Ok((model, z));
        }
        let xg = x.on_gpu(gpu)?;
        let model = self.fit(gpu, &*xg)?;
        let z = model.transform(gpu, &*xg)?;
        Ok((model, z))
    }

    fn count(&self) -> usize {
        match self.components {
            Components::Count(m) => m,
            Components::Fraction(_) | Components::Mle => {
                unreachable!("resolve_solver sends fractions and the MLE to Full")
            }
        }
    }
}

/// Warns (a `tracing` event; the CLI prints it) when whitening divides components whose
/// variance is at most [`WHITEN_RTOL`](super::WHITEN_RTOL) times the largest: in f32 that
/// variance is rounding noise, which whitening amplifies. scikit-learn whitens them all the
/// same (by √λ, clipped at ε₃₂), and so does this crate.
fn warn_noise_floor(explained_variance: &[f64]) {
    let keep = super::whitenable_components(explained_variance);
    let m = explained_variance.len();
    if keep < m {
        tracing::warn!(
            target: "wgpu_unsupervised::pca",
            "whitening components {}..={m}, whose variance is at most {:e} x the largest ({:e} of {:e}): at the f32 noise floor, their whitened values are amplified rounding noise",
            keep + 1,
            super::WHITEN_RTOL,
            explained_variance[keep],
            explained_variance[0],
        );
    }
}

impl PcaMoments {
    /// The moments of `source` (one pass on the device; D x D co-moment when `full`, else
    /// only its diagonal).
    ///
    /// Errors: an empty source, a D x D matrix over the binding limit
    /// ([`Error::DeviceLimit`]), the source's and the GPU's errors.
    pub fn of(gpu: &Gpu, source: &(impl RowSource + ?Sized), full: bool) -> Result<Self> {
        if let Some(c) = Centred::of_source(source, None)? {
            return PcaMoments::of(gpu, &c, full)?.translated(c.origin());
        }
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
        let scaled = Scaled::of(source)?;
        let rows = DeviceRows::new(gpu, &scaled, 0, fixed_bytes(n, d))?;
        let moments = pass_moments(gpu, &rows, full)?;
        Ok(moments.rescaled(1.0 / scaled.scale() as f64))
    }
}

/// Where a fit's covariance S about a centre with a scale is formed: on the host in f64
/// from the moments (then uploaded for the power solver), or on the device from a co-moment
/// that never left it (the power solver of resident rows), by a submission the host need not
/// wait for.
#[allow(clippy::type_complexity)]
enum Covariance<'a, 'g> {
    Host(&'a dyn Fn(&[f64], &[f64]) -> Result<Vec<f64>>),
    Device(&'a dyn Fn(&[f64], &[f64]) -> Result<(DeviceBuffer<f32>, PendingReadback<'g>)>),
}

impl<'g> Covariance<'_, 'g> {
    /// S on the host, D x D f64.
    fn on_host(&self, center: &[f64], scale: &[f64]) -> Result<Vec<f64>> {
        match self {
            Covariance::Host(form) => form(center, scale),
            Covariance::Device(_) => Err(Error::invalid(
                "solver",
                "the covariance of this fit stays on the device (the power solver's)",
            )),
        }
    }

    /// S on the device, D x D f32, and the submission that forms it when it is still in
    /// flight (wait for it once work queued behind it is done).
    fn on_device(
        &self,
        gpu: &Gpu,
        center: &[f64],
        scale: &[f64],
    ) -> Result<(DeviceBuffer<f32>, Option<PendingReadback<'g>>)> {
        match self {
            Covariance::Host(form) => {
                let s32: Vec<f32> = form(center, scale)?.iter().map(|&v| v as f32).collect();
                let s = gpu.scoped("uploading the covariance", || {
                    Ok(DeviceBuffer::from_slice(gpu, "covariance", &s32))
                })?;
                Ok((s, None))
            }
            Covariance::Device(form) => {
                let (s, formed) = form(center, scale)?;
                Ok((s, Some(formed)))
            }
        }
    }
}

/// What the power iteration needs of PCA's parameters.
impl<'a> From<&'a Pca> for SolverSettings<'a> {
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
