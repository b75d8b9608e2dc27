//! What a bench reports: the cost model (the least work of each step and fit) and one
//! [`Measurement`], in the keys the peers' script (`benches/peers/peers.py`) writes too.

use crate::gpu::profile::{Profile, Work};
use crate::gpu::Ceilings;

use super::IMPLEMENTATION;

/// The least work of a step or a fit named as in `bench` (`it` iterations where it
/// iterates; `k` clusters, components or principal components).
pub fn cost(name: &str, n: usize, d: usize, k: usize, it: usize) -> Option<Work> {
    let (n, d, k, it) = (n as f64, d as f64, k as f64, it as f64);
    let read = 4.0 * n * d;
    Some(match name {
        "assign" => Work {
            flops: 2.0 * n * d * k,
            bytes: read,
        },
        "centroid-update" => Work {
            flops: it * n * d,
            bytes: it * (read + 4.0 * n),
        },
        "covariance" | "pca" => Work {
            flops: n * d * (d + 1.0),
            bytes: read,
        },
        "kmeans" => Work {
            flops: it * 2.0 * n * d * k,
            bytes: it * read,
        },
        // K − 1 steps of 2 + ⌊ln K⌋ trials and one update, a pass over the rows each.
        "kmeans-plusplus" => Work {
            flops: k * (3.0 + k.ln().floor()) * 2.0 * n * d,
            bytes: k * (3.0 + k.ln().floor()) * read,
        },
        // Each row against the ≈ 1 + 5·2K candidates once (ℓ = 2K, 5 rounds), 6 passes.
        "kmeans-parallel" => Work {
            flops: (1.0 + 10.0 * k) * 2.0 * n * d,
            bytes: 6.0 * read,
        },
        "gmm-estep-diag" => Work {
            flops: 3.0 * n * k * d,
            bytes: read,
        },
        "gmm-mstep-diag" => Work {
            flops: 4.0 * n * k * d,
            bytes: read,
        },
        "gmm-estep-full" => Work {
            flops: n * k * (d * d + 2.0 * d),
            bytes: read,
        },
        "gmm-mstep-full" => Work {
            flops: n * k * (d * d + 3.0 * d),
            bytes: read,
        },
        "gmm-diag" => Work {
            flops: it * 7.0 * n * k * d,
            bytes: it * read,
        },
        "gmm-full" => Work {
            flops: it * n * k * (2.0 * d * d + 5.0 * d),
            bytes: it * read,
        },
        _ => return None,
    })
}

/// One measurement, with the keys the peers' script writes too.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Measurement {
    /// Who ran it: [`IMPLEMENTATION`] here.
    #[cfg_attr(feature = "serde", serde(rename = "impl"))]
    pub implementation: String,
    /// `"kernel"` or `"fit"`.
    pub kind: String,
    /// The kernel or fit name.
    pub kernel: String,
    /// Rows.
    pub n: usize,
    /// Features.
    pub d: usize,
    /// Clusters, components or principal components.
    pub k: usize,
    /// Iterations done (1 for a single step). A K-Means fit may stop before the count it
    /// was asked for, when no label changes (see `iterations_requested`).
    pub iterations: usize,
    /// Iterations asked for (1 for a single step).
    #[cfg_attr(feature = "serde", serde(default))]
    pub iterations_requested: usize,
    /// Seconds (a kernel's GPU time; a fit's wall-clock time from host data).
    pub seconds: f64,
    /// `seconds` over the iterations done: what comparisons of iterative fits divide by.
    #[cfg_attr(feature = "serde", serde(default))]
    pub seconds_per_iteration: f64,
    /// A fit's GPU time: the sum of its kernels' times in a profiled run of the same fit
    /// (`bench --profile`); `None` otherwise.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub gpu_seconds: Option<f64>,
    /// A fit's GPU-busy share: `gpu_seconds` over the profiled run's wall-clock time (from
    /// host data to the result, like `seconds`). Near 1, the GPU never waits for the host; far
    /// below, the host (uploads, readbacks, host algebra, submission) sets the pace. Only with
    /// timestamps is it meaningful (see `busy_timing`).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub busy: Option<f64>,
    /// The clock of the profiled run behind `busy`: `timestamps`, or `wall-clock` (each
    /// dispatch submitted and waited for alone, which inflates the wall time).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub busy_timing: Option<String>,
    /// What the host did in that profiled run ([`HostActivity`](crate::gpu::HostActivity)):
    /// submissions, readbacks (at most one per iteration is the design) and the seconds it
    /// sat blocked on the device. Where `busy` is low, a large blocked share with few kernels
    /// means round-trip latency; a small one means host work (uploads, host algebra).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub host: Option<crate::gpu::HostActivity>,
    /// A fit's upload alone: the host matrix copied to the device (`GpuMatrix::upload`, waited
    /// for); `None` for kernels and for data past the device-memory budget.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub upload_seconds: Option<f64>,
    /// The same fit from that device matrix: what a caller whose data already live on the
    /// device waits for, the figure to hold against a peer's device-only time (the PyTorch
    /// loop's `seconds_device`); `None` where `upload_seconds` is.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub resident_seconds: Option<f64>,
    /// FLOPs of the cost model.
    pub flops: f64,
    /// Bytes of the cost model.
    pub bytes: f64,
    /// Achieved GFLOP/s.
    pub gflops: f64,
    /// Achieved GB/s.
    pub gbps: f64,
    /// The adapter's measured FMA ceiling.
    pub peak_gflops: f64,
    /// The adapter's measured copy ceiling.
    pub peak_gbps: f64,
    /// Roofline bound time over the measured time.
    pub efficiency: f64,
    /// `"compute"` or `"memory"`: the ceiling that bounds the work.
    pub bound: String,
    /// The adapter's name.
    pub adapter: String,
    /// How the time was taken: `timestamps`, `wall-clock` (per dispatch) or `fit wall-clock`.
    pub timing: String,
    /// What the data were (`blobs` or the input file's name).
    pub data: String,
    /// Variant details (e.g. the covariance type or the PCA solver).
    pub detail: String,
}

impl Measurement {
    /// A measurement of `iterations` done (of `requested` asked for) in `seconds`, its rates
    /// and efficiency from `work` against `ceilings`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        kind: &str,
        name: &str,
        (n, d, k, iterations, requested): (usize, usize, usize, usize, usize),
        seconds: f64,
        work: Work,
        ceilings: &Ceilings,
        timing: &str,
        data: &str,
        detail: String,
    ) -> Self {
        let (bound, least) = work.roofline(ceilings);
        let per = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
        Self {
            implementation: IMPLEMENTATION.into(),
            kind: kind.into(),
            kernel: name.into(),
            n,
            d,
            k,
            iterations,
            iterations_requested: requested,
            seconds,
            seconds_per_iteration: seconds / iterations.max(1) as f64,
            gpu_seconds: None,
            busy: None,
            busy_timing: None,
            host: None,
            upload_seconds: None,
            resident_seconds: None,
            flops: work.flops,
            bytes: work.bytes,
            gflops: per(work.flops) / 1e9,
            gbps: per(work.bytes) / 1e9,
            peak_gflops: ceilings.peak_gflops,
            peak_gbps: ceilings.peak_gbps,
            efficiency: per(least),
            bound: bound.name().into(),
            adapter: ceilings.adapter.clone(),
            timing: timing.into(),
            data: data.into(),
            detail,
        }
    }

    /// Adds the GPU time and busy share of `profile`, a profiled run of the same fit.
    pub(super) fn with_busy(mut self, profile: &Profile) -> Self {
        let gpu = profile.gpu_seconds();
        self.gpu_seconds = Some(gpu);
        self.busy = (profile.wall_seconds > 0.0).then(|| gpu / profile.wall_seconds);
        self.busy_timing = Some(profile.clock.name().to_string());
        self.host = Some(profile.host);
        self
    }
}
