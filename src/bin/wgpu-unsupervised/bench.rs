//! `wgpu-unsupervised bench [--kernel NAME]... [--fit NAME]... [--shape N,D,K]...
//! [--input X.npy] [--k K]... [--covariance full|diag] [--pca M] [--iterations I]
//! [--repeats R] [--seed S] [--profile] [--json]`
//!
//! Measures the adapter's ceilings, then the hot kernels and the end-to-end fits
//! ([`wgpu_unsupervised::bench`]) on the given shapes: synthetic blobs of each `--shape`, or
//! the `--input` matrix with each `--k`. Without `--kernel` and `--fit` it runs every kernel
//! at the shapes the targets name. `--pca M` projects the data on its first M
//! principal components before the mixture benches (as the Fashion-MNIST figures do).
//! `--json` prints one line per measurement with the keys `impl`, `kind`, `kernel`, `n`, `d`,
//! `k`, `iterations` (done: a K-Means fit stops early when no label changes),
//! `iterations_requested`, `seconds`, `seconds_per_iteration`, `flops`, `bytes`, `gflops`,
//! `gbps`, `peak_gflops`, `peak_gbps`, `efficiency`, `bound`, `adapter`, `timing`, `data`,
//! `detail`; a fit whose data fit the device also has `upload_seconds` (the upload alone) and
//! `resident_seconds` (the same fit from the device copy); with `--profile`, a fit also has `gpu_seconds`, `busy` (its kernels' GPU time
//! over its wall time, in a second, profiled run), `busy_timing` and `host` (`submissions`,
//! `readbacks`, `wait_seconds`: the host's side of that run), and is followed by one
//! line per kernel of its profile (`kind` `"profile"`, `fit`, `entry`, `calls`, `seconds`,
//! `gflops`, `gbps`, `bound`, `efficiency`).

use std::path::PathBuf;

use serde::Serialize;
use wgpu_unsupervised::bench::{self, BenchData, FitBench, KernelBench, Measurement};
use wgpu_unsupervised::{
    datasets, io, Ceilings, Components, CovarianceType, Gpu, Matrix, Pca, Profile,
};

use crate::choices::{covariance, library_enum};
use crate::flow::{open_gpu, Outputs};
use crate::{CliResult, Failure};

/// Arguments of `bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// A kernel to time (repeatable) [default: all, when no --fit is given].
    #[arg(long, value_name = "NAME",
          value_parser = library_enum::<KernelBench>(KernelBench::ALL.map(KernelBench::name)))]
    kernel: Vec<KernelBench>,
    /// An end-to-end fit to time (repeatable).
    #[arg(long, value_name = "NAME",
          value_parser = library_enum::<FitBench>(FitBench::ALL.map(FitBench::name)))]
    fit: Vec<FitBench>,
    /// Synthetic data (Gaussian blobs) of N rows and D features, and K clusters or
    /// components (repeatable) [default: each kernel's target shape; 70000,784,10 for fits].
    #[arg(long, value_name = "N,D,K", value_parser = parse_shape)]
    shape: Vec<(usize, usize, usize)>,
    /// Time on this matrix (.npy or .csv) instead of synthetic data.
    #[arg(long, value_name = "FILE", conflicts_with = "shape")]
    input: Option<PathBuf>,
    /// With --input: clusters or components (repeatable) [default: 10].
    #[arg(long, value_name = "K")]
    k: Vec<usize>,
    /// Covariance type of the EM kernels (repeatable) [default: diag and full].
    #[arg(long, value_name = "TYPE", value_parser = covariance())]
    covariance: Vec<CovarianceType>,
    /// Project the data on its first M principal components before the mixture benches.
    #[arg(long, value_name = "M")]
    pca: Option<usize>,
    /// Iterations of the K-Means and EM fits [default: 30 for kmeans, 20 for EM].
    #[arg(long, value_name = "I", value_parser = at_least_one())]
    iterations: Option<usize>,
    /// Timed runs of each kernel (the median counts), after one warm-up run.
    #[arg(long, value_name = "R", default_value_t = 3, value_parser = at_least_one())]
    repeats: usize,
    /// Seed of the synthetic data.
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,
    /// Also print each fit's profile: GPU time, rates and efficiency per kernel.
    #[arg(long)]
    profile: bool,
    /// One JSON object per line instead of the table.
    #[arg(long)]
    json: bool,
}

/// A count of one or more (zero iterations or repeats would measure nothing).
fn at_least_one() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..)
}

fn parse_shape(s: &str) -> Result<(usize, usize, usize), String> {
    let v: Vec<usize> = s
        .split(',')
        .map(|p| p.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("`{s}` is not N,D,K: {e}"))?;
    match v[..] {
        [n, d, k] if n > 0 && d > 0 => Ok((n, d, k)),
        _ => Err(format!("`{s}` is not N,D,K with N and D positive")),
    }
}

/// One data set a bench runs on.
struct Data {
    values: Vec<f32>,
    d: usize,
    name: String,
}

impl Data {
    fn blobs(n: usize, d: usize, seed: u64) -> CliResult<Self> {
        let (values, _, _) = datasets::make_blobs(n, d, 16.min(n), 1.0, (-10.0, 10.0), seed)?;
        Ok(Self {
            values,
            d,
            name: "blobs".into(),
        })
    }

    fn matrix(&self) -> CliResult<Matrix<'_>> {
        Ok(Matrix::new(&self.values, self.d)?)
    }

    /// The data projected on their first `m` principal components.
    fn projected(&self, gpu: &Gpu, m: usize) -> CliResult<Self> {
        let (_, values) = Pca::new(Components::Count(m)).fit_transform(gpu, &self.matrix()?)?;
        Ok(Self {
            values,
            d: m,
            name: format!("{} (PCA-{m})", self.name),
        })
    }
}

/// A line of a fit's profile in the JSON output.
#[derive(Serialize)]
struct ProfileLine<'a> {
    kind: &'static str,
    fit: &'a str,
    n: usize,
    d: usize,
    k: usize,
    entry: &'a str,
    calls: usize,
    seconds: f64,
    gflops: f64,
    gbps: f64,
    bound: &'static str,
    efficiency: f64,
    adapter: &'a str,
    timing: &'static str,
}

/// Where the measurements go: JSON lines or the table, as they come. The table's preamble
/// (adapter, ceilings) waits for the first measurement, so a run refused while making its
/// data prints nothing but the error.
struct Printer {
    json: bool,
    header: bool,
    preamble: Option<String>,
}

impl Printer {
    fn measurement(&mut self, m: &Measurement) -> CliResult {
        if self.json {
            return emit(m);
        }
        if let Some(preamble) = self.preamble.take() {
            println!("{preamble}");
        }
        if !self.header {
            self.header = true;
            println!(
                "{:<6} {:<16} {:>8} {:>5} {:>5} {:>4} {:>10} {:>10} {:>9} {:>8} {:>7} {:>6} {:>6}  detail",
                "kind", "name", "n", "d", "k", "it", "seconds", "s/it", "GFLOP/s", "GB/s", "bound",
                "eff.", "busy"
            );
        }
        let busy = m
            .busy
            .map_or("-".to_string(), |b| format!("{:.1}%", 100.0 * b));
        println!(
            "{:<6} {:<16} {:>8} {:>5} {:>5} {:>4} {:>10.4} {:>10.4} {:>9.2} {:>8.2} {:>7} {:>5.1}% {:>6}  {} {}",
            m.kind,
            m.kernel,
            m.n,
            m.d,
            m.k,
            m.iterations,
            m.seconds,
            m.seconds_per_iteration,
            m.gflops,
            m.gbps,
            m.bound,
            100.0 * m.efficiency,
            busy,
            m.data,
            match (m.upload_seconds, m.resident_seconds) {
                (Some(u), Some(r)) => format!("{}; upload {u:.4} s, from the device {r:.4} s", m.detail),
                _ => m.detail.clone(),
            }
        );
        Ok(())
    }

    fn profile(&mut self, m: &Measurement, p: &Profile, c: &Ceilings) -> CliResult {
        if !self.json {
            let wall = p.wall_seconds.max(f64::MIN_POSITIVE);
            println!(
                "profile of {} ({}):\n{}GPU busy {:.1}% of the fit's wall time; host blocked \
                 {:.1}%; {:.2} readbacks an iteration",
                m.kernel,
                m.detail,
                p.table(Some(c)),
                100.0 * m.busy.unwrap_or(0.0),
                100.0 * p.host.wait_seconds / wall,
                p.host.readbacks as f64 / m.iterations.max(1) as f64
            );
            self.header = false;
            return Ok(());
        }
        for s in p.kernels() {
            let (bound, efficiency) = s.efficiency(c);
            emit(&ProfileLine {
                kind: "profile",
                fit: &m.kernel,
                n: m.n,
                d: m.d,
                k: m.k,
                entry: s.kernel,
                calls: s.calls,
                seconds: s.seconds,
                gflops: s.gflops(),
                gbps: s.gbps(),
                bound: bound.name(),
                efficiency,
                adapter: &c.adapter,
                timing: p.clock.name(),
            })?;
        }
        Ok(())
    }
}

/// One candidate's trial time as a JSON line (`"kind":"tuning_trial"`).
#[derive(Serialize)]
struct TrialLine<'a> {
    kind: &'static str,
    family: &'a str,
    class: [u32; 2],
    variant: &'a str,
    seconds: f64,
    chosen: bool,
    adapter: &'a str,
}

impl Printer {
    /// The autotuner's trials this run made: every candidate's time at each shape class it
    /// chose for (what the choices in the lines' details were made from).
    fn trials(&mut self, trials: &[wgpu_unsupervised::TuningTrial], adapter: &str) -> CliResult {
        for t in trials {
            if self.json {
                emit(&TrialLine {
                    kind: "tuning_trial",
                    family: &t.family,
                    class: t.class,
                    variant: t.variant,
                    seconds: t.seconds,
                    chosen: t.chosen,
                    adapter,
                })?;
            } else {
                println!(
                    "trial  {} at {}x{}: {} {:.6} s{}",
                    t.family,
                    t.class[0],
                    t.class[1],
                    t.variant,
                    t.seconds,
                    if t.chosen { " (chosen)" } else { "" }
                );
            }
        }
        Ok(())
    }
}

fn emit(value: &impl Serialize) -> CliResult {
    let line = serde_json::to_string(value)
        .map_err(|e| Failure::runtime(format!("encoding JSON: {e}")))?;
    println!("{line}");
    Ok(())
}

/// `bench`: ceilings first, then each kernel and fit on each data set, printed as it ends.
pub fn bench(args: BenchArgs) -> CliResult {
    let input = match &args.input {
        Some(path) => {
            let data = io::read_matrix(path).map_err(|e| Failure::input(path, e))?;
            Matrix::new(&data.data, data.n_features).map_err(|e| Failure::input(path, e))?;
            let name = path
                .file_stem()
                .map_or("input".into(), |s| s.to_string_lossy().into_owned());
            Some(Data {
                values: data.data,
                d: data.n_features,
                name,
            })
        }
        None => None,
    };
    let kernels = if args.kernel.is_empty() && args.fit.is_empty() {
        KernelBench::ALL.to_vec()
    } else {
        args.kernel.clone()
    };
    let covariances = if args.covariance.is_empty() {
        vec![CovarianceType::Diag, CovarianceType::Full]
    } else {
        args.covariance.clone()
    };
    let ks = if args.k.is_empty() {
        vec![10]
    } else {
        args.k.clone()
    };
    // The data sets and k of a bench: each --shape, or the input with each --k.
    let sets = |default: (usize, usize, usize)| -> Vec<(Option<(usize, usize)>, usize)> {
        match (&input, args.shape.is_empty()) {
            (Some(_), _) => ks.iter().map(|&k| (None, k)).collect(),
            (None, true) => vec![(Some((default.0, default.1)), default.2)],
            (None, false) => args
                .shape
                .iter()
                .map(|&(n, d, k)| (Some((n, d)), k))
                .collect(),
        }
    };
    // Every planned run is checked before the GPU opens: a refusal prints nothing else.
    let dims = |shape: Option<(usize, usize)>| match (shape, &input) {
        (Some(nd), _) => nd,
        (None, Some(x)) => (x.values.len() / x.d.max(1), x.d),
        (None, None) => (0, 0),
    };
    let projected = |(n, d): (usize, usize), mixture: bool| -> CliResult<(usize, usize)> {
        match args.pca {
            Some(m) if mixture => {
                Pca::new(Components::Count(m)).validate(n, d)?;
                Ok((n, m))
            }
            _ => Ok((n, d)),
        }
    };
    for &kernel in &kernels {
        let mixture = matches!(kernel, KernelBench::GmmEstep | KernelBench::GmmMstep);
        for (shape, k) in sets(kernel.default_shape()) {
            let (n, d) = projected(dims(shape), mixture)?;
            bench::check_kernel(kernel, n, d, k)?;
        }
    }
    for &fit in &args.fit {
        let mixture = matches!(fit, FitBench::GmmDiag | FitBench::GmmFull);
        for (shape, k) in sets((70_000, 784, 10)) {
            let (n, d) = projected(dims(shape), mixture)?;
            bench::check_fit(fit, n, d, k)?;
        }
    }
    let gpu = open_gpu(&Outputs::none())?;
    let ceilings = gpu.measure_ceilings()?;
    let mut out = Printer {
        json: args.json,
        header: false,
        // The autotuner's choices show in each line's detail; where they are kept says
        // whether this run timed them or an earlier one did.
        preamble: Some(format!(
            "adapter: {}\nceilings: {:.2} GFLOP/s (FMA), {:.2} GB/s (copy)\ntuning cache: {}",
            ceilings.adapter,
            ceilings.peak_gflops,
            ceilings.peak_gbps,
            gpu.tuning_cache_file()
                .map_or("off".to_string(), |p| p.display().to_string())
        )),
    };
    let data_for = |shape: Option<(usize, usize)>, mixture: bool| -> CliResult<Data> {
        let base = match (shape, &input) {
            (Some((n, d)), _) => Data::blobs(n, d, args.seed)?,
            (None, Some(x)) => Data {
                values: x.values.clone(),
                d: x.d,
                name: x.name.clone(),
            },
            (None, None) => unreachable!("shapes are given when there is no input"),
        };
        match args.pca {
            Some(m) if mixture => base.projected(&gpu, m),
            _ => Ok(base),
        }
    };
    for &kernel in &kernels {
        let mixture = matches!(kernel, KernelBench::GmmEstep | KernelBench::GmmMstep);
        for (shape, k) in sets(kernel.default_shape()) {
            let data = data_for(shape, mixture)?;
            let bench_data = BenchData {
                x: data.matrix()?,
                name: data.name.clone(),
            };
            let covs = if mixture {
                &covariances[..]
            } else {
                &covariances[..1]
            };
            for &cov in covs {
                let m = bench::bench_kernel(
                    &gpu,
                    &ceilings,
                    kernel,
                    &bench_data,
                    k,
                    cov,
                    args.repeats,
                )?;
                out.measurement(&m)?;
            }
        }
    }
    for &fit in &args.fit {
        let mixture = matches!(fit, FitBench::GmmDiag | FitBench::GmmFull);
        let iterations = args.iterations.unwrap_or(if mixture { 20 } else { 30 });
        for (shape, k) in sets((70_000, 784, 10)) {
            let data = data_for(shape, mixture)?;
            let bench_data = BenchData {
                x: data.matrix()?,
                name: data.name.clone(),
            };
            let (m, profile) = bench::bench_fit(
                &gpu,
                &ceilings,
                fit,
                &bench_data,
                k,
                iterations,
                args.profile,
            )?;
            out.measurement(&m)?;
            if let Some(profile) = profile {
                out.profile(&m, &profile, &ceilings)?;
            }
        }
    }
    out.trials(&gpu.tuning_trials(), &ceilings.adapter)
}
