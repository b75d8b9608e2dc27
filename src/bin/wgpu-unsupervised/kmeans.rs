//! `wgpu-unsupervised kmeans --input X.{npy,csv} --k 8 [--n-init N] [--max-iter N] [--tol F]
//! [--seed N] [--init k-means++|random|kmeans-parallel [--oversampling F --rounds R]]
//! [--init-centroids C.npy]
//! [--metric euclidean|cosine] [--max-gpu-memory SIZE] [--mini-batch SIZE]
//! [--sample-weight w.npy] [--output labels.npy] [--model model.json] [--json]`
//!
//! Fits K-Means on the matrix in `--input` (one row per sample), then writes the training
//! labels as a 1-D `u4` `.npy` array to `--output` and the fitted model to `--model`, when
//! given. Parameters left out keep the library's defaults (see
//! [`wgpu_unsupervised::KMeans`]). `--init-centroids` starts from the K x D centres in a
//! file (scikit-learn's `init=array`; one run, as there). `--json` keys: `algorithm`, `n`,
//! `d`, `k`, `metric`, `init`, `inertia`, `n_iter`, `converged`, `fit_seconds`,
//! `init_seconds`, `adapter`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use wgpu_unsupervised::io::InputMatrix;
use wgpu_unsupervised::{io, Gpu, KMeans, KMeansInit, KMeansModel, Metric, MiniBatchKMeans};

use crate::flow::{
    iterations, read_sample_weights, timed, Context, Human, Inputs, Outputs, Report, Staging, Task,
};
use crate::progress::Bar;
use crate::{choices, CliResult, Failure};

/// Arguments of `kmeans`.
#[derive(Debug, clap::Args)]
pub struct KmeansArgs {
    /// Input matrix, one row per sample: .npy (2-D, C order) or .csv (optional header).
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Number of clusters.
    #[arg(long, value_name = "K")]
    k: usize,
    /// Independent restarts; the lowest inertia wins [default: 1].
    #[arg(long, value_name = "N")]
    n_init: Option<usize>,
    /// Maximum Lloyd iterations per restart [default: 300].
    #[arg(long, value_name = "N")]
    max_iter: Option<usize>,
    /// Convergence tolerance, relative to the mean feature variance [default: 1e-4].
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    tol: Option<f64>,
    /// Run exactly --max-iter Lloyd iterations per restart: no tolerance test and no stop
    /// when no label changes (a fixed budget, as FAISS's niter); the GPU then runs the
    /// iterations back to back, several submissions ahead of the host.
    #[arg(long, conflicts_with = "mini_batch")]
    fixed_iterations: bool,
    /// Random seed; the same seed gives the same result on the same adapter [default: 0].
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Initialisation method [default: k-means++ below k = 256, k-means|| from 256 on].
    #[arg(long, value_name = "METHOD", value_parser = choices::kmeans_init())]
    init: Option<KMeansInit>,
    /// Start from these K x D centroids (.npy or .csv, one centre per row; scikit-learn's
    /// init=array): one run, so --n-init is ignored (with a warning on stderr).
    #[arg(long, value_name = "FILE", conflicts_with = "init")]
    init_centroids: Option<PathBuf>,
    /// k-means|| only: candidates sampled per round, per cluster (ℓ / k) [default: 2].
    #[arg(long, value_name = "F")]
    oversampling: Option<f64>,
    /// k-means|| only: sampling rounds [default: 5].
    #[arg(long, value_name = "R")]
    rounds: Option<usize>,
    /// Distance: euclidean (K-Means) or cosine (spherical K-Means: rows and centroids on the
    /// unit sphere, assignment by the largest cosine, inertia Σ(1 − cos); rows of zeros are
    /// refused) [default: euclidean].
    #[arg(long, value_name = "METRIC", value_parser = choices::kmeans_metric(), conflicts_with = "mini_batch")]
    metric: Option<Metric>,
    /// Write the training labels here (.npy, dtype u4, or .csv, one per line).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write the fitted model here (JSON).
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Device-memory budget, e.g. 512MiB or 2GiB (B, KiB, MiB, GiB, TiB): data beyond it
    /// stream through the GPU a piece at a time on every pass.
    #[arg(long, value_name = "SIZE", value_parser = choices::memory_size)]
    max_gpu_memory: Option<u64>,
    /// A weight per row (.npy or .csv, one value per row; scikit-learn's sample_weight): an
    /// integer weight counts as that many copies of the row.
    #[arg(long, value_name = "FILE")]
    sample_weight: Option<PathBuf>,
    /// Mini-batch K-Means with batches of SIZE rows (scikit-learn's MiniBatchKMeans;
    /// --max-iter then counts epochs, default 100, and n_iter in the report counts steps).
    #[arg(long, value_name = "SIZE", value_parser = clap::value_parser!(u64).range(1..))]
    mini_batch: Option<u64>,
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// The one-line `--json` report of `kmeans`.
#[derive(Serialize)]
struct KmeansReport<'a> {
    /// Always "kmeans".
    algorithm: &'static str,
    /// Rows of the input.
    n: usize,
    /// Features of the input.
    d: usize,
    /// Number of clusters.
    k: usize,
    /// "euclidean" or "cosine".
    metric: &'static str,
    /// "k-means++", "random", "k-means||" or "given centroids".
    init: &'static str,
    /// Final within-cluster sum of squares (Σ(1 − cos) for the cosine metric).
    inertia: f64,
    /// Lloyd iterations of the kept restart.
    n_iter: usize,
    /// Whether the kept restart converged before `max_iter`.
    converged: bool,
    /// Wall time of the fit (data upload included, GPU start-up and file I/O excluded).
    fit_seconds: f64,
    /// Part of `fit_seconds` spent choosing the initial centroids (all restarts).
    init_seconds: f64,
    /// Adapter name.
    adapter: &'a str,
}

/// The `kmeans` command.
pub struct Kmeans {
    /// The command line.
    args: KmeansArgs,
    /// The parameters it asks for, the library's defaults elsewhere.
    params: KMeans,
    /// `--sample-weight`, read when the input is checked.
    weights: Option<Vec<f32>>,
    /// The progress bar on a terminal.
    bar: Option<Bar>,
}

impl Kmeans {
    /// The command for `args`; the parameters are validated against the input later.
    pub fn new(args: KmeansArgs) -> Self {
        let mut params = KMeans::new(args.k);
        if let Some(n_init) = args.n_init {
            params = params.n_init(n_init);
        }
        if let Some(max_iter) = args.max_iter {
            params = params.max_iter(max_iter);
        }
        if let Some(tol) = args.tol {
            params = params.tol(tol);
        }
        if let Some(seed) = args.seed {
            params = params.seed(seed);
        }
        params = params.fixed_iterations(args.fixed_iterations);
        if let Some(init) = &args.init {
            params = params.init(init.clone());
        }
        if let KMeansInit::KMeansParallel {
            oversampling,
            rounds,
        } = &mut params.init
        {
            *oversampling = args.oversampling.unwrap_or(*oversampling);
            *rounds = args.rounds.unwrap_or(*rounds);
        }
        if let Some(metric) = args.metric {
            params = params.metric(metric);
        }
        let bar = Bar::attach(
            args.json,
            "k-means",
            params.max_iter,
            &mut params.on_iteration,
        );
        Self {
            args,
            params,
            weights: None,
            bar,
        }
    }
}

impl Kmeans {
    /// The fit the options ask for: Lloyd (weighted or not) or mini-batch.
    fn fit(&self, gpu: &Gpu, x: &InputMatrix) -> CliResult<(KMeansModel, f64)> {
        match self.args.mini_batch {
            Some(size) => {
                let p = &self.params;
                let mut mb = MiniBatchKMeans::new(p.k)
                    .batch_size(size as usize)
                    .n_init(p.n_init)
                    .seed(p.seed)
                    .init(p.init.clone())
                    .tol(self.args.tol.unwrap_or(0.0));
                if let Some(epochs) = self.args.max_iter {
                    mb = mb.max_iter(epochs);
                }
                match &self.weights {
                    Some(w) => timed(|| Ok(mb.fit_weighted(gpu, x, w)?)),
                    None => timed(|| Ok(mb.fit(gpu, x)?)),
                }
            }
            None => match &self.weights {
                Some(w) => timed(|| Ok(self.params.fit_weighted(gpu, x, w)?)),
                None => timed(|| Ok(self.params.fit(gpu, x)?)),
            },
        }
    }
}

impl Task for Kmeans {
    /// The model and the fit's wall time.
    type Outcome = (KMeansModel, f64);

    fn input(&self) -> &Path {
        &self.args.input
    }

    fn inputs(&self) -> Inputs<'_> {
        let mut inputs = vec![("--input", self.args.input.as_path())];
        if let Some(path) = &self.args.init_centroids {
            inputs.push(("--init-centroids", path));
        }
        if let Some(path) = &self.args.sample_weight {
            inputs.push(("--sample-weight", path));
        }
        inputs
    }

    fn outputs(&self) -> Outputs<'_> {
        Outputs::none()
            .array("--output", self.args.output.as_deref(), "labels")
            .model(self.args.model.as_deref())
    }

    fn json(&self) -> bool {
        self.args.json
    }

    fn max_gpu_memory(&self) -> Option<u64> {
        self.args.max_gpu_memory
    }

    fn check(&mut self, n: usize, d: usize) -> CliResult {
        let parallel = matches!(self.params.init, KMeansInit::KMeansParallel { .. });
        if !parallel && (self.args.oversampling.is_some() || self.args.rounds.is_some()) {
            return Err(Failure::invalid(
                "--oversampling and --rounds apply to --init k-means|| only",
            ));
        }
        if let Some(path) = &self.args.init_centroids {
            let c = io::read_matrix(path).map_err(|e| Failure::input(path, e))?;
            if (c.n_rows, c.n_features) != (self.params.k, d) {
                return Err(Failure::invalid(format!(
                    "{}: --init-centroids holds {} x {} values; expected --k x D = {} x {}",
                    path.display(),
                    c.n_rows,
                    c.n_features,
                    self.params.k,
                    d
                )));
            }
            self.params.init = KMeansInit::Centroids(c.data.iter().map(|&v| v as f64).collect());
        }
        self.params.validate(n, d)?;
        if let Some(path) = &self.args.sample_weight {
            self.weights = Some(read_sample_weights(path, n)?);
        }
        Ok(())
    }

    fn compute(&self, gpu: &Gpu, x: &InputMatrix) -> CliResult<Self::Outcome> {
        let fitted = self.fit(gpu, x);
        if let Some(bar) = &self.bar {
            bar.clear();
        }
        fitted
    }

    fn write(
        &self,
        _run: &Context<'_>,
        (model, _): &Self::Outcome,
        out: &mut Staging,
    ) -> CliResult {
        if let Some(path) = &self.args.model {
            out.text(path, &model.to_json_string())?;
        }
        if let Some(path) = &self.args.output {
            out.labels(path, model.labels())?;
        }
        Ok(())
    }

    fn report(&self, run: &Context<'_>, (model, fit_seconds): &Self::Outcome) -> CliResult<Report> {
        let params = &self.params;
        let mut human = Human::new();
        human
            .line("input", run.input_line())
            .line(
                "k-means",
                format!(
                    "k = {}, metric {}, init {}, n_init {}, max_iter {}, tol {}, seed {}",
                    params.k,
                    params.metric,
                    params.init,
                    params.n_init,
                    params.max_iter,
                    params.tol,
                    params.seed
                ),
            )
            .line("inertia", model.inertia())
            .line("iterations", iterations(model.n_iter(), model.converged()))
            .line("fit time", format!("{fit_seconds:.3} s"))
            .file("labels", self.args.output.as_deref(), "--output FILE.npy")
            .file("model", self.args.model.as_deref(), "--model FILE.json");
        let json = KmeansReport {
            algorithm: "kmeans",
            n: run.n,
            d: run.d,
            k: model.k(),
            metric: model.params().metric.name(),
            init: model.params().init.name(),
            inertia: model.inertia(),
            n_iter: model.n_iter(),
            converged: model.converged(),
            fit_seconds: *fit_seconds,
            init_seconds: model.init_seconds(),
            adapter: &run.info.name,
        };
        Report::new(&json, human)
    }
}
