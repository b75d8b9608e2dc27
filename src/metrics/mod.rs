//! Judging a clustering: internal criteria (silhouette, Calinski–Harabasz, Davies–Bouldin,
//! inertia) and agreement with a reference labelling (Rand index, adjusted Rand index).
//! [`evaluate`] reports every criterion that is defined for a labelling and says why the
//! others are not (the internal criteria need 2 ≤ clusters ≤ N − 1; the agreement scores
//! are defined for any partition, one cluster and all singletons included).
//!
//! The formulas are scikit-learn's (written out in [`internal`] and [`agreement`]); the CPU
//! oracle (the `metrics` module of [`reference`](crate::reference)) implements them
//! separately, plainly, for the tests. The silhouette coefficient of Rousseeuw (1987),
//!
//! ```text
//! a(i) = mean distance from i to the other members of its cluster
//! b(i) = min over the other clusters c of the mean distance from i to the members of c
//! s(i) = (b(i) − a(i)) / max(a(i), b(i))      (0 for a point alone in its cluster)
//! ```
//!
//! needs the distance between every pair of points, O(N² D) work: [`silhouette`] does it on
//! the GPU without ever holding the N x N distances. The rows are sorted by cluster on the
//! device, each cluster is cut into pieces of at most 2048 rows, and a tiled kernel
//! (`shaders/products/silhouette.wgsl`) sums the Euclidean distances from every point to every piece;
//! the host adds the pieces of each cluster in f64 and forms a(i), b(i) and s(i). With
//! `sample_size`, as scikit-learn, the coefficient is that of a random subset of the rows
//! (drawn with a seeded ChaCha8 generator), which bounds the work for very large N.
//!
//! The other criteria are two passes over the data (O(N D)) on the host in f64, from a host
//! [`Matrix`](crate::Matrix) or [`Matrix64`](crate::Matrix64) (no f64 copy of the data;
//! f64 rows keep every digit).
//!
//! ```
//! use wgpu_unsupervised::{datasets, metrics, Gpu, KMeans, Matrix};
//!
//! let gpu = Gpu::new()?;
//! let (rows, truth, _) = datasets::make_blobs(300, 2, 3, 0.5, (-10.0, 10.0), 5)?;
//! let x = Matrix::new(&rows, 2)?;
//! let labels = KMeans::new(3).seed(5).fit(&gpu, &x)?.labels().to_vec();
//! let s = metrics::silhouette(&gpu, &x, &labels, None, 0)?; // O(N²) distances on the GPU
//! assert!(s.score > 0.7);
//! // The same partition under other names: the same Calinski–Harabasz score.
//! let (ch, ch_truth) = (metrics::calinski_harabasz(&x, &labels)?, metrics::calinski_harabasz(&x, &truth)?);
//! assert!((ch - ch_truth).abs() <= 1e-9 * ch_truth);
//! assert_eq!(metrics::adjusted_rand_index(&labels, &truth)?, 1.0);
//! # Ok::<(), wgpu_unsupervised::Error>(())
//! ```

//!
//! Files: [`silhouette`](silhouette()) (GPU) here in `silhouette`; Calinski–Harabasz,
//! Davies–Bouldin and inertia in [`internal`]; the (adjusted) Rand index in [`agreement`].
use std::collections::BTreeMap;

use crate::data::HostMatrix;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuInput};

pub mod agreement;
pub mod information;
pub mod internal;
mod precomputed;
mod silhouette;

pub use agreement::{adjusted_rand_index, rand_index};
pub use information::{
    adjusted_mutual_info_score, completeness_score, fowlkes_mallows_score,
    homogeneity_completeness_v_measure, homogeneity_score, mutual_info_score,
    normalized_mutual_info_score, v_measure_score, AverageMethod,
};
pub use internal::{calinski_harabasz, davies_bouldin, inertia};
pub use precomputed::{silhouette_precomputed, silhouette_samples_precomputed, DistanceValue};
pub use silhouette::{silhouette, silhouette_source, Silhouette};

/// Distinct labels in increasing order and each label's position among them.
pub(crate) fn cluster_index(labels: &[u32]) -> (Vec<u32>, Vec<usize>) {
    let mut ids = labels.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let index = labels
        .iter()
        .map(|l| ids.binary_search(l).unwrap_or(0))
        .collect();
    (ids, index)
}

/// Checks that there is one label per row of an `n`-row matrix.
fn check_label_count(labels: &[u32], n: usize) -> Result<()> {
    if labels.len() != n {
        return Err(Error::invalid(
            "labels",
            format!("{} labels for {n} rows", labels.len()),
        ));
    }
    Ok(())
}

/// Checks scikit-learn's 2 ≤ clusters ≤ N − 1 for the silhouette, Calinski–Harabasz and
/// Davies–Bouldin (`criterion` names the one asking).
fn check_cluster_count(criterion: &str, k: usize, n: usize) -> Result<()> {
    if k < 2 || k >= n {
        return Err(Error::invalid(
            "labels",
            format!("{criterion} needs 2 <= clusters <= N - 1; got {k} clusters for N = {n}"),
        ));
    }
    Ok(())
}

/// Agreement of a labelling with a reference labelling (the truth): every pair-counting and
/// information-theoretic score, each defined for any number of clusters. Serialized with
/// these field names (the CLI's `evaluate --truth` JSON keys).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Agreement {
    /// Rand index.
    pub rand_index: f64,
    /// Adjusted Rand index.
    pub adjusted_rand_index: f64,
    /// Mutual information, nats.
    pub mutual_information: f64,
    /// Normalised mutual information (arithmetic mean of the entropies).
    pub normalized_mutual_information: f64,
    /// Adjusted mutual information (arithmetic mean of the entropies).
    pub adjusted_mutual_information: f64,
    /// Homogeneity: each cluster holds one class.
    pub homogeneity: f64,
    /// Completeness: each class lies in one cluster.
    pub completeness: f64,
    /// V-measure (β = 1).
    pub v_measure: f64,
    /// Fowlkes–Mallows index.
    pub fowlkes_mallows: f64,
}

impl Agreement {
    /// Every agreement score of `labels` against `truth` (same length, not empty), with
    /// scikit-learn's defaults (arithmetic mean, β = 1).
    pub fn of(truth: &[u32], labels: &[u32]) -> Result<Self> {
        let (homogeneity, completeness, v_measure) =
            homogeneity_completeness_v_measure(truth, labels, 1.0)?;
        let mean = AverageMethod::Arithmetic;
        Ok(Self {
            rand_index: rand_index(truth, labels)?,
            adjusted_rand_index: adjusted_rand_index(truth, labels)?,
            mutual_information: mutual_info_score(truth, labels)?,
            normalized_mutual_information: normalized_mutual_info_score(truth, labels, mean)?,
            adjusted_mutual_information: adjusted_mutual_info_score(truth, labels, mean)?,
            homogeneity,
            completeness,
            v_measure,
            fowlkes_mallows: fowlkes_mallows_score(truth, labels)?,
        })
    }
}

/// The criteria of one labelling, as the CLI's `evaluate` prints them: those defined for
/// it, and for each of the others the reason it is not. Serialized with these field names,
/// the agreement flattened, absent values left out.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Evaluation {
    /// Mean silhouette coefficient (GPU, or from the precomputed distances).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub silhouette: Option<f64>,
    /// Calinski–Harabasz index (higher is better).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub calinski_harabasz: Option<f64>,
    /// Davies–Bouldin index (lower is better; 0 where clusters share a centroid).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub davies_bouldin: Option<f64>,
    /// Within-cluster sum of squares around the clusters' means (any number of clusters).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub inertia: Option<f64>,
    /// Each criterion left out (by its field name) and why.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "BTreeMap::is_empty"))]
    pub undefined: BTreeMap<&'static str, String>,
    /// Agreement with the given truth, if any.
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub agreement: Option<Agreement>,
}

impl Evaluation {
    /// The agreement with `truth` when given (checked against `n` labels).
    fn with_truth(mut self, truth: Option<&[u32]>, labels: &[u32]) -> Result<Self> {
        if let Some(t) = truth {
            check_label_count(t, labels.len())?;
            self.agreement = Some(Agreement::of(t, labels)?);
        }
        Ok(self)
    }
}

/// The criteria of `labels` on `x` that are defined for it, and the agreement with `truth`
/// when given; the silhouette on at most `sample_size` rows when given (seeded by `seed`).
///
/// The silhouette, Calinski–Harabasz and Davies–Bouldin need 2 ≤ clusters ≤ N − 1: for one
/// cluster or all singletons they are left out with the reason, while the inertia and the
/// agreement scores (defined for any partition, as in scikit-learn) are reported.
///
/// Errors: labels or truth of the wrong length, the errors of [`silhouette`].
pub fn evaluate(
    gpu: &Gpu,
    x: &(impl HostMatrix + GpuInput),
    labels: &[u32],
    truth: Option<&[u32]>,
    sample_size: Option<usize>,
    seed: u64,
) -> Result<Evaluation> {
    check_label_count(labels, x.n_rows())?;
    let k = cluster_index(labels).0.len();
    let mut e = Evaluation {
        inertia: Some(inertia(x, labels)?),
        ..Evaluation::default()
    };
    match check_cluster_count(
        "the silhouette, Calinski-Harabasz and Davies-Bouldin",
        k,
        x.n_rows(),
    ) {
        Ok(()) => {
            e.silhouette = Some(silhouette(gpu, x, labels, sample_size, seed)?.score);
            e.calinski_harabasz = Some(calinski_harabasz(x, labels)?);
            e.davies_bouldin = Some(davies_bouldin(x, labels)?);
        }
        Err(Error::InvalidParameter { reason, .. }) => {
            for key in ["silhouette", "calinski_harabasz", "davies_bouldin"] {
                e.undefined.insert(key, reason.clone());
            }
        }
        Err(other) => return Err(other),
    }
    e.with_truth(truth, labels)
}

/// The criteria of `labels` from a precomputed N x N distance matrix (row-major): the
/// silhouette ([`silhouette_precomputed`]) when 2 ≤ clusters ≤ N − 1, and the agreement
/// with `truth` when given. Calinski–Harabasz, Davies–Bouldin and the inertia need the
/// points themselves and are left out with that reason.
///
/// Errors: those of [`silhouette_samples_precomputed`] except the cluster count, and a
/// truth of the wrong length.
pub fn evaluate_precomputed<T: precomputed::DistanceValue>(
    distances: &[T],
    n: usize,
    labels: &[u32],
    truth: Option<&[u32]>,
) -> Result<Evaluation> {
    check_label_count(labels, n)?;
    let mut e = Evaluation::default();
    let k = cluster_index(labels).0.len();
    match check_cluster_count("the silhouette", k, n) {
        Ok(()) => e.silhouette = Some(silhouette_precomputed(distances, n, labels)?),
        Err(Error::InvalidParameter { reason, .. }) => {
            // The matrix is still checked, so a bad file is never silently accepted.
            precomputed::check_distances(distances, n)?;
            e.undefined.insert("silhouette", reason);
        }
        Err(other) => return Err(other),
    }
    let reason = "needs the points' coordinates, not their distances".to_string();
    for key in ["calinski_harabasz", "davies_bouldin", "inertia"] {
        e.undefined.insert(key, reason.clone());
    }
    e.with_truth(truth, labels)
}
