//! The main job on bundled and generated data, no arguments needed:
//!
//! ```text
//! cargo run --release --example quickstart
//! ```
//!
//! 1. Fisher's Iris (bundled, 150 x 4): K-Means with k = 3, compared with the species.
//! 2. 100,000 generated points in 8 well-separated blobs (16 features): K-Means with k = 8,
//!    compared with the generating labels.
//!
//! Each step reports the adapter, sizes, inertia, iterations, agreement with the known labels
//! (adjusted Rand index; 1 = identical partitions, 0 = chance) and the time taken.

use std::time::Instant;

use wgpu_unsupervised::metrics::adjusted_rand_index;
use wgpu_unsupervised::{datasets, Gpu, KMeans, Matrix};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Quiet on a machine without a display: no XDG_RUNTIME_DIR line from Mesa's layer.
    wgpu_unsupervised::headless::avoid_window_system_probe();
    let gpu = Gpu::new()?;
    println!("adapter: {}", gpu.info());

    let (iris, species) = datasets::iris();
    report(
        &gpu,
        "iris",
        &iris,
        4,
        3,
        &species,
        KMeans::new(3).n_init(10),
    )?;

    let (blobs, truth, _) = datasets::make_blobs(100_000, 16, 8, 1.0, (-10.0, 10.0), 42)?;
    report(
        &gpu,
        "blobs",
        &blobs,
        16,
        8,
        &truth,
        KMeans::new(8).n_init(3),
    )?;
    Ok(())
}

fn report(
    gpu: &Gpu,
    name: &str,
    data: &[f32],
    d: usize,
    k: usize,
    truth: &[u32],
    params: KMeans,
) -> Result<(), Box<dyn std::error::Error>> {
    let x = Matrix::new(data, d)?;
    let start = Instant::now();
    let model = params.seed(7).fit(gpu, &x)?;
    let seconds = start.elapsed().as_secs_f64();
    let ari = adjusted_rand_index(model.labels(), truth)?;
    println!(
        "{name:>6}: n = {:>7}, d = {d:>2}, k = {k}: inertia {:.4}, {} iterations (converged: {}), \
         ARI vs known labels {ari:.4}, {seconds:.3} s",
        x.n_rows(),
        model.inertia(),
        model.n_iter(),
        model.converged(),
    );
    Ok(())
}
