//! Spectral clustering in plain f64, as scikit-learn's `SpectralClustering` with
//! `assign_labels="kmeans"` computes it: the oracle of [`crate::SpectralClustering`].
//!
//! 1. **Affinity** A (N x N, dense here): the RBF kernel A_ij = exp(−γ‖xᵢ − xⱼ‖²), or the
//!    symmetrised k-nearest-neighbour connectivity A = ½(C + Cᵀ), C_ij = 1 when j is one of
//!    the `n_neighbors` nearest rows of i, i itself included (`kneighbors_graph(...,
//!    include_self=True)`; ties by index).
//! 2. **Normalised Laplacian** L = I − D^{-1/2} A' D^{-1/2}, where A' is A with its diagonal
//!    set to zero (scipy's `csgraph.laplacian(normed=True)` ignores self-loops) and
//!    D = diag(A'·1).
//! 3. **Embedding**: the eigenvectors of the K smallest eigenvalues of L (the K largest of
//!    D^{-1/2} A' D^{-1/2}), each divided elementwise by √D (`spectral_embedding` with
//!    `norm_laplacian=True, drop_first=False`), each flipped so that its entry of largest
//!    magnitude is positive (`_deterministic_vector_sign_flip`); row i of the N x K matrix
//!    they form is the embedding of row i.
//! 4. **Labels**: K-Means (the reference's Lloyd with k-means++) on the embedding rows.
//!
//! A row without any neighbour weight (degree 0: an isolated point under a tiny γ) is an
//! error, since D^{-1/2} does not exist.

use super::kmeans;
use super::linalg::symmetric_eigen;
use crate::error::{Error, Result};
use crate::kmeans::KMeans;
pub use crate::spectral::Affinity;

/// The outcome of a reference spectral clustering.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceSpectral {
    /// The dense affinity A (N x N), diagonal included.
    pub affinity: Vec<f64>,
    /// The K smallest eigenvalues of the normalised Laplacian, ascending.
    pub eigenvalues: Vec<f64>,
    /// The N x K embedding, row-major.
    pub embedding: Vec<f64>,
    /// The cluster of each row.
    pub labels: Vec<u32>,
}

fn sq_dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum()
}

/// The dense affinity of row-major `x` (`d` features per row).
pub fn affinity(x: &[f64], d: usize, affinity: Affinity) -> Result<Vec<f64>> {
    crate::data::validate_row_major(x, d)?;
    let n = x.len() / d;
    let row = |i: usize| &x[i * d..(i + 1) * d];
    let mut a = vec![0.0; n * n];
    match affinity {
        Affinity::Rbf { gamma } => {
            if !(gamma.is_finite() && gamma > 0.0) {
                return Err(Error::invalid("gamma", format!("{gamma}: must be > 0")));
            }
            for i in 0..n {
                for j in 0..n {
                    a[i * n + j] = (-gamma * sq_dist(row(i), row(j))).exp();
                }
            }
        }
        Affinity::NearestNeighbors { n_neighbors } => {
            if n_neighbors == 0 || n_neighbors > n {
                return Err(Error::invalid(
                    "n_neighbors",
                    format!("{n_neighbors}: must be in 1..={n}"),
                ));
            }
            for i in 0..n {
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by(|&p, &q| {
                    sq_dist(row(i), row(p))
                        .total_cmp(&sq_dist(row(i), row(q)))
                        .then(p.cmp(&q))
                });
                for &j in &order[..n_neighbors] {
                    a[i * n + j] += 0.5;
                    a[j * n + i] += 0.5;
                }
            }
        }
    }
    Ok(a)
}

/// Spectral clustering of `x` into `k` clusters (see the module docs); the final K-Means
/// runs `n_init` restarts from `seed`.
pub fn fit(
    x: &[f64],
    d: usize,
    k: usize,
    graph: Affinity,
    n_init: usize,
    seed: u64,
) -> Result<ReferenceSpectral> {
    let a = affinity(x, d, graph)?;
    let n = x.len() / d;
    if k < 2 || k > n {
        return Err(Error::invalid("k", format!("{k}: must be in 2..={n}")));
    }
    let degree: Vec<f64> = (0..n)
        .map(|i| (0..n).filter(|&j| j != i).map(|j| a[i * n + j]).sum())
        .collect();
    if let Some(i) = degree.iter().position(|&g| g <= 0.0) {
        return Err(Error::invalid(
            "affinity",
            format!("row {i} has no neighbour weight (degree 0)"),
        ));
    }
    let s: Vec<f64> = degree.iter().map(|g| g.sqrt()).collect();
    let m: Vec<f64> = (0..n * n)
        .map(|e| {
            let (i, j) = (e / n, e % n);
            if i == j {
                0.0
            } else {
                a[e] / (s[i] * s[j])
            }
        })
        .collect();
    let (values, vectors) = symmetric_eigen(&m, n)
        .ok_or_else(|| Error::invalid("affinity", "the eigendecomposition did not converge"))?;
    // The K largest of M are the K smallest of L = I − M.
    let eigenvalues = values[..k].iter().map(|v| 1.0 - v).collect();
    let mut maps: Vec<Vec<f64>> = (0..k)
        .map(|c| (0..n).map(|i| vectors[c * n + i] / s[i]).collect())
        .collect();
    for v in &mut maps {
        let big = (0..n)
            .max_by(|&p, &q| v[p].abs().total_cmp(&v[q].abs()).then(q.cmp(&p)))
            .unwrap_or(0);
        if v[big] < 0.0 {
            v.iter_mut().for_each(|e| *e = -*e);
        }
    }
    let embedding: Vec<f64> = (0..n)
        .flat_map(|i| maps.iter().map(move |v| v[i]))
        .collect();
    let clusters = kmeans::fit(&embedding, k, &KMeans::new(k).n_init(n_init).seed(seed))?;
    Ok(ReferenceSpectral {
        affinity: a,
        eigenvalues,
        embedding,
        labels: clusters.labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datasets::{make_blobs, make_circles, make_moons};
    use crate::reference::metrics::adjusted_rand_index;

    fn f64s(v: &[f32]) -> Vec<f64> {
        v.iter().map(|&x| x as f64).collect()
    }

    #[test]
    fn moons_and_circles_separate_where_kmeans_fails() {
        for seed in [0, 1, 2] {
            for (x, truth) in [
                make_moons(200, 0.05, seed).unwrap(),
                make_circles(200, 0.05, 0.5, seed).unwrap(),
            ] {
                let x = f64s(&x);
                let r = fit(
                    &x,
                    2,
                    2,
                    Affinity::NearestNeighbors { n_neighbors: 10 },
                    4,
                    0,
                )
                .unwrap();
                let ari = adjusted_rand_index(&r.labels, &truth).unwrap();
                assert!(ari > 0.98, "seed {seed}: spectral ARI {ari}");
                let km = kmeans::fit(&x, 2, &KMeans::new(2).n_init(4)).unwrap();
                let ari_km = adjusted_rand_index(&km.labels, &truth).unwrap();
                assert!(ari_km < 0.6, "seed {seed}: K-Means ARI {ari_km}");
                // The smallest eigenvalue of a connected graph's Laplacian is 0.
                assert!(r.eigenvalues[0].abs() < 1e-9, "{:?}", r.eigenvalues);
                assert!(r.eigenvalues.windows(2).all(|w| w[0] <= w[1] + 1e-12));
            }
        }
    }

    #[test]
    fn rbf_on_blobs_and_the_affinity_is_symmetric() {
        let (x, truth, _) = make_blobs(120, 3, 3, 0.5, (-6.0, 6.0), 3).unwrap();
        let x = f64s(&x);
        let r = fit(&x, 3, 3, Affinity::Rbf { gamma: 0.5 }, 4, 1).unwrap();
        assert_eq!(adjusted_rand_index(&r.labels, &truth).unwrap(), 1.0);
        let n = 120;
        for i in 0..n {
            assert_eq!(r.affinity[i * n + i], 1.0);
            for j in 0..i {
                assert_eq!(r.affinity[i * n + j], r.affinity[j * n + i]);
            }
        }
        let knn = affinity(&x, 3, Affinity::NearestNeighbors { n_neighbors: 5 }).unwrap();
        assert!(knn.iter().all(|&v| v == 0.0 || v == 0.5 || v == 1.0));
        assert!(
            (0..n).all(|i| knn[i * n + i] == 1.0),
            "each row is its own neighbour"
        );
    }

    #[test]
    fn bad_parameters_are_errors() {
        let x = [0.0, 0.0, 1.0, 1.0, 5.0, 5.0];
        let nn = |n_neighbors| Affinity::NearestNeighbors { n_neighbors };
        assert!(fit(&x, 2, 2, Affinity::Rbf { gamma: 0.0 }, 1, 0).is_err());
        assert!(fit(&x, 2, 2, Affinity::Rbf { gamma: f64::NAN }, 1, 0).is_err());
        assert!(fit(&x, 2, 2, nn(0), 1, 0).is_err());
        assert!(fit(&x, 2, 2, nn(4), 1, 0).is_err());
        assert!(fit(&x, 2, 1, nn(2), 1, 0).is_err());
        assert!(fit(&x, 2, 4, nn(2), 1, 0).is_err());
        // γ so large that every off-diagonal weight underflows: degree 0.
        assert!(fit(&x, 2, 2, Affinity::Rbf { gamma: 1e6 }, 1, 0).is_err());
    }
}
