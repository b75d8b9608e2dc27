//! Two moons and two concentric circles: K-Means cuts each shape with a straight line, while
//! spectral clustering on a nearest-neighbour graph follows the shapes.
//!
//! ```sh
//! cargo run --release --example spectral --features plot -- [OUT_DIR]
//! ```
//!
//! Prints the adjusted Rand index of both methods on both data sets, writes
//! `OUT_DIR/spectral.svg` (default `target/`) with the four labellings side by side, and the
//! data with their true labels as `moons.csv` and `circles.csv` (x, y, label) for comparing
//! with other libraries.

use std::path::PathBuf;

use plotters::prelude::*;
use wgpu_unsupervised::{datasets, metrics, Affinity, Gpu, KMeans, Matrix, SpectralClustering};

/// One panel: the points coloured by `labels`.
fn panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    caption: &str,
    x: &[f32],
    labels: &[u32],
) -> Result<(), Box<dyn std::error::Error>> {
    let (lo_x, hi_x) = x
        .chunks(2)
        .fold((f32::MAX, f32::MIN), |(a, b), p| (a.min(p[0]), b.max(p[0])));
    let (lo_y, hi_y) = x
        .chunks(2)
        .fold((f32::MAX, f32::MIN), |(a, b), p| (a.min(p[1]), b.max(p[1])));
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(25)
        .y_label_area_size(35)
        .build_cartesian_2d(lo_x - 0.2..hi_x + 0.2, lo_y - 0.2..hi_y + 0.2)?;
    chart.configure_mesh().light_line_style(WHITE).draw()?;
    let colors = [RGBColor(31, 119, 180), RGBColor(255, 127, 14)];
    chart.draw_series(
        x.chunks(2)
            .zip(labels)
            .map(|(p, &l)| Circle::new((p[0], p[1]), 3, colors[l as usize % 2].mix(0.8).filled())),
    )?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Quiet on a machine without a display: no XDG_RUNTIME_DIR line from Mesa's layer.
    wgpu_unsupervised::headless::avoid_window_system_probe();
    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target"));
    std::fs::create_dir_all(&out)?;
    let gpu = Gpu::new()?;
    println!("adapter: {}", gpu.info());
    let sets = [
        ("moons", datasets::make_moons(400, 0.06, 0)?),
        ("circles", datasets::make_circles(400, 0.05, 0.5, 0)?),
    ];
    let svg = out.join("spectral.svg");
    let root = SVGBackend::new(&svg, (1000, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let areas = root.split_evenly((2, 2));
    for (row, (name, (x, truth))) in sets.iter().enumerate() {
        let m = Matrix::new(x, 2)?;
        let kmeans = KMeans::new(2).n_init(10).seed(0).fit(&gpu, &m)?;
        let spectral = SpectralClustering::new(2)
            .affinity(Affinity::NearestNeighbors { n_neighbors: 10 })
            .seed(0)
            .fit(&gpu, &m)?;
        let ari_k = metrics::adjusted_rand_index(kmeans.labels(), truth)?;
        let ari_s = metrics::adjusted_rand_index(spectral.labels(), truth)?;
        println!("{name:8} K-Means ARI {ari_k:.3}   spectral (10 neighbours) ARI {ari_s:.3}");
        panel(
            &areas[2 * row],
            &format!("{name}: K-Means, ARI {ari_k:.2}"),
            x,
            kmeans.labels(),
        )?;
        panel(
            &areas[2 * row + 1],
            &format!("{name}: spectral, ARI {ari_s:.2}"),
            x,
            spectral.labels(),
        )?;
        let csv: String = x
            .chunks(2)
            .zip(truth)
            .map(|(p, l)| format!("{},{},{l}\n", p[0], p[1]))
            .collect();
        std::fs::write(out.join(format!("{name}.csv")), csv)?;
    }
    root.present()?;
    println!("wrote {}", svg.display());
    Ok(())
}
