//! The library's GPU integration tests, one binary with a module per topic (as wgpu's own
//! suite is): every fit, kernel family and host-layer path on a real adapter (lavapipe in
//! CI), held against the f64 CPU reference. They need a wgpu adapter and fail with the
//! reason when there is none ([`common::gpu`]); none is skipped.
//!
//! Two GPU tests live in binaries of their own because they change process-wide state:
//! `tests/no_adapter.rs` (the adapter-name variable) and `tests/tracing_events.rs` (a
//! tracing subscriber). The tests that need no GPU are `tests/host/`; the command-line
//! program's are `tests/cli/`.

mod common;

mod embedding;
mod gmm_gpu;
mod gmm_init;
mod gmm_iris_gpu;
mod gmm_one_pass;
mod gmm_stream;
mod gmm_weights;
mod gmm_window;
mod gpu_layer;
mod gpu_pipelines;
mod kmeans_gpu;
mod kmeans_minibatch;
mod kmeans_parallel;
mod kmeans_plusplus;
mod kmeans_spherical;
mod kmeans_stream;
mod kmeans_weights;
mod metrics_gpu;
mod ndarray_interop;
mod neighbors_gpu;
mod origin;
mod pca_gpu;
mod pca_probabilistic;
mod pca_stream;
mod pinned;
mod profile;
mod progress;
mod remote_gmm;
mod remote_kmeans;
mod scale;
mod scale_models;
mod selection_gpu;
mod spectral_gpu;
