//! The fitted K-Means model: centroids and fit statistics, their validation (also run when
//! deserializing), prediction and distances on the device.

use crate::error::{Error, Result};
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::{CommandEncoder, Gpu, GpuInput, GpuMatrix, GpuVector};
use crate::kernels::assign::{self, Assignment, DistanceTable};
use crate::kernels::primitives::rows::{input_in_f32_range, scale_rows_in, scale_vector_in};
use crate::origin::Centred;
use std::borrow::Cow;

use super::{KMeans, KMeansInit};

/// A fitted K-Means model.
///
/// Every value of this type is consistent ([`KMeansModel::validate`]): [`KMeans::fit`] and
/// [`KMeansModel::from_centroids`] build valid models, and deserializing (feature `serde`)
/// runs `validate`, so an edited file gives an error, never a model that panics later. The
/// serialized form leaves out the training labels (`labels()` of a deserialized model is
/// empty).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(try_from = "KMeansModelFields")
)]
pub struct KMeansModel {
    pub(super) params: KMeans,
    pub(super) n_features: usize,
    pub(super) centroids: Vec<f32>,
    /// Training labels: not serialized (a model file is for predicting, and N labels
    /// would dwarf the K x D centroids).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(super) labels: Vec<u32>,
    pub(super) inertia: f64,
    pub(super) n_iter: usize,
    pub(super) converged: bool,
    pub(super) inertia_history: Vec<f64>,
    /// Seconds the initialisations took (every restart's): not serialized, and not part of
    /// what makes two models equal.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(super) init_seconds: Elapsed,
    /// For a model fitted on f64 data: the point they were centred on and the centroids
    /// relative to it (module `origin`); `None` for f32 data.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub(super) origin: Option<Box<Origin>>,
}

/// The origin of a K-Means model fitted on f64 data (module [`origin`](crate::origin)): the
/// data's column means, taken in f64, and the centroids relative to them, which keep the
/// precision that the centroids in the data's units (f32) lose under a large offset.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Origin {
    /// The point, D values.
    pub(super) point: Vec<f64>,
    /// The centroids less `point`, K x D row-major.
    pub(super) centroids: Vec<f32>,
}

/// A duration in seconds that every other one equals: models fitted twice from one seed are
/// the same model although the clock differs.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Elapsed(pub(crate) f64);

impl PartialEq for Elapsed {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The serialized fields of a [`KMeansModel`], before [`KMeansModel::validate`] accepts them.
/// An unknown inertia (NaN, written as `null` by JSON) reads back as NaN; the `labels` of
/// files written before they were left out are ignored.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
pub(crate) struct KMeansModelFields {
    params: KMeans,
    n_features: usize,
    centroids: Vec<f32>,
    inertia: Option<f64>,
    n_iter: usize,
    converged: bool,
    inertia_history: Vec<f64>,
    #[serde(default)]
    origin: Option<Box<Origin>>,
}

#[cfg(feature = "serde")]
impl TryFrom<KMeansModelFields> for KMeansModel {
    type Error = Error;

    fn try_from(f: KMeansModelFields) -> Result<Self> {
        let model = KMeansModel {
            params: f.params,
            n_features: f.n_features,
            centroids: f.centroids,
            labels: Vec::new(),
            inertia: f.inertia.unwrap_or(f64::NAN),
            n_iter: f.n_iter,
            converged: f.converged,
            inertia_history: f.inertia_history,
            init_seconds: Default::default(),
            origin: f.origin,
        };
        model.validate()?;
        Ok(model)
    }
}

impl KMeansModel {
    /// A model from known centroids (row-major K x D), e.g. computed elsewhere, to predict
    /// and transform with. It has no training labels and an inertia of NaN.
    pub fn from_centroids(centroids: Vec<f32>, n_features: usize) -> Result<Self> {
        if n_features == 0 || centroids.is_empty() {
            return Err(Error::EmptyData {
                what: "centroids",
                missing: if n_features == 0 { "columns" } else { "rows" },
            });
        }
        if !centroids.len().is_multiple_of(n_features) {
            return Err(Error::Shape {
                len: centroids.len(),
                n_features,
            });
        }
        crate::data::check_finite(&centroids, n_features)?;
        let k = centroids.len() / n_features;
        Ok(Self {
            params: KMeans::new(k).init(KMeansInit::Centroids(
                centroids.iter().map(|&v| v as f64).collect(),
            )),
            n_features,
            centroids,
            labels: Vec::new(),
            inertia: f64::NAN,
            n_iter: 0,
            converged: false,
            inertia_history: Vec::new(),
            init_seconds: Default::default(),
            origin: None,
        })
    }

    /// Centroids, row-major K x D, in the data's units rounded to f32. For a model fitted on
    /// f64 data far from 0, [`KMeansModel::centroids_f64`] keeps the digits f32 loses.
    pub fn centroids(&self) -> &[f32] {
        &self.centroids
    }

    /// Centroids, row-major K x D, in f64: the origin plus the centroids relative to it for
    /// a model fitted on f64 data (module [`origin`](crate::origin)), else the f32
    /// centroids widened.
    pub fn centroids_f64(&self) -> Vec<f64> {
        match &self.origin {
            Some(o) => o.absolute(),
            None => self.centroids.iter().map(|&v| v as f64).collect(),
        }
    }

    /// The point the data were centred on in f64 before the f32 cast (their column means),
    /// for a model fitted on f64 data; `None` for f32 data (module [`origin`](crate::origin)).
    /// Predictions of f64 data subtract it in f64.
    pub fn origin(&self) -> Option<&[f64]> {
        self.origin.as_ref().map(|o| &o.point[..])
    }

    /// Number of clusters K.
    pub fn k(&self) -> usize {
        self.params.k
    }

    /// Number of features D the model was fitted on.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Cluster of each training row; empty for a model built by
    /// [`KMeansModel::from_centroids`] or deserialized (model files do not carry them).
    pub fn labels(&self) -> &[u32] {
        &self.labels
    }

    /// J = Σᵢ ‖xᵢ − μ_{c(i)}‖² of the training data under the final centroids.
    ///
    /// For the cosine metric this is Σ(1 − cos(x, c)).
    pub fn inertia(&self) -> f64 {
        self.inertia
    }

    /// Wall-clock seconds spent choosing the initial centroids, summed over the restarts (0
    /// for a model from centroids, a mini-batch fit or a file). Not compared by `==`.
    pub fn init_seconds(&self) -> f64 {
        self.init_seconds.0
    }

    /// Lloyd iterations of the kept restart.
    pub fn n_iter(&self) -> usize {
        self.n_iter
    }

    /// Whether the kept restart met a stopping rule before `max_iter`.
    pub fn converged(&self) -> bool {
        self.converged
    }

    /// Inertia at each iteration of the kept restart (labels from the centroids of that
    /// iteration): never increasing, up to f32 rounding.
    pub fn inertia_history(&self) -> &[f64] {
        &self.inertia_history
    }

    /// The parameters the model was fitted with.
    pub fn params(&self) -> &KMeans {
        &self.params
    }

    /// Checks that the parts of the model fit together: K ≥ 1 clusters of D ≥ 1 features,
    /// K x D finite centroids, parameters that [`KMeans::validate`] accepts for D features,
    /// an inertia that is finite and ≥ 0 (or NaN: unknown, for a model from centroids), a
    /// finite inertia history and training labels below K.
    ///
    /// Every model is checked when it is built or deserialized, so this only fails for
    /// [`Error::InvalidModel`] reasons found in edited serialized data.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Error::InvalidModel {
            kind: "K-Means",
            reason,
        };
        let (k, d) = (self.params.k, self.n_features);
        if k == 0 || d == 0 {
            return Err(bad(format!("k = {k} clusters of d = {d} features")));
        }
        if k.checked_mul(d) != Some(self.centroids.len()) {
            return Err(bad(format!(
                "{} centroid values for k = {k} clusters of d = {d} features",
                self.centroids.len()
            )));
        }
        if let Some(i) = self.centroids.iter().position(|v| !v.is_finite()) {
            return Err(bad(format!("non-finite centroid value at index {i}")));
        }
        self.params
            .validate_for_features(d)
            .map_err(|e| bad(format!("parameters: {e}")))?;
        if !(self.inertia.is_nan() || (self.inertia.is_finite() && self.inertia >= 0.0)) {
            return Err(bad(format!(
                "inertia {} is not finite and >= 0",
                self.inertia
            )));
        }
        if self.inertia_history.iter().any(|v| !v.is_finite()) {
            return Err(bad("non-finite inertia history".into()));
        }
        if let Some(l) = self.labels.iter().find(|&&l| l as usize >= k) {
            return Err(bad(format!("training label {l} out of range for k = {k}")));
        }
        if let Some(o) = &self.origin {
            o.validate(k, d, &self.centroids).map_err(bad)?;
        }
        Ok(())
    }

    /// This model in units `factor` times the fit's (a power of two, so exact): centroids ×
    /// factor, inertia × factor². The parameters are those of the fit.
    pub(super) fn rescaled(mut self, factor: f32) -> Self {
        let f2 = factor as f64 * factor as f64;
        self.centroids.iter_mut().for_each(|c| *c *= factor);
        if let Some(o) = &mut self.origin {
            o.point.iter_mut().for_each(|p| *p *= factor as f64);
            o.centroids.iter_mut().for_each(|c| *c *= factor);
        }
        self.inertia *= f2;
        self.inertia_history.iter_mut().for_each(|v| *v *= f2);
        self
    }

    /// This model of rows whose weights were multiplied by `1 / factor`
    /// ([`crate::data::weights_in_range`]), in the caller's weights: inertias × `factor`.
    pub(super) fn reweighted(mut self, factor: f64) -> Self {
        self.inertia *= factor;
        self.inertia_history.iter_mut().for_each(|v| *v *= factor);
        self
    }

    /// `x` on the device as the centroids see it (unit rows for the cosine metric; f64 rows
    /// less the model's origin, module [`origin`](crate::origin)), the power of two that
    /// rows and centroids are multiplied by so that their squared distances neither
    /// overflow nor underflow f32 (1 for data in range), and the centroids in that frame.
    fn rows_on_gpu<'x>(&'x self, gpu: &Gpu, x: &'x impl GpuInput) -> Result<OnDevice<'x>> {
        if self.params.metric.is_spherical() {
            let xg = x.on_gpu(gpu)?;
            let unit = crate::kernels::primitives::rows::normalize_rows(gpu, &xg)?;
            return Ok((Cow::Owned(unit), 1.0, Cow::Borrowed(&self.centroids)));
        }
        if let Some(centred) = self.centred(x)? {
            let (o, relative) = &centred;
            let c = Centred::of_input(x, Some(o))?.expect("f64 rows");
            let largest = relative.iter().fold(0.0f32, |m, c| m.max(c.abs()));
            let (xg, scale) = input_in_f32_range(gpu, &c, largest)?;
            return Ok((Cow::Owned(xg.into_owned()), scale, Cow::Owned(centred.1)));
        }
        let largest = self.centroids.iter().fold(0.0f32, |m, c| m.max(c.abs()));
        let (xg, scale) = input_in_f32_range(gpu, x, largest)?;
        Ok((xg, scale, Cow::Borrowed(&self.centroids)))
    }

    /// `centroids` times `scale`, on the device.
    fn centroids_on_gpu(gpu: &Gpu, centroids: &[f32], scale: f32) -> DeviceBuffer<f32> {
        let scaled: Vec<f32> = centroids.iter().map(|c| c * scale).collect();
        DeviceBuffer::from_slice(gpu, "centroids", &scaled)
    }

    fn check_features(&self, x: &impl GpuInput) -> Result<()> {
        let (_, d) = x.shape();
        if d != self.n_features {
            return Err(Error::FeatureMismatch {
                expected: self.n_features,
                found: d,
            });
        }
        Ok(())
    }

    /// Nearest centroid and squared distance of every row, left on the device (chunked like
    /// the rows). With the cosine metric the rows are normalised first and the distance is
    /// ‖x̂ − ĉ‖² = 2(1 − cos); a row of zeros is an error. Data of extreme magnitude are
    /// assigned at a power-of-two scale (exact) and the distances reported in their units;
    /// squared distances beyond f32's largest value (data beyond about 10¹⁹) are then +∞,
    /// while [`KMeansModel::score`] and [`KMeansModel::transform`] stay finite.
    pub fn predict_gpu(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
    ) -> Result<(GpuVector<u32>, GpuVector<f32>)> {
        self.assign(gpu, x, None, true)
            .map(|(labels, dists, _)| (labels, dists))
    }

    /// [`KMeansModel::predict_gpu`] recorded into the caller's `encoder` without submitting,
    /// for a pipeline that binds the labels in its own passes before it submits. (The cosine
    /// metric's normalisation of `x`, the measure of device data's magnitude, and the
    /// autotuner's first timing of a new shape, still run on their own.) On an error the
    /// encoder may hold part of the work and should be dropped.
    pub fn predict_into(
        &self,
        gpu: &Gpu,
        encoder: &mut CommandEncoder,
        x: &impl GpuInput,
    ) -> Result<(GpuVector<u32>, GpuVector<f32>)> {
        self.assign(gpu, x, Some(encoder), true)
            .map(|(labels, dists, _)| (labels, dists))
    }

    /// The assignment of every row, run or recorded into `encoder`, and the scale its
    /// distances were computed at: 1 when `in_caller_units` brought them back (or the data
    /// needed none).
    fn assign(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
        encoder: Option<&mut CommandEncoder>,
        in_caller_units: bool,
    ) -> Result<(GpuVector<u32>, GpuVector<f32>, f32)> {
        self.check_features(x)?;
        let (xg, scale, centroids) = self.rows_on_gpu(gpu, x)?;
        gpu.run_or_record(encoder, "K-Means predict", |batch| {
            let labels = GpuVector::zeroed(gpu, &xg, "labels");
            let dists = GpuVector::zeroed(gpu, &xg, "squared distances");
            let centroids = Self::centroids_on_gpu(gpu, &centroids, scale);
            let changed = DeviceBuffer::zeroed(gpu, "changed labels", 1);
            for (i, chunk) in xg.chunks().iter().enumerate() {
                let to = Assignment {
                    centroids: &centroids,
                    k: self.params.k,
                    labels: &labels.chunks[i],
                    min_sq_dist: &dists.chunks[i],
                    changed: &changed,
                };
                assign::assign_nearest_centroid(gpu, batch, chunk, self.n_features, &to)?;
            }
            if scale == 1.0 || !in_caller_units {
                return Ok((labels, dists, scale));
            }
            // 1/scale² may lie outside f32 (2^-132 for data near 1e20): two steps of 1/scale.
            let once = scale_vector_in(gpu, batch, &dists, 1.0 / scale)?;
            Ok((
                labels,
                scale_vector_in(gpu, batch, &once, 1.0 / scale)?,
                1.0,
            ))
        })
    }

    /// Nearest centroid of every row.
    pub fn predict(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<u32>> {
        self.assign(gpu, x, None, false)?.0.to_host(gpu)
    }

    /// The K-Means objective of `x` under this model, negated (higher is better, as
    /// scikit-learn's `score`): −Σ‖x − c‖², or −Σ(1 − cos(x, c)) for the cosine metric.
    /// Summed in f64 and reported in the data's units whatever their magnitude.
    pub fn score(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<f64> {
        let (_, dists, scale) = self.assign(gpu, x, None, false)?;
        let d = dists.to_host(gpu)?;
        let to_caller = self.params.metric.objective_scale() / (scale as f64 * scale as f64);
        Ok(-to_caller * d.iter().map(|&v| v as f64).sum::<f64>())
    }

    /// Euclidean distances from every row to every centroid (N x K), left on the device.
    /// With the cosine metric these are chord distances on the unit sphere, ‖x̂ − ĉ‖ =
    /// √(2(1 − cos)), which order the centroids as the cosine does. The output is chunked
    /// like the input (chunk i holds the rows of input chunk i), each split further only
    /// where K distances of its rows would not fit one binding; [`GpuMatrix::chunk_views`]
    /// gives every chunk's first row.
    pub fn transform_gpu(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GpuMatrix> {
        self.distances(gpu, x, None)
    }

    /// [`KMeansModel::transform_gpu`] recorded into the caller's `encoder` without
    /// submitting (see [`KMeansModel::predict_into`]).
    pub fn transform_into(
        &self,
        gpu: &Gpu,
        encoder: &mut CommandEncoder,
        x: &impl GpuInput,
    ) -> Result<GpuMatrix> {
        self.distances(gpu, x, Some(encoder))
    }

    /// The distance table, run or recorded into `encoder`: at the scale of
    /// [`KMeansModel::rows_on_gpu`], then brought back to the data's units.
    fn distances(
        &self,
        gpu: &Gpu,
        x: &impl GpuInput,
        encoder: Option<&mut CommandEncoder>,
    ) -> Result<GpuMatrix> {
        self.check_features(x)?;
        let (xg, scale, centroids) = self.rows_on_gpu(gpu, x)?;
        let (k, d) = (self.params.k, self.n_features);
        let what = "K-Means transform";
        gpu.run_or_record(encoder, what, |batch| {
            let centroids = Self::centroids_on_gpu(gpu, &centroids, scale);
            let table = xg.map_rows_in(gpu, batch, k, what, |batch, chunk, first, rows, out| {
                let table = DistanceTable {
                    centroids: &centroids,
                    k,
                    out,
                    sqrt: true,
                };
                assign::pairwise_distances(gpu, batch, chunk, first, rows, d, &table)
            })?;
            if scale == 1.0 {
                return Ok(table);
            }
            scale_rows_in(gpu, batch, &table, 1.0 / scale)
        })
    }

    /// Euclidean distances from every row to every centroid, row-major N x K (chord
    /// distances for the cosine metric, see [`KMeansModel::transform_gpu`]).
    ///
    /// Errors: those of [`KMeansModel::transform_gpu`], and [`Error::OutOfRange`] for a
    /// distance beyond f32's largest value (rows and centroids near ±f32::MAX).
    pub fn transform(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<f32>> {
        let t = self.transform_gpu(gpu, x)?.to_host(gpu)?;
        if let Some(i) = t.iter().position(|v| !v.is_finite()) {
            return Err(Error::OutOfRange {
                what: format!(
                    "the distance from row {} to centroid {}",
                    i / self.params.k,
                    i % self.params.k
                ),
            });
        }
        Ok(t)
    }
}

/// Rows on the device, the power of two they were multiplied by, and the centroids in their
/// frame (see `KMeansModel::rows_on_gpu`).
type OnDevice<'x> = (Cow<'x, GpuMatrix>, f32, Cow<'x, [f32]>);

#[cfg(test)]
mod tests {
    use super::*;

    /// Three clusters of two features with labels, inertia and history: a valid model.
    fn valid() -> KMeansModel {
        let mut m = KMeansModel::from_centroids(vec![0.0, 0.0, 1.0, 1.0, 2.0, 2.0], 2).unwrap();
        m.labels = vec![0, 1, 2, 2];
        m.inertia = 1.5;
        m.inertia_history = vec![3.0, 1.5];
        m
    }

    /// The reason of the `InvalidModel` error of `edit` applied to a valid model.
    fn reason(edit: impl FnOnce(&mut KMeansModel)) -> String {
        let mut m = valid();
        edit(&mut m);
        match m.validate() {
            Err(Error::InvalidModel {
                kind: "K-Means",
                reason,
            }) => reason,
            other => panic!("expected an inconsistent K-Means model, got {other:?}"),
        }
    }

    #[test]
    fn valid_models_pass() {
        valid().validate().unwrap();
        let mut unknown_inertia = valid();
        unknown_inertia.inertia = f64::NAN;
        unknown_inertia.validate().unwrap();
    }

    #[test]
    fn every_inconsistency_is_reported() {
        assert!(reason(|m| m.n_features = 0).contains("d = 0 features"));
        assert!(reason(|m| m.params.k = 0).contains("k = 0 clusters"));
        assert!(reason(|m| m.centroids.truncate(4)).contains("4 centroid values"));
        assert!(reason(|m| m.centroids[3] = f32::INFINITY).contains("index 3"));
        assert!(reason(|m| m.params.n_init = 0).contains("n_init"));
        assert!(reason(|m| m.params.init = KMeansInit::Centroids(vec![0.0])).contains("init"));
        assert!(reason(|m| m.inertia = -1.0).contains("inertia -1"));
        assert!(reason(|m| m.inertia = f64::INFINITY).contains("inertia inf"));
        assert!(reason(|m| m.inertia_history[0] = f64::NAN).contains("history"));
        assert!(reason(|m| m.labels[1] = 3).contains("label 3"));
    }
}
