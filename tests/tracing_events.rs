//! Every iteration, and every choice the library makes for the user (a warning), is a
//! `tracing` event. A file of its own: tracing caches per call site
//! whether anyone listens, and a fit on another test thread with no subscriber would race
//! with the scoped subscriber installed here. (So it is not a module of `tests/gpu/`.)

#[path = "gpu/common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};

use common::gpu;
use wgpu_unsupervised::{
    datasets, Components, GaussianMixture, KMeans, KMeansInit, Matrix, MiniBatchKMeans, Pca,
};

fn blobs(n: usize, d: usize, k: usize, seed: u64) -> Vec<f32> {
    datasets::make_blobs(n, d, k, 1.5, (-6.0, 6.0), seed)
        .unwrap()
        .0
}

/// Records the level and message of every event of this crate's targets.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(tracing::Level, String)>>>);

impl Recorder {
    fn count(&self, level: tracing::Level) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(l, _)| *l == level)
            .count()
    }
    fn warnings(&self) -> Vec<String> {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .filter(|(l, _)| *l == tracing::Level::WARN)
            .map(|(_, m)| m.clone())
            .collect()
    }
}

/// Writes an event's `message` field.
struct Message<'a>(&'a mut String);

impl tracing::field::Visit for Message<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            *self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for Recorder {
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
            let mut message = String::new();
            event.record(&mut Message(&mut message));
            self.0.lock().unwrap().push((*meta.level(), message));
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn every_iteration_and_every_warning_is_a_tracing_event() {
    use tracing::Level;
    let gpu = gpu();
    let x = blobs(300, 2, 3, 6);
    let m = Matrix::new(&x, 2).unwrap();
    let events = Recorder::default();
    let model = tracing::subscriber::with_default(events.clone(), || {
        KMeans::new(3).seed(6).fit(&gpu, &m).unwrap()
    });
    assert_eq!(events.count(Level::DEBUG), model.n_iter());
    assert_eq!(events.count(Level::INFO), 1);
    assert!(events.warnings().is_empty());
    let events = Recorder::default();
    let mixture = tracing::subscriber::with_default(events.clone(), || {
        GaussianMixture::new(3).seed(6).fit(&gpu, &m).unwrap()
    });
    // The K-Means start of EM reports its own iterations too.
    assert!(events.count(Level::DEBUG) > mixture.n_iter());
    assert_eq!(events.count(Level::INFO), 2, "the K-Means start and EM");

    // scikit-learn's test_warning_n_init_precomputed_centers: explicit centroids make one
    // run, and asking for more is a warning (KMeans and MiniBatchKMeans).
    let given = KMeansInit::Centroids(x[..6].iter().map(|&v| v as f64).collect());
    let events = Recorder::default();
    tracing::subscriber::with_default(events.clone(), || {
        let model = KMeans::new(3)
            .init(given.clone())
            .n_init(4)
            .fit(&gpu, &m)
            .unwrap();
        assert_eq!(model.inertia_history().len(), model.n_iter(), "one run");
        MiniBatchKMeans::new(3)
            .init(given.clone())
            .n_init(4)
            .batch_size(64)
            .fit(&gpu, &m)
            .unwrap();
        KMeans::new(3).init(given.clone()).fit(&gpu, &m).unwrap();
    });
    let warnings = events.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings
            .iter()
            .all(|w| w.contains("one run instead of n_init = 4")),
        "{warnings:?}"
    );

    // Whitening components at the f32 noise floor: fitted (scikit-learn's rule), and named.
    let line: Vec<f32> = (0..50)
        .flat_map(|i| [i as f32, 2.0 * i as f32, 1.0])
        .collect();
    let flat = Matrix::new(&line, 3).unwrap();
    let events = Recorder::default();
    tracing::subscriber::with_default(events.clone(), || {
        Pca::new(Components::Count(3))
            .whiten(true)
            .fit(&gpu, &flat)
            .unwrap();
        Pca::new(Components::Count(1))
            .whiten(true)
            .fit(&gpu, &flat)
            .unwrap();
    });
    let warnings = events.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("whitening components 2..=3"),
        "{warnings:?}"
    );
}
