//! `wgpu-unsupervised info [--all] [--ceilings] [--json]`
//!
//! Prints the adapter the program would use (name, backend, device type, driver) and the
//! device limits that matter to the crate. `--all` lists every adapter the program can use
//! instead, best first, numbered as `--adapter N` selects them (`--json`: `{"adapters":[..]}`,
//! each entry the fields below plus `index`); no device is opened. `--json` prints the library's
//! [`wgpu_unsupervised::GpuInfo`] on one line (keys `name`, `backend`, `device_type`,
//! `driver` and the limits). `--ceilings` also measures the adapter's FMA throughput and
//! copy bandwidth ([`wgpu_unsupervised::Gpu::measure_ceilings`]) and adds them as
//! `peak_gflops` and `peak_gbps`, with how they were taken: `ceilings_timing`
//! (`timestamps` or `wall-clock`), `fma_invocations` (of one FMA dispatch) and
//! `copy_buffer_bytes` (each of the copy's two buffers).

use wgpu_unsupervised::{Gpu, GpuInfo};

use crate::flow::{adapter_options, open_gpu, Human, Outputs, Report};
use crate::CliResult;

/// Arguments of `info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
    /// Also measure the adapter's FMA throughput (GFLOP/s) and copy bandwidth (GB/s) with
    /// short microbenchmarks (well under a second on a software adapter).
    #[arg(long, conflicts_with = "all")]
    ceilings: bool,
    /// List every adapter that can be used (those `--adapter` allows), numbered best first,
    /// instead of opening one.
    #[arg(long)]
    all: bool,
}

/// One entry of `info --all --json`.
#[derive(serde::Serialize)]
struct ListedAdapter<'a> {
    index: usize,
    #[serde(flatten)]
    info: &'a GpuInfo,
}

/// The JSON form of `info --all`.
#[derive(serde::Serialize)]
struct AdapterList<'a> {
    adapters: Vec<ListedAdapter<'a>>,
}

/// `info --all`: every adapter, numbered as `--adapter N` picks them.
fn list_adapters(json: bool) -> CliResult {
    let list = Gpu::adapters(adapter_options()).map_err(crate::flow::adapter_failure)?;
    let mut human = Human::new();
    human.free("adapters, best first (select one with --adapter N or --adapter NAME):");
    for (i, a) in list.iter().enumerate() {
        human.free(format!(
            "  {i}: {} ({}, {}, max binding {} MiB){}",
            a.name,
            a.backend,
            a.device_type,
            a.max_storage_buffer_binding_size >> 20,
            if i == 0 { "  <- the default" } else { "" }
        ));
    }
    let machine = AdapterList {
        adapters: list
            .iter()
            .enumerate()
            .map(|(index, info)| ListedAdapter { index, info })
            .collect(),
    };
    Report::new(&machine, human)?.print(json)
}

/// The JSON form: the adapter's information, plus the ceilings when measured.
#[derive(serde::Serialize)]
struct InfoReport<'a> {
    #[serde(flatten)]
    info: &'a wgpu_unsupervised::GpuInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_gflops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_gbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ceilings_timing: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fma_invocations: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    copy_buffer_bytes: Option<u64>,
}

/// `info`: the adapter and its limits (no input, no outputs: only the report of the flow).
pub fn info(args: InfoArgs) -> CliResult {
    if args.all {
        return list_adapters(args.json);
    }
    let gpu = open_gpu(&Outputs::none())?;
    let info = gpu.info();
    let driver = if info.driver.is_empty() {
        "(not reported)"
    } else {
        info.driver.as_str()
    };
    let mib = |bytes: u64| bytes >> 20;
    let mut human = Human::new();
    human
        .line("adapter", &info.name)
        .line("backend", &info.backend)
        .line("device type", &info.device_type)
        .line("driver", driver)
        .free("limits:")
        .free(format!(
            "  max_storage_buffer_binding_size:       {} bytes ({} MiB)",
            info.max_storage_buffer_binding_size,
            mib(info.max_storage_buffer_binding_size)
        ))
        .free(format!(
            "  max_buffer_size:                       {} bytes ({} MiB)",
            info.max_buffer_size,
            mib(info.max_buffer_size)
        ))
        .free(format!(
            "  max_compute_workgroups_per_dimension:  {}",
            info.max_compute_workgroups_per_dimension
        ))
        .free(format!(
            "  max_compute_invocations_per_workgroup: {}",
            info.max_compute_invocations_per_workgroup
        ))
        .free(format!(
            "  min_storage_buffer_offset_alignment:   {}",
            info.min_storage_buffer_offset_alignment
        ))
        .free(format!(
            "  max_compute_workgroup_storage_size:    {} bytes",
            info.max_compute_workgroup_storage_size
        ))
        .free(format!(
            "  subgroups:                             {}",
            gpu.subgroup_lanes()
                .map_or("none".to_string(), |lanes| format!(
                    "{lanes} lanes at least"
                ))
        ));
    let ceilings = if args.ceilings {
        Some(gpu.measure_ceilings()?)
    } else {
        None
    };
    if let Some(c) = &ceilings {
        human
            .free(format!(
                "ceilings (measured on this adapter, fastest dispatch, {}):",
                c.timing
            ))
            .free(format!(
                "  FMA throughput:                        {:.1} GFLOP/s (an FMA = 2 FLOPs; {} invocations)",
                c.peak_gflops, c.fma_invocations
            ))
            .free(format!(
                "  copy bandwidth:                        {:.1} GB/s (bytes read + written; 2 x {} MiB)",
                c.peak_gbps,
                mib(c.buffer_bytes)
            ));
    }
    let machine = InfoReport {
        info,
        peak_gflops: ceilings.as_ref().map(|c| c.peak_gflops),
        peak_gbps: ceilings.as_ref().map(|c| c.peak_gbps),
        ceilings_timing: ceilings.as_ref().map(|c| c.timing.as_str()),
        fma_invocations: ceilings.as_ref().map(|c| c.fma_invocations),
        copy_buffer_bytes: ceilings.as_ref().map(|c| c.buffer_bytes),
    };
    Report::new(&machine, human)?.print(args.json)
}
