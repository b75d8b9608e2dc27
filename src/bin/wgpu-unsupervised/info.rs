//! `wgpu-unsupervised info [--json]`
//!
//! Prints the adapter the program would use (name, backend, device type, driver) and the
//! device limits that matter to the crate. `--json` prints the library's
//! [`wgpu_unsupervised::GpuInfo`] on one line (keys `name`, `backend`, `device_type`,
//! `driver` and the limits).

use crate::flow::{open_gpu, Human, Outputs, Report};
use crate::CliResult;

/// Arguments of `info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// Print one line of JSON instead of the human report.
    #[arg(long)]
    json: bool,
}

/// `info`: the adapter and its limits (no input, no outputs: only the report of the flow).
pub fn info(args: InfoArgs) -> CliResult {
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
        ));
    Report::new(info, human)?.print(args.json)
}
