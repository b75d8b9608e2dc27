//! Remote fits driven in process: each partition a [`KMeansPartition`] on the test device,
//! the driver's bridge answering requests in order, optionally rebuilding every partition
//! (a worker restart) partway through.

use crate::common::gpu;
use wgpu_unsupervised::datasets::make_blobs;
use wgpu_unsupervised::kmeans::{seed_candidates, KMeansReply, KMeansRequest};
use wgpu_unsupervised::metrics::adjusted_rand_index;
use wgpu_unsupervised::{
    Gpu, KMeans, KMeansInit, KMeansPartition, Matrix, Metric, RemoteKMeans, Result,
};

/// Partitions of `rows` answered in process; after `restart_after` rounds of requests every
/// partition is dropped and rebuilt from its rows (its device state lost).
struct InProcess<'g> {
    gpu: &'g Gpu,
    rows: Vec<Vec<f32>>,
    d: usize,
    parts: Vec<KMeansPartition<'g>>,
    rounds: usize,
    restart_after: Option<usize>,
}

impl<'g> InProcess<'g> {
    fn new(gpu: &'g Gpu, rows: &[f32], d: usize, sizes: &[usize]) -> Self {
        let mut parts_rows = Vec::new();
        let mut at = 0;
        for &s in sizes {
            parts_rows.push(rows[at * d..(at + s) * d].to_vec());
            at += s;
        }
        assert_eq!(at * d, rows.len());
        let mut me = Self {
            gpu,
            rows: parts_rows,
            d,
            parts: Vec::new(),
            rounds: 0,
            restart_after: None,
        };
        me.rebuild();
        me
    }

    fn rebuild(&mut self) {
        self.parts = self
            .rows
            .iter()
            .map(|r| KMeansPartition::upload(self.gpu, &Matrix::new(r, self.d).unwrap()).unwrap())
            .collect();
    }
}

impl RemoteKMeans for InProcess<'_> {
    fn partition_shapes(&self) -> (Vec<usize>, usize) {
        (self.rows.iter().map(|r| r.len() / self.d).collect(), self.d)
    }

    fn run(&mut self, requests: Vec<(usize, KMeansRequest)>) -> Result<Vec<KMeansReply>> {
        self.rounds += 1;
        if self.restart_after == Some(self.rounds) {
            self.rebuild();
        }
        // Answered last to first: the order of answers must not matter.
        let mut replies: Vec<_> = requests
            .iter()
            .rev()
            .map(|(p, r)| self.parts[*p].answer(r))
            .collect::<Result<_>>()?;
        replies.reverse();
        Ok(replies)
    }

    fn seed_candidates(
        &mut self,
        candidates: &[f32],
        d: usize,
        weights: &[f32],
        k: usize,
        seed: u64,
    ) -> Result<Vec<f32>> {
        seed_candidates(self.gpu, candidates, d, weights, k, seed)
    }
}

fn close(a: &[f32], b: &[f32], tol: f32) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= tol * (1.0 + y.abs()))
}

#[test]
fn remote_fit_takes_the_single_device_steps_from_the_same_start() {
    let gpu = gpu();
    let (rows, _, _) = make_blobs(3000, 5, 6, 2.5, (-6.0, 6.0), 11).unwrap();
    let x = Matrix::new(&rows, 5).unwrap();
    let start = KMeans::new(6).seed(3).initial_centroids(&gpu, &x).unwrap();
    let given = KMeansInit::Centroids(start.iter().map(|&v| v as f64).collect());
    let params = KMeans::new(6).init(given).tol(1e-6);
    let single = params.fit(&gpu, &x).unwrap();
    let mut remote = InProcess::new(&gpu, &rows, 5, &[1000, 1, 1300, 699]);
    let model = params.fit_remote(&mut remote).unwrap();
    assert!(
        single.n_iter() > 3,
        "a fit of several steps: {}",
        single.n_iter()
    );
    assert_eq!(model.n_iter(), single.n_iter());
    assert_eq!(model.converged(), single.converged());
    assert!(close(model.centroids(), single.centroids(), 1e-4));
    assert!((model.inertia() - single.inertia()).abs() <= 1e-4 * single.inertia());
    let flips = model
        .labels()
        .iter()
        .zip(single.labels())
        .filter(|(a, b)| a != b)
        .count();
    assert!(flips <= 3, "{flips} labels differ");
}

#[test]
fn a_restarted_partition_gives_the_same_model() {
    let gpu = gpu();
    let (rows, truth, _) = make_blobs(2000, 4, 5, 0.3, (-8.0, 8.0), 5).unwrap();
    for init in [
        KMeansInit::PARALLEL,
        KMeansInit::KMeansPlusPlus,
        KMeansInit::Random,
    ] {
        let params = KMeans::new(5).n_init(2).seed(9).init(init.clone()).tol(0.0);
        let mut calm = InProcess::new(&gpu, &rows, 4, &[700, 600, 700]);
        let a = params.fit_remote(&mut calm).unwrap();
        assert!(calm.rounds > 8, "{init}: {} rounds", calm.rounds);
        for restart in [2, 5, calm.rounds - 1] {
            let mut disturbed = InProcess::new(&gpu, &rows, 4, &[700, 600, 700]);
            disturbed.restart_after = Some(restart);
            let b = params.fit_remote(&mut disturbed).unwrap();
            assert_eq!(a.centroids(), b.centroids(), "{init}, restart at {restart}");
            assert_eq!(a.labels(), b.labels());
            assert_eq!((a.n_iter(), a.inertia()), (b.n_iter(), b.inertia()));
        }
        // The D²-seeded starts find these separated blobs (random rows need not).
        let ari = adjusted_rand_index(a.labels(), &truth).unwrap();
        assert!(
            ari > 0.99 || init == KMeansInit::Random,
            "{init}: ARI {ari}"
        );
    }
}

#[test]
fn an_emptied_cluster_is_repaired_as_on_one_device() {
    let gpu = gpu();
    let (rows, _, _) = make_blobs(900, 2, 3, 0.5, (-5.0, 5.0), 2).unwrap();
    let x = Matrix::new(&rows, 2).unwrap();
    // The third centroid is far from every row: its cluster is empty after the first pass.
    let mut c: Vec<f64> = rows[..4].iter().map(|&v| v as f64).collect();
    c.extend([1e3, 1e3]);
    let params = KMeans::new(3).init(KMeansInit::Centroids(c));
    let single = params.fit(&gpu, &x).unwrap();
    let model = params
        .fit_remote(&mut InProcess::new(&gpu, &rows, 2, &[450, 450]))
        .unwrap();
    assert!(close(model.centroids(), single.centroids(), 1e-4));
    assert_eq!(model.labels(), single.labels());
}

#[test]
fn requests_that_do_not_fit_are_errors() {
    let gpu = gpu();
    let rows = wgpu_unsupervised::datasets::uniform(50, 3, 1);
    let mut part = KMeansPartition::upload(&gpu, &Matrix::new(&rows, 3).unwrap()).unwrap();
    assert_eq!(part.shape(), (50, 3));
    let bad = [
        KMeansRequest::Pass {
            centroids: vec![0.0; 4],
            previous: None,
        },
        KMeansRequest::Pass {
            centroids: vec![0.0; 6],
            previous: Some(vec![0.0; 3]),
        },
        KMeansRequest::Labels {
            centroids: vec![f32::NAN; 3],
        },
        KMeansRequest::Rows { indices: vec![50] },
        KMeansRequest::Sample {
            candidates: vec![0.0; 3],
            ell: 2.0,
            phi: 0.0,
            seed: 1,
            round: 0,
            partition: 0,
        },
    ];
    for request in bad {
        assert!(part.answer(&request).is_err(), "{request:?}");
    }
    // The same draw request gives the same rows; another round, others.
    let sample = |round| KMeansRequest::Sample {
        candidates: rows[..3].to_vec(),
        ell: 10.0,
        phi: 5.0,
        seed: 7,
        round,
        partition: 0,
    };
    let a = part.answer(&sample(0)).unwrap();
    assert_eq!(a, part.answer(&sample(0)).unwrap());
    assert_ne!(a, part.answer(&sample(1)).unwrap());
    assert!(KMeans::new(2)
        .metric(Metric::Cosine)
        .fit_remote(&mut InProcess::new(&gpu, &rows, 3, &[50]))
        .is_err());
}
