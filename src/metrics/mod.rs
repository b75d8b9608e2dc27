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
//! (`shaders/silhouette.wgsl`) sums the Euclidean distances from every point to every piece;
//! the host adds the pieces of each cluster in f64 and forms a(i), b(i) and s(i). With
//! `sample_size`, as scikit-learn, the coefficient is that of a random subset of the rows
//! (drawn with a seeded ChaCha8 generator), which bounds the work for very large N.
//!
//! The other criteria are two passes over the data (O(N D)) on the host in f64, from a host
//! [`Matrix`] (no f64 copy of the data).
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
use crate::data::Matrix;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

pub mod agreement;
pub mod internal;
mod silhouette;

pub use agreement::{adjusted_rand_index, rand_index};
pub use internal::{calinski_harabasz, davies_bouldin, inertia};
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

/// The internal criteria of a labelling: defined for 2 ≤ clusters ≤ N − 1 only.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct InternalCriteria {
    /// Mean silhouette coefficient (GPU; on the sample when one was asked for).
    pub silhouette: f64,
    /// Calinski–Harabasz index (higher is better).
    pub calinski_harabasz: f64,
    /// Davies–Bouldin index (lower is better; 0 where clusters share a centroid).
    pub davies_bouldin: f64,
}

/// Agreement of a labelling with a reference labelling (the truth): every pair-counting and
/// information-theoretic score, each defined for any number of clusters.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Agreement {
    /// Rand index.
    pub rand_index: f64,
    /// Adjusted Rand index.
    pub adjusted_rand_index: f64,
}

impl Agreement {
    /// Every agreement score of `labels` against `truth` (same length, not empty).
    pub fn of(truth: &[u32], labels: &[u32]) -> Result<Self> {
        Ok(Self {
            rand_index: rand_index(truth, labels)?,
            adjusted_rand_index: adjusted_rand_index(truth, labels)?,
        })
    }
}

/// The criteria of one labelling, as the CLI's `evaluate` prints them: what is defined for
/// it, and why the rest is not.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Silhouette, Calinski–Harabasz and Davies–Bouldin; `None` outside 2 ≤ clusters ≤ N − 1
    /// (the reason is in `internal_undefined`).
    pub internal: Option<InternalCriteria>,
    /// Why `internal` is `None`.
    pub internal_undefined: Option<String>,
    /// Within-cluster sum of squares around the clusters' means (any number of clusters).
    pub inertia: f64,
    /// Agreement with the given truth, if any.
    pub agreement: Option<Agreement>,
}

/// The criteria of `labels` on `x` that are defined for it, and the agreement with `truth`
/// when given; the silhouette on at most `sample_size` rows when given (seeded by `seed`).
///
/// The internal criteria need 2 ≤ clusters ≤ N − 1: for one cluster or all singletons they
/// are left out with the reason, while the inertia and the agreement (defined for any
/// partition, as in scikit-learn) are still reported.
///
/// Errors: labels or truth of the wrong length, the errors of [`silhouette`].
pub fn evaluate(
    gpu: &Gpu,
    x: &Matrix<'_>,
    labels: &[u32],
    truth: Option<&[u32]>,
    sample_size: Option<usize>,
    seed: u64,
) -> Result<Evaluation> {
    check_label_count(labels, x.n_rows())?;
    let k = cluster_index(labels).0.len();
    let (internal, internal_undefined) = match check_cluster_count(
        "the silhouette, Calinski-Harabasz and Davies-Bouldin",
        k,
        x.n_rows(),
    ) {
        Ok(()) => (
            Some(InternalCriteria {
                silhouette: silhouette(gpu, x, labels, sample_size, seed)?.score,
                calinski_harabasz: calinski_harabasz(x, labels)?,
                davies_bouldin: davies_bouldin(x, labels)?,
            }),
            None,
        ),
        Err(Error::InvalidParameter { reason, .. }) => (None, Some(reason)),
        Err(e) => return Err(e),
    };
    let agreement = match truth {
        Some(t) => {
            check_label_count(t, x.n_rows())?;
            Some(Agreement::of(t, labels)?)
        }
        None => None,
    };
    Ok(Evaluation {
        internal,
        internal_undefined,
        inertia: inertia(x, labels)?,
        agreement,
    })
}
