//! Principal component analysis with the covariance and the power iteration on the GPU.
//!
//! PCA finds the orthonormal directions u₁, u₂, … of largest variance: the eigenvectors of
//! the covariance
//!
//! ```text
//! S = (X − 1μᵀ)ᵀ (X − 1μᵀ) / (N − ddof),    S uᵢ = λᵢ uᵢ,   λ₁ ≥ λ₂ ≥ …
//! ```
//!
//! (optionally of the standardised data (X − μ)/σ). The data pass twice over the device:
//! 1. column moments Σ(x − s) and Σ(x − s)² per block of rows (`shaders/reduce.wgsl`, shift s
//!    = the first row) combined in f64 into μ and the per-feature variances;
//! 2. the centred cross products (X − μ)ᵀ(X − μ), upper-triangle 64 x 64 tiles per block of
//!    rows (`shaders/covariance.wgsl`), folded with Kahan sums and finished in f64.
//!
//! Then, by solver:
//! - **Full**: the D x D matrix comes back and is eigendecomposed on the host (f64).
//! - **Power**: block power (subspace) iteration: W = S·V on the device
//!   (`shaders/projection.wgsl`), then on the host Rayleigh–Ritz (H = VᵀSV = YΘYᵀ, U = VY)
//!   and re-orthonormalisation by QR of W, until every residual ‖S·uᵢ − θᵢuᵢ‖ ≤ tol·θ₁ for the
//!   M wanted pairs. The block holds max(2M, M + 8) vectors (at most D) so the convergence
//!   rate (θ_{p+1}/θ_M)^t is good even when λ_M and λ_{M+1} are close.
//! - **MatrixFree**: the same iteration with S·V = Xcᵀ(Xc·V)/(N − ddof), two passes over the
//!   data and never a D x D matrix; chosen by `Auto` when S would not fit in one binding.
//!
//! An iteration that does not meet its tolerance is [`Error::NotConverged`], never a result.
//! Signs follow scikit-learn's `svd_flip`: the largest |loading| of each component is
//! positive. Transform is Z = ((X − μ)/σ)·Uᵀ (÷√λ when whitening), inverse transform
//! X̂ = (Z·(√λ)·U)·σ + μ, both on the device. The f64 CPU oracle is [`crate::reference::pca`].

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::gpu::buffer::Chunk;
use crate::gpu::kernel::{Batch, Bind};
use crate::gpu::GpuInput;
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::{covariance, projection, reduce, rows};
use crate::linalg;
use crate::names::parse_choice;

/// How many components to keep.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Components {
    /// Exactly this many (1 ..= min(N, D)).
    Count(usize),
    /// The fewest components whose explained-variance ratios sum past this fraction, in
    /// (0, 1] (scikit-learn's `n_components=0.95`). Needs the whole spectrum.
    Fraction(f64),
}

/// How the eigenvectors of the covariance are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PcaSolver {
    /// `Full` when D is small or many components are wanted, `Power` otherwise, and
    /// `MatrixFree` when the D x D covariance would not fit in one device binding.
    #[default]
    Auto,
    /// Covariance on the GPU, full symmetric eigendecomposition on the host (f64).
    Full,
    /// Block power (subspace) iteration W = S·V on the GPU, QR and Rayleigh–Ritz on the host.
    Power,
    /// Power iteration without forming S: W = Xcᵀ(Xc·V) on the GPU.
    MatrixFree,
}

impl PcaSolver {
    /// All four solvers, in the order Auto, Full, Power, MatrixFree.
    pub const ALL: [PcaSolver; 4] = [
        PcaSolver::Auto,
        PcaSolver::Full,
        PcaSolver::Power,
        PcaSolver::MatrixFree,
    ];

    /// The name the CLI uses: "auto", "full", "power" or "matrix-free".
    pub fn name(self) -> &'static str {
        match self {
            PcaSolver::Auto => "auto",
            PcaSolver::Full => "full",
            PcaSolver::Power => "power",
            PcaSolver::MatrixFree => "matrix-free",
        }
    }

    /// Other spellings [`FromStr`](std::str::FromStr) accepts.
    fn aliases(self) -> &'static [&'static str] {
        match self {
            PcaSolver::MatrixFree => &["matrix_free", "matrixfree"],
            _ => &[],
        }
    }
}

impl std::fmt::Display for PcaSolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for PcaSolver {
    type Err = Error;

    /// Parses a [`PcaSolver::name`] (also "matrix_free"), ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self> {
        parse_choice(
            "solver",
            "PCA solver",
            s,
            &PcaSolver::ALL,
            |v| v.name(),
            |v| v.aliases(),
        )
    }
}

/// PCA parameters (a builder); validated when fitting.
///
/// Defaults: `center = true`, `whiten = false`, `standardize = false`, `solver = Auto`,
/// `tol = 1e-5` (power iteration: residual ‖S·v − λv‖ relative to λ₁; S·V in f32 puts a
/// floor near 1e-6 under it), `max_iter = 1000`,
/// `seed = 0`, `ddof = 1` (S = XcᵀXc / (N − 1), scikit-learn's convention for
/// `explained_variance_`; `ddof = 0` gives the textbook S = XcᵀXc / N).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Pca {
    /// Components to keep.
    pub components: Components,
    /// Scale projections to unit variance (divide by √λ).
    pub whiten: bool,
    /// Subtract the mean before everything (PCA proper); `false` analyses XᵀX/(N−ddof).
    pub center: bool,
    /// Divide each feature by its standard deviation first (PCA is not scale-invariant).
    pub standardize: bool,
    /// Eigen-solver.
    pub solver: PcaSolver,
    /// Power iteration: stop when every residual ‖S·v − λv‖ ≤ tol · λ₁.
    pub tol: f64,
    /// Power iteration: iteration cap (not converging is an error, never a silent result).
    pub max_iter: usize,
    /// Seed of the power iteration's random start (ChaCha8).
    pub seed: u64,
    /// Delta degrees of freedom of the covariance: 0 (÷N) or 1 (÷(N−1)).
    pub ddof: usize,
}

impl Pca {
    /// Parameters keeping `components`, with the defaults above.
    pub fn new(components: Components) -> Self {
        Self {
            components,
            whiten: false,
            center: true,
            standardize: false,
            solver: PcaSolver::Auto,
            tol: 1e-5,
            max_iter: 1000,
            seed: 0,
            ddof: 1,
        }
    }

    /// Sets whitening.
    pub fn whiten(mut self, whiten: bool) -> Self {
        self.whiten = whiten;
        self
    }

    /// Sets centring.
    pub fn center(mut self, center: bool) -> Self {
        self.center = center;
        self
    }

    /// Sets per-feature standardisation.
    pub fn standardize(mut self, standardize: bool) -> Self {
        self.standardize = standardize;
        self
    }

    /// Sets the solver.
    pub fn solver(mut self, solver: PcaSolver) -> Self {
        self.solver = solver;
        self
    }

    /// Sets the power-iteration tolerance.
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    /// Sets the power-iteration cap.
    pub fn max_iter(mut self, max_iter: usize) -> Self {
        self.max_iter = max_iter;
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the covariance's delta degrees of freedom (0 or 1).
    pub fn ddof(mut self, ddof: usize) -> Self {
        self.ddof = ddof;
        self
    }

    /// Checks the parameters against data of `n` rows and `d` features.
    pub fn validate(&self, n: usize, d: usize) -> Result<()> {
        if n < 2 {
            return Err(Error::invalid(
                "data",
                format!("PCA needs at least 2 samples, got {n}"),
            ));
        }
        match self.components {
            Components::Count(m) if m == 0 || m > n.min(d) => {
                return Err(Error::invalid(
                    "components",
                    format!("must be in 1..=min(N, D) = {}, got {m}", n.min(d)),
                ));
            }
            Components::Fraction(f) if !(f > 0.0 && f <= 1.0) => {
                return Err(Error::invalid(
                    "components",
                    format!("a fraction must be in (0, 1], got {f}"),
                ));
            }
            _ => {}
        }
        if self.ddof > 1 {
            return Err(Error::invalid(
                "ddof",
                format!("must be 0 or 1, got {}", self.ddof),
            ));
        }
        if !(self.tol.is_finite() && self.tol > 0.0) {
            return Err(Error::invalid(
                "tol",
                format!("must be finite and > 0, got {}", self.tol),
            ));
        }
        Error::require_count("max_iter", self.max_iter)?;
        Ok(())
    }
}

/// A fitted PCA model.
///
/// Every value of this type is consistent ([`PcaModel::validate`]): [`Pca::fit`] builds valid
/// models and deserializing (feature `serde`) runs `validate`, so an edited file gives an
/// error, never a model that panics or divides by zero later.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(try_from = "PcaModelFields")
)]
pub struct PcaModel {
    params: Pca,
    solver: PcaSolver,
    n_samples: usize,
    n_features: usize,
    n_components: usize,
    components: Vec<f64>,
    explained_variance: Vec<f64>,
    explained_variance_ratio: Vec<f64>,
    singular_values: Vec<f64>,
    mean: Vec<f64>,
    scale: Vec<f64>,
    noise_variance: f64,
    total_variance: f64,
    n_iter: usize,
}

/// The serialized fields of a [`PcaModel`], before [`PcaModel::validate`] accepts them.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
pub(crate) struct PcaModelFields {
    params: Pca,
    solver: PcaSolver,
    n_samples: usize,
    n_features: usize,
    n_components: usize,
    components: Vec<f64>,
    explained_variance: Vec<f64>,
    explained_variance_ratio: Vec<f64>,
    singular_values: Vec<f64>,
    mean: Vec<f64>,
    scale: Vec<f64>,
    noise_variance: f64,
    total_variance: f64,
    n_iter: usize,
}

#[cfg(feature = "serde")]
impl TryFrom<PcaModelFields> for PcaModel {
    type Error = Error;

    fn try_from(f: PcaModelFields) -> Result<Self> {
        let model = PcaModel {
            params: f.params,
            solver: f.solver,
            n_samples: f.n_samples,
            n_features: f.n_features,
            n_components: f.n_components,
            components: f.components,
            explained_variance: f.explained_variance,
            explained_variance_ratio: f.explained_variance_ratio,
            singular_values: f.singular_values,
            mean: f.mean,
            scale: f.scale,
            noise_variance: f.noise_variance,
            total_variance: f.total_variance,
            n_iter: f.n_iter,
        };
        model.validate()?;
        Ok(model)
    }
}

/// Rows per block of the moment and covariance partials: bounds every f32 sum.
const MOMENT_BLOCK_ROWS: usize = 1024;
/// What the per-block partials of one pass may take on the device.
const PARTIALS_TARGET_BYTES: u64 = 64 << 20;

/// Column statistics of the data, f64.
struct Moments {
    mean: Vec<f64>,
    var: Vec<f64>,
}

/// Per-feature mean and population variance, from per-block shifted sums combined in f64.
fn column_moments(gpu: &Gpu, x: &GpuMatrix) -> Result<Moments> {
    let (n, d) = (x.n_rows(), x.n_features());
    let shift: Vec<f32> = rows::read_rows(gpu, x, &[0])?;
    let (offsets, n_blocks) = block_offsets(x.chunks(), MOMENT_BLOCK_ROWS);
    let (s1, s2) = gpu.scoped("PCA column moments", || {
        let shift_buf = gpu.buffer_from("moment shift", &shift, wgpu::BufferUsages::empty());
        let bytes = (n_blocks * d * 4) as u64;
        let p1 = gpu.buffer_zeroed("partial column sums", bytes);
        let p2 = gpu.buffer_zeroed("partial column sums of squares", bytes);
        let mut batch = Batch::new(gpu, "column moments");
        for (chunk, &offset) in x.chunks().iter().zip(&offsets) {
            reduce::column_moments(
                gpu,
                &mut batch,
                chunk,
                d,
                MOMENT_BLOCK_ROWS,
                offset,
                &shift_buf,
                &p1,
                &p2,
            )?;
        }
        let h1 = batch.read(&p1, 0, bytes);
        let h2 = batch.read(&p2, 0, bytes);
        let back = batch.finish()?;
        Ok((back.f32s(h1), back.f32s(h2)))
    })?;
    let mut sum = vec![0.0f64; d];
    let mut sum_sq = vec![0.0f64; d];
    for b in 0..n_blocks {
        for j in 0..d {
            sum[j] += s1[b * d + j] as f64;
            sum_sq[j] += s2[b * d + j] as f64;
        }
    }
    let nf = n as f64;
    let mean = (0..d).map(|j| shift[j] as f64 + sum[j] / nf).collect();
    let var = (0..d)
        .map(|j| (sum_sq[j] / nf - (sum[j] / nf).powi(2)).max(0.0))
        .collect();
    Ok(Moments { mean, var })
}

/// First global block of each chunk for blocks of `block_rows`, and the total.
fn block_offsets(chunks: &[Chunk], block_rows: usize) -> (Vec<usize>, usize) {
    let mut offsets = Vec::with_capacity(chunks.len());
    let mut total = 0;
    for c in chunks {
        offsets.push(total);
        total += c.n_rows.div_ceil(block_rows);
    }
    (offsets, total)
}

/// Σ over blocks of the per-block `cols_a x cols_b` partials in `partials`, read back.
fn fold_partials(
    gpu: &Gpu,
    batch: &mut Batch<'_>,
    partials: &wgpu::Buffer,
    n_blocks: usize,
    n_cols: usize,
) -> Result<crate::gpu::kernel::ReadHandle> {
    let totals = gpu.buffer_zeroed("folded partials", (n_cols * 4) as u64);
    reduce::sum_partial_columns_f32(gpu, batch, partials, n_blocks, n_cols, &totals)?;
    Ok(batch.read(&totals, 0, (n_cols * 4) as u64))
}

/// Rows per block of the cross-product partials: no f32 partial sums more rows than this.
const GRAM_BLOCK_ROWS: usize = 4096;

/// A run of whole blocks of one chunk, dispatched as one piece.
struct RowRange {
    chunk: usize,
    first: usize,
    rows: usize,
}

/// Splits the rows of `x` into rounds of at most `blocks_per_round` blocks of `block_rows`
/// rows (blocks never straddle chunks). Each round's partials fit the device budget; rounds are
/// combined in f64 on the host, so nothing is summed in f32 over more than one block.
fn rounds(x: &GpuMatrix, block_rows: usize, blocks_per_round: usize) -> Vec<Vec<RowRange>> {
    let mut out: Vec<Vec<RowRange>> = vec![Vec::new()];
    let mut in_round = 0;
    for (i, c) in x.chunks().iter().enumerate() {
        let mut first = 0;
        while first < c.n_rows {
            if in_round == blocks_per_round {
                out.push(Vec::new());
                in_round = 0;
            }
            let blocks = (c.n_rows - first)
                .div_ceil(block_rows)
                .min(blocks_per_round - in_round);
            let rows = (blocks * block_rows).min(c.n_rows - first);
            out.last_mut().expect("one round").push(RowRange {
                chunk: i,
                first,
                rows,
            });
            in_round += blocks;
            first += rows;
        }
    }
    out
}

/// Σ over all rows of (X − a)ᵀ(B − b), (a_cols x b_cols, f64): per-block partials on the
/// device, folded per round with Kahan sums, rounds added in f64. `b_rows` gives, for a chunk,
/// the buffer holding its B rows (`None`: B = X itself, and only the upper triangle is formed,
/// mirrored here).
fn gram_over_rows(
    gpu: &Gpu,
    x: &GpuMatrix,
    a_shift: &wgpu::Buffer,
    b_cols: usize,
    b_rows: Option<&[wgpu::Buffer]>,
    b_shift: &wgpu::Buffer,
) -> Result<Vec<f64>> {
    let d = x.n_features();
    let cols = d * b_cols;
    // The forced chunk size (tests) also shrinks the rounds, so small data exercise several.
    let budget = gpu.chunk_byte_limit().min(PARTIALS_TARGET_BYTES);
    let blocks_per_round = ((budget / (cols as u64 * 4)).max(1) as usize).min(1 << 16);
    let upper_only = b_rows.is_none();
    let mut total = vec![0.0f64; cols];
    let partials = gpu.scoped("cross-product partials", || {
        Ok(gpu.buffer_zeroed(
            "cross-product partials",
            (blocks_per_round * cols * 4) as u64,
        ))
    })?;
    for round in rounds(x, GRAM_BLOCK_ROWS, blocks_per_round) {
        let folded = gpu.scoped("cross products", || {
            let mut batch = Batch::new(gpu, "cross products");
            batch.clear(&partials);
            let mut block = 0;
            for r in &round {
                let chunk = &x.chunks()[r.chunk];
                let a = covariance::Operand {
                    bind: chunk.bind(),
                    offset: chunk.x_offset + (r.first * d) as u32,
                    cols: d,
                    shift: a_shift,
                };
                let b = match b_rows {
                    None => covariance::Operand {
                        bind: chunk.bind(),
                        offset: a.offset,
                        cols: d,
                        shift: b_shift,
                    },
                    Some(bufs) => covariance::Operand {
                        bind: Bind::Whole(&bufs[r.chunk]),
                        offset: (r.first * b_cols) as u32,
                        cols: b_cols,
                        shift: b_shift,
                    },
                };
                covariance::gram_partials(
                    gpu,
                    &mut batch,
                    r.rows,
                    &a,
                    &b,
                    GRAM_BLOCK_ROWS,
                    block,
                    upper_only,
                    &partials,
                )?;
                block += r.rows.div_ceil(GRAM_BLOCK_ROWS);
            }
            let h = fold_partials(gpu, &mut batch, &partials, block, cols)?;
            Ok(batch.finish()?.f32s(h))
        })?;
        for (t, v) in total.iter_mut().zip(folded) {
            *t += v as f64;
        }
    }
    if upper_only {
        for i in 0..d {
            for j in 0..i {
                total[i * d + j] = total[j * d + i];
            }
        }
    }
    Ok(total)
}

/// The centred (and scaled) covariance S = Xsᵀ Xs / (N − ddof), D x D row-major f64.
fn covariance_matrix(
    gpu: &Gpu,
    x: &GpuMatrix,
    center: &[f64],
    scale: &[f64],
    ddof: usize,
) -> Result<Vec<f64>> {
    let (n, d) = (x.n_rows(), x.n_features());
    let shift: Vec<f32> = center.iter().map(|&v| v as f32).collect();
    let shift = gpu.scoped("covariance shift", || {
        Ok(gpu.buffer_from("covariance shift", &shift, wgpu::BufferUsages::empty()))
    })?;
    let mut s = gram_over_rows(gpu, x, &shift, d, None, &shift)?;
    let denom = (n - ddof) as f64;
    for i in 0..d {
        for j in 0..d {
            s[i * d + j] /= denom * scale[i] * scale[j];
        }
    }
    Ok(s)
}

/// Fresh random rows in [−1, 1), made orthonormal.
fn random_orthonormal(rng: &mut ChaCha8Rng, p: usize, d: usize) -> Result<Vec<f64>> {
    let mut v: Vec<f64> = (0..p * d).map(|_| rng.random_range(-1.0..1.0)).collect();
    linalg::orthonormalize_rows(&mut v, p, d)?;
    Ok(v)
}

/// Orthonormalises `w` (p rows of d) in place; directions S annihilates (rank below p) are
/// refilled with random ones, which leaves the wanted leading subspace untouched.
fn orthonormalize_or_refill(w: &mut [f64], p: usize, d: usize, rng: &mut ChaCha8Rng) -> Result<()> {
    if linalg::orthonormalize_rows(w, p, d).is_ok() {
        return Ok(());
    }
    let norm = w.iter().map(|v| v * v).sum::<f64>().sqrt().max(1.0);
    for v in w.iter_mut() {
        *v += 1e-6 * norm * rng.random_range(-1.0..1.0);
    }
    linalg::orthonormalize_rows(w, p, d)
}

/// Block power iteration with Rayleigh–Ritz. `apply` maps p row vectors V (p x d) to the
/// rows of S·V (p x d). Returns the top `m` Ritz values, vectors (m x d) and iterations.
fn subspace_iteration(
    d: usize,
    m: usize,
    params: &Pca,
    mut apply: impl FnMut(&[f64], usize) -> Result<Vec<f64>>,
) -> Result<(Vec<f64>, Vec<f64>, usize)> {
    let p = d.min((2 * m).max(m + 8));
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let mut v = random_orthonormal(&mut rng, p, d)?;
    let mut residual = f64::INFINITY;
    for it in 1..=params.max_iter {
        let mut w = apply(&v, p)?;
        let (theta, u) = linalg::rayleigh_ritz(&v, &w, p, d)?;
        // S·U = Yᵀ·W with Yᵀ = U·Vᵀ (V has orthonormal rows).
        let scale = theta[0].abs().max(f64::MIN_POSITIVE);
        residual = 0.0f64;
        for i in 0..m {
            let ui = &u[i * d..(i + 1) * d];
            let y: Vec<f64> = (0..p)
                .map(|r| {
                    ui.iter()
                        .zip(&v[r * d..(r + 1) * d])
                        .map(|(a, b)| a * b)
                        .sum()
                })
                .collect();
            let mut norm = 0.0;
            for j in 0..d {
                let su: f64 = (0..p).map(|r| y[r] * w[r * d + j]).sum();
                norm += (su - theta[i] * ui[j]).powi(2);
            }
            residual = residual.max(norm.sqrt() / scale);
        }
        if residual <= params.tol {
            return Ok((theta[..m].to_vec(), u[..m * d].to_vec(), it));
        }
        orthonormalize_or_refill(&mut w, p, d, &mut rng)?;
        v = w;
    }
    Err(Error::NotConverged {
        what: "PCA power iteration",
        residual,
        iterations: params.max_iter,
    })
}

/// W = S·V on the device for S (d x d, f32) already uploaded; V rows p x d.
fn apply_dense(gpu: &Gpu, s: &wgpu::Buffer, d: usize, v: &[f64], p: usize) -> Result<Vec<f64>> {
    let w = gpu.scoped("PCA power iteration", || {
        let weights = transpose_f32(v, p, d);
        let weights = gpu.buffer_from("V transposed", &weights, wgpu::BufferUsages::empty());
        let zeros_in = gpu.buffer_zeroed("no shift", (d * 4) as u64);
        let zeros_out = gpu.buffer_zeroed("no shift", (p * 4) as u64);
        let out = gpu.buffer_zeroed("S·V", (d * p * 4) as u64);
        let mut batch = Batch::new(gpu, "S·V");
        projection::affine_matmul(
            gpu,
            &mut batch,
            Bind::Whole(s),
            0,
            d,
            d,
            p,
            &zeros_in,
            &weights,
            &zeros_out,
            &out,
        )?;
        let h = batch.read(&out, 0, (d * p * 4) as u64);
        Ok(batch.finish()?.f32s(h))
    })?;
    Ok(transpose_f64(&w, d, p))
}

/// W = Xsᵀ(Xs·V)/(N − ddof) on the device, never forming S; Xs = (X − c)/σ.
fn apply_matrix_free(
    gpu: &Gpu,
    x: &GpuMatrix,
    center: &[f64],
    scale: &[f64],
    ddof: usize,
    v: &[f64],
    p: usize,
) -> Result<Vec<f64>> {
    let (n, d) = (x.n_rows(), x.n_features());
    // P = Xs·V = (X − c)·(V/σ)ᵀ, one buffer per chunk.
    let mut vt = vec![0.0f32; d * p];
    for r in 0..p {
        for j in 0..d {
            vt[j * p + r] = (v[r * d + j] / scale[j]) as f32;
        }
    }
    let shift: Vec<f32> = center.iter().map(|&c| c as f32).collect();
    let (shift, zeros_p, projected) = gpu.scoped("matrix-free projection", || {
        let weights = gpu.buffer_from("V/σ transposed", &vt, wgpu::BufferUsages::empty());
        let shift = gpu.buffer_from("centre", &shift, wgpu::BufferUsages::empty());
        let zeros_p = gpu.buffer_zeroed("no shift", (p * 4) as u64);
        let mut batch = Batch::new(gpu, "X·V");
        let mut projected = Vec::new();
        for chunk in x.chunks() {
            let out = gpu.buffer_zeroed("X·V", (chunk.n_rows * p * 4) as u64);
            projection::affine_matmul(
                gpu,
                &mut batch,
                chunk.bind(),
                chunk.x_offset,
                chunk.n_rows,
                d,
                p,
                &shift,
                &weights,
                &zeros_p,
                &out,
            )?;
            projected.push(out);
        }
        batch.finish()?;
        Ok((shift, zeros_p, projected))
    })?;
    let w = gram_over_rows(gpu, x, &shift, p, Some(&projected), &zeros_p)?;
    // w is d x p: row j of Xcᵀ P; divide by σ_j and N − ddof, then rows per vector.
    let denom = (n - ddof) as f64;
    let mut out = vec![0.0f64; p * d];
    for j in 0..d {
        for r in 0..p {
            out[r * d + j] = w[j * p + r] / scale[j] / denom;
        }
    }
    Ok(out)
}

fn transpose_f32(v: &[f64], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0f32; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = v[r * cols + c] as f32;
        }
    }
    t
}

fn transpose_f64(v: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0f64; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = v[r * cols + c] as f64;
        }
    }
    t
}

/// How many components a variance fraction asks for, from the explained-variance ratios of
/// all min(N, D) components (descending).
///
/// scikit-learn's rule, `searchsorted(cumsum(ratios), f, side="right") + 1`: one more than
/// the number of cumulative ratios ≤ f, i.e. the fewest components whose cumulative ratio
/// goes strictly *past* f. The result is capped at `ratios.len()`, and f ≥ 1 keeps all of
/// them: rounding can leave the cumulative sum a hair below 1 (or above 1 before the last
/// component when the trailing eigenvalues are zero), and 100% must mean "everything".
pub fn components_for_fraction(ratios: &[f64], fraction: f64) -> usize {
    if fraction >= 1.0 {
        return ratios.len();
    }
    let mut cumulative = 0.0;
    let mut at_or_below = 0;
    for r in ratios {
        cumulative += r;
        if cumulative <= fraction {
            at_or_below += 1;
        } else {
            break;
        }
    }
    (at_or_below + 1).min(ratios.len())
}

/// The covariance S = (X − μ)ᵀ(X − μ)/(N − ddof) of host or device data, computed on the
/// device (two passes: means, then centred cross products) and returned as D x D row-major
/// f64. Errors: fewer than 2 rows, `ddof` > 1, a D x D matrix over the device's binding limit.
pub fn covariance(gpu: &Gpu, x: &impl GpuInput, ddof: usize) -> Result<Vec<f64>> {
    let (n, d) = x.shape();
    Pca::new(Components::Count(1)).ddof(ddof).validate(n, d)?;
    let bytes = (d * d * 4) as u64;
    if bytes > gpu.binding_byte_limit() {
        return Err(Error::DeviceLimit {
            what: format!("the {d} x {d} covariance ({bytes} bytes)"),
            requested: bytes,
            limit_name: "max_storage_buffer_binding_size",
            limit: gpu.binding_byte_limit(),
        });
    }
    let x = x.on_gpu(gpu)?;
    let moments = column_moments(gpu, &x)?;
    covariance_matrix(gpu, &x, &moments.mean, &vec![1.0; d], ddof)
}

impl Pca {
    /// The solver `Auto` resolves to for this data.
    fn resolve_solver(&self, gpu: &Gpu, n: usize, d: usize) -> Result<PcaSolver> {
        let s_bytes = (d * d * 4) as u64;
        let s_fits = s_bytes <= gpu.binding_byte_limit() && s_bytes <= gpu.memory_budget();
        let wants_all = matches!(self.components, Components::Fraction(_));
        let m = match self.components {
            Components::Count(m) => m,
            Components::Fraction(_) => n.min(d),
        };
        let solver = match self.solver {
            PcaSolver::Auto if !s_fits => PcaSolver::MatrixFree,
            PcaSolver::Auto if wants_all || d <= 256 || 4 * m > d => PcaSolver::Full,
            PcaSolver::Auto => PcaSolver::Power,
            other => other,
        };
        if wants_all && solver != PcaSolver::Full {
            return Err(Error::invalid(
                "components",
                "a variance fraction needs the whole spectrum: use PcaSolver::Full or Components::Count",
            ));
        }
        if solver != PcaSolver::MatrixFree && !s_fits {
            return Err(Error::DeviceLimit {
                what: format!("the {d} x {d} covariance ({s_bytes} bytes)"),
                requested: s_bytes,
                limit_name: "max_storage_buffer_binding_size",
                limit: gpu.binding_byte_limit().min(gpu.memory_budget()),
            });
        }
        Ok(solver)
    }

    /// Fits on host or device data.
    ///
    /// Errors: invalid parameters, fewer than 2 samples, a non-converging power iteration
    /// ([`Error::NotConverged`]), whitening a component of zero variance, and the GPU errors.
    pub fn fit(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<PcaModel> {
        let (n, d) = x.shape();
        self.validate(n, d)?;
        let solver = self.resolve_solver(gpu, n, d)?;
        let x = x.on_gpu(gpu)?;
        let moments = column_moments(gpu, &x)?;
        let center: Vec<f64> = if self.center {
            moments.mean.clone()
        } else {
            vec![0.0; d]
        };
        let scale: Vec<f64> = if self.standardize {
            moments
                .var
                .iter()
                .map(|&v| if v > 0.0 { v.sqrt() } else { 1.0 })
                .collect()
        } else {
            vec![1.0; d]
        };
        // trace(S): the second moment about the centre, per feature, scaled.
        let correction = n as f64 / (n - self.ddof) as f64;
        let total_variance: f64 = (0..d)
            .map(|j| {
                (moments.var[j] + (moments.mean[j] - center[j]).powi(2)) * correction
                    / (scale[j] * scale[j])
            })
            .sum();
        // Constant data have no variance to explain: ratios 0 rather than 0/0.
        let ratio_of = |v: f64| {
            if total_variance > 0.0 {
                v / total_variance
            } else {
                0.0
            }
        };
        let rank = n.min(d);
        let (values, vectors, m, n_iter) = match solver {
            PcaSolver::Full | PcaSolver::Auto => {
                let s = covariance_matrix(gpu, &x, &center, &scale, self.ddof)?;
                let (mut values, vectors) = linalg::symmetric_eigen(&s, d)?;
                values.truncate(rank);
                for v in values.iter_mut() {
                    *v = v.max(0.0);
                }
                let m = match self.components {
                    Components::Count(m) => m,
                    Components::Fraction(f) => {
                        let ratio: Vec<f64> = values.iter().map(|&v| ratio_of(v)).collect();
                        components_for_fraction(&ratio, f)
                    }
                };
                (values, vectors[..m * d].to_vec(), m, 0)
            }
            PcaSolver::Power => {
                let m = self.count();
                let s = covariance_matrix(gpu, &x, &center, &scale, self.ddof)?;
                let s32: Vec<f32> = s.iter().map(|&v| v as f32).collect();
                let s_buf = gpu.scoped("uploading the covariance", || {
                    Ok(gpu.buffer_from("covariance", &s32, wgpu::BufferUsages::empty()))
                })?;
                let (values, vectors, it) =
                    subspace_iteration(d, m, self, |v, p| apply_dense(gpu, &s_buf, d, v, p))?;
                (values, vectors, m, it)
            }
            PcaSolver::MatrixFree => {
                let m = self.count();
                let (values, vectors, it) = subspace_iteration(d, m, self, |v, p| {
                    apply_matrix_free(gpu, &x, &center, &scale, self.ddof, v, p)
                })?;
                (values, vectors, m, it)
            }
        };
        let mut components = vectors;
        linalg::flip_signs(&mut components, m, d);
        let explained_variance: Vec<f64> = values[..m].iter().map(|&v| v.max(0.0)).collect();
        let kept: f64 = explained_variance.iter().sum();
        // Noise: the mean of the eigenvalues left out (scikit-learn's noise_variance_).
        let noise_variance = if m < rank {
            let rest = if values.len() == rank {
                values[m..].iter().sum::<f64>()
            } else {
                total_variance - kept
            };
            (rest / (rank - m) as f64).max(0.0)
        } else {
            0.0
        };
        if self.whiten {
            let top = explained_variance[0];
            if let Some(i) = explained_variance
                .iter()
                .position(|&v| v <= 1e-12 * top || v <= 0.0)
            {
                return Err(Error::invalid(
                    "whiten",
                    format!(
                        "component {i} has zero variance ({:e}); whitening would divide by zero: keep fewer components",
                        explained_variance[i]
                    ),
                ));
            }
        }
        let denom = (n - self.ddof) as f64;
        Ok(PcaModel {
            params: self.clone(),
            solver,
            n_samples: n,
            n_features: d,
            n_components: m,
            explained_variance_ratio: explained_variance.iter().map(|&v| ratio_of(v)).collect(),
            singular_values: explained_variance
                .iter()
                .map(|v| (v * denom).sqrt())
                .collect(),
            explained_variance,
            components,
            mean: center,
            scale,
            noise_variance,
            total_variance,
            n_iter,
        })
    }

    /// Fits, then projects the training data: (model, N x M projections).
    pub fn fit_transform(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<(PcaModel, Vec<f32>)> {
        let xg = x.on_gpu(gpu)?;
        let model = self.fit(gpu, &*xg)?;
        let z = model.transform(gpu, &*xg)?;
        Ok((model, z))
    }

    fn count(&self) -> usize {
        match self.components {
            Components::Count(m) => m,
            Components::Fraction(_) => unreachable!("resolve_solver sends fractions to Full"),
        }
    }
}

impl PcaModel {
    /// Principal axes, M x D row-major, orthonormal rows, by decreasing variance.
    pub fn components(&self) -> &[f64] {
        &self.components
    }

    /// Number of components M.
    pub fn n_components(&self) -> usize {
        self.n_components
    }

    /// Number of features D.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Number of training samples N.
    pub fn n_samples(&self) -> usize {
        self.n_samples
    }

    /// λ₁ … λ_M, the variance along each component.
    pub fn explained_variance(&self) -> &[f64] {
        &self.explained_variance
    }

    /// λᵢ / trace(S).
    pub fn explained_variance_ratio(&self) -> &[f64] {
        &self.explained_variance_ratio
    }

    /// √(λᵢ (N − ddof)): the singular values of the centred (scaled) data.
    pub fn singular_values(&self) -> &[f64] {
        &self.singular_values
    }

    /// The centre subtracted before projecting (zeros when `center` was off).
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// Per-feature divisor (standard deviations with `standardize`, else ones).
    pub fn scale(&self) -> &[f64] {
        &self.scale
    }

    /// Mean variance of the discarded directions (scikit-learn's `noise_variance_`).
    pub fn noise_variance(&self) -> f64 {
        self.noise_variance
    }

    /// trace(S): the total variance of the (scaled) data.
    pub fn total_variance(&self) -> f64 {
        self.total_variance
    }

    /// The solver that ran (`Auto` resolved).
    pub fn solver(&self) -> PcaSolver {
        self.solver
    }

    /// Power-iteration steps taken (0 for the full eigendecomposition).
    pub fn n_iter(&self) -> usize {
        self.n_iter
    }

    /// The parameters the model was fitted with.
    pub fn params(&self) -> &Pca {
        &self.params
    }

    /// Checks that the parts of the model fit together: 1 ≤ M ≤ min(N, D) components of
    /// D ≥ 1 features from N ≥ 2 samples, parameters that [`Pca::validate`] accepts for
    /// that data (and a component count that agrees with them), M x D finite components,
    /// M finite variances ≥ 0 (> 0 when whitening, which divides by them), M finite ratios
    /// and singular values, D finite means, D finite scales > 0 (they are divided by), and
    /// a finite total and noise variance ≥ 0.
    ///
    /// Every model is checked when it is built or deserialized, so this only fails for
    /// [`Error::InvalidModel`] reasons found in edited serialized data.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Error::InvalidModel {
            kind: "PCA",
            reason,
        };
        let (m, d, n) = (self.n_components, self.n_features, self.n_samples);
        if d == 0 || m == 0 || m > d || n < 2 || m > n {
            return Err(bad(format!(
                "{m} components of {d} features fitted on {n} samples"
            )));
        }
        self.params
            .validate(n, d)
            .map_err(|e| bad(format!("parameters: {e}")))?;
        if let Components::Count(wanted) = self.params.components {
            if wanted != m {
                return Err(bad(format!(
                    "{m} components, but the parameters ask for {wanted}"
                )));
            }
        }
        let lengths = [
            ("components", self.components.len(), m * d),
            ("explained_variance", self.explained_variance.len(), m),
            (
                "explained_variance_ratio",
                self.explained_variance_ratio.len(),
                m,
            ),
            ("singular_values", self.singular_values.len(), m),
            ("mean", self.mean.len(), d),
            ("scale", self.scale.len(), d),
        ];
        for (name, found, expected) in lengths {
            if found != expected {
                return Err(bad(format!(
                    "{name} has {found} values, expected {expected} for {m} components of \
                     {d} features"
                )));
            }
        }
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        for (name, values) in [
            ("components", &self.components),
            ("mean", &self.mean),
            ("explained_variance_ratio", &self.explained_variance_ratio),
            ("singular_values", &self.singular_values),
        ] {
            if !finite(values) {
                return Err(bad(format!("non-finite {name}")));
            }
        }
        if !self.scale.iter().all(|s| s.is_finite() && *s > 0.0) {
            return Err(bad("scale values must be finite and > 0".into()));
        }
        if !self
            .explained_variance
            .iter()
            .all(|v| v.is_finite() && *v >= 0.0)
        {
            return Err(bad("explained variances must be finite and >= 0".into()));
        }
        if self.params.whiten && self.explained_variance.iter().any(|v| *v <= 0.0) {
            return Err(bad(
                "a whitening model with a zero-variance component".into()
            ));
        }
        for (name, v) in [
            ("total_variance", self.total_variance),
            ("noise_variance", self.noise_variance),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(format!("{name} {v} is not finite and >= 0")));
            }
        }
        Ok(())
    }

    fn whiten_factor(&self, i: usize) -> f64 {
        if self.params.whiten {
            self.explained_variance[i].sqrt()
        } else {
            1.0
        }
    }

    /// Runs `(in − in_shift)·weights + out_shift` over every row of `x` into new chunks.
    fn affine(
        &self,
        gpu: &Gpu,
        x: &GpuMatrix,
        weights: &[f32],
        in_shift: &[f32],
        out_shift: &[f32],
        what: &str,
    ) -> Result<GpuMatrix> {
        let (k, c) = (x.n_features(), out_shift.len());
        let (w, si, so) = gpu.scoped(what, || {
            Ok((
                gpu.buffer_from("weights", weights, wgpu::BufferUsages::empty()),
                gpu.buffer_from("input shift", in_shift, wgpu::BufferUsages::empty()),
                gpu.buffer_from("output shift", out_shift, wgpu::BufferUsages::empty()),
            ))
        })?;
        x.map_rows(gpu, c, what, |batch, chunk, first, rows, out| {
            projection::affine_matmul(
                gpu,
                batch,
                chunk.bind(),
                chunk.x_offset + (first * k) as u32,
                rows,
                k,
                c,
                &si,
                &w,
                &so,
                out,
            )
        })
    }

    /// Projections Z = ((X − μ)/σ)·Uᵀ (÷√λ when whitening), N x M, left on the device.
    pub fn transform_gpu(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<GpuMatrix> {
        let (_, d) = x.shape();
        if d != self.n_features {
            return Err(Error::FeatureMismatch {
                expected: self.n_features,
                found: d,
            });
        }
        let (m, d) = (self.n_components, self.n_features);
        let mut weights = vec![0.0f32; d * m];
        for i in 0..m {
            let f = self.whiten_factor(i);
            for j in 0..d {
                weights[j * m + i] = (self.components[i * d + j] / self.scale[j] / f) as f32;
            }
        }
        let shift: Vec<f32> = self.mean.iter().map(|&v| v as f32).collect();
        let xg = x.on_gpu(gpu)?;
        self.affine(gpu, &xg, &weights, &shift, &vec![0.0; m], "PCA transform")
    }

    /// Projections of every row, N x M row-major.
    pub fn transform(&self, gpu: &Gpu, x: &impl GpuInput) -> Result<Vec<f32>> {
        self.transform_gpu(gpu, x)?.to_host(gpu)
    }

    /// Reconstructions X̂ = (Z·(√λ)U)·σ + μ from projections (N x M), left on the device.
    pub fn inverse_transform_gpu(&self, gpu: &Gpu, z: &impl GpuInput) -> Result<GpuMatrix> {
        let (_, m) = z.shape();
        if m != self.n_components {
            return Err(Error::FeatureMismatch {
                expected: self.n_components,
                found: m,
            });
        }
        let d = self.n_features;
        let mut weights = vec![0.0f32; m * d];
        for i in 0..m {
            let f = self.whiten_factor(i);
            for j in 0..d {
                weights[i * d + j] = (self.components[i * d + j] * f * self.scale[j]) as f32;
            }
        }
        let shift: Vec<f32> = self.mean.iter().map(|&v| v as f32).collect();
        let zg = z.on_gpu(gpu)?;
        self.affine(
            gpu,
            &zg,
            &weights,
            &vec![0.0; m],
            &shift,
            "PCA inverse transform",
        )
    }

    /// Reconstructions of every row, N x D row-major.
    pub fn inverse_transform(&self, gpu: &Gpu, z: &impl GpuInput) -> Result<Vec<f32>> {
        self.inverse_transform_gpu(gpu, z)?.to_host(gpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two components of three features from ten samples: a valid model.
    fn valid() -> PcaModel {
        PcaModel {
            params: Pca::new(Components::Count(2)).solver(PcaSolver::Full),
            solver: PcaSolver::Full,
            n_samples: 10,
            n_features: 3,
            n_components: 2,
            components: vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0],
            explained_variance: vec![2.0, 1.0],
            explained_variance_ratio: vec![0.5, 0.25],
            singular_values: vec![18f64.sqrt(), 3.0],
            mean: vec![0.5, -1.0, 2.0],
            scale: vec![1.0, 1.0, 1.0],
            noise_variance: 1.0,
            total_variance: 4.0,
            n_iter: 0,
        }
    }

    /// The reason of the `InvalidModel` error of `edit` applied to a valid model.
    fn reason(edit: impl FnOnce(&mut PcaModel)) -> String {
        let mut m = valid();
        edit(&mut m);
        match m.validate() {
            Err(Error::InvalidModel {
                kind: "PCA",
                reason,
            }) => reason,
            other => panic!("expected an inconsistent PCA model, got {other:?}"),
        }
    }

    #[test]
    fn valid_models_pass() {
        valid().validate().unwrap();
        let mut fraction = valid();
        fraction.params.components = Components::Fraction(0.7);
        fraction.validate().unwrap();
    }

    #[test]
    fn every_inconsistency_is_reported() {
        assert!(reason(|m| m.n_features = 0).contains("of 0 features"));
        assert!(reason(|m| m.n_components = 0).contains("0 components"));
        assert!(reason(|m| m.n_components = 4).contains("4 components of 3"));
        assert!(reason(|m| m.n_samples = 1).contains("on 1 samples"));
        assert!(reason(|m| m.params.ddof = 2).contains("parameters"));
        assert!(reason(|m| m.params.components = Components::Count(1)).contains("ask for 1"));
        assert!(reason(|m| m.components.truncate(5)).contains("components has 5"));
        assert!(reason(|m| m.explained_variance.push(0.5)).contains("explained_variance has 3"));
        assert!(reason(|m| m.explained_variance_ratio.clear())
            .contains("explained_variance_ratio has 0"));
        assert!(reason(|m| m.singular_values.clear()).contains("singular_values has 0"));
        assert!(reason(|m| m.mean.truncate(1)).contains("mean has 1"));
        assert!(reason(|m| m.scale.push(1.0)).contains("scale has 4"));
        assert!(reason(|m| m.components[2] = f64::NAN).contains("non-finite components"));
        assert!(reason(|m| m.mean[0] = f64::INFINITY).contains("non-finite mean"));
        assert!(reason(|m| m.explained_variance_ratio[0] = f64::NAN).contains("ratio"));
        assert!(reason(|m| m.singular_values[1] = f64::NAN).contains("singular"));
        assert!(reason(|m| m.scale[1] = 0.0).contains("scale"));
        assert!(reason(|m| m.explained_variance[1] = -1.0).contains("explained variances"));
        let whitening = |m: &mut PcaModel| {
            m.params.whiten = true;
            m.explained_variance[1] = 0.0;
        };
        assert!(reason(whitening).contains("whitening"));
        assert!(reason(|m| m.total_variance = f64::NAN).contains("total_variance"));
        assert!(reason(|m| m.noise_variance = -0.5).contains("noise_variance"));
    }

    #[test]
    fn solver_names_round_trip() {
        for solver in PcaSolver::ALL {
            assert_eq!(solver.name().parse::<PcaSolver>().unwrap(), solver);
            assert_eq!(solver.to_string(), solver.name());
        }
        assert_eq!(
            "matrix_free".parse::<PcaSolver>().unwrap(),
            PcaSolver::MatrixFree
        );
        assert_eq!("FULL".parse::<PcaSolver>().unwrap(), PcaSolver::Full);
        let e = "svd".parse::<PcaSolver>().unwrap_err();
        assert!(
            matches!(e, Error::InvalidParameter { name: "solver", .. }),
            "{e}"
        );
    }
}
