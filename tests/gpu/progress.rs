//! Progress reporting: the `on_iteration` callback sees every iteration with the values the
//! model reports, can stop a fit early, and changes nothing when it lets the fit run
//! (`tests/tracing_events.rs`: the `tracing` events).

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use crate::common::gpu;
use wgpu_unsupervised::progress::Algorithm;
use wgpu_unsupervised::{
    datasets, Components, CovarianceType, GaussianMixture, Iteration, KMeans, KMeansInit, Matrix,
    MiniBatchKMeans, Pca, PcaSolver,
};

fn blobs(n: usize, d: usize, k: usize, seed: u64) -> Vec<f32> {
    datasets::make_blobs(n, d, k, 1.5, (-6.0, 6.0), seed)
        .unwrap()
        .0
}

/// What a callback saw.
type Seen = Arc<Mutex<Vec<Iteration>>>;

/// A callback that records every iteration and breaks at `stop_at` (if any).
fn recorder(
    stop_at: Option<usize>,
) -> (
    Seen,
    impl Fn(&Iteration) -> ControlFlow<()> + Send + Sync + 'static,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    (seen, move |it: &Iteration| {
        log.lock().unwrap().push(it.clone());
        if Some(it.iteration) == stop_at {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
}

#[test]
fn kmeans_callback_sees_each_iteration_and_can_stop() {
    let gpu = gpu();
    for seed in [1, 2] {
        let x = blobs(600, 3, 5, seed);
        let m = Matrix::new(&x, 3).unwrap();
        let params = KMeans::new(5).seed(seed).n_init(3).init(KMeansInit::Random);
        let plain = params.fit(&gpu, &m).unwrap();
        let (seen, f) = recorder(None);
        let watched = params.clone().on_iteration(f).fit(&gpu, &m).unwrap();
        // Watching changes nothing (the callback is not kept in the model's parameters).
        assert_eq!(watched, plain);
        let seen = seen.lock().unwrap();
        assert!(seen.iter().all(|it| it.algorithm == Algorithm::KMeans));
        assert_eq!(
            seen.iter().map(|it| it.run).max(),
            Some(2),
            "three restarts"
        );
        // Iterations count 1, 2, … within each restart; the objectives are the histories.
        for run in 0..3 {
            let its: Vec<&Iteration> = seen.iter().filter(|it| it.run == run).collect();
            let numbers: Vec<usize> = its.iter().map(|it| it.iteration).collect();
            assert_eq!(numbers, (1..=its.len()).collect::<Vec<_>>());
            assert!(its.windows(2).all(|w| w[0].elapsed <= w[1].elapsed));
        }
        let kept: Vec<f64> = seen
            .iter()
            .filter(|it| {
                let run_its = seen.iter().filter(|o| o.run == it.run);
                run_its.map(|o| o.objective).collect::<Vec<_>>() == plain.inertia_history()
            })
            .map(|it| it.objective)
            .collect();
        assert!(
            !kept.is_empty(),
            "one restart's objectives are the model's history"
        );

        let (seen, f) = recorder(Some(2));
        let stopped = params.clone().on_iteration(f).fit(&gpu, &m).unwrap();
        assert_eq!(stopped.n_iter(), 2);
        assert!(!stopped.converged());
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "later restarts are skipped");
        let objectives: Vec<f64> = seen.iter().map(|it| it.objective).collect();
        assert_eq!(objectives, stopped.inertia_history());
    }
}

#[test]
fn mini_batch_callback_sees_each_step_and_can_stop() {
    let gpu = gpu();
    let x = blobs(3000, 2, 4, 7);
    let m = Matrix::new(&x, 2).unwrap();
    let params = MiniBatchKMeans::new(4).batch_size(256).seed(7);
    let plain = params.fit(&gpu, &m).unwrap();
    let (seen, f) = recorder(None);
    let watched = params.clone().on_iteration(f).fit(&gpu, &m).unwrap();
    assert_eq!(watched, plain);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), plain.n_iter());
    assert!(seen
        .iter()
        .all(|it| it.algorithm == Algorithm::MiniBatchKMeans));
    let (_, f) = recorder(Some(3));
    let stopped = params.clone().on_iteration(f).fit(&gpu, &m).unwrap();
    assert_eq!((stopped.n_iter(), stopped.converged()), (3, false));
}

#[test]
fn gmm_callback_sees_the_lower_bounds_and_can_stop() {
    let gpu = gpu();
    for (seed, cov) in [(3, CovarianceType::Full), (4, CovarianceType::Diag)] {
        let x = blobs(400, 2, 3, seed);
        let m = Matrix::new(&x, 2).unwrap();
        let params = GaussianMixture::new(3).covariance(cov).seed(seed).tol(1e-6);
        let plain = params.fit(&gpu, &m).unwrap();
        let (seen, f) = recorder(None);
        let watched = params.clone().on_iteration(f).fit(&gpu, &m).unwrap();
        assert_eq!(watched, plain);
        let bounds: Vec<f64> = seen.lock().unwrap().iter().map(|it| it.objective).collect();
        assert_eq!(bounds, plain.lower_bound_history());
        assert_eq!(bounds.len(), plain.n_iter());

        let (seen, f) = recorder(Some(2));
        let stopped = params.clone().on_iteration(f).fit(&gpu, &m).unwrap();
        assert_eq!((stopped.n_iter(), stopped.converged()), (2, false));
        assert_eq!(seen.lock().unwrap().len(), 2);
        assert_eq!(
            stopped.lower_bound_history(),
            &plain.lower_bound_history()[..2]
        );
    }
}

#[test]
fn pca_power_iteration_reports_residuals_and_can_stop() {
    let gpu = gpu();
    let x = blobs(500, 12, 4, 5);
    let m = Matrix::new(&x, 12).unwrap();
    for solver in [PcaSolver::Power, PcaSolver::MatrixFree] {
        let params = Pca::new(Components::Count(3)).solver(solver);
        let plain = params.fit(&gpu, &m).unwrap();
        let (seen, f) = recorder(None);
        let watched = params.clone().on_iteration(f).fit(&gpu, &m).unwrap();
        assert_eq!(watched, plain);
        let seen_all = seen.lock().unwrap().clone();
        // One report per check: every product for the matrix-free solver, every round of
        // products on the device for the dense one; the last at the model's n_iter.
        let numbers: Vec<usize> = seen_all.iter().map(|it| it.iteration).collect();
        assert_eq!(numbers[0], 1, "{solver:?}");
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
        assert_eq!(*numbers.last().unwrap(), plain.n_iter());
        if solver == PcaSolver::MatrixFree {
            assert_eq!(seen_all.len(), plain.n_iter());
        }
        assert!(seen_all.last().unwrap().objective <= params.tol);
        assert!(seen_all[..seen_all.len() - 1]
            .iter()
            .all(|it| it.objective > params.tol));

        // Stopped at the second report: the components of that check, not converged.
        let second = numbers[1.min(numbers.len() - 1)];
        let (_, f) = recorder(Some(second));
        let stopped = params.clone().on_iteration(f).fit(&gpu, &m).unwrap();
        assert_eq!(stopped.n_iter(), second, "{solver:?}");
    }
}
