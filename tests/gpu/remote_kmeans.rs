//! Remote fits driven in process: each partition a [`KMeansPartition`] on the test device,
//! the driver's bridge answering requests in order, optionally rebuilding every partition
//! (a worker restart) partway through.

use crate::common::gpu;
use wgpu_unsupervised::datasets::make_blobs;
use wgpu_unsupervised::gpu::profile::Profile;
use wgpu_unsupervised::kmeans::{seed_candidates, KMeansReply, KMeansRequest};
use wgpu_unsupervised::metrics::adjusted_rand_index;
use wgpu_unsupervised::{
    Gpu, KMeans, KMeansInit, KMeansPartition, Matrix, Metric, ProfileClock, RemoteKMeans, Result,
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
    /// Requests of each kind the driver sent: it must never ask for a value per row.
    asked: Vec<&'static str>,
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
            asked: Vec::new(),
        };
        me.rebuild();
        me
    }

    /// Every row's label against `model`'s centroids, asked of the partitions (the model
    /// keeps none: they stay where the rows are).
    fn labels(&mut self, model: &wgpu_unsupervised::KMeansModel) -> Vec<u32> {
        assert!(model.labels().is_empty(), "a remote model holds no labels");
        let request = KMeansRequest::Labels {
            centroids: model.centroids().to_vec(),
        };
        let mut labels = Vec::new();
        for part in &mut self.parts {
            match part.answer(&request).unwrap() {
                KMeansReply::Labels { labels: l, .. } => labels.extend(l),
                other => panic!("{other:?}"),
            }
        }
        labels
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
        for (_, r) in &requests {
            self.asked.push(match r {
                KMeansRequest::Pass { .. } => "pass",
                KMeansRequest::Labels { .. } => "labels",
                KMeansRequest::Farthest { .. } => "farthest",
                KMeansRequest::Rows { .. } => "rows",
                KMeansRequest::Cost { .. } => "cost",
                KMeansRequest::Sample { .. } => "sample",
                KMeansRequest::Weights { .. } => "weights",
            });
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
    assert!(!remote.asked.contains(&"labels"), "{:?}", remote.asked);
    let flips = remote
        .labels(&model)
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
        assert!(calm.rounds > 6, "{init}: {} rounds", calm.rounds);
        for restart in [2, 5, calm.rounds - 1] {
            let mut disturbed = InProcess::new(&gpu, &rows, 4, &[700, 600, 700]);
            disturbed.restart_after = Some(restart);
            let b = params.fit_remote(&mut disturbed).unwrap();
            assert_eq!(a.centroids(), b.centroids(), "{init}, restart at {restart}");
            assert_eq!(calm.labels(&a), disturbed.labels(&b));
            assert_eq!((a.n_iter(), a.inertia()), (b.n_iter(), b.inertia()));
        }
        // The D²-seeded starts find these separated blobs (random rows need not).
        let ari = adjusted_rand_index(&calm.labels(&a), &truth).unwrap();
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
    let mut remote = InProcess::new(&gpu, &rows, 2, &[450, 450]);
    let model = params.fit_remote(&mut remote).unwrap();
    assert!(close(model.centroids(), single.centroids(), 1e-4));
    assert_eq!(remote.labels(&model), single.labels());
    // The repair asked each partition for its farthest rows, never for every row's label.
    assert!(remote.asked.contains(&"farthest"), "{:?}", remote.asked);
    assert!(!remote.asked.contains(&"labels"), "{:?}", remote.asked);
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
            ends: vec![1],
            ell: 2.0,
            phi: 0.0,
            seed: 1,
            round: 0,
            partition: 0,
        },
    ];
    // Rounds' ends that do not rise from above 0 to the candidates.
    let cost = |ends: Vec<usize>| KMeansRequest::Cost {
        candidates: rows[..9].to_vec(),
        ends,
    };
    let bad = bad
        .into_iter()
        .chain([vec![], vec![0, 3], vec![2, 2, 3], vec![1, 2], vec![1, 4]].map(cost));
    for request in bad {
        assert!(part.answer(&request).is_err(), "{request:?}");
    }
    // The same draw request gives the same rows; another round, others.
    let sample = |round| KMeansRequest::Sample {
        candidates: rows[..3].to_vec(),
        ends: vec![1],
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

/// FLOPs of the assignment kernels a profile counted (2·N·D per row and candidate; the exact
/// rechecks of undecided rows count none).
fn assignment_flops(profile: &Profile) -> f64 {
    profile
        .kernels()
        .iter()
        .filter(|s| s.kernel.starts_with("assign_") && s.kernel != "assign_recheck")
        .map(|s| s.work.flops)
        .sum()
}

#[test]
fn kmeans_parallel_requests_measure_each_round_once() {
    let gpu = gpu();
    for (n, d, seed) in [(700, 3, 1), (1500, 17, 2)] {
        let rows = wgpu_unsupervised::datasets::uniform(n, d, seed);
        let x = Matrix::new(&rows, d).unwrap();
        // Candidates from elsewhere in the space than the rows, rounds of 1, 4 and 6.
        let candidates: Vec<f32> = wgpu_unsupervised::datasets::uniform(11, d, seed + 10)
            .iter()
            .map(|v| 1.5 * v - 0.2)
            .collect();
        let upto = |c: usize| candidates[..c * d].to_vec();
        let cost = |ends: &[usize]| KMeansRequest::Cost {
            candidates: upto(*ends.last().unwrap()),
            ends: ends.to_vec(),
        };
        let all = [1, 5, 11];
        let per_candidate = 2.0 * (n * d) as f64;

        let mut warm = KMeansPartition::upload(&gpu, &x).unwrap();
        warm.answer(&cost(&all[..1])).unwrap();
        warm.answer(&cost(&all[..2])).unwrap();
        let (warm_cost, profile) = gpu
            .profile(ProfileClock::WallClock, || warm.answer(&cost(&all)))
            .unwrap();
        assert_eq!(
            assignment_flops(&profile),
            6.0 * per_candidate,
            "the last round only"
        );
        // Drawing and weighting after the cost measure nothing again.
        let sample = KMeansRequest::Sample {
            candidates: upto(11),
            ends: all.to_vec(),
            ell: 20.0,
            phi: 1.0,
            seed,
            round: 2,
            partition: 0,
        };
        let weights = KMeansRequest::Weights {
            candidates: upto(11),
            ends: all.to_vec(),
        };
        let ((warm_sample, warm_weights), profile) = gpu
            .profile(ProfileClock::WallClock, || {
                Ok((warm.answer(&sample)?, warm.answer(&weights)?))
            })
            .unwrap();
        assert_eq!(assignment_flops(&profile), 0.0);

        // A fresh partition, and one that measured other rounds, measure every round and
        // reply the same bits.
        let mut fresh = KMeansPartition::upload(&gpu, &x).unwrap();
        let mut other = KMeansPartition::upload(&gpu, &x).unwrap();
        other.answer(&cost(&[2, 5])).unwrap();
        for part in [&mut fresh, &mut other] {
            let (reply, profile) = gpu
                .profile(ProfileClock::WallClock, || part.answer(&cost(&all)))
                .unwrap();
            assert_eq!(assignment_flops(&profile), 11.0 * per_candidate);
            assert_eq!(reply, warm_cost);
            assert_eq!(part.answer(&sample).unwrap(), warm_sample);
            assert_eq!(part.answer(&weights).unwrap(), warm_weights);
        }

        // The reply is the running minimum: D² to the nearest candidate, and each
        // candidate weighted by the rows nearest to it (ties to the earlier), as one
        // assignment over all candidates gives within f32 rounding.
        let nearest: Vec<(usize, f64)> = rows
            .chunks(d)
            .map(|r| {
                (0..11)
                    .map(|c| {
                        let dist: f64 = r
                            .iter()
                            .zip(&candidates[c * d..(c + 1) * d])
                            .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
                            .sum();
                        (c, dist)
                    })
                    .fold(
                        (0, f64::INFINITY),
                        |best, e| if e.1 < best.1 { e } else { best },
                    )
            })
            .collect();
        let phi: f64 = nearest.iter().map(|&(_, v)| v).sum();
        match warm_cost {
            KMeansReply::Cost(c) => assert!((c - phi).abs() <= 1e-5 * phi, "{c} vs {phi}"),
            other => panic!("{other:?}"),
        }
        let mut counts = vec![0f64; 11];
        nearest.iter().for_each(|&(c, _)| counts[c] += 1.0);
        match warm_weights {
            KMeansReply::Weights(w) => {
                assert_eq!(w.iter().sum::<f64>(), n as f64);
                let moved: f64 = w.iter().zip(&counts).map(|(a, b)| (a - b).abs()).sum();
                assert!(moved <= 2.0, "{w:?} vs {counts:?}");
            }
            other => panic!("{other:?}"),
        }
    }
}
