//! End-to-end tests of the `wgpu-unsupervised` program: the built binary is run on small files
//! in a temporary directory, and its exit status, stdout, stderr and output files are checked.
//! The fits need a wgpu adapter (CI installs lavapipe); data stay small because that adapter
//! is a software rasterizer.
//!
//! One module per command family. Command lines are written as text with placeholders for
//! the files of a [`common::Fixture`]; those each command must refuse are tables of
//! [`common::Case`] (arguments, exit status, fragments of the error), run by
//! [`common::Fixture::check`], which also checks that a refused command writes nothing.
//! Every success is checked to print nothing on stderr ([`common::ok`]).

mod adapter;
mod bench;
mod common;
mod evaluate;
mod float64;
mod gmm;
mod gmm_start;
mod headless;
mod inputs;
mod kmeans;
mod model_files;
mod outputs;
mod pca;
mod predict;
mod scale;
mod select_k;
mod spectral;
mod stream;
mod verbose;
