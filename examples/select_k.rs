//! Choosing the number of clusters on data with a known answer: five Gaussian blobs in 6-D.
//!
//! Runs the elbow rule and the gap statistic (K-Means) and the BIC (Gaussian mixtures) for
//! k = 1..10 on one uploaded matrix, prints each curve and its suggested k, judges the chosen
//! K-Means clustering with the silhouette, Calinski–Harabasz and Davies–Bouldin criteria and
//! the adjusted Rand index against the generating labels, and writes the three curves as SVG
//! (`elbow.svg`, `gap.svg`, `bic.svg`) to the directory given as the first argument
//! (default `target/select_k/`).
//!
//! ```text
//! cargo run --release --example select_k [OUT_DIR]
//! ```

use std::path::PathBuf;

use wgpu_unsupervised::{
    datasets, metrics, plot, selection, GaussianMixture, Gpu, GpuMatrix, KMeans, Matrix,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Quiet on a machine without a display: no XDG_RUNTIME_DIR line from Mesa's layer.
    wgpu_unsupervised::headless::avoid_window_system_probe();
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "target/select_k".into()),
    );
    std::fs::create_dir_all(&out)?;
    let gpu = Gpu::new()?;
    println!("adapter: {}", gpu.info());

    let (n, d, true_k) = (3000, 6, 5);
    let (rows, truth, _) = datasets::make_blobs(n, d, true_k, 1.0, (-12.0, 12.0), 3)?;
    let x = Matrix::new(&rows, d)?;
    let xg = GpuMatrix::upload(&gpu, &x)?;
    let ks = 1..=10;
    let kmeans = KMeans::new(1).n_init(3).seed(1);

    let elbow = selection::elbow(&gpu, &xg, ks.clone(), &kmeans)?;
    println!("\nelbow (inertia):");
    for (k, v) in elbow.k.iter().zip(&elbow.values) {
        println!("  k = {k:2}  {v:12.1}");
    }
    println!("  suggested k = {}", elbow.suggested_k);

    let gap = selection::gap_statistic(&gpu, &x, ks.clone(), &kmeans, 5, 7)?;
    println!(
        "\ngap statistic (B = {} uniform reference sets):",
        gap.n_refs
    );
    for i in 0..gap.k.len() {
        println!(
            "  k = {:2}  gap {:7.3}  s_k {:.3}",
            gap.k[i], gap.gap[i], gap.s_k[i]
        );
    }
    println!("  suggested k = {}", gap.suggested_k);

    let bic = selection::gmm_criterion_curve(
        &gpu,
        &xg,
        ks,
        &GaussianMixture::new(1).seed(1),
        selection::Criterion::Bic,
    )?;
    println!("\nGaussian mixture BIC (full covariances):");
    for (k, v) in bic.k.iter().zip(&bic.values) {
        println!("  k = {k:2}  {v:12.1}");
    }
    println!("  suggested k = {}", bic.suggested_k);

    let k = gap.suggested_k;
    let labels = KMeans::new(k)
        .n_init(3)
        .seed(1)
        .fit(&gpu, &xg)?
        .labels()
        .to_vec();
    let e = metrics::evaluate(&gpu, &x, &labels, Some(&truth), None, 0)?;
    let ari = metrics::adjusted_rand_index(&truth, &labels)?;
    match (e.silhouette, e.calinski_harabasz, e.davies_bouldin) {
        (Some(sil), Some(ch), Some(db)) => println!(
            "\nK-Means with k = {k} (true k = {true_k}): silhouette {sil:.3}, Calinski–Harabasz \
             {ch:.1}, Davies–Bouldin {db:.3}, ARI vs truth {ari:.3}"
        ),
        _ => println!(
            "\nK-Means with k = {k} (true k = {true_k}): ARI vs truth {ari:.3} ({:?})",
            e.undefined
        ),
    }

    plot::write_curve(&out.join("elbow.svg"), &elbow)?;
    plot::write_gap(&out.join("gap.svg"), &gap)?;
    plot::write_curve(&out.join("bic.svg"), &bic)?;
    println!("\nplots: {}/{{elbow,gap,bic}}.svg", out.display());
    Ok(())
}
