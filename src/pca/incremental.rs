//! [`IncrementalPca`]: PCA fed chunk by chunk, each chunk's moments merged (module `stats`).
//! A fitting session of its own, so its `partial_fit` lives with it rather than in `fit`.

use super::{Pca, PcaModel, PcaMoments};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::source::RowSource;

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
