//! SVG plots of the model-selection curves ([`crate::selection`]), drawn with
//! [plotters](https://docs.rs/plotters)' SVG backend (text as SVG `<text>` elements, no
//! system font libraries). Only with the `plot` feature (part of `cli`, whose `--plot` flags
//! use it).
//!
//! Every function renders the whole document in memory, then writes it atomically (a
//! temporary file renamed over the target, as `io` does when that feature is on),
//! so a failure never leaves a partial file; the `stage_*` forms stage it in an
//! [`OutputSet`] instead, written with a command's other outputs as one set. [`write_svg`] and [`padded_range`] are public
//! so that the examples draw their own plots the same way.

use std::ops::Range;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

pub use crate::atomic::OutputSet;
use crate::error::{Error, Result};
use crate::selection::{Criterion, Curve, GapCurve, Spectrum};

/// Size of every plot, in pixels.
const SIZE: (u32, u32) = (900, 560);

/// The line and point colour.
const LINE: RGBColor = RGBColor(31, 119, 180);

/// The colour of the suggested k.
const MARK: RGBColor = RGBColor(214, 39, 40);

/// The drawing area the plots draw on: an SVG document rendered into a string.
pub type Svg<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A drawing failure, reported as an I/O error on `path`.
fn draw_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!("cannot draw the plot: {e}")),
    }
}

/// Renders `draw` into an SVG document of `size` pixels (white background), then writes it to
/// `path` atomically.
///
/// Errors: [`Error::Io`] naming `path` when drawing or writing fails; the old file is then
/// untouched.
pub fn write_svg(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(&Svg) -> std::result::Result<(), Box<dyn std::error::Error>>,
) -> Result<()> {
    let mut set = OutputSet::new();
    stage_svg(&mut set, path, size, draw)?;
    set.commit()
}

/// [`write_svg`] into an [`OutputSet`]: the document is staged for `path` and written when
/// the set is committed, together with the other outputs of the same work.
///
/// Errors: [`Error::Io`] naming `path` when drawing or staging fails.
pub fn stage_svg(
    set: &mut OutputSet,
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(&Svg) -> std::result::Result<(), Box<dyn std::error::Error>>,
) -> Result<()> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(path, e))?;
        draw(&root).map_err(|e| draw_err(path, e))?;
        root.present().map_err(|e| draw_err(path, e))?;
    }
    set.text(path, &svg)
}

/// The smallest range holding the finite `values`, widened by 5% on each side (0..1 when
/// there are none).
pub fn padded_range(values: impl Iterator<Item = f64>) -> Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return 0.0..1.0;
    }
    let pad = 0.05 * (hi - lo).max(f64::EPSILON.max(hi.abs() * 1e-9));
    (lo - pad)..(hi + pad)
}

/// The k axis of a curve over `k`.
fn k_range(k: &[usize]) -> Range<f64> {
    let lo = k.first().copied().unwrap_or(1) as f64;
    let hi = k.last().copied().unwrap_or(1) as f64;
    (lo - 0.5)..(hi + 0.5)
}

/// Draws `values` against `k` (line and points), with optional ± `bars`, and marks the
/// suggested k.
fn draw_k_curve(
    root: &Svg,
    title: &str,
    y_desc: &str,
    k: &[usize],
    values: &[f64],
    bars: Option<&[f64]>,
    suggested_k: usize,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let spread = |i: usize| bars.map_or(0.0, |b| b[i]);
    let y_range = padded_range(
        values
            .iter()
            .enumerate()
            .flat_map(|(i, &v)| [v - spread(i), v + spread(i)]),
    );
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(k_range(k), y_range.clone())?;
    chart
        .configure_mesh()
        .x_desc("k")
        .x_labels(k.len().clamp(2, 20))
        .x_label_formatter(&|c| format!("{c:.0}"))
        .y_desc(y_desc)
        .light_line_style(WHITE)
        .draw()?;
    let points: Vec<(f64, f64)> = k
        .iter()
        .zip(values)
        .filter(|(_, v)| v.is_finite())
        .map(|(&k, &v)| (k as f64, v))
        .collect();
    if let Some(bars) = bars {
        chart.draw_series(points.iter().zip(bars).map(|(&(x, y), &b)| {
            PathElement::new([(x, y - b), (x, y + b)], BLACK.mix(0.6).stroke_width(1))
        }))?;
    }
    chart
        .draw_series(LineSeries::new(
            points.iter().copied(),
            LINE.stroke_width(2),
        ))?
        .label(y_desc.to_string())
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], LINE.stroke_width(2)));
    chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, LINE.filled())))?;
    // The legend goes where the curve is low at the right: it rises or falls overall.
    let rising = points.last().map(|p| p.1) > points.first().map(|p| p.1);
    let legend_position = if rising {
        SeriesLabelPosition::LowerRight
    } else {
        SeriesLabelPosition::UpperRight
    };
    let sk = suggested_k as f64;
    chart
        .draw_series(DashedLineSeries::new(
            [(sk, y_range.start), (sk, y_range.end)],
            6,
            4,
            MARK.stroke_width(1),
        ))?
        .label(format!("suggested k = {suggested_k}"))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], MARK.stroke_width(1)));
    chart.draw_series(
        points
            .iter()
            .filter(|p| p.0 == sk)
            .map(|&p| Circle::new(p, 7, MARK.stroke_width(2))),
    )?;
    chart
        .configure_series_labels()
        .position(legend_position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}

/// Writes the curve (elbow inertia, BIC or AIC against k) with its suggested k to `path`.
///
/// Errors: [`Error::Io`] when drawing or writing fails; the old file is then untouched.
pub fn write_curve(path: &Path, curve: &Curve) -> Result<()> {
    let mut set = OutputSet::new();
    stage_curve(&mut set, path, curve)?;
    set.commit()
}

/// [`write_curve`] into an [`OutputSet`] (see [`stage_svg`]).
///
/// Errors: [`Error::Io`] naming `path` when drawing or staging fails.
pub fn stage_curve(set: &mut OutputSet, path: &Path, curve: &Curve) -> Result<()> {
    let (title, y_desc) = match curve.criterion {
        Criterion::Elbow => ("Elbow: K-Means inertia against k", "inertia"),
        Criterion::Gap => ("Gap statistic against k", "gap"),
        Criterion::Bic => ("Gaussian mixture: BIC against k", "BIC"),
        Criterion::Aic => ("Gaussian mixture: AIC against k", "AIC"),
    };
    stage_svg(set, path, SIZE, |root| {
        draw_k_curve(
            root,
            title,
            y_desc,
            &curve.k,
            &curve.values,
            None,
            curve.suggested_k,
        )
    })
}

/// Writes Gap(k) with ± s_k bars and the suggested k to `path`.
///
/// Errors: [`Error::Io`] when drawing or writing fails; the old file is then untouched.
pub fn write_gap(path: &Path, gap: &GapCurve) -> Result<()> {
    let mut set = OutputSet::new();
    stage_gap(&mut set, path, gap)?;
    set.commit()
}

/// [`write_gap`] into an [`OutputSet`] (see [`stage_svg`]).
///
/// Errors: [`Error::Io`] naming `path` when drawing or staging fails.
pub fn stage_gap(set: &mut OutputSet, path: &Path, gap: &GapCurve) -> Result<()> {
    let title = format!("Gap statistic against k ({} reference sets)", gap.n_refs);
    stage_svg(set, path, SIZE, |root| {
        draw_k_curve(
            root,
            &title,
            "Gap(k) ± s_k",
            &gap.k,
            &gap.gap,
            Some(&gap.s_k),
            gap.suggested_k,
        )
    })
}

/// Writes the PCA spectrum to `path`: the explained-variance ratio of each component (bars,
/// left axis) and the cumulative ratio (line, right axis).
///
/// Errors: [`Error::Io`] when drawing or writing fails; the old file is then untouched.
pub fn write_spectrum(path: &Path, spectrum: &Spectrum) -> Result<()> {
    let mut set = OutputSet::new();
    stage_spectrum(&mut set, path, spectrum)?;
    set.commit()
}

/// [`write_spectrum`] into an [`OutputSet`] (see [`stage_svg`]).
///
/// Errors: [`Error::Io`] naming `path` when drawing or staging fails.
pub fn stage_spectrum(set: &mut OutputSet, path: &Path, spectrum: &Spectrum) -> Result<()> {
    stage_svg(set, path, SIZE, |root| draw_spectrum(root, spectrum))
}

/// The body of [`write_spectrum`].
fn draw_spectrum(
    root: &Svg,
    spectrum: &Spectrum,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let ratios = &spectrum.explained_variance_ratio;
    let m = ratios.len().max(1);
    let top = ratios.iter().copied().fold(0.0, f64::max).max(1e-12) * 1.1;
    let x_range = 0.5..m as f64 + 0.5;
    let mut chart = ChartBuilder::on(root)
        .caption(
            "PCA: variance explained by each component",
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .right_y_label_area_size(65)
        .build_cartesian_2d(x_range.clone(), 0.0..top)?
        .set_secondary_coord(x_range, 0.0..1.05);
    chart
        .configure_mesh()
        .x_desc("component")
        .x_labels(m.clamp(2, 20))
        .x_label_formatter(&|c| format!("{c:.0}"))
        .y_desc("explained-variance ratio")
        .light_line_style(WHITE)
        .draw()?;
    chart
        .configure_secondary_axes()
        .y_desc("cumulative ratio")
        .draw()?;
    chart
        .draw_series(ratios.iter().enumerate().map(|(i, &r)| {
            let c = (i + 1) as f64;
            Rectangle::new([(c - 0.4, 0.0), (c + 0.4, r)], LINE.filled())
        }))?
        .label("per component (left axis)")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], LINE.filled()));
    let curve = spectrum
        .cumulative_ratio
        .iter()
        .enumerate()
        .map(|(i, &c)| ((i + 1) as f64, c));
    chart
        .draw_secondary_series(LineSeries::new(curve, MARK.stroke_width(2)))?
        .label("cumulative (right axis)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], MARK.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::MiddleRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}
