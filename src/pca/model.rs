//! The fitted PCA model: components and reported quantities, their validation (also run
//! when deserializing), transform and inverse transform on the device.

use super::{Components, Pca, PcaSolver};
use crate::error::{Error, Result};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::{CommandEncoder, Gpu, GpuInput, GpuMatrix};
use crate::kernels::products::projection::{self, AffineMap};
use crate::origin::{translate_rows, Centred, Translate};
use std::borrow::Cow;

/// A fitted PCA model.
///
/// Every value of this type is consistent ([`PcaModel::validate`]): [`Pca::fit`] builds valid
/// models and deserializing (feature `serde`) runs `validate`, so an edited file gives an
/// error, never a model that panics or divides by zero later.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(try_from = "PcaModelFields")
)]
pub struct PcaModel {
    pub(super) params: Pca,
    pub(super) solver: PcaSolver,
    pub(super) n_samples: usize,
    pub(super) n_features: usize,
    pub(super) n_components: usize,
    pub(super) components: Vec<f64>,
    pub(super) explained_variance: Vec<f64>,
    pub(super) explained_variance_ratio: Vec<f64>,
    pub(super) singular_values: Vec<f64>,
    pub(super) mean: Vec<f64>,
    pub(super) scale: Vec<f64>,
    pub(super) noise_variance: f64,
    pub(super) total_variance: f64,
    pub(super) n_iter: usize,
}

/// The serialized fields of a [`PcaModel`], before [`PcaModel::validate`] accepts them.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
pub(crate) struct PcaModelFields {
    params: Pca,
    solver: PcaSolver,
    n_samples: usize,
    n_features: usize,
    n_components: usize,
    components: Vec<f64>,
    explained_variance: Vec<f64>,
    explained_variance_ratio: Vec<f64>,
    singular_values: Vec<f64>,
    mean: Vec<f64>,
    scale: Vec<f64>,
    noise_variance: f64,
    total_variance: f64,
    n_iter: usize,
}

#[cfg(feature = "serde")]
impl TryFrom<PcaModelFields> for PcaModel {
    type Error = Error;

    fn try_from(f: PcaModelFields) -> Result<Self> {
        let model = PcaModel {
            params: f.params,
            solver: f.solver,
            n_samples: f.n_samples,
            n_features: f.n_features,
            n_components: f.n_components,
            components: f.components,
            explained_variance: f.explained_variance,
            explained_variance_ratio: f.explained_variance_ratio,
            singular_values: f.singular_values,
            mean: f.mean,
            scale: f.scale,
            noise_variance: f.noise_variance,
            total_variance: f.total_variance,
            n_iter: f.n_iter,
        };
        model.validate()?;
        Ok(model)
    }
}

impl PcaModel {
    /// Principal axes, M x D row-major, orthonormal rows, by decreasing variance.
    pub fn components(&self) -> &[f64] {
        &self.components
    }

    /// Number of components M.
    pub fn n_components(&self) -> usize {
        self.n_components
    }

    /// Number of features D.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Number of training samples N.
    pub fn n_samples(&self) -> usize {
        self.n_samples
    }

    /// λ₁ … λ_M, the variance along each component.
    pub fn explained_variance(&self) -> &[f64] {
        &self.explained_variance
    }

    /// λᵢ / trace(S).
    pub fn explained_variance_ratio(&self) -> &[f64] {
        &self.explained_variance_ratio
    }

    /// √(λᵢ (N − ddof)): the singular values of the centred (scaled) data.
    pub fn singular_values(&self) -> &[f64] {
        &self.singular_values
    }

    /// The centre subtracted before projecting (zeros when `center` was off).
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// Per-feature divisor (standard deviations with `standardize`, else ones).
    pub fn scale(&self) -> &[f64] {
        &self.scale
    }

    /// Mean variance of the discarded directions (scikit-learn's `noise_variance_`).
    pub fn noise_variance(&self) -> f64 {
        self.noise_variance
    }

    /// trace(S): the total variance of the (scaled) data.
    pub fn total_variance(&self) -> f64 {
        self.total_variance
    }

    /// The solver that ran (`Auto` resolved).
    pub fn solver(&self) -> PcaSolver {
        self.solver
    }

    /// Power-iteration steps taken (0 for the full eigendecomposition).
    pub fn n_iter(&self) -> usize {
        self.n_iter
    }

    /// The parameters the model was fitted with.
    pub fn params(&self) -> &Pca {
        &self.params
    }

    /// Checks that the parts of the model fit together: 1 ≤ M ≤ min(N, D) components of
    /// D ≥ 1 features from N ≥ 2 samples, parameters that [`Pca::validate`] accepts for
    /// that data (and a component count that agrees with them), M x D finite components,
    /// M finite variances ≥ 0, M finite ratios
    /// and singular values, D finite means, D finite scales > 0 (they are divided by), and
    /// a finite total and noise variance ≥ 0.
    ///
    /// Every model is checked when it is built or deserialized, so this only fails for
    /// [`Error::InvalidModel`] reasons found in edited serialized data.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Error::InvalidModel {
            kind: "PCA",
            reason,
        };
        let (m, d, n) = (self.n_components, self.n_features, self.n_samples);
        if d == 0 || m == 0 || m > d || n < 2 || m > n {
            return Err(bad(format!(
                "{m} components of {d} features fitted on {n} samples"
            )));
        }
        self.params
            .validate(n, d)
            .map_err(|e| bad(format!("parameters: {e}")))?;
        if let Components::Count(wanted) = self.params.components {
            if wanted != m {
                return Err(bad(format!(
                    "{m} components, but the parameters ask for {wanted}"
                )));
            }
        }
        let lengths = [
            ("components", self.components.len(), m * d),
            ("explained_variance", self.explained_variance.len(), m),
            (
                "explained_variance_ratio",
                self.explained_variance_ratio.len(),
                m,
            ),
            ("singular_values", self.singular_values.len(), m),
            ("mean", self.mean.len(), d),
            ("scale", self.scale.len(), d),
        ];
        for (name, found, expected) in lengths {
            if found != expected {
                return Err(bad(format!(
                    "{name} has {found} values, expected {expected} for {m} components of \
                     {d} features"
                )));
            }
        }
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        for (name, values) in [
            ("components", &self.components),
            ("mean", &self.mean),
            ("explained_variance_ratio", &self.explained_variance_ratio),
            ("singular_values", &self.singular_values),
        ] {
            if !finite(values) {
                return Err(bad(format!("non-finite {name}")));
            }
        }
        if !self.scale.iter().all(|s| s.is_finite() && *s > 0.0) {
            return Err(bad("scale values must be finite and > 0".into()));
        }
        if !self
            .explained_variance
            .iter()
            .all(|v| v.is_finite() && *v >= 0.0)
        {
            return Err(bad("explained variances must be finite and >= 0".into()));
        }
        for (name, v) in [
            ("total_variance", self.total_variance),
            ("noise_variance", self.noise_variance),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(format!("{name} {v} is not finite and >= 0")));
            }
        }
        Ok(())
    }

    /// This model in units `factor` times the fit's (a power of two, so exact): mean ×
    /// factor, and the variances × factor² (singular values × factor), or with
    /// `standardize` the σ × factor (the variances of standardised data have no units).
    pub(super) fn rescaled(mut self, factor: f64) -> Self {
        if factor == 1.0 {
            return self;
        }
        self.mean.iter_mut().for_each(|m| *m *= factor);
        if self.params.standardize {
            self.scale.iter_mut().for_each(|s| *s *= factor);
            return self;
        }
        let f2 = factor * factor;
        self.explained_variance.iter_mut().for_each(|v| *v *= f2);
        self.singular_values.iter_mut().for_each(|v| *v *= factor);
        self.noise_variance *= f2;
        self.total_variance *= f2;
        self
    }

    /// √λᵢ when whitening (else 1): what `inverse_transform` multiplies component i by.
    fn whiten_factor(&self, i: usize) -> f64 {
        if self.params.whiten {
            self.explained_variance[i].sqrt()
        } else {
            1.0
        }
    }

    /// What `transform` divides component i by: √λᵢ clipped below at the f32 epsilon times
    /// the largest √λ (scikit-learn clips at ε₃₂ itself, which is the same for data of unit
    /// scale; relative to the largest it does not depend on the data's units), so a
    /// component of zero variance gives finite projections.
    fn whiten_divisor(&self, i: usize) -> f64 {
        if !self.params.whiten {
            return 1.0;
        }
        let largest = self.explained_variance.first().map_or(0.0, |v| v.sqrt());
        let floor = if largest > 0.0 { largest } else { 1.0 } * f32::EPSILON as f64;
        self.whiten_factor(i).max(floor)
    }

    /// `transform` (`forward`) or `inverse_transform` of the rows of `x`: checked, then
    /// recorded into `encoder` when given (nothing submitted) or run.
    fn apply(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
        forward: bool,
        encoder: Option<&mut CommandEncoder>,
    ) -> Result<GpuMatrix> {
        self.apply_about(gpu, x, forward, encoder, false)
    }

    /// [`PcaModel::apply`]; f64 rows are centred on the mean in f64 before the f32 cast
    /// (module [`origin`](crate::origin)), and with `relative` the reconstructions are left
    /// relative to the mean (the caller adds it in f64).
    fn apply_about(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
        forward: bool,
        encoder: Option<&mut CommandEncoder>,
        relative: bool,
    ) -> Result<GpuMatrix> {
        let (m, d) = (self.n_components, self.n_features);
        let (_, cols) = x.shape();
        let (expected, out_cols) = if forward { (d, m) } else { (m, d) };
        if cols != expected {
            return Err(Error::FeatureMismatch {
                expected,
                found: cols,
            });
        }
        // The affine map (x − in_shift)·W + out_shift, W row-major cols x out_cols.
        let mut weights = vec![0.0f32; d * m];
        for i in 0..m {
            for j in 0..d {
                let u = self.components[i * d + j];
                if forward {
                    weights[j * m + i] = (u / self.scale[j] / self.whiten_divisor(i)) as f32;
                } else {
                    weights[i * d + j] = (u * self.whiten_factor(i) * self.scale[j]) as f32;
                }
            }
        }
        let centred = match forward {
            true => Centred::of_input(x, Some(&self.mean))?,
            false => None,
        };
        let mean: Vec<f32> = match centred.is_some() || relative {
            true => vec![0.0; d],
            false => self.mean.iter().map(|&v| v as f32).collect(),
        };
        let (in_shift, out_shift) = match forward {
            true => (mean, vec![0.0; m]),
            false => (vec![0.0; m], mean),
        };
        let what = if forward {
            "PCA transform"
        } else {
            "PCA inverse transform"
        };
        let xg = match &centred {
            Some(c) => Cow::Owned(c.on_gpu(gpu)?.into_owned()),
            None => x.on_gpu(gpu)?,
        };
        gpu.run_or_record(encoder, what, |batch| {
            let map = AffineMap {
                in_cols: cols,
                out_cols,
                in_shift: &DeviceBuffer::from_slice(gpu, "input shift", &in_shift),
                weights: &DeviceBuffer::from_slice(gpu, "weights", &weights),
                out_shift: &DeviceBuffer::from_slice(gpu, "output shift", &out_shift),
            };
            xg.map_rows_in(
                gpu,
                batch,
                out_cols,
                what,
                |batch, chunk, first, rows, out| {
                    let offset = chunk.x_offset + (first * cols) as u32;
                    projection::affine_matmul(gpu, batch, chunk.bind(), offset, rows, &map, out)
                },
            )
        })
    }

    /// Projections Z = ((X − μ)/σ)·Uᵀ (÷ max(√λ, ε₃₂) when whitening, scikit-learn's rule),
    /// N x M, left on the device. The output is chunked like the input: chunk i holds the
    /// projections of the rows of input chunk i (see [`GpuMatrix::chunk_views`]).
    pub fn transform_gpu(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GpuMatrix> {
        self.apply(gpu, x, true, None)
    }

    /// [`PcaModel::transform_gpu`] recorded into the caller's `encoder` without submitting
    /// (for a pipeline that binds the projections in its own passes before it submits). On an
    /// error the encoder may hold part of the work and should be dropped.
    pub fn transform_into(
        &self,
        gpu: &Gpu,
        encoder: &mut CommandEncoder,
        x: &impl GpuInput,
    ) -> Result<GpuMatrix> {
        self.apply(gpu, x, true, Some(encoder))
    }

    /// Projections of every row, N x M row-major.
    pub fn transform(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<f32>> {
        self.transform_gpu(gpu, x)?.to_host(gpu)
    }

    /// Reconstructions X̂ = (Z·(√λ)U)·σ + μ from projections (N x M), left on the device,
    /// chunked like the input (split further only where D values of its rows would not fit
    /// one binding).
    pub fn inverse_transform_gpu(&self, gpu: &Gpu, z: &impl GpuInput) -> Result<GpuMatrix> {
        self.apply(gpu, z, false, None)
    }

    /// [`PcaModel::inverse_transform_gpu`] recorded into the caller's `encoder` without
    /// submitting.
    pub fn inverse_transform_into(
        &self,
        gpu: &Gpu,
        encoder: &mut CommandEncoder,
        z: &impl GpuInput,
    ) -> Result<GpuMatrix> {
        self.apply(gpu, z, false, Some(encoder))
    }

    /// Reconstructions of every row, N x D row-major.
    pub fn inverse_transform(&self, gpu: &Gpu, z: &impl GpuInput) -> Result<Vec<f32>> {
        self.inverse_transform_gpu(gpu, z)?.to_host(gpu)
    }

    /// [`PcaModel::inverse_transform`] in f64: the reconstructions relative to the mean
    /// computed on the device, the mean added in f64 on the host, so that a mean far from 0
    /// (data of a large offset) costs no digits (module [`origin`](crate::origin)).
    pub fn inverse_transform_f64(&self, gpu: &Gpu, z: &impl GpuInput) -> Result<Vec<f64>> {
        let relative = self.apply_about(gpu, z, false, None, true)?.to_host(gpu)?;
        let mut x: Vec<f64> = relative.iter().map(|&v| v as f64).collect();
        translate_rows(&mut x, &self.mean);
        Ok(x)
    }
}

impl Translate for PcaModel {
    /// The model of the data moved by `by`: the mean moved.
    fn translated(mut self, by: &[f64]) -> Result<Self> {
        crate::origin::check_shift(by, self.n_features)?;
        translate_rows(&mut self.mean, by);
        Ok(self)
    }
}

impl Translate for Pca {
    /// PCA's parameters hold no positions.
    fn translated(self, _by: &[f64]) -> Result<Self> {
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two components of three features from ten samples: a valid model.
    fn valid() -> PcaModel {
        PcaModel {
            params: Pca::new(Components::Count(2)).solver(PcaSolver::Full),
            solver: PcaSolver::Full,
            n_samples: 10,
            n_features: 3,
            n_components: 2,
            components: vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0],
            explained_variance: vec![2.0, 1.0],
            explained_variance_ratio: vec![0.5, 0.25],
            singular_values: vec![18f64.sqrt(), 3.0],
            mean: vec![0.5, -1.0, 2.0],
            scale: vec![1.0, 1.0, 1.0],
            noise_variance: 1.0,
            total_variance: 4.0,
            n_iter: 0,
        }
    }

    /// The reason of the `InvalidModel` error of `edit` applied to a valid model.
    fn reason(edit: impl FnOnce(&mut PcaModel)) -> String {
        let mut m = valid();
        edit(&mut m);
        match m.validate() {
            Err(Error::InvalidModel {
                kind: "PCA",
                reason,
            }) => reason,
            other => panic!("expected an inconsistent PCA model, got {other:?}"),
        }
    }

    #[test]
    fn valid_models_pass() {
        valid().validate().unwrap();
        let mut fraction = valid();
        fraction.params.components = Components::Fraction(0.7);
        fraction.validate().unwrap();
    }

    #[test]
    fn every_inconsistency_is_reported() {
        assert!(reason(|m| m.n_features = 0).contains("of 0 features"));
        assert!(reason(|m| m.n_components = 0).contains("0 components"));
        assert!(reason(|m| m.n_components = 4).contains("4 components of 3"));
        assert!(reason(|m| m.n_samples = 1).contains("on 1 samples"));
        assert!(reason(|m| m.params.ddof = 2).contains("parameters"));
        assert!(reason(|m| m.params.components = Components::Count(1)).contains("ask for 1"));
        assert!(reason(|m| m.components.truncate(5)).contains("components has 5"));
        assert!(reason(|m| m.explained_variance.push(0.5)).contains("explained_variance has 3"));
        assert!(reason(|m| m.explained_variance_ratio.clear())
            .contains("explained_variance_ratio has 0"));
        assert!(reason(|m| m.singular_values.clear()).contains("singular_values has 0"));
        assert!(reason(|m| m.mean.truncate(1)).contains("mean has 1"));
        assert!(reason(|m| m.scale.push(1.0)).contains("scale has 4"));
        assert!(reason(|m| m.components[2] = f64::NAN).contains("non-finite components"));
        assert!(reason(|m| m.mean[0] = f64::INFINITY).contains("non-finite mean"));
        assert!(reason(|m| m.explained_variance_ratio[0] = f64::NAN).contains("ratio"));
        assert!(reason(|m| m.singular_values[1] = f64::NAN).contains("singular"));
        assert!(reason(|m| m.scale[1] = 0.0).contains("scale"));
        assert!(reason(|m| m.explained_variance[1] = -1.0).contains("explained variances"));
        // Whitening a component of zero variance is valid (scikit-learn's clip at ε₃₂).
        let mut whitening = valid();
        whitening.params.whiten = true;
        whitening.explained_variance[1] = 0.0;
        assert!(whitening.validate().is_ok());
        assert!(reason(|m| m.total_variance = f64::NAN).contains("total_variance"));
        assert!(reason(|m| m.noise_variance = -0.5).contains("noise_variance"));
    }
}
