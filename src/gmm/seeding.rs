//! Every start of EM: responsibilities from a GPU K-Means or from k-means++ seeds, uniform
//! random responsibilities (the oracle's ChaCha8 stream, row by row), or given parameters;
//! then the parts given on their own (`weights_init`, `means_init`, `precisions_init`)
//! replace those the start computed (scikit-learn's rule, module `params`).
//!
//! **Rows on the device**: K-Means runs [`KMeans::fit`] on them, drawing from the mixture's
//! own generator (so a mixture seeded s starts from the labels of `KMeans::new(k).seed(s)`,
//! as scikit-learn's does), k-means++ seeds on all of them; the one-hot or random
//! responsibilities are made in the window segment by segment (`passes`), and one M-step
//! about the first row gives the start. **Streamed rows**: `Given` and `Random` start
//! exactly where the resident fit starts (up to rounding in the first M-step); `KMeans` runs
//! [`KMeans::fit_source`] on the same generator (its k-means++ seeds come from a sample when
//! it streams too, so the start can differ from a resident fit's); `KMeansPlusPlus` seeds on a uniform sample of
//! `max(10 000, 256·K)` rows (at most a piece) and labels every row by its nearest seed in a
//! pass. The initial M-step is then a pass like the iterations'.

use std::borrow::Cow;

use rand_chacha::ChaCha8Rng;

use super::em::Parameters;
use super::math::{covariances_from_precisions, precision_cholesky_quoting};
use super::passes::Fill;
use super::stream::{StreamFill, Streamed};
use super::workspace::Workspace;
use super::{GaussianMixture, GmmInit, InitialParameters};
use crate::data::Matrix;
use crate::error::Result;
use crate::gpu::GpuMatrix;
use crate::kmeans::{plus_plus_sample_size, uniform_sample, weighted_plus_plus_seeds};
use crate::kmeans::{KMeans, KMeansModel};
use crate::source::RowSource;

/// The start of one restart on rows on the device, with the given parts in place.
pub(super) fn resident_start(
    ws: &Workspace<'_>,
    params: &GaussianMixture,
    rng: &mut ChaCha8Rng,
) -> Result<Parameters> {
    let (k, d) = (ws.k, ws.d);
    let fill = match &params.init {
        GmmInit::KMeans => {
            let km = KMeans::new(k).n_init(1);
            let km = km.fit_continuing(ws.gpu, &ws.x, ws.host_weights(), rng)?;
            Fill::Labels(Cow::Owned(km.labels().to_vec()))
        }
        GmmInit::KMeansPlusPlus => {
            let seeds = weighted_plus_plus_seeds(ws.gpu, &ws.x, k, ws.host_weights(), rng)?;
            let labels = KMeansModel::from_centroids(seeds, d)?.predict(ws.gpu, &ws.x)?;
            Fill::Labels(Cow::Owned(labels))
        }
        GmmInit::Random => Fill::Random(Box::new(rng.clone())),
        GmmInit::Given(g) => return override_start(params, given_parameters(g, params, d)?, d),
    };
    let (start, drawn) = ws.mstep(&fill, params.reg_covar)?;
    if let Some(after) = drawn {
        *rng = after;
    }
    override_start(params, start, d)
}

/// The start of one restart on streamed rows, with the given parts in place.
pub(super) fn streamed_start<S: RowSource + ?Sized>(
    data: &mut Streamed<'_, S>,
    params: &GaussianMixture,
    rng: &mut ChaCha8Rng,
) -> Result<Parameters> {
    let (k, d) = (params.k, data.shape().1);
    let reg = params.reg_covar;
    let start = match &params.init {
        GmmInit::KMeans => {
            let km = KMeans::new(k).n_init(1);
            let km =
                km.fit_source_continuing(data.gpu(), data.source(), data.host_weights(), rng)?;
            data.responsibility_parameters(reg, &mut StreamFill::Labels(km.labels()))?
        }
        GmmInit::KMeansPlusPlus => {
            let seeds = KMeansModel::from_centroids(sampled_seeds(data, k, rng)?, d)?;
            data.responsibility_parameters(reg, &mut StreamFill::Nearest(&seeds))?
        }
        GmmInit::Random => data.responsibility_parameters(reg, &mut StreamFill::Random(rng))?,
        GmmInit::Given(g) => given_parameters(g, params, d)?,
    };
    override_start(params, start, d)
}

/// k-means++ seeds drawn from a uniform sample of the streamed rows (module docs).
fn sampled_seeds<S: RowSource + ?Sized>(
    data: &Streamed<'_, S>,
    k: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f32>> {
    let (n, d) = data.shape();
    let idx = uniform_sample(rng, n, plus_plus_sample_size(n, data.capacity(), k));
    let rows = data.source().gather(&idx)?;
    let weights: Option<Vec<f32>> = data
        .host_weights()
        .map(|w| idx.iter().map(|&i| w[i]).collect());
    let sample = GpuMatrix::upload(data.gpu(), &Matrix::new(&rows, d)?)?;
    weighted_plus_plus_seeds(data.gpu(), &sample, k, weights.as_deref(), rng)
}

/// The starting parameters given by the caller, with their covariances and factors.
pub(super) fn given_parameters(
    g: &InitialParameters,
    params: &GaussianMixture,
    d: usize,
) -> Result<Parameters> {
    let t = params.covariance_type;
    let covariances = covariances_from_precisions(&g.precisions, t, d)?;
    let precisions_cholesky =
        precision_cholesky_quoting(&covariances, t, params.k, d, Some(params.reg_covar))?;
    Ok(Parameters {
        weights: g.weights.clone(),
        means: g.means.clone(),
        covariances,
        precisions_cholesky,
    })
}

/// `start` with the parts given on their own put in place of those the start computed.
pub(super) fn override_start(
    params: &GaussianMixture,
    mut start: Parameters,
    d: usize,
) -> Result<Parameters> {
    let o = &params.init_overrides;
    if let Some(w) = &o.weights {
        start.weights = w.clone();
    }
    if let Some(m) = &o.means {
        start.means = m.clone();
    }
    if let Some(p) = &o.precisions {
        let t = params.covariance_type;
        start.covariances = covariances_from_precisions(p, t, d)?;
        start.precisions_cholesky =
            precision_cholesky_quoting(&start.covariances, t, params.k, d, Some(params.reg_covar))?;
    }
    Ok(start)
}
