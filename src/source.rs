//! Row sources: data that need not fit on the GPU, nor in host memory.
//!
//! A [`RowSource`] hands out its N x D rows as consecutive runs of whole rows, as many times
//! as a fit asks (one pass per iteration). The fits' `fit_source` methods stream each pass
//! through a bounded device buffer (see [`Gpu::set_memory_budget`](crate::Gpu::set_memory_budget)),
//! so the device holds a fixed amount of data whatever N is:
//!
//! - a host [`Matrix`] is a source (its rows are sliced, never copied by the source);
//! - [`RowChunks`] wraps a closure that makes an iterator of host chunks (read from a
//!   database, decompressed, generated), called once per pass;
//! - `io::NpyRows` (feature `io`) reads a `.npy` file a piece at a time with positioned
//!   reads, so a file larger than RAM streams through the page cache (and a file cut short
//!   while it is read is an error, not a signal).
//!
//! Every value is checked for NaN and infinity as it streams ([`Error::NonFinite`] with the
//! global row); a source that delivers another number of rows than it declared, or values
//! that are not whole rows, fails with [`Error::Source`].

use crate::data::{check_finite, Matrix};
use crate::error::{Error, Result};

/// Consecutive runs of whole rows of an N x D f32 matrix, delivered in order, once per call.
///
/// Implement it for your own storage; [`Matrix`], [`RowChunks`] and `io::NpyRows` are the
/// crate's. `Sync` because the fits read the next run on a second thread while the GPU works
/// on the current one.
pub trait RowSource: Sync {
    /// Rows N and features D.
    fn shape(&self) -> (usize, usize);

    /// Calls `visit(first_row, rows)` for consecutive runs of whole rows covering rows
    /// `0..N` exactly once, in order; each run holds at most `max_rows` rows (row-major,
    /// `rows.len()` a multiple of D). Values must be finite. An error from `visit` must stop
    /// the pass and be returned.
    fn visit_rows(
        &self,
        max_rows: usize,
        visit: &mut dyn FnMut(usize, &[f32]) -> Result<()>,
    ) -> Result<()>;

    /// The rows `indices` (any order, repeats allowed), row-major in that order. The default
    /// reads one whole pass; sources with random access (a matrix, an `io::NpyRows` file) override
    /// it.
    ///
    /// Errors: an index past the last row ([`Error::Source`]), and the pass's errors.
    fn gather(&self, indices: &[usize]) -> Result<Vec<f32>> {
        gather_rows(self, indices)
    }

    /// The largest |value| of the rows when the source holds them in memory (a matrix scans
    /// its values); `None` otherwise, and the fits take it from the first rows (as
    /// `Scaled::of` does).
    fn max_abs(&self) -> Option<f32> {
        None
    }

    /// The row-major f64 values when the source holds f64 data in memory (a
    /// [`Matrix64`](crate::origin::Matrix64)): the fits then centre them in f64 before the
    /// f32 cast (module [`origin`](crate::origin)). `None` (the default) for f32 rows.
    fn f64_rows(&self) -> Option<std::borrow::Cow<'_, [f64]>> {
        None
    }

    /// All N x D values, row-major and finite, when the source holds them in memory as they
    /// are read (a [`Matrix`]): uploads and streamed passes then copy them to the device
    /// straight from here, without the host copy a reader thread makes of each piece
    /// ([`RowSource::visit_rows`] on a second thread). That copy into fresh host memory ran at
    /// about 1.3 GB/s on an H200's host, slower than the upload itself. `None` (the default)
    /// for sources that produce their rows (files, conversions, scalings). As with
    /// [`RowSource::visit_rows`], the values must be finite; a slice whose length is not N·D
    /// is an [`Error::Source`] where it is used.
    fn rows_in_memory(&self) -> Option<&[f32]> {
        None
    }
}

impl RowSource for Matrix<'_> {
    fn max_abs(&self) -> Option<f32> {
        Some(Matrix::max_abs(self))
    }

    fn shape(&self) -> (usize, usize) {
        (self.n_rows(), self.n_features())
    }

    fn visit_rows(
        &self,
        max_rows: usize,
        visit: &mut dyn FnMut(usize, &[f32]) -> Result<()>,
    ) -> Result<()> {
        let d = self.n_features();
        let max_rows = max_rows.max(1);
        for (i, rows) in self.as_slice().chunks(max_rows * d).enumerate() {
            visit(i * max_rows, rows)?;
        }
        Ok(())
    }

    fn gather(&self, indices: &[usize]) -> Result<Vec<f32>> {
        gather_by_index(self.as_slice(), self.n_features(), indices)
    }

    fn rows_in_memory(&self) -> Option<&[f32]> {
        Some(self.as_slice())
    }
}

/// The rows `indices` of row-major `values` (f32 or f64), for sources with random access.
pub(crate) fn gather_by_index<T: Copy>(
    values: &[T],
    d: usize,
    indices: &[usize],
) -> Result<Vec<T>> {
    let n = values.len() / d;
    let mut out = Vec::with_capacity(indices.len() * d);
    for &i in indices {
        if i >= n {
            return Err(Error::Source {
                reason: format!("row {i} was asked for, the source has {n}"),
            });
        }
        out.extend_from_slice(&values[i * d..(i + 1) * d]);
    }
    Ok(out)
}

/// A source made of host chunks from a closure, called once per pass: each call returns an
/// iterator of chunks (anything that is a `[f32]`: `Vec<f32>`, `&[f32]`, `Box<[f32]>`), each
/// holding whole rows, that together hold the declared N rows.
///
/// Chunks may have any number of rows: small ones are packed together and large ones cut,
/// so the GPU sees runs of the size it asks for. Every value is checked as it passes.
///
/// ```
/// use wgpu_unsupervised::source::{RowChunks, RowSource};
///
/// // 10 000 rows of 3 features, made 1 000 rows at a time on each pass.
/// let source = RowChunks::new(10_000, 3, || {
///     (0..10).map(|c| (0..3_000).map(|i| ((c * 3_000 + i) % 97) as f32).collect::<Vec<f32>>())
/// });
/// assert_eq!(source.shape(), (10_000, 3));
/// ```
pub struct RowChunks<F> {
    n_rows: usize,
    n_features: usize,
    make: F,
}

impl<F, I> RowChunks<F>
where
    F: Fn() -> I + Sync,
    I: IntoIterator,
    I::Item: AsRef<[f32]>,
{
    /// A source of `n_rows` x `n_features` rows from the chunks `make()` yields on each pass
    /// (the fits refuse a source without rows or features with [`Error::EmptyData`]).
    pub fn new(n_rows: usize, n_features: usize, make: F) -> Self {
        Self {
            n_rows,
            n_features,
            make,
        }
    }
}

impl<F, I> RowSource for RowChunks<F>
where
    F: Fn() -> I + Sync,
    I: IntoIterator,
    I::Item: AsRef<[f32]>,
{
    fn shape(&self) -> (usize, usize) {
        (self.n_rows, self.n_features)
    }

    fn visit_rows(
        &self,
        max_rows: usize,
        visit: &mut dyn FnMut(usize, &[f32]) -> Result<()>,
    ) -> Result<()> {
        let d = self.n_features;
        let piece = max_rows.max(1) * d;
        let mut pending: Vec<f32> = Vec::new();
        let mut done = 0usize; // rows delivered to `visit`
        let mut seen = 0usize; // rows taken from the chunks
        for chunk in (self.make)() {
            let chunk = chunk.as_ref();
            if !chunk.len().is_multiple_of(d) {
                return Err(Error::Source {
                    reason: format!(
                        "a chunk of {} values is not a whole number of rows of {d} features",
                        chunk.len()
                    ),
                });
            }
            seen += chunk.len() / d;
            if seen > self.n_rows {
                return Err(rows_mismatch(self.n_rows, seen, "at least"));
            }
            check_finite(chunk, d).map_err(|e| shift_row(e, seen - chunk.len() / d))?;
            let mut rest = chunk;
            while !rest.is_empty() {
                if pending.is_empty() && rest.len() >= piece {
                    let (now, later) = rest.split_at(piece);
                    visit(done, now)?;
                    done += max_rows.max(1);
                    rest = later;
                    continue;
                }
                let take = (piece - pending.len()).min(rest.len());
                pending.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                if pending.len() == piece {
                    visit(done, &pending)?;
                    done += pending.len() / d;
                    pending.clear();
                }
            }
        }
        if !pending.is_empty() {
            visit(done, &pending)?;
        }
        if seen != self.n_rows {
            return Err(rows_mismatch(self.n_rows, seen, "only"));
        }
        Ok(())
    }
}

fn rows_mismatch(declared: usize, seen: usize, how: &str) -> Error {
    Error::Source {
        reason: format!("declared {declared} rows, the chunks held {how} {seen}"),
    }
}

/// Moves a chunk-local [`Error::NonFinite`] row to the global row.
fn shift_row(e: Error, first_row: usize) -> Error {
    match e {
        Error::NonFinite { row, col, value } => Error::NonFinite {
            row: row + first_row,
            col,
            value,
        },
        other => other,
    }
}

/// Checks what a fit needs of a source before streaming it: rows and features.
pub(crate) fn check_shape(source: &(impl RowSource + ?Sized)) -> Result<(usize, usize)> {
    let (n, d) = source.shape();
    if d == 0 {
        return Err(Error::EmptyData {
            what: "row source",
            missing: "columns",
        });
    }
    if n == 0 {
        return Err(Error::EmptyData {
            what: "row source",
            missing: "rows",
        });
    }
    Ok((n, d))
}

/// The rows `indices` of a source (any order, repeats allowed), row-major in that order, in
/// one pass.
pub(crate) fn gather_rows(
    source: &(impl RowSource + ?Sized),
    indices: &[usize],
) -> Result<Vec<f32>> {
    let (_, d) = source.shape();
    let mut order: Vec<usize> = (0..indices.len()).collect();
    order.sort_by_key(|&i| indices[i]);
    let mut out = vec![0f32; indices.len() * d];
    let mut next = 0;
    source.visit_rows(1 << 16, &mut |first, rows| {
        let end = first + rows.len() / d;
        while next < order.len() && indices[order[next]] < end {
            let r = indices[order[next]] - first;
            out[order[next] * d..(order[next] + 1) * d].copy_from_slice(&rows[r * d..(r + 1) * d]);
            next += 1;
        }
        Ok(())
    })?;
    if next < order.len() {
        return Err(Error::Source {
            reason: format!(
                "row {} was asked for, the source ended before it",
                indices[order[next]]
            ),
        });
    }
    Ok(out)
}

/// Rows read to set a source's scale when it does not know its largest value: at most 16 MiB.
const SCALE_SAMPLE_BYTES: usize = 16 << 20;

/// A source's rows times `scale`, a power of two (exact): what the kernels see of data
/// outside f32's comfortable range ([`crate::data::F32_RANGE`]), so that their squares and
/// products neither overflow nor underflow. The fits report in the caller's units again.
pub(crate) struct Scaled<'a, S: RowSource + ?Sized> {
    source: &'a S,
    scale: f32,
    /// The scale came from the first rows only: every row read is checked against the range.
    checked: bool,
}

impl<'a, S: RowSource + ?Sized> Scaled<'a, S> {
    /// `source` with the scale [`crate::data::range_scale`] picks for its largest value:
    /// [`RowSource::max_abs`] when the source knows it, else the largest of its first rows
    /// (at most 16 MiB of them, read once). Rows further on that leave the range once scaled
    /// are an error when they are read (see [`RowSource::visit_rows`] of this type).
    pub(crate) fn of(source: &'a S) -> Result<Self> {
        match source.max_abs() {
            Some(m) => Ok(Self {
                source,
                scale: crate::data::range_scale(m),
                checked: false,
            }),
            None => {
                let (n, d) = check_shape(source)?;
                let first = (SCALE_SAMPLE_BYTES / (4 * d)).clamp(1, n);
                let rows = source.gather(&(0..first).collect::<Vec<_>>())?;
                let m = rows.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                Ok(Self::with_scale(source, crate::data::range_scale(m)))
            }
        }
    }

    /// `source` times `scale` (set by other rows: every row read is checked).
    pub(crate) fn with_scale(source: &'a S, scale: f32) -> Self {
        Self {
            source,
            scale,
            checked: true,
        }
    }

    /// The factor the rows are multiplied by (1 when they are in range).
    pub(crate) fn scale(&self) -> f32 {
        self.scale
    }

    /// `rows` times the scale, checked to stay in range.
    fn scaled(&self, rows: &[f32]) -> Result<Vec<f32>> {
        let out: Vec<f32> = rows.iter().map(|&v| v * self.scale).collect();
        self.check(&out)?;
        Ok(out)
    }

    /// Refuses scaled values past the range the first rows set.
    fn check(&self, scaled: &[f32]) -> Result<()> {
        let limit = crate::data::F32_SAFE_MAX;
        // One vectorised scan (finite values order like their bits), a search only past it.
        if crate::data::abs_bits_max(scaled) <= limit.to_bits() {
            return Ok(());
        }
        if let Some(v) = scaled.iter().find(|v| v.abs() > limit) {
            return Err(Error::Source {
                reason: format!(
                    "a value of {:e} is over 2^50 times the largest of the first rows, which set the data's scale: squares of such a spread overflow f32; rescale the data",
                    v / self.scale,
                ),
            });
        }
        Ok(())
    }
}

impl<S: RowSource + ?Sized> RowSource for Scaled<'_, S> {
    fn shape(&self) -> (usize, usize) {
        self.source.shape()
    }

    fn visit_rows(
        &self,
        max_rows: usize,
        visit: &mut dyn FnMut(usize, &[f32]) -> Result<()>,
    ) -> Result<()> {
        match (self.scale == 1.0, self.checked) {
            (true, false) => self.source.visit_rows(max_rows, visit),
            (true, true) => self.source.visit_rows(max_rows, &mut |first, rows| {
                self.check(rows)?;
                visit(first, rows)
            }),
            (false, _) => self.source.visit_rows(max_rows, &mut |first, rows| {
                visit(first, &self.scaled(rows)?)
            }),
        }
    }

    fn gather(&self, indices: &[usize]) -> Result<Vec<f32>> {
        let rows = self.source.gather(indices)?;
        if self.scale == 1.0 {
            if self.checked {
                self.check(&rows)?;
            }
            return Ok(rows);
        }
        self.scaled(&rows)
    }

    fn max_abs(&self) -> Option<f32> {
        self.source.max_abs().map(|m| m * self.scale)
    }

    /// The source's own values when they need neither scaling nor checking.
    fn rows_in_memory(&self) -> Option<&[f32]> {
        if self.scale == 1.0 && !self.checked {
            self.source.rows_in_memory()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(source: &impl RowSource, max_rows: usize) -> Result<(Vec<usize>, Vec<f32>)> {
        let mut firsts = Vec::new();
        let mut all = Vec::new();
        source.visit_rows(max_rows, &mut |first, rows| {
            assert!(rows.len() <= max_rows * source.shape().1);
            firsts.push(first);
            all.extend_from_slice(rows);
            Ok(())
        })?;
        Ok((firsts, all))
    }

    #[test]
    fn matrix_and_chunks_deliver_the_same_rows_in_runs_of_the_asked_size() {
        let values: Vec<f32> = (0..3 * 23).map(|v| v as f32 * 0.5).collect();
        let m = Matrix::new(&values, 3).unwrap();
        for max_rows in [1, 4, 7, 23, 100] {
            let (firsts, all) = collect(&m, max_rows).unwrap();
            assert_eq!(all, values);
            assert_eq!(firsts, (0..23).step_by(max_rows).collect::<Vec<_>>());
            // Ragged chunks: 1, 5, 0, 9 and 8 rows.
            let cuts = [0, 1, 6, 6, 15, 23];
            let chunks = RowChunks::new(23, 3, || {
                cuts.windows(2)
                    .map(|w| values[w[0] * 3..w[1] * 3].to_vec())
                    .collect::<Vec<_>>()
            });
            let (firsts, all) = collect(&chunks, max_rows).unwrap();
            assert_eq!(all, values, "max_rows {max_rows}");
            assert_eq!(firsts, (0..23).step_by(max_rows).collect::<Vec<_>>());
        }
    }

    #[test]
    fn only_rows_held_as_they_are_read_are_lent_in_place() {
        let values: Vec<f32> = (0..3 * 5).map(|v| v as f32 - 7.0).collect();
        let m = Matrix::new(&values, 3).unwrap();
        assert_eq!(m.rows_in_memory(), Some(&values[..]));
        let chunks = RowChunks::new(5, 3, || [&values[..]]);
        assert!(chunks.rows_in_memory().is_none());
        // In range: the matrix's own values; scaled or checked rows are produced when read.
        assert_eq!(Scaled::of(&m).unwrap().rows_in_memory(), Some(&values[..]));
        assert!(Scaled::with_scale(&m, 1.0).rows_in_memory().is_none());
        assert!(Scaled::with_scale(&m, 0.5).rows_in_memory().is_none());
        let huge: Vec<f32> = values.iter().map(|v| v * 1e30).collect();
        let big = Matrix::new(&huge, 3).unwrap();
        assert!(Scaled::of(&big).unwrap().rows_in_memory().is_none());
    }

    #[test]
    fn chunk_sources_report_what_they_got_wrong() {
        let rows = vec![1.0f32; 12];
        let short = RowChunks::new(5, 3, || [&rows[..]]);
        assert!(matches!(collect(&short, 2), Err(Error::Source { .. })));
        let long = RowChunks::new(3, 3, || [&rows[..]]);
        let e = collect(&long, 2).unwrap_err();
        assert!(e.to_string().contains("declared 3 rows"), "{e}");
        let ragged = RowChunks::new(4, 3, || [&rows[..11]]);
        assert!(matches!(collect(&ragged, 2), Err(Error::Source { .. })));
        let mut bad = rows.clone();
        bad[10] = f32::NAN;
        let nan = RowChunks::new(8, 3, || [&rows[..], &bad[..]]);
        let e = collect(&nan, 2).unwrap_err();
        assert!(matches!(e, Error::NonFinite { row: 7, col: 1, .. }), "{e}");
        // An error from the visitor stops the pass.
        let mut calls = 0;
        let e = m_of(&rows).visit_rows(1, &mut |_, _| {
            calls += 1;
            Err(Error::invalid("x", "stop"))
        });
        assert!(e.is_err());
        assert_eq!(calls, 1);
    }

    fn m_of(v: &[f32]) -> Matrix<'_> {
        Matrix::new(v, 3).unwrap()
    }

    #[test]
    fn gathers_rows_in_the_asked_order() {
        let values: Vec<f32> = (0..2 * 70_000).map(|v| v as f32).collect();
        let m = Matrix::new(&values, 2).unwrap();
        let got = gather_rows(&m, &[69_999, 3, 3, 65_536]).unwrap();
        assert_eq!(
            got,
            vec![139_998.0, 139_999.0, 6.0, 7.0, 6.0, 7.0, 131_072.0, 131_073.0]
        );
        assert!(check_shape(&RowChunks::new(0, 2, || [&values[..0]])).is_err());
    }
}
