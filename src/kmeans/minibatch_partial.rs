//! [`MiniBatchKMeansFit`]: mini-batch K-Means fed batch by batch (scikit-learn's
//! `partial_fit`), on the steps of `minibatch`. A fitting session of its own, so its
//! `partial_fit` lives with it rather than in `fit`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::minibatch::MiniBatchRun;
use super::stream::labels_and_inertia;
use super::{KMeansModel, MiniBatchKMeans};
use crate::data::Matrix;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::origin::{Centred, Translate};
use crate::source::{check_shape, RowSource};

/// A mini-batch K-Means fed batch by batch (from [`MiniBatchKMeans::partial`]): the first
/// batch initialises the centroids (its rows are the initialisation sample), every batch
/// then makes one step. The device buffers are made per call, so the value is plain data.
///
/// A first batch of f64 rows ([`Matrix64`](crate::Matrix64)) sets the origin: its column
/// means, in f64. Every batch is then centred on it in f64 before the f32 cast, and the
/// model keeps it (module [`origin`](crate::origin)).
#[derive(Debug, Clone)]
pub struct MiniBatchKMeansFit {
    params: MiniBatchKMeans,
    state: Option<PartialState>,
}

#[derive(Debug, Clone)]
struct PartialState {
    /// The centroids, relative to `origin` when there is one.
    centroids: Vec<f32>,
    /// The first batch's column means when it was f64.
    origin: Option<Vec<f64>>,
    counts: Vec<f64>,
    since_reassign: usize,
    steps: usize,
    rng: ChaCha8Rng,
}

impl MiniBatchKMeansFit {
    pub(super) fn new(params: MiniBatchKMeans) -> Self {
        Self {
            params,
            state: None,
        }
    }

    /// One step on the rows of `batch` (at most any size: the batch is the batch).
    ///
    /// Errors: a first batch with fewer than K rows, another number of features than the
    /// first batch ([`Error::FeatureMismatch`]), invalid parameters, the GPU's errors.
    pub fn partial_fit(&mut self, gpu: &Gpu, batch: &(impl RowSource + ?Sized)) -> Result<()> {
        self.partial_fit_maybe_weighted(gpu, batch, None)
    }

    /// [`MiniBatchKMeansFit::partial_fit`] with a weight per row of the batch (see
    /// [`MiniBatchKMeans::fit_weighted`]).
    ///
    /// Errors: those of the weights and of [`MiniBatchKMeansFit::partial_fit`].
    pub fn partial_fit_weighted(
        &mut self,
        gpu: &Gpu,
        batch: &(impl RowSource + ?Sized),
        sample_weight: &[f32],
    ) -> Result<()> {
        crate::data::check_sample_weights(sample_weight, check_shape(batch)?.0)?;
        self.partial_fit_maybe_weighted(gpu, batch, Some(sample_weight))
    }

    fn partial_fit_maybe_weighted(
        &mut self,
        gpu: &Gpu,
        batch: &(impl RowSource + ?Sized),
        weights: Option<&[f32]>,
    ) -> Result<()> {
        let (n, d) = check_shape(batch)?;
        let params = self.params.clone().batch_size(n);
        if let Some(s) = &self.state {
            let expected = s.centroids.len() / self.params.k;
            if expected != d {
                return Err(Error::FeatureMismatch { expected, found: d });
            }
        } else {
            self.params.validate(n, d)?;
            let origin = Centred::of_source(batch, None)?.map(|c| c.origin().to_vec());
            let rows = in_frame(batch, origin.as_deref())?;
            let mut rng = ChaCha8Rng::seed_from_u64(self.params.seed);
            let params = match &origin {
                Some(o) => self.params.clone().translated(&negated(o))?,
                None => self.params.clone(),
            };
            let init = (params.k, &params.init);
            let first = Matrix::new(&rows, d)?;
            let centroids = super::seeding::batch_start(gpu, &first, weights, init, &mut rng)?;
            self.state = Some(PartialState {
                centroids,
                origin,
                counts: vec![0.0; self.params.k],
                since_reassign: 0,
                steps: 0,
                rng,
            });
        }
        let state = self.state.as_mut().expect("initialised above");
        let rows = in_frame(batch, state.origin.as_deref())?;
        let mut run = MiniBatchRun::new(gpu, &params, d, weights.is_some())?;
        run.centroids = std::mem::take(&mut state.centroids);
        run.counts = std::mem::take(&mut state.counts);
        run.since_reassign = state.since_reassign;
        let outcome = run.step(&rows, weights, &mut state.rng);
        state.centroids = run.centroids;
        state.counts = run.counts;
        state.since_reassign = run.since_reassign;
        outcome?;
        state.steps += 1;
        Ok(())
    }

    /// The centroids so far (K x D, relative to the origin of f64 batches: see
    /// [`MiniBatchKMeansFit::model`] for them in the data's units), `None` before the first
    /// batch.
    pub fn centroids(&self) -> Option<&[f32]> {
        self.state.as_ref().map(|s| &s.centroids[..])
    }

    /// Rows each centroid has absorbed so far (reset for reassigned ones).
    pub fn counts(&self) -> Option<&[f64]> {
        self.state.as_ref().map(|s| &s.counts[..])
    }

    /// Steps taken.
    pub fn n_steps(&self) -> usize {
        self.state.as_ref().map_or(0, |s| s.steps)
    }

    /// The model of the centroids so far, with labels and inertia of `source` (one pass).
    ///
    /// Errors: [`Error::EmptyData`] before the first batch, the source's and GPU errors.
    pub fn model(&self, gpu: &Gpu, source: &(impl RowSource + ?Sized)) -> Result<KMeansModel> {
        self.model_maybe_weighted(gpu, source, None)
    }

    /// [`MiniBatchKMeansFit::model`] with the inertia weighted by `sample_weight`.
    ///
    /// Errors: those of the weights and of [`MiniBatchKMeansFit::model`].
    pub fn model_weighted(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        sample_weight: &[f32],
    ) -> Result<KMeansModel> {
        let (n, _) = check_shape(source)?;
        crate::data::check_sample_weights(sample_weight, n)?;
        self.model_maybe_weighted(gpu, source, Some(sample_weight))
    }

    fn model_maybe_weighted(
        &self,
        gpu: &Gpu,
        source: &(impl RowSource + ?Sized),
        weights: Option<&[f32]>,
    ) -> Result<KMeansModel> {
        let s = self.state.as_ref().ok_or(Error::EmptyData {
            what: "mini-batch K-Means",
            missing: "rows",
        })?;
        let (_, d) = check_shape(source)?;
        let expected = s.centroids.len() / self.params.k;
        if d != expected {
            return Err(Error::FeatureMismatch { expected, found: d });
        }
        let (labels, inertia) = match &s.origin {
            Some(o) => {
                let rows = in_frame(source, Some(o))?;
                let rows = Matrix::new(&rows, d)?;
                labels_and_inertia(gpu, &rows, &s.centroids, weights)?
            }
            None => labels_and_inertia(gpu, source, &s.centroids, weights)?,
        };
        // The model is built in the fit's frame, then moved to the data's (given centroids
        // included).
        let params = match &s.origin {
            Some(o) => self.params.clone().translated(&negated(o))?,
            None => self.params.clone(),
        };
        let model = KMeansModel {
            params: params.as_kmeans(),
            n_features: d,
            centroids: s.centroids.clone(),
            labels,
            inertia,
            n_iter: s.steps,
            converged: false,
            inertia_history: Vec::new(),
            init_seconds: Default::default(),
            origin: None,
        };
        match &s.origin {
            Some(o) => model.translated(o),
            None => Ok(model),
        }
    }
}

/// Every row of `rows` as f32 in the fit's frame: less `origin` (in f64) when there is one.
fn in_frame(rows: &(impl RowSource + ?Sized), origin: Option<&[f64]>) -> Result<Vec<f32>> {
    let (n, d) = check_shape(rows)?;
    let all: Vec<usize> = (0..n).collect();
    let Some(origin) = origin else {
        return rows.gather(&all);
    };
    if let Some(c) = Centred::of_source(rows, Some(origin))? {
        return c.gather(&all);
    }
    // f32 rows after f64 ones: widened, then centred alike.
    let values: Vec<f64> = rows.gather(&all)?.iter().map(|&v| v as f64).collect();
    let wide = crate::Matrix64::new(&values, d)?;
    Centred::of_source(&wide, Some(origin))?
        .expect("f64 rows")
        .gather(&all)
}

fn negated(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| -x).collect()
}
