//! Gaussian mixtures on the bundled Iris data (150 flowers x 4 measurements), with model
//! selection by BIC and two SVG plots, no arguments needed:
//!
//! ```text
//! cargo run --release --example gmm [OUTPUT_DIR]
//! ```
//!
//! The four measurements are first projected on their first two principal components
//! (`Pca::new(Components::Count(2))`, about 98% of the variance), so that every model lives
//! in the same 2-D plane the plot shows; the mixtures are fitted to these 150 x 2 points,
//! not to the raw features.
//!
//! Prints the adapter, the PCA's explained variance, then fits a mixture for every
//! k = 1..=8 and each of the four covariance types (full, tied, diag, spherical; 3
//! K-Means-initialised restarts each) and prints the BIC and AIC tables with the lowest
//! entry of each column marked, and the k of lowest BIC for each type. The model of lowest
//! BIC over all 32 is kept (on these two components: k = 2 with full covariances, setosa
//! against the two other species together). For it, and for comparison for the model with
//! one component per species (k = 3, same covariance type) when BIC chose another k, it
//! prints the weights, means and ellipse axes, the agreement with the species (adjusted Rand
//! index), how many points the model is unsure about (largest responsibility below 0.9)
//! and the soft assignments (`predict_proba`) of the least certain ones. Writes, into
//! `OUTPUT_DIR` (default `target/gmm/`, created if missing):
//!
//! * `gmm_ellipses.svg`: one panel per model above: the points coloured by their most
//!   probable component, the uncertain ones ringed in black, each component's mean (cross)
//!   and its 1-σ (solid) and 2-σ (dashed) ellipses, the contours at Mahalanobis distance 1
//!   and 2 from the mean (from the eigen-decomposition of the 2 x 2 covariance: semi-axes
//!   s·√λ along the eigenvectors). Both axes use the same scale, so the ellipses have their
//!   true shape;
//! * `gmm_bic.svg`: BIC (left) and AIC (right) against k for each covariance type, the
//!   lowest value of each panel circled.
//!
//! BIC = −2 log L + p log N charges each of the p free parameters log N ≈ 5 log-likelihood
//! units here, AIC only 2, so AIC usually prefers a larger k (here k = 3). Each SVG is rendered into a
//! string and written atomically.

use std::path::PathBuf;
use std::time::Instant;

use plotters::prelude::*;
use wgpu_unsupervised::linalg::symmetric_eigen;
use wgpu_unsupervised::metrics::adjusted_rand_index;
use wgpu_unsupervised::{
    datasets, plot, Components, CovarianceType, GaussianMixture, GaussianMixtureModel, Gpu,
    GpuMatrix, Matrix, Pca,
};

/// Largest number of components tried.
const K_MAX: usize = 8;
/// A point is "uncertain" when its largest responsibility is below this.
const CERTAIN: f32 = 0.9;
/// How many of the most uncertain points are printed.
const SHOWN: usize = 8;
/// The species of the Iris labels 0, 1, 2.
const SPECIES: [&str; 3] = ["setosa", "versicolor", "virginica"];
/// Distinguishable colours (the "tab10" palette), one per component.
const COLORS: [RGBColor; 10] = [
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

/// One fitted candidate.
struct Fitted {
    model: GaussianMixtureModel,
    bic: f64,
    aic: f64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Quiet on a machine without a display: no XDG_RUNTIME_DIR line from Mesa's layer.
    wgpu_unsupervised::headless::avoid_window_system_probe();
    let out_dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/gmm"));
    std::fs::create_dir_all(&out_dir)?;

    let gpu = Gpu::new()?;
    println!("adapter: {}", gpu.info());

    // Iris, projected on its first two principal components.
    let (rows, species) = datasets::iris();
    let x4 = Matrix::new(&rows, 4)?;
    let (pca, z) = Pca::new(Components::Count(2)).fit_transform(&gpu, &x4)?;
    let ratios = pca.explained_variance_ratio();
    println!(
        "iris: n = {}, d = 4, projected on PC1 and PC2 (explained variance {:.4} + {:.4} = {:.4})",
        x4.n_rows(),
        ratios[0],
        ratios[1],
        ratios[0] + ratios[1]
    );
    let x = Matrix::new(&z, 2)?;
    let xg = GpuMatrix::upload(&gpu, &x)?;

    // Every k and covariance type: fits[t][k - 1].
    let start = Instant::now();
    let mut fits: Vec<Vec<Fitted>> = Vec::with_capacity(CovarianceType::ALL.len());
    for &t in &CovarianceType::ALL {
        let mut row = Vec::with_capacity(K_MAX);
        for k in 1..=K_MAX {
            let model = GaussianMixture::new(k)
                .covariance(t)
                .n_init(3)
                .seed(0)
                .fit(&gpu, &xg)?;
            let bic = model.bic(&gpu, &xg)?;
            let aic = model.aic(&gpu, &xg)?;
            row.push(Fitted { model, bic, aic });
        }
        fits.push(row);
    }
    println!(
        "fitted {} mixtures (k = 1..={K_MAX} x 4 covariance types, 3 restarts each) in {:.2} s \
         (includes compiling the compute shaders)",
        CovarianceType::ALL.len() * K_MAX,
        start.elapsed().as_secs_f64()
    );

    print_table("BIC", &fits, |f| f.bic);
    print_table("AIC", &fits, |f| f.aic);

    // The lowest BIC over every type and k (the first one on ties).
    let (bt, bk) = argmin(&fits, |f| f.bic);
    let (at, ak) = argmin(&fits, |f| f.aic);
    println!(
        "\nlowest BIC: k = {}, {} covariances (BIC {:.2}); lowest AIC: k = {}, {} (AIC {:.2})",
        bk + 1,
        CovarianceType::ALL[bt].name(),
        fits[bt][bk].bic,
        ak + 1,
        CovarianceType::ALL[at].name(),
        fits[at][ak].aic
    );
    for (t, row) in CovarianceType::ALL.iter().zip(&fits) {
        let (_, k) = argmin(std::slice::from_ref(row), |f| f.bic);
        println!("  best k by BIC with {} covariances: {}", t.name(), k + 1);
    }

    // The BIC choice, and for comparison the mixture with one component per species (same
    // covariance type) when BIC picked another k.
    let chosen = &fits[bt][bk].model;
    let mut panels = vec![describe(
        &gpu,
        &xg,
        &z,
        &species,
        chosen,
        "chosen model (lowest BIC)",
        "lowest BIC",
    )?];
    if chosen.k() != SPECIES.len() {
        let three = &fits[bt][SPECIES.len() - 1].model;
        panels.push(describe(
            &gpu,
            &xg,
            &z,
            &species,
            three,
            "for comparison, one component per species",
            "one per species",
        )?);
    }
    let ellipse_path = out_dir.join("gmm_ellipses.svg");
    plot::write_svg(&ellipse_path, (760 * panels.len() as u32, 620), |root| {
        for (area, panel) in root.split_evenly((1, panels.len())).iter().zip(&panels) {
            draw_ellipses(area, panel)?;
        }
        Ok(())
    })?;
    let bic: Vec<Vec<f64>> = fits
        .iter()
        .map(|r| r.iter().map(|f| f.bic).collect())
        .collect();
    let aic: Vec<Vec<f64>> = fits
        .iter()
        .map(|r| r.iter().map(|f| f.aic).collect())
        .collect();
    let bic_path = out_dir.join("gmm_bic.svg");
    plot::write_svg(&bic_path, (1100, 500), |root| {
        let panels = root.split_evenly((1, 2));
        draw_criterion(&panels[0], "BIC", &bic, (bt, bk))?;
        draw_criterion(&panels[1], "AIC", &aic, (at, ak))
    })?;
    println!(
        "\nwrote {}\nwrote {}",
        ellipse_path.display(),
        bic_path.display()
    );
    Ok(())
}

/// What one panel of the ellipse plot shows.
struct Panel {
    caption: String,
    points: Vec<Point>,
    ellipses: Vec<Ellipse>,
    weights: Vec<f64>,
}

/// Prints a model's components (weight, mean, ellipse axes), its agreement with the
/// species and its uncertain points with their soft assignments; returns what its plot
/// panel needs.
fn describe(
    gpu: &Gpu,
    xg: &GpuMatrix,
    z: &[f32],
    species: &[u32],
    model: &GaussianMixtureModel,
    title: &str,
    caption: &str,
) -> Result<Panel, Box<dyn std::error::Error>> {
    let k = model.k();
    let n = species.len();
    println!(
        "\n{title}: k = {k}, {} covariances, {} EM iterations, converged: {}, \
         mean log-likelihood {:.4}",
        model.covariance_type().name(),
        model.n_iter(),
        model.converged(),
        model.lower_bound()
    );
    println!("component  weight     mean (PC1, PC2)    1-σ semi-axes   angle of the major axis");
    let mut ellipses = Vec::with_capacity(k);
    for c in 0..k {
        let mean = [model.means()[2 * c], model.means()[2 * c + 1]];
        let cov = component_covariance(model, c);
        // Eigenvalues descending, eigenvectors as rows.
        let (values, vectors) = symmetric_eigen(&cov, 2)?;
        let angle = vectors[1].atan2(vectors[0]).to_degrees();
        // The eigenvector's sign is arbitrary: report the angle in (-90°, 90°].
        let angle = if angle > 90.0 {
            angle - 180.0
        } else if angle <= -90.0 {
            angle + 180.0
        } else {
            angle
        };
        println!(
            "{c:>9}  {:>6.3}  ({:>7.3}, {:>7.3})  {:>6.3}, {:>6.3}  {angle:>7.1}°",
            model.weights()[c],
            mean[0],
            mean[1],
            values[0].max(0.0).sqrt(),
            values[1].max(0.0).sqrt(),
        );
        ellipses.push(Ellipse {
            mean,
            one: ellipse_points(mean, &values, &vectors, 1.0),
            two: ellipse_points(mean, &values, &vectors, 2.0),
        });
    }

    let labels = model.predict(gpu, xg)?;
    println!(
        "agreement with the species: adjusted Rand index {:.4}",
        adjusted_rand_index(&labels, species)?
    );

    // Soft assignments: the points the model is unsure about, least certain first.
    let proba = model.predict_proba(gpu, xg)?;
    let max_resp: Vec<f32> = proba
        .chunks_exact(k)
        .map(|r| r.iter().copied().fold(0.0, f32::max))
        .collect();
    let mut uncertain: Vec<usize> = (0..n).filter(|&i| max_resp[i] < CERTAIN).collect();
    uncertain.sort_by(|&a, &b| max_resp[a].total_cmp(&max_resp[b]).then(a.cmp(&b)));
    print!(
        "{} of {n} points are uncertain (largest responsibility < {CERTAIN})",
        uncertain.len()
    );
    if uncertain.is_empty() {
        println!();
    } else {
        println!("; the {} least certain:", uncertain.len().min(SHOWN));
        let header: String = (0..k).map(|c| format!("  p(k={c})")).collect();
        println!("  row  species         PC1      PC2  label{header}");
        for &i in uncertain.iter().take(SHOWN) {
            let probs: String = proba[i * k..(i + 1) * k]
                .iter()
                .map(|p| format!("  {p:>6.3}"))
                .collect();
            println!(
                "{i:>5}  {:<10}  {:>7.3}  {:>7.3}  {:>5}{probs}",
                SPECIES[species[i] as usize],
                z[2 * i],
                z[2 * i + 1],
                labels[i]
            );
        }
    }

    let points = (0..n)
        .map(|i| Point {
            x: z[2 * i] as f64,
            y: z[2 * i + 1] as f64,
            label: labels[i],
            uncertain: max_resp[i] < CERTAIN,
        })
        .collect();
    Ok(Panel {
        caption: format!(
            "Iris (PC1, PC2): k = {k}, {} covariances, {}",
            model.covariance_type().name(),
            caption
        ),
        points,
        ellipses,
        weights: model.weights().to_vec(),
    })
}

/// Prints one criterion for every k (rows) and covariance type (columns), marking each
/// column's lowest value with `*`.
fn print_table(name: &str, fits: &[Vec<Fitted>], value: impl Fn(&Fitted) -> f64) {
    println!("\n{name} (lower is better; * marks the lowest of each column)");
    let header: String = CovarianceType::ALL
        .iter()
        .map(|&t| format!("  {:>11}", t.name()))
        .collect();
    println!("  k{header}");
    let best: Vec<usize> = fits
        .iter()
        .map(|row| argmin(std::slice::from_ref(row), &value).1)
        .collect();
    for k in 0..K_MAX {
        let cells: String = fits
            .iter()
            .zip(&best)
            .map(|(row, &b)| {
                let mark = if b == k { '*' } else { ' ' };
                format!("  {:>10.2}{mark}", value(&row[k]))
            })
            .collect();
        println!("{:>3}{cells}", k + 1);
    }
}

/// (type index, k index) of the lowest value, the first one on ties.
fn argmin(fits: &[Vec<Fitted>], value: impl Fn(&Fitted) -> f64) -> (usize, usize) {
    let mut best = (0, 0);
    for (t, row) in fits.iter().enumerate() {
        for (k, f) in row.iter().enumerate() {
            if value(f) < value(&fits[best.0][best.1]) {
                best = (t, k);
            }
        }
    }
    best
}

/// The 2 x 2 covariance (row-major) of component `c`, whatever the covariance type.
fn component_covariance(model: &GaussianMixtureModel, c: usize) -> [f64; 4] {
    let cov = model.covariances();
    match model.covariance_type() {
        CovarianceType::Full => [cov[4 * c], cov[4 * c + 1], cov[4 * c + 2], cov[4 * c + 3]],
        CovarianceType::Tied => [cov[0], cov[1], cov[2], cov[3]],
        CovarianceType::Diag => [cov[2 * c], 0.0, 0.0, cov[2 * c + 1]],
        CovarianceType::Spherical => [cov[c], 0.0, 0.0, cov[c]],
    }
}

/// One component's outline at Mahalanobis distance 1 and 2.
struct Ellipse {
    mean: [f64; 2],
    one: Vec<(f64, f64)>,
    two: Vec<(f64, f64)>,
}

/// The closed curve μ + s (√λ₁ cos θ v₁ + √λ₂ sin θ v₂), θ ∈ [0, 2π], from the eigenvalues
/// (descending) and eigenvectors (rows) of the covariance: the points at Mahalanobis
/// distance `s` from μ.
fn ellipse_points(mean: [f64; 2], values: &[f64], vectors: &[f64], s: f64) -> Vec<(f64, f64)> {
    let (a, b) = (s * values[0].max(0.0).sqrt(), s * values[1].max(0.0).sqrt());
    (0..=120)
        .map(|i| {
            let theta = std::f64::consts::TAU * i as f64 / 120.0;
            let (u, v) = (a * theta.cos(), b * theta.sin());
            (
                mean[0] + u * vectors[0] + v * vectors[2],
                mean[1] + u * vectors[1] + v * vectors[3],
            )
        })
        .collect()
}

/// A projected flower with its component.
struct Point {
    x: f64,
    y: f64,
    label: u32,
    uncertain: bool,
}

/// Widens the shorter of two ranges about its centre so that both get the same data units
/// per pixel on a plotting area of `width` x `height` pixels.
fn equal_scale(
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    width: f64,
    height: f64,
) -> (std::ops::Range<f64>, std::ops::Range<f64>) {
    let (xs, ys) = (x.end - x.start, y.end - y.start);
    let widen = |r: std::ops::Range<f64>, span: f64| {
        let c = 0.5 * (r.start + r.end);
        (c - 0.5 * span)..(c + 0.5 * span)
    };
    if xs / width > ys / height {
        (x, widen(y, xs / width * height))
    } else {
        (widen(x, ys / height * width), y)
    }
}

/// Points coloured by component, uncertain ones ringed, means and 1-σ / 2-σ ellipses.
fn draw_ellipses(root: &plot::Svg, panel: &Panel) -> Result<(), Box<dyn std::error::Error>> {
    let Panel {
        caption,
        points,
        ellipses,
        weights,
    } = panel;
    const MARGIN: u32 = 15;
    const X_LABELS: u32 = 45;
    const Y_LABELS: u32 = 55;
    const CAPTION: u32 = 40;
    let xs = points
        .iter()
        .map(|p| p.x)
        .chain(ellipses.iter().flat_map(|e| e.two.iter().map(|p| p.0)));
    let ys = points
        .iter()
        .map(|p| p.y)
        .chain(ellipses.iter().flat_map(|e| e.two.iter().map(|p| p.1)));
    let (w, h) = root.dim_in_pixel();
    let (x_range, y_range) = equal_scale(
        plot::padded_range(xs),
        plot::padded_range(ys),
        (w - 2 * MARGIN - Y_LABELS) as f64,
        (h - 2 * MARGIN - X_LABELS - CAPTION) as f64,
    );

    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 22))
        .margin(MARGIN)
        .x_label_area_size(X_LABELS)
        .y_label_area_size(Y_LABELS)
        .build_cartesian_2d(x_range, y_range)?;
    chart
        .configure_mesh()
        .x_desc("PC1")
        .y_desc("PC2")
        .light_line_style(WHITE)
        .draw()?;

    // Points first (one legend entry per component), then the outlines on top.
    for (c, &weight) in weights.iter().enumerate() {
        let color = COLORS[c % COLORS.len()];
        chart
            .draw_series(
                points
                    .iter()
                    .filter(|p| p.label as usize == c)
                    .map(|p| Circle::new((p.x, p.y), 3, color.mix(0.75).filled())),
            )?
            .label(format!("component {c} (weight {weight:.2})"))
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, color.filled()));
    }
    for (c, e) in ellipses.iter().enumerate() {
        let color = COLORS[c % COLORS.len()];
        let one = chart.draw_series(LineSeries::new(e.one.clone(), color.stroke_width(2)))?;
        if c == 0 {
            one.label("1-σ ellipse")
                .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK.stroke_width(2)));
        }
        let dashed = color.mix(0.8).stroke_width(1);
        let two = chart.draw_series(DashedLineSeries::new(e.two.clone(), 5, 4, dashed))?;
        if c == 0 {
            two.label("2-σ ellipse")
                .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK.stroke_width(1)));
        }
        let mean = chart.draw_series(std::iter::once(Cross::new(
            (e.mean[0], e.mean[1]),
            6,
            BLACK.stroke_width(2),
        )))?;
        if c == 0 {
            mean.label("mean")
                .legend(|(x, y)| Cross::new((x + 8, y), 5, BLACK.stroke_width(2)));
        }
    }
    chart
        .draw_series(
            points
                .iter()
                .filter(|p| p.uncertain)
                .map(|p| Circle::new((p.x, p.y), 5, BLACK.stroke_width(1))),
        )?
        .label(format!("uncertain (largest p < {CERTAIN})"))
        .legend(|(x, y)| Circle::new((x + 8, y), 5, BLACK.stroke_width(1)));

    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}

/// One criterion against k, a line per covariance type, `best` (type, k index) circled.
fn draw_criterion(
    area: &plot::Svg,
    name: &str,
    values: &[Vec<f64>],
    best: (usize, usize),
) -> Result<(), Box<dyn std::error::Error>> {
    let y_range = plot::padded_range(values.iter().flatten().copied());
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("Iris (PC1, PC2): {name} against k"),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(0.5..K_MAX as f64 + 0.5, y_range)?;
    chart
        .configure_mesh()
        .x_desc("k (components)")
        .x_labels(K_MAX)
        .x_label_formatter(&|k| format!("{k:.0}"))
        .y_desc(format!("{name} (lower is better)"))
        .light_line_style(WHITE)
        .draw()?;
    for (t, row) in values.iter().enumerate() {
        let color = COLORS[t];
        let curve: Vec<(f64, f64)> = row
            .iter()
            .enumerate()
            .map(|(k, &v)| ((k + 1) as f64, v))
            .collect();
        chart
            .draw_series(LineSeries::new(curve.clone(), color.stroke_width(2)))?
            .label(CovarianceType::ALL[t].name())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
        chart.draw_series(curve.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    let (t, k) = best;
    chart
        .draw_series(std::iter::once(Circle::new(
            ((k + 1) as f64, values[t][k]),
            8,
            BLACK.stroke_width(2),
        )))?
        .label(format!(
            "lowest: k = {}, {}",
            k + 1,
            CovarianceType::ALL[t].name()
        ))
        .legend(|(x, y)| Circle::new((x + 8, y), 5, BLACK.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}
