//! Remote mixtures driven in process: each partition a [`GmmPartition`] and a
//! [`KMeansPartition`] over the same device rows, optionally rebuilt partway through.

use crate::common::gpu;
use wgpu_unsupervised::datasets::make_blobs;
use wgpu_unsupervised::gmm::{GmmReply, GmmRequest, GmmStart, MixtureParameters};
use wgpu_unsupervised::kmeans::{seed_candidates, KMeansReply, KMeansRequest};
use wgpu_unsupervised::metrics::adjusted_rand_index;
use wgpu_unsupervised::{
    CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit, GmmPartition, Gpu, GpuMatrix,
    KMeansPartition, Matrix, RemoteGaussianMixture, RemoteKMeans, Result,
};

struct InProcess<'g> {
    gpu: &'g Gpu,
    rows: Vec<Vec<f32>>,
    d: usize,
    parts: Vec<(KMeansPartition<'g>, GmmPartition<'g>)>,
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
            .map(|r| {
                let x = GpuMatrix::upload(self.gpu, &Matrix::new(r, self.d).unwrap()).unwrap();
                (
                    KMeansPartition::new(self.gpu, x.clone()),
                    GmmPartition::new(self.gpu, x),
                )
            })
            .collect();
    }

    fn tick(&mut self) {
        self.rounds += 1;
        if self.restart_after == Some(self.rounds) {
            self.rebuild();
        }
    }
}

impl RemoteKMeans for InProcess<'_> {
    fn partition_shapes(&self) -> (Vec<usize>, usize) {
        (self.rows.iter().map(|r| r.len() / self.d).collect(), self.d)
    }

    fn run(&mut self, requests: Vec<(usize, KMeansRequest)>) -> Result<Vec<KMeansReply>> {
        self.tick();
        requests
            .iter()
            .map(|(p, r)| self.parts[*p].0.answer(r))
            .collect()
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

impl RemoteGaussianMixture for InProcess<'_> {
    fn run_mixture(&mut self, requests: Vec<(usize, GmmRequest)>) -> Result<Vec<GmmReply>> {
        self.tick();
        requests
            .iter()
            .map(|(p, r)| self.parts[*p].1.answer(r))
            .collect()
    }
}

impl InProcess<'_> {
    /// Every row's label under `model`, asked of the partitions (a remote model keeps none).
    fn labels(&mut self, model: &GaussianMixtureModel) -> Vec<u32> {
        assert!(model.labels().is_empty(), "a remote model holds no labels");
        let parameters = MixtureParameters::of(model);
        let mut labels = Vec::new();
        for (_, part) in &mut self.parts {
            let request = GmmRequest::Labels {
                parameters: parameters.clone(),
            };
            match part.answer(&request).unwrap() {
                GmmReply::Labels(l) => labels.extend(l),
                other => panic!("{other:?}"),
            }
        }
        labels
    }
}

fn max_rel(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / y.abs().max(1.0))
        .fold(0.0, f64::max)
}

#[test]
fn remote_em_takes_the_single_device_steps_from_the_same_start() {
    let gpu = gpu();
    let (rows, _, _) = make_blobs(2400, 3, 4, 1.5, (-5.0, 5.0), 21).unwrap();
    let x = Matrix::new(&rows, 3).unwrap();
    for t in CovarianceType::ALL {
        let start = GaussianMixture::new(4).covariance(t).seed(1).max_iter(1);
        let start = start.fit(&gpu, &x).unwrap();
        let params = GaussianMixture::new(4)
            .covariance(t)
            .tol(0.0)
            .max_iter(12)
            .init(GmmInit::Given(start.initial_parameters()));
        let single = params.fit(&gpu, &x).unwrap();
        let mut remote = InProcess::new(&gpu, &rows, 3, &[800, 3, 997, 600]);
        let model = params.fit_remote(&mut remote).unwrap();
        assert_eq!(model.n_iter(), single.n_iter(), "{t}");
        assert!(max_rel(model.means(), single.means()) < 1e-3, "{t}");
        assert!(max_rel(model.weights(), single.weights()) < 1e-3, "{t}");
        assert!(
            max_rel(model.covariances(), single.covariances()) < 1e-2,
            "{t}"
        );
        assert!(
            (model.lower_bound() - single.lower_bound()).abs() < 1e-4,
            "{t}"
        );
        let same = remote
            .labels(&model)
            .iter()
            .zip(single.labels())
            .filter(|(a, b)| a == b)
            .count();
        assert!(same >= 2395, "{t}: {same} labels agree");
    }
}

#[test]
fn a_restarted_partition_gives_the_same_mixture() {
    let gpu = gpu();
    let (rows, truth, _) = make_blobs(1500, 2, 3, 0.4, (-6.0, 6.0), 8).unwrap();
    for init in [GmmInit::KMeans, GmmInit::KMeansPlusPlus, GmmInit::Random] {
        let params = GaussianMixture::new(3)
            .covariance(CovarianceType::Diag)
            .seed(4)
            .n_init(2)
            .init(init.clone());
        let mut calm = InProcess::new(&gpu, &rows, 2, &[500, 500, 500]);
        let a = params.fit_remote(&mut calm).unwrap();
        for restart in [1, 3, calm.rounds - 1] {
            let mut disturbed = InProcess::new(&gpu, &rows, 2, &[500, 500, 500]);
            disturbed.restart_after = Some(restart);
            let b = params.fit_remote(&mut disturbed).unwrap();
            assert_eq!(a.means(), b.means(), "{init}, restart at {restart}");
            assert_eq!(a.covariances(), b.covariances());
            assert_eq!(calm.labels(&a), disturbed.labels(&b));
        }
        // The K-Means starts find these separated blobs (random responsibilities need not).
        let ari = adjusted_rand_index(&calm.labels(&a), &truth).unwrap();
        assert!(ari > 0.98 || init == GmmInit::Random, "{init}: ARI {ari}");
    }
}

#[test]
fn mixture_requests_that_do_not_fit_are_errors() {
    let gpu = gpu();
    let rows = wgpu_unsupervised::datasets::uniform(40, 2, 3);
    let mut part = GmmPartition::upload(&gpu, &Matrix::new(&rows, 2).unwrap()).unwrap();
    assert_eq!(part.shape(), (40, 2));
    let good = MixtureParameters::of(
        &GaussianMixtureModel::from_parameters(
            CovarianceType::Spherical,
            vec![0.5, 0.5],
            vec![0.2, 0.2, 0.8, 0.8],
            vec![0.1, 0.1],
        )
        .unwrap(),
    );
    assert!(part
        .answer(&GmmRequest::EStep {
            parameters: good.clone()
        })
        .is_ok());
    let mut short = good.clone();
    short.means.pop();
    let mut nan = good.clone();
    nan.precisions_cholesky[0] = f64::NAN;
    for parameters in [short, nan] {
        assert!(part.answer(&GmmRequest::Labels { parameters }).is_err());
    }
    let start = GmmRequest::Start {
        start: GmmStart::Nearest {
            centroids: vec![0.0; 3],
        },
        covariance_type: CovarianceType::Diag,
        shift: vec![0.0; 4],
    };
    assert!(part.answer(&start).is_err());
}
