//! Times one spectral clustering of a `.npy` or `.csv` file, for the benchmarks of issue 24
//! (`benches/peers/spectral.py` runs it beside scikit-learn on the same data):
//!
//! ```sh
//! cargo run --release --example spectral_bench --features cli -- FILE K (nn N | rbf GAMMA) [--profile]
//! ```
//!
//! Prints one line of JSON: the seconds of the fit (the data already on the device), the
//! eigen-solver's iterations and the labels' file when asked for with `--labels OUT.npy`
//! (a .npy or .csv of one f32 column). `--profile` prints the profiler's table per kernel (GPU time,
//! FLOP/s, bound) to stderr: what bounds the fit.

use std::path::Path;
use std::time::Instant;

use wgpu_unsupervised::{io, Affinity, Gpu, GpuMatrix, Matrix, ProfileClock, SpectralClustering};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    wgpu_unsupervised::headless::avoid_window_system_probe();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: spectral_bench FILE K (nn N | rbf GAMMA) [--profile] [--labels OUT]";
    if args.len() < 4 {
        return Err(usage.into());
    }
    let data = io::read_matrix(Path::new(&args[0]))?;
    let k: usize = args[1].parse()?;
    let affinity = match args[2].as_str() {
        "nn" => Affinity::NearestNeighbors {
            n_neighbors: args[3].parse()?,
        },
        "rbf" => Affinity::Rbf {
            gamma: args[3].parse()?,
        },
        _ => return Err(usage.into()),
    };
    let profile = args.iter().any(|a| a == "--profile");
    let labels_out = args
        .iter()
        .position(|a| a == "--labels")
        .and_then(|i| args.get(i + 1));
    let gpu = Gpu::new()?;
    let x = GpuMatrix::upload(&gpu, &Matrix::new(&data.data, data.n_features)?)?;
    let params = SpectralClustering::new(k).affinity(affinity);
    let start = Instant::now();
    let model = if profile {
        let (model, table) = gpu.profile(ProfileClock::Auto, || params.fit(&gpu, &x))?;
        eprint!("{}", table.table(None));
        model
    } else {
        params.fit(&gpu, &x)?
    };
    let seconds = start.elapsed().as_secs_f64();
    if let Some(out) = labels_out {
        let labels: Vec<f32> = model.labels().iter().map(|&l| l as f32).collect();
        io::write_matrix(Path::new(out), &labels, labels.len(), 1)?;
    }
    println!(
        "{{\"n\":{},\"affinity\":\"{}\",\"fit_seconds\":{seconds},\"n_iter\":{},\"eigenvalues\":{:?}}}",
        data.n_rows,
        affinity.name(),
        model.n_iter(),
        model.eigenvalues()
    );
    Ok(())
}
