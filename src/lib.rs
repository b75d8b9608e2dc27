//! # wgpu-unsupervised
//!
//! Classic unsupervised learning on any GPU through [wgpu](https://wgpu.rs) and WGSL compute
//! shaders: Vulkan, Metal, DX12 or GL, discrete or integrated, or the lavapipe software driver
//! when there is no GPU at all. Every algorithm has a plain f64 CPU reference
//! ([`reference`](mod@reference)) that the tests hold the GPU results against.
//!
//! - **K-Means** ([`KMeans`]): Lloyd iterations with nearest-centroid assignment and centroid
//!   update on the GPU, greedy k-means++ or random init, restarts, empty-cluster repair;
//! - **PCA** ([`Pca`]): covariance on the GPU, full eigendecomposition or block power
//!   iteration (also matrix-free), transform, inverse transform, whitening, components by
//!   variance fraction;
//! - **Gaussian mixtures** ([`GaussianMixture`]): EM with the E-step (responsibilities through
//!   precision Cholesky factors, log-sum-exp) and the M-step sums on the GPU, full, tied,
//!   diagonal and spherical covariances, K-Means / k-means++ / random / given starts,
//!   predict, probabilities, log-likelihood, sampling, BIC/AIC;
//! - **spectral clustering** ([`SpectralClustering`]): RBF or k-nearest-neighbour graphs
//!   applied on the GPU without an N x N matrix, the normalised Laplacian's eigenvectors by
//!   block power iteration, K-Means on the embedding;
//! - **evaluation** ([`metrics`]): silhouette (its O(N²) distance sums on the GPU),
//!   Calinski–Harabasz, Davies–Bouldin, inertia, Rand and adjusted Rand indices;
//! - **model selection** ([`selection`]): elbow, gap statistic, BIC/AIC over k, PCA spectrum,
//!   with SVG plots of them (`plot`, feature `plot`);
//! - **data larger than the GPU** ([`source`]): fits over a [`RowSource`] (host chunks, a
//!   `.npy` file read a piece at a time) streamed through a bounded buffer under
//!   [`Gpu::set_memory_budget`]; statistics that merge across chunks, devices and machines
//!   ([`KMeansStats`], [`PcaMoments`]); [`KMeans::fit_partitions`] over several devices;
//!   [`KMeans::fit_remote`] and [`GaussianMixture::fit_remote`] over partitions on other
//!   processes or machines (each worker a [`KMeansPartition`] / [`GmmPartition`] keeping its
//!   rows on its device; the Python package's Dask fits run on them);
//!   [`MiniBatchKMeans`] and [`IncrementalPca`];
//! - **model files** (`model_file`, feature `io`): `save`/`load` on every model, a versioned
//!   envelope, every model validated when it is deserialized.
//!
//! Every result is bitwise reproducible for a seed on a given adapter, whatever limits its
//! device was opened with (data are chunked at [`gpu::STANDARD_CHUNK_BYTES`]).
//!
//! ```
//! use wgpu_unsupervised::{datasets, Gpu, KMeans, Matrix};
//!
//! let gpu = Gpu::new()?;                                   // best adapter on this machine
//! let (rows, _, _) = datasets::make_blobs(1000, 4, 3, 0.8, (-5.0, 5.0), 7)?;
//! let x = Matrix::new(&rows, 4)?;                          // validated view, no copy
//! let model = KMeans::new(3).n_init(4).seed(7).fit(&gpu, &x)?;
//! println!("inertia {:.4} after {} iterations", model.inertia(), model.n_iter());
//! let labels = model.predict(&gpu, &x)?;
//! # Ok::<(), wgpu_unsupervised::Error>(())
//! ```
//!
//! ## Features
//!
//! The core (`--no-default-features`) is the GPU algorithms, their parameters and models,
//! metrics, selection and the CPU reference, with generated data (`datasets::make_blobs`,
//! `datasets::uniform`); it needs none of the optional dependencies.
//!
//! | feature | default | what it adds | dependencies |
//! |---|---|---|---|
//! | `serde` | yes | `Serialize`/`Deserialize` on parameters, models (validated when deserialized; training labels not written) and curves | serde |
//! | `datasets` | yes | the bundled Iris and Digits data (`datasets::iris`, `datasets::digits`, ~470 KB compiled in) | none |
//! | `io` | no | `.npy`/`.csv` matrices and labels (`io`), model files (`model_file`, `Model` with `load`/`save`), atomic writes, alone or as one set (`io::OutputSet`) | serde, npyz, serde_json, tempfile |
//! | `ndarray` | no | `ndarray` 0.16 arrays (f32, f64) as data, models' parameters as array views (`interop::ndarray`) | ndarray |
//! | `plot` | no | SVG plots of the selection curves (`plot`) | plotters, tempfile |
//! | `cli` | no | the `wgpu-unsupervised` program (`io` + `plot` + `datasets`) | clap |
//!
//! ## Layout
//!
//! - [`gpu`]: the host layer, which imports nothing above it ([`Gpu`], [`GpuMatrix`],
//!   [`GpuVector`], [`GpuInput`]: host or device data for every fit; typed device buffers);
//! - `kernels` (private): one folder per kernel family, the same folders and names as
//!   `shaders/` (`shaders/assign/tiled.wgsl` <-> `kernels/assign/tiled.rs`); with `gpu`,
//!   the only code that names wgpu;
//! - [`kmeans`], [`pca`], [`gmm`]: one folder per algorithm, the same file names meaning the
//!   same thing in each: `mod.rs` the face, `params` the parameters and their validation,
//!   `fit` every public fit (resident or streamed decided once), `workspace` the device
//!   buffers and passes, `seeding` the starts, the loop as a leaf of its folder (`lloyd`,
//!   `em`, `power`), `model` the fitted model with its `validate`, `stats` the statistics
//!   that merge ([`gmm::math`]: the mixtures' host algebra: precision factors, parameter
//!   counts, sampling);
//! - [`neighbors`]: exact k-nearest and radius queries (what DBSCAN-style algorithms build on);
//! - [`metrics`] (silhouette on the GPU, host criteria, agreement) and [`selection`]:
//!   judging a clustering and choosing k, K or M;
//! - [`linalg`]: small dense host algebra in f64 (eigen, QR, Cholesky);
//! - [`bench`](mod@bench): the kernel and fit benchmarks behind `wgpu-unsupervised bench`, on top of the
//!   profiler ([`gpu::profile`]) and the ceilings ([`ceilings`], [`Gpu::measure_ceilings`]);
//! - [`data`], [`origin`], [`error`], [`datasets`]: validated input views (f32 [`Matrix`],
//!   f64 [`Matrix64`], which every fit, predict and metric centres in f64 before the f32
//!   cast), the one [`Error`], data;
//! - [`source`]: row sources that need not fit (their device side is `gpu::stream`);
//! - `io`, `model_file`, `plot`: files and pictures, behind features;
//! - [`reference`](mod@reference): the CPU oracle, a leaf that nothing else in `src/`
//!   uses; it has its own algebra so that it can catch bugs in the production math (apart
//!   from the neutral [`gmm::math`] it shares with the GPU path, which `tests/gmm_math.rs`
//!   checks by identities).
//!
//! ## Embedding
//! [`Gpu::from_wgpu`] wraps your `wgpu::Device` and `Queue`; [`GpuMatrix::from_buffer`] views
//! your storage buffer without copying; `predict_gpu` / `transform_gpu` leave results on
//! the device as [`GpuVector`] / [`GpuMatrix`]. A program that may run without a display
//! calls [`headless::avoid_window_system_probe`] first thing in `main`, so that opening the
//! GPU prints nothing on stderr there (the module says exactly what it changes).

#![warn(missing_docs)]

#[cfg(any(feature = "io", feature = "plot"))]
mod atomic;
pub mod bench;
pub mod ceilings;
pub mod data;
pub mod datasets;
pub mod error;
pub mod gmm;
pub mod gpu;
pub mod headless;
pub mod interop;
#[cfg(feature = "io")]
pub mod io;
pub(crate) mod kernels;
pub mod kmeans;
pub mod linalg;
pub mod metrics;
#[cfg(feature = "io")]
pub mod model_file;
mod names;
pub mod neighbors;
#[cfg(any(feature = "io", feature = "datasets"))]
mod npy;
pub mod origin;
pub mod pca;
#[cfg(feature = "plot")]
pub mod plot;
pub mod progress;
mod random;
pub mod reference;
pub mod selection;
pub mod source;
pub mod spectral;

pub use data::Matrix;
pub use error::{Error, Result};
pub use gmm::{
    CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit, GmmPartition, GmmStats,
    RemoteGaussianMixture,
};
pub use gpu::{
    AdapterOptions, Ceilings, Gpu, GpuInfo, GpuInput, GpuMatrix, GpuVector, Profile, ProfileClock,
    TuningCache, TuningTrial,
};
pub use kmeans::{
    KMeans, KMeansInit, KMeansModel, KMeansPartition, KMeansStats, Metric, MiniBatchKMeans,
    MiniBatchKMeansFit, RemoteKMeans,
};
#[cfg(feature = "io")]
pub use model_file::Model;
pub use origin::{Matrix64, Translate};
pub use pca::{Components, IncrementalPca, Pca, PcaModel, PcaMoments, PcaSolver};
pub use progress::{Iteration, OnIteration};
pub use selection::{Criterion, Curve, GapCurve, Spectrum};
pub use source::{RowChunks, RowSource};
pub use spectral::{Affinity, SpectralClustering, SpectralModel};

/// README.md's examples, compiled as doctests so they cannot rot (they use the bundled data
/// and model files, hence the features).
#[cfg(all(doctest, feature = "datasets", feature = "io"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
