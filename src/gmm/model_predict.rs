//! Predictions and scores of a fitted [`GaussianMixtureModel`]: one E-step over the rows
//! (log pₖ(xᵢ) = log πₖ + log N(xᵢ | μₖ, Σₖ), log p(xᵢ) = log Σₖ pₖ(xᵢ), rᵢₖ = pₖ(xᵢ)/p(xᵢ)),
//! its responsibilities kept where the caller asks for them (N x K) and passed through a
//! window otherwise, so labels and scores take device memory O(N·D + K·D²) at any N.

use super::em::Parameters;
use super::model::{GaussianMixtureModel, GmmEvaluation};
use super::workspace::{Purpose, Workspace};
use crate::error::{Error, Result};
use crate::gpu::{CommandEncoder, Gpu, GpuInput, GpuMatrix, GpuVector};
use crate::origin::{translate_rows, Centred};

impl GaussianMixtureModel {
    /// Checks that `x` has the model's feature count; returns the parameters to evaluate and
    /// the rows on the device: f64 rows less the weighted mean of the means (in f64, module
    /// [`origin`](crate::origin)) against the means moved alike, f32 rows as they are.
    fn on_device<'x>(
        &self,
        gpu: &Gpu,
        x: &'x impl GpuInput,
    ) -> Result<(Parameters, std::borrow::Cow<'x, GpuMatrix>)> {
        let (_, d) = x.shape();
        if d != self.n_features {
            return Err(Error::FeatureMismatch {
                expected: self.n_features,
                found: d,
            });
        }
        let mut p = self.parameters();
        let mut centre = vec![0.0f64; d];
        for (w, mean) in self.weights.iter().zip(self.means.chunks_exact(d)) {
            centre.iter_mut().zip(mean).for_each(|(c, m)| *c += w * m);
        }
        if let Some(c) = Centred::of_input(x, Some(&centre))? {
            let back: Vec<f64> = centre.iter().map(|v| -v).collect();
            translate_rows(&mut p.means, &back);
            let xg = std::borrow::Cow::Owned(c.on_gpu(gpu)?.into_owned());
            return Ok((p, xg));
        }
        Ok((p, x.on_gpu(gpu)?))
    }

    /// The parameters as the device passes take them.
    pub(super) fn parameters(&self) -> Parameters {
        Parameters {
            weights: self.weights.clone(),
            means: self.means.clone(),
            covariances: self.covariances.clone(),
            precisions_cholesky: self.precisions_cholesky.clone(),
        }
    }

    /// One E-step over `x`: responsibilities, log-densities and labels left on the device,
    /// and the mean log-likelihood. Per-row outputs are chunked like `x`; the
    /// responsibilities (K values a row) are split further where a chunk's would not fit one
    /// binding ([`GpuMatrix::chunk_views`] gives every chunk's first row).
    pub fn evaluate_gpu(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GmmEvaluation> {
        let (p, xg) = self.on_device(gpu, x)?;
        let purpose = Purpose::Responsibilities;
        let ws = Workspace::new(gpu, &xg, self.k(), self.covariance_type(), purpose)?;
        let ((responsibilities, log_density, labels), mean_log_likelihood) = ws.evaluate(&p)?;
        Ok(GmmEvaluation {
            responsibilities,
            log_density,
            labels,
            mean_log_likelihood,
        })
    }

    /// Every row's log p and label and the mean log-likelihood of `x`, from one E-step whose
    /// responsibilities pass through a window (never N x K on the device): the bits of
    /// [`GaussianMixtureModel::evaluate_gpu`]'s.
    fn evaluate_rows(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
    ) -> Result<(GpuVector<f32>, GpuVector<u32>, f64)> {
        let (p, xg) = self.on_device(gpu, x)?;
        let purpose = Purpose::RowOutputs;
        let ws = Workspace::new(gpu, &xg, self.k(), self.covariance_type(), purpose)?;
        ws.evaluate_rows(&p)
    }

    /// The E-step over `x` recorded into the caller's `encoder` without submitting, in a
    /// workspace for `purpose`; returns it, holding the outputs (the mean log-likelihood
    /// would need a readback). On an error the encoder may hold part of the work and should
    /// be dropped.
    fn record_evaluation<'g>(
        &self,
        gpu: &'g Gpu,
        encoder: &mut CommandEncoder,
        x: &impl GpuInput,
        purpose: Purpose,
    ) -> Result<Workspace<'g>> {
        let (p, xg) = self.on_device(gpu, x)?;
        let ws = Workspace::new(gpu, &xg, self.k(), self.covariance_type(), purpose)?;
        gpu.record_into(encoder, "mixture evaluation", |batch| {
            ws.record_evaluation(batch, &p)
        })?;
        Ok(ws)
    }

    /// [`GaussianMixtureModel::predict_gpu`] recorded into the caller's `encoder` without
    /// submitting, for a pipeline that binds the labels in its own passes.
    pub fn predict_into(
        &self,
        gpu: &Gpu,
        encoder: &mut CommandEncoder,
        x: &impl GpuInput,
    ) -> Result<GpuVector<u32>> {
        let ws = self.record_evaluation(gpu, encoder, x, Purpose::RowOutputs)?;
        Ok(ws.rows_on_device().1)
    }

    /// [`GaussianMixtureModel::predict_proba_gpu`] recorded into the caller's `encoder`
    /// without submitting.
    pub fn predict_proba_into(
        &self,
        gpu: &Gpu,
        encoder: &mut CommandEncoder,
        x: &impl GpuInput,
    ) -> Result<GpuMatrix> {
        let ws = self.record_evaluation(gpu, encoder, x, Purpose::Responsibilities)?;
        Ok(ws.outputs().0)
    }

    /// [`GaussianMixtureModel::score_samples_gpu`] recorded into the caller's `encoder`
    /// without submitting.
    pub fn score_samples_into(
        &self,
        gpu: &Gpu,
        encoder: &mut CommandEncoder,
        x: &impl GpuInput,
    ) -> Result<GpuVector<f32>> {
        let ws = self.record_evaluation(gpu, encoder, x, Purpose::RowOutputs)?;
        Ok(ws.rows_on_device().0)
    }

    /// Most probable component of each row, left on the device (the responsibilities pass
    /// through a window: device memory O(N·D + K·D²) at any N).
    pub fn predict_gpu(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GpuVector<u32>> {
        Ok(self.evaluate_rows(gpu, x)?.1)
    }

    /// Most probable component of each row (argmaxₖ of log πₖ + log N(x | μₖ, Σₖ)).
    pub fn predict(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<u32>> {
        self.predict_gpu(gpu, x)?.to_host(gpu)
    }

    /// Responsibilities p(k | xᵢ), N x K, left on the device.
    pub fn predict_proba_gpu(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GpuMatrix> {
        Ok(self.evaluate_gpu(gpu, x)?.responsibilities)
    }

    /// Responsibilities p(k | xᵢ), N x K row-major; each row sums to 1.
    pub fn predict_proba(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<f32>> {
        self.predict_proba_gpu(gpu, x)?.to_host(gpu)
    }

    /// log p(xᵢ) per row, left on the device (the responsibilities in a window, as
    /// [`GaussianMixtureModel::predict_gpu`]).
    pub fn score_samples_gpu(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GpuVector<f32>> {
        Ok(self.evaluate_rows(gpu, x)?.0)
    }

    /// log p(xᵢ) per row.
    pub fn score_samples(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<f32>> {
        self.score_samples_gpu(gpu, x)?.to_host(gpu)
    }

    /// Mean log-likelihood (1/N) Σᵢ log p(xᵢ) of `x` (higher is better).
    pub fn score(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<f64> {
        Ok(self.evaluate_rows(gpu, x)?.2)
    }
}
