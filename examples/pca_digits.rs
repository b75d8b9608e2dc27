//! PCA of the bundled handwritten digits (1797 images of 8 x 8 pixels, 64 features), with
//! two SVG plots, no arguments needed:
//!
//! ```text
//! cargo run --release --example pca_digits [OUTPUT_DIR]
//! ```
//!
//! Prints the adapter, the explained-variance ratio of the first 10 principal components
//! with the cumulative ratio, how many components keep 90% and 95% of the variance (fits
//! with [`Components::Fraction`]), and the time of each fit (the first one includes
//! compiling the compute shaders). Writes, into `OUTPUT_DIR`
//! (default `target/pca_digits/`, created if missing):
//!
//! * `digits_pca_scatter.svg`: every image projected on the first two components (PC1 vs
//!   PC2), coloured by the digit it shows, with a legend;
//! * `digits_pca_spectrum.svg`: the explained-variance ratio of each of the 64 components
//!   as bars (left axis) and the cumulative ratio as a line (right axis).
//!
//! Each SVG is rendered into a string and written atomically, so a reader never sees half a
//! file.

use std::path::PathBuf;
use std::time::Instant;

use plotters::prelude::*;
use wgpu_unsupervised::{datasets, plot, selection, Components, Gpu, Matrix, Pca};

/// Pixels per image, the features.
const D: usize = 64;
/// How many components the table shows.
const TABLE_ROWS: usize = 10;
/// Ten distinguishable colours, one per digit (the "tab10" palette).
const DIGIT_COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Quiet on a machine without a display: no XDG_RUNTIME_DIR line from Mesa's layer.
    wgpu_unsupervised::headless::avoid_window_system_probe();
    let out_dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/pca_digits"));
    std::fs::create_dir_all(&out_dir)?;

    let gpu = Gpu::new()?;
    println!("adapter: {}", gpu.info());

    let (pixels, digits) = datasets::digits();
    let x = Matrix::new(&pixels, D)?;
    println!("digits: n = {}, d = {D}", x.n_rows());

    // The whole spectrum: all 64 components, then the projection on them.
    let start = Instant::now();
    let model = Pca::new(Components::Count(D)).fit(&gpu, &x)?;
    let fit_seconds = start.elapsed().as_secs_f64();
    let ratios = model.explained_variance_ratio();
    let cumulative: Vec<f64> = ratios
        .iter()
        .scan(0.0, |sum, r| {
            *sum += r;
            Some(*sum)
        })
        .collect();

    println!("\ncomponent  explained  cumulative");
    for (i, (r, c)) in ratios.iter().zip(&cumulative).take(TABLE_ROWS).enumerate() {
        println!("{:>9}  {:>9.4}  {:>10.4}", i + 1, r, c);
    }
    println!(
        "fit of all {D} components ({:?} solver, includes shader compilation): {fit_seconds:.3} s",
        model.solver()
    );

    println!();
    for fraction in [0.90, 0.95] {
        let start = Instant::now();
        let kept = Pca::new(Components::Fraction(fraction)).fit(&gpu, &x)?;
        let seconds = start.elapsed().as_secs_f64();
        let m = kept.n_components();
        println!(
            "{:.0}% of the variance: {m} components (cumulative {:.4}), fit {seconds:.3} s",
            fraction * 100.0,
            kept.explained_variance_ratio().iter().sum::<f64>(),
        );
    }

    let z = model.transform(&gpu, &x)?;
    let points: Vec<(f64, f64, u32)> = z
        .chunks_exact(model.n_components())
        .zip(&digits)
        .map(|(row, &digit)| (row[0] as f64, row[1] as f64, digit))
        .collect();

    let scatter = out_dir.join("digits_pca_scatter.svg");
    plot::write_svg(&scatter, (800, 700), |root| draw_scatter(root, &points))?;
    // The spectrum plot is the library's (the CLI's `pca --plot` draws the same).
    let spectrum = out_dir.join("digits_pca_spectrum.svg");
    plot::write_spectrum(&spectrum, &selection::pca_spectrum(&model))?;
    println!(
        "\nwrote {}\nwrote {}",
        scatter.display(),
        spectrum.display()
    );
    Ok(())
}

/// PC1 against PC2, one colour per digit, with a legend.
fn draw_scatter(
    root: &plot::Svg,
    points: &[(f64, f64, u32)],
) -> Result<(), Box<dyn std::error::Error>> {
    let x_range = plot::padded_range(points.iter().map(|p| p.0));
    // Headroom at the top for the legend.
    let y_range = plot::padded_range(points.iter().map(|p| p.1));
    let y_range = y_range.start..y_range.end + 0.1 * (y_range.end - y_range.start);

    let mut chart = ChartBuilder::on(root)
        .caption(
            "Handwritten digits: first two principal components",
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d(x_range, y_range)?;
    chart
        .configure_mesh()
        .x_desc("PC1")
        .y_desc("PC2")
        .light_line_style(WHITE)
        .draw()?;

    for (digit, &color) in (0u32..).zip(&DIGIT_COLORS) {
        chart
            .draw_series(
                points
                    .iter()
                    .filter(|p| p.2 == digit)
                    .map(|&(x, y, _)| Circle::new((x, y), 3, color.mix(0.7).filled())),
            )?
            .label(digit.to_string())
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}
