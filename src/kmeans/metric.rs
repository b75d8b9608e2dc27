//! The distance K-Means clusters by: Euclidean (Lloyd's K-Means) or cosine (spherical
//! K-Means, Dhillon & Modha 2001).
//!
//! Spherical K-Means puts every row on the unit sphere, x̂ = x/‖x‖, and keeps unit centroids.
//! On the sphere ‖x̂ − ĉ‖² = 2 − 2·cos(x, c), so the nearest centroid in Euclidean distance is
//! the one of largest cosine, and the same assignment kernel serves both metrics. The update
//! is the mean of the cluster's unit rows, normalised: the unit vector that maximises
//! Σ cos(x, c) over the cluster. The objective reported as the inertia is
//! J = Σᵢ (1 − cos(xᵢ, c_{c(i)})) = ½ Σᵢ ‖x̂ᵢ − ĉ_{c(i)}‖², in [0, 2N].
//!
//! A row of zeros has no direction and is refused. A cluster whose unit rows sum to zero
//! (exactly opposite directions) keeps its previous centroid.

use crate::error::{Error, Result};
use crate::names::parse_choice;

/// The distance K-Means uses to assign rows to centroids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Metric {
    /// Squared Euclidean distance: Lloyd's K-Means, inertia Σ‖x − c‖².
    #[default]
    Euclidean,
    /// Cosine similarity: spherical K-Means on unit rows and centroids, inertia
    /// Σ(1 − cos(x, c)). Rows of zeros are refused.
    Cosine,
}

impl Metric {
    /// Every metric, for the CLI's choices.
    pub const ALL: [Metric; 2] = [Metric::Euclidean, Metric::Cosine];

    /// The name the CLI uses: "euclidean" or "cosine".
    pub fn name(&self) -> &'static str {
        match self {
            Metric::Euclidean => "euclidean",
            Metric::Cosine => "cosine",
        }
    }

    /// Whether rows and centroids live on the unit sphere.
    pub(crate) fn is_spherical(self) -> bool {
        self == Metric::Cosine
    }

    /// The factor from the summed squared distances the kernels compute to the reported
    /// objective: 1, or ½ for cosine (Σ‖x̂ − ĉ‖² = 2Σ(1 − cos)).
    pub(crate) fn objective_scale(self) -> f64 {
        match self {
            Metric::Euclidean => 1.0,
            Metric::Cosine => 0.5,
        }
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Metric {
    type Err = Error;

    /// Parses "euclidean" or "cosine", ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self> {
        parse_choice(
            "metric",
            "K-Means metric",
            s,
            &Metric::ALL,
            Metric::name,
            |_| &[],
        )
    }
}

/// Scales each K x D centroid row to unit length; a row of zeros keeps `previous`'s row (the
/// centroid before the update), or is an error when there is none (given centroids).
pub(crate) fn normalize_centroids(c: &mut [f64], d: usize, previous: Option<&[f32]>) -> Result<()> {
    for (k, row) in c.chunks_mut(d).enumerate() {
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm > 0.0 && norm.is_finite() {
            row.iter_mut().for_each(|v| *v /= norm);
        } else if let Some(prev) = previous {
            for (v, &p) in row.iter_mut().zip(&prev[k * d..(k + 1) * d]) {
                *v = p as f64;
            }
        } else {
            return Err(Error::invalid(
                "init",
                format!("centroid {k} is all zeros: cosine K-Means needs a direction"),
            ));
        }
    }
    Ok(())
}
