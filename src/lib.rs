//! # wgpu-unsupervised
//!
//! Classic unsupervised learning on any GPU through [wgpu](https://wgpu.rs) and WGSL compute
//! shaders: Vulkan, Metal, DX12 or GL, discrete or integrated, or the lavapipe software driver
//! when there is no GPU at all. Every algorithm has a plain f64 CPU reference
//! ([`reference`](mod@reference)) that the tests hold the GPU results against.
//!
//! Available now:
//! - **K-Means** ([`KMeans`]): Lloyd iterations with nearest-centroid assignment and centroid
//!   update on the GPU, greedy k-means++ or random init, restarts, empty-cluster repair;
//! - **PCA** ([`Pca`]): covariance on the GPU, full eigendecomposition or block power
//!   iteration (also matrix-free), transform, inverse transform, whitening, components by
//!   variance fraction;
//! - **Gaussian mixtures** ([`GaussianMixture`]): EM with the E-step (responsibilities through
//!   precision Cholesky factors, log-sum-exp) and the M-step sums on the GPU, full, tied,
//!   diagonal and spherical covariances, K-Means / k-means++ / random / given starts,
//!   predict, probabilities, log-likelihood, sampling, BIC/AIC;
//! - **evaluation** ([`metrics`]): silhouette (its O(N²) distance sums on the GPU),
//!   Calinski–Harabasz, Davies–Bouldin, inertia, Rand and adjusted Rand indices;
//! - **model selection** ([`selection`]): elbow, gap statistic, BIC/AIC over k, PCA spectrum.
//! - **Evaluation and model selection** ([`metrics`], [`selection`]): silhouette (GPU),
//!   Calinski–Harabasz, Davies–Bouldin, (adjusted) Rand index; elbow and gap-statistic
//!   curves for K-Means, BIC/AIC curves for mixtures, the PCA spectrum; SVG plots of them
//!   with the `cli` feature (`plot`).
//!
//! Every result is bitwise reproducible for a seed on a given adapter.
//!
//! ```no_run
//! use wgpu_unsupervised::{datasets, Gpu, KMeans, Matrix};
//!
//! let gpu = Gpu::new()?;                                   // best adapter on this machine
//! let (rows, _species) = datasets::iris();                 // 150 x 4, row-major f32
//! let x = Matrix::new(&rows, 4)?;                          // validated view, no copy
//! let model = KMeans::new(3).n_init(4).seed(7).fit(&gpu, &x)?;
//! println!("inertia {:.4} after {} iterations", model.inertia(), model.n_iter());
//! let labels = model.predict(&gpu, &x)?;
//! # Ok::<(), wgpu_unsupervised::Error>(())
//! ```
//!
//! ## Layout
//! - [`gpu`]: the host layer, the only code touching wgpu ([`Gpu`], [`GpuMatrix`]);
//! - `kernels` (private): one wrapper per WGSL file in `shaders/`, same name;
//! - [`kmeans`], [`pca`], [`gmm`]: the algorithms; [`metrics`] and [`selection`]: judging a
//!   clustering and choosing k, K or M; [`reference`](mod@reference): the CPU oracle;
//! - [`io`], [`datasets`]: files and bundled or generated data for the CLI and examples.
//!
//! ## Embedding
//! [`Gpu::from_wgpu`] wraps your `wgpu::Device` and `Queue`; [`GpuMatrix::from_buffer`] views
//! your storage buffer without copying; `predict_gpu` / `transform_gpu` leave results on
//! the device as [`GpuVector`] / [`GpuMatrix`].

#![warn(missing_docs)]

#[cfg(any(feature = "io", feature = "plot"))]
mod atomic;
pub mod data;
pub mod datasets;
pub mod error;
pub mod gmm;
pub mod gpu;
#[cfg(feature = "io")]
pub mod io;
pub(crate) mod kernels;
pub mod kmeans;
pub mod linalg;
pub mod metrics;
#[cfg(feature = "io")]
pub mod model_file;
mod names;
#[cfg(any(feature = "io", feature = "datasets"))]
mod npy;
pub mod pca;
#[cfg(feature = "plot")]
pub mod plot;
pub mod reference;
pub mod selection;

pub use data::Matrix;
pub use error::{Error, Result};
pub use gmm::{CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit};
pub use gpu::{Gpu, GpuInfo, GpuInput, GpuMatrix, GpuVector};
pub use kmeans::{KMeans, KMeansInit, KMeansModel};
#[cfg(feature = "io")]
pub use model_file::Model;
pub use pca::{Components, Pca, PcaModel, PcaSolver};
pub use selection::{Criterion, Curve, GapCurve, Spectrum};

/// README.md's example, compiled and run as a doctest so it cannot rot.
#[cfg(all(doctest, feature = "datasets"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
