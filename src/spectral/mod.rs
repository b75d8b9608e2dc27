//! Spectral clustering (scikit-learn's `SpectralClustering` with `assign_labels="kmeans"`):
//! a graph between the rows, the leading eigenvectors of its normalised Laplacian, K-Means on
//! them. It separates clusters that are connected but not convex (two moons, concentric
//! circles), where K-Means on the rows cannot.
//!
//! 1. **Affinity** (`shaders/products/affinity.wgsl`, `shaders/neighbors/`), never an N x N
//!    matrix in memory:
//!    - [`Affinity::Rbf`]: A_ij = exp(−γ‖xᵢ − xⱼ‖²), applied matrix-free: a tiled kernel forms
//!      A·V for a block V of vectors from the rows themselves, one exponential per pair for
//!      all the block's columns, O(N²(D + m)) work and O(N(D + m)) memory per product;
//!    - [`Affinity::NearestNeighbors`]: the `n_neighbors` nearest rows of each row, itself
//!      included (scikit-learn's `kneighbors_graph(include_self=True)`), found on the device
//!      (O(N²D) once), symmetrised on the host as A = ½(C + Cᵀ) into a sparse CSR matrix of at
//!      most 2·N·n_neighbors entries, which a kernel multiplies by V (on CPU-like adapters,
//!      the host: the same processor without a driver round trip per product).
//! 2. **Normalised Laplacian** L = I − D^{-1/2} A' D^{-1/2}, A' = A without its diagonal (as
//!    scipy's `laplacian(normed=True)`, which ignores self-loops), D = diag(A'·1). Its K
//!    smallest eigenvectors are the K largest of M = D^{-1/2} A' D^{-1/2}, whose eigenvalues
//!    lie in [−1, 1]. They come from LOBPCG (`lobpcg.rs`: Knyazev 2001, soft locking, f64
//!    Rayleigh–Ritz on the host, M applied on the device) on a block of p = K + max(K, 8)
//!    vectors, which converges at a conjugate-gradient rate, about the square root of the
//!    gap that limited the block power iteration used before (that one failed on two moons
//!    at 5000 points); a graph of several components has eigenvalue 1 of M more than once,
//!    which still spans the right subspace. The block starts from the eigenvectors known
//!    exactly, D^{1/2}·1_C for each connected component C (the largest first), so a graph of
//!    K or more components (the 10-NN graphs of two moons or circles) converges at once.
//! 3. **Embedding**: each eigenvector divided elementwise by √D, its largest entry made
//!    positive (`spectral_embedding`, `drop_first=False`); row i of the N x K result embeds row
//!    i. By default the rows are clustered as they are, as scikit-learn's
//!    `assign_labels="kmeans"` does; [`SpectralClustering::normalize_rows`] scales each to
//!    unit length first (Ng, Jordan & Weiss 2001), which helps when clusters differ much in
//!    density.
//! 4. **Labels**: the crate's GPU [`KMeans`](crate::KMeans) on the embedding (`n_init`
//!    restarts, k-means++).
//!
//! Spectral clustering labels the rows it was fitted on; like scikit-learn's it has no
//! `predict` for new rows. The f64 oracle is the `spectral` module of
//! [`reference`](crate::reference).

//! Layout (the rooms the algorithm folders share): `params` (the parameters and their
//! validation), `fit` (the fit), `workspace` (the affinity operator on the device and the
//! nearest-neighbour graph), `lobpcg` (the eigen-solver's loop, a leaf of the folder),
//! `model` (the fitted model). Spectral clustering has no mergeable statistics (`stats`):
//! its graph couples every row with every other.

mod fit;
mod lobpcg;
mod model;
mod params;
mod workspace;

pub use model::SpectralModel;
pub use params::{Affinity, SpectralClustering};
