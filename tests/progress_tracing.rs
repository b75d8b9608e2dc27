//! Every iteration is a `tracing` event. A file of its own: tracing caches per call site
//! whether anyone listens, and a fit on another test thread with no subscriber would race
//! with the scoped subscriber installed here. (So it is not a module of `tests/gpu/`.)

#[path = "gpu/common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::gpu;
use wgpu_unsupervised::{datasets, GaussianMixture, KMeans, Matrix};

fn blobs(n: usize, d: usize, k: usize, seed: u64) -> Vec<f32> {
    datasets::make_blobs(n, d, k, 1.5, (-6.0, 6.0), seed)
        .unwrap()
        .0
}

/// Counts the DEBUG and the other events of this crate's targets.
struct Counter(Arc<AtomicUsize>, Arc<AtomicUsize>);

impl tracing::Subscriber for Counter {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let meta = event.metadata();
        if meta.target().starts_with("wgpu_unsupervised::") {
            match *meta.level() {
                tracing::Level::DEBUG => self.0.fetch_add(1, Ordering::Relaxed),
                _ => self.1.fetch_add(1, Ordering::Relaxed),
            };
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn every_iteration_is_a_tracing_event() {
    let gpu = gpu();
    let x = blobs(300, 2, 3, 6);
    let (debug, info) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let counter = Counter(debug.clone(), info.clone());
    let model = tracing::subscriber::with_default(counter, || {
        KMeans::new(3)
            .seed(6)
            .fit(&gpu, &Matrix::new(&x, 2).unwrap())
            .unwrap()
    });
    assert_eq!(debug.load(Ordering::Relaxed), model.n_iter());
    assert_eq!(info.load(Ordering::Relaxed), 1);
    let (debug, info) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let counter = Counter(debug.clone(), info.clone());
    let mixture = tracing::subscriber::with_default(counter, || {
        GaussianMixture::new(3)
            .seed(6)
            .fit(&gpu, &Matrix::new(&x, 2).unwrap())
            .unwrap()
    });
    // The K-Means start of EM reports its own iterations too.
    assert!(debug.load(Ordering::Relaxed) > mixture.n_iter());
    assert_eq!(info.load(Ordering::Relaxed), 2, "the K-Means start and EM");
}
