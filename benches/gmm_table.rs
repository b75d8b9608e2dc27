//! Comparison table: GPU Gaussian-mixture EM against the f64 CPU reference
//! ([`wgpu_unsupervised::reference::gmm`]) over the grid N ∈ {1e4, 1e5, 1e6},
//! D ∈ {2, 16, 64}, K ∈ {4, 16, 64} and the four covariance types.
//!
//! ```text
//! cargo bench --bench gmm_table                        # default grid for this adapter
//! cargo bench --bench gmm_table -- --max-n 10000       # the smallest N only
//! cargo bench --bench gmm_table -- --cov full,diag --iters 5 --ref-iters 1
//! cargo bench --bench gmm_table -- --min-n 1e6 --max-n 1e6 --max-ref-cost 1e10
//! ```
//!
//! Options (numbers may be written as `100000` or `1e5`):
//!
//! * `--min-n N`, `--max-n N`: the rows of the grid to run (default: all, but at most
//!   N = 1e5 on a software adapter such as lavapipe);
//! * `--iters I` (default 10): EM iterations of the timed GPU fit;
//! * `--ref-iters R` (default 2): EM iterations of the reference fit;
//! * `--cov full,tied,diag,spherical`: the covariance types (default: all four);
//! * `--max-ref-cost C` (default 1e9): the reference is skipped, and its cells read
//!   "skipped", when N·K·D² (full, tied) or N·K·D (diag, spherical) exceeds C, so that the
//!   table finishes (one f64 thread takes one to two seconds per EM iteration for 1e9 of
//!   these units);
//! * `--reps M` (default 5): GPU E-step timings whose median is reported;
//! * `--max-d D`, `--max-k K`: leave out the grid's larger D / K (to reach large N in a
//!   bounded time on slow adapters).
//!
//! Both sides start from the same given parameters: equal weights, the first K rows of the
//! blob data as means (the blobs are interleaved, so these fall in different clusters) and
//! the covariance s²·I, s² the mean per-feature variance of the data. Both run EM with
//! tol = 0, so exactly the requested number of iterations.
//!
//! Columns:
//!
//! * **GPU E-step ms**: `GaussianMixtureModel::score` with the starting parameters on the
//!   pre-uploaded `GpuMatrix` (responsibilities, log-densities, labels, mean log-likelihood,
//!   the workspace allocation and the read-back of the sum included), median of `--reps`
//!   runs after a warm-up;
//! * **GPU ms/iter**: (fit time − E-step time) / iterations, for a fit of `--iters`
//!   iterations: each fit ends with one labelling E-step, which the subtraction takes out
//!   (if the difference is not positive, which only happens when the times are all
//!   overhead, the plain fit time / iterations is shown);
//! * **ref. E-step ms**: `reference::gmm::score` with the same parameters (one run; three,
//!   median, when cheap);
//! * **ref. ms/iter**: the same formula for `reference::gmm::fit` with `--ref-iters`;
//! * **speed-up**: ref. ms/iter ÷ GPU ms/iter;
//! * **lower-bound rel. diff**: |ℓ_GPU − ℓ_ref| / |ℓ_ref| for the lower bound (mean
//!   log-likelihood) of iteration min(I, R) of both fits: the same number of iterations
//!   from the same start, so the difference is f32 rounding (and its growth over the
//!   iterations).

use std::time::Instant;

#[path = "common/gmm_start.rs"]
mod gmm_start;

use gmm_start::start;
use wgpu_unsupervised::reference::gmm as refg;
use wgpu_unsupervised::{
    datasets, CovarianceType, GaussianMixture, GaussianMixtureModel, GmmInit, Gpu, GpuMatrix,
    Matrix,
};

/// The grid.
const NS: [usize; 3] = [10_000, 100_000, 1_000_000];
const DS: [usize; 3] = [2, 16, 64];
const KS: [usize; 3] = [4, 16, 64];
struct Options {
    min_n: usize,
    max_n: Option<usize>,
    iters: usize,
    ref_iters: usize,
    covs: Vec<CovarianceType>,
    max_ref_cost: f64,
    reps: usize,
    /// Largest D and K of the grid to run (to reach large N in a bounded time).
    max_d: usize,
    max_k: usize,
    /// The arguments as given (without the `--bench` that cargo adds).
    args: Vec<String>,
}

/// A count written as an integer or in scientific notation (`100000`, `1e5`).
fn parse_count(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
}

fn parse_covs(s: &str) -> Result<Vec<CovarianceType>, String> {
    s.split(',')
        .filter(|n| !n.is_empty())
        .map(|name| {
            CovarianceType::ALL
                .iter()
                .copied()
                .find(|&t| t.name() == name.trim().to_ascii_lowercase())
                .ok_or_else(|| {
                    format!("--cov: unknown covariance type {name:?} (full, tied, diag, spherical)")
                })
        })
        .collect()
}

fn options() -> Result<Options, String> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mut o = Options {
        min_n: 0,
        max_n: None,
        iters: 10,
        ref_iters: 2,
        covs: CovarianceType::ALL.to_vec(),
        max_ref_cost: 1e9,
        reps: 5,
        max_d: usize::MAX,
        max_k: usize::MAX,
        args: args.clone(),
    };
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        let value = args.get(i + 1).map(String::as_str);
        let count = || {
            value
                .and_then(parse_count)
                .ok_or_else(|| format!("{flag} needs a non-negative number"))
        };
        match flag {
            "--min-n" => o.min_n = count()? as usize,
            "--max-n" => o.max_n = Some(count()? as usize),
            "--iters" => o.iters = (count()? as usize).max(1),
            "--ref-iters" => o.ref_iters = (count()? as usize).max(1),
            "--reps" => o.reps = (count()? as usize).max(1),
            "--max-d" => o.max_d = count()? as usize,
            "--max-k" => o.max_k = count()? as usize,
            "--max-ref-cost" => o.max_ref_cost = count()?,
            "--cov" => {
                o.covs = parse_covs(value.ok_or("--cov needs a list such as full,diag")?)?;
                if o.covs.is_empty() {
                    return Err("--cov: no covariance type given".into());
                }
            }
            other => {
                eprintln!("ignoring unknown argument {other:?}");
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    Ok(o)
}

/// Runs `f` `reps` times and returns the median time in milliseconds and the last result.
fn median_ms<T, E>(reps: usize, mut f: impl FnMut() -> Result<T, E>) -> Result<(f64, T), E> {
    let mut times = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps {
        let t = Instant::now();
        last = Some(f()?);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], last.expect("reps >= 1")))
}

/// (fit ms − E-step ms) / iterations, or fit ms / iterations when the difference is not
/// positive.
fn per_iteration(fit_ms: f64, estep_ms: f64, iters: usize) -> f64 {
    let iters = iters.max(1) as f64;
    if fit_ms > estep_ms {
        (fit_ms - estep_ms) / iters
    } else {
        fit_ms / iters
    }
}

/// A ratio to about two significant digits: 0.0066x, 0.31x, 4.2x, 12x, 120x.
fn ratio(r: f64) -> String {
    if !(r.is_finite() && r > 0.0) {
        return "–".into();
    }
    let decimals = (1 - r.log10().floor() as i32).max(0) as usize;
    format!("{r:.decimals$}x")
}

/// The GPU half of a row.
struct GpuSide {
    estep_ms: f64,
    iter_ms: f64,
    history: Vec<f64>,
}

/// The reference half of a row.
struct RefSide {
    estep_ms: f64,
    iter_ms: f64,
    history: Vec<f64>,
}

fn gpu_side(
    gpu: &Gpu,
    xg: &GpuMatrix,
    model: &GaussianMixtureModel,
    params: &GaussianMixture,
    opts: &Options,
) -> wgpu_unsupervised::Result<GpuSide> {
    // Warm-up: pipelines compiled, first allocations made.
    model.score(gpu, xg)?;
    params.clone().max_iter(1).fit(gpu, xg)?;
    let (estep_ms, _) = median_ms(opts.reps, || model.score(gpu, xg))?;
    let t = Instant::now();
    let fitted = params.clone().max_iter(opts.iters).fit(gpu, xg)?;
    let fit_ms = t.elapsed().as_secs_f64() * 1e3;
    Ok(GpuSide {
        estep_ms,
        iter_ms: per_iteration(fit_ms, estep_ms, fitted.n_iter()),
        history: fitted.lower_bound_history().to_vec(),
    })
}

fn ref_side(
    x64: &[f64],
    d: usize,
    model: &GaussianMixtureModel,
    params: &GaussianMixture,
    cost: f64,
    opts: &Options,
) -> wgpu_unsupervised::Result<RefSide> {
    let reference = refg::ReferenceGmm::from_model(model);
    let reps = if cost <= 1e7 { 3 } else { 1 };
    let (estep_ms, _) = median_ms(reps, || {
        Ok::<_, wgpu_unsupervised::Error>(refg::score(&reference, x64, d))
    })?;
    let t = Instant::now();
    let fitted = refg::fit(x64, d, &params.clone().max_iter(opts.ref_iters))?;
    let fit_ms = t.elapsed().as_secs_f64() * 1e3;
    Ok(RefSide {
        estep_ms,
        iter_ms: per_iteration(fit_ms, estep_ms, fitted.n_iter),
        history: fitted.lower_bound_history,
    })
}

fn main() {
    let opts = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gmm_table: {e}");
            std::process::exit(2);
        }
    };
    let gpu = Gpu::new().unwrap_or_else(|e| panic!("the benchmark needs a GPU adapter: {e}"));
    let software = gpu.info().device_type == "Cpu";
    let max_n = opts
        .max_n
        .unwrap_or(if software { 100_000 } else { 1_000_000 });
    let compared = opts.iters.min(opts.ref_iters);

    println!("adapter: {}", gpu.info());
    println!(
        "command: cargo bench --bench gmm_table{}{}",
        if opts.args.is_empty() { "" } else { " -- " },
        opts.args.join(" ")
    );
    println!(
        "EM from the same given parameters, tol = 0: GPU {} iteration(s), reference (f64, 1 thread) {} \
         iteration(s); GPU E-step: median of {}; lower bounds compared at iteration {compared}",
        opts.iters, opts.ref_iters, opts.reps
    );
    println!(
        "N ≤ {max_n}{}; reference skipped where N·K·D² (full, tied) or N·K·D (diag, spherical) > {:.1e}",
        if opts.max_n.is_none() && software {
            " (software adapter default; --max-n to change)"
        } else {
            ""
        },
        opts.max_ref_cost
    );
    println!();
    println!(
        "| N | D | K | covariance | GPU E-step ms | GPU ms/iter | ref. E-step ms | ref. ms/iter | speed-up | lower-bound rel. diff (iter {compared}) |"
    );
    println!("|---:|---:|---:|:---|---:|---:|---:|---:|---:|---:|");
    for &n in &NS {
        if n > max_n || n < opts.min_n {
            continue;
        }
        for &d in DS.iter().filter(|&&d| d <= opts.max_d) {
            let (x, _, _) = datasets::make_blobs(n, d, 16, 1.0, (-10.0, 10.0), 7)
                .expect("valid blob parameters");
            let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).expect("finite blobs"))
                .unwrap_or_else(|e| panic!("uploading {n} x {d}: {e}"));
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            for &k in KS.iter().filter(|&&k| k <= opts.max_k) {
                for &t in &opts.covs {
                    let cost = match t {
                        CovarianceType::Full | CovarianceType::Tied => (n * k * d * d) as f64,
                        CovarianceType::Diag | CovarianceType::Spherical => (n * k * d) as f64,
                    };
                    let (given, covariances) = start(&x, d, k, t);
                    let model = GaussianMixtureModel::from_parameters(
                        t,
                        given.weights.clone(),
                        given.means.clone(),
                        covariances,
                    )
                    .expect("the starting covariances are positive definite");
                    let params = GaussianMixture::new(k)
                        .covariance(t)
                        .tol(0.0)
                        .init(GmmInit::Given(given));
                    let lead = format!("| {n} | {d} | {k} | {} |", t.name());
                    let g = match gpu_side(&gpu, &xg, &model, &params, &opts) {
                        Ok(g) => g,
                        Err(e) => {
                            println!("{lead} GPU error: {e} | | | | | |");
                            continue;
                        }
                    };
                    let gpu_cells = format!(" {:.2} | {:.2} |", g.estep_ms, g.iter_ms);
                    if cost > opts.max_ref_cost {
                        println!("{lead}{gpu_cells} skipped | skipped | – | – |");
                        continue;
                    }
                    match ref_side(&x64, d, &model, &params, cost, &opts) {
                        Ok(r) => {
                            let j = compared - 1;
                            let diff = match (g.history.get(j), r.history.get(j)) {
                                (Some(a), Some(b)) => format!("{:.1e}", (a - b).abs() / b.abs()),
                                _ => "–".into(),
                            };
                            println!(
                                "{lead}{gpu_cells} {:.1} | {:.1} | {} | {diff} |",
                                r.estep_ms,
                                r.iter_ms,
                                ratio(r.iter_ms / g.iter_ms)
                            );
                        }
                        Err(e) => println!("{lead}{gpu_cells} reference error: {e} | | | |"),
                    }
                }
            }
        }
    }
}
