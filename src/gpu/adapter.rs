//! Adapter choice: which GPU [`Gpu::with_options`](crate::Gpu::with_options) opens.
//!
//! The adapters of the native backends (Vulkan, Metal, DX12) are listed first; GL is looked at
//! only when none exists, because it is a last resort and probing it can print noise on a
//! headless machine. The list is then filtered by backend and name and ranked by
//! [`AdapterOptions::power_preference`]: by default (and for `HighPerformance`) discrete >
//! integrated > virtual > software; for `LowPower` integrated first. An
//! [`AdapterOptions::index`] picks one entry of that ranked list, the numbering
//! `wgpu-unsupervised info --all` prints.

use crate::error::{Error, Result};

/// What [`Gpu::with_options`](crate::Gpu::with_options) and
/// [`Gpu::adapters`](crate::Gpu::adapters) consider and in which order.
///
/// The default honours the environment as [`Gpu::new`](crate::Gpu::new) does
/// (`WGPU_BACKEND`, `WGPU_ADAPTER_NAME`, `WGPU_POWER_PREF`); a field that is set wins over its
/// variable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdapterOptions {
    /// Backends to look at (`None`: every backend, or those `WGPU_BACKEND` names).
    pub backends: Option<wgpu::Backends>,
    /// Keep only adapters whose name contains this, ignoring case (`None`:
    /// `WGPU_ADAPTER_NAME` if set).
    pub name: Option<String>,
    /// Ranking: `None` and `HighPerformance` put discrete GPUs first, `LowPower` integrated
    /// ones (`WGPU_POWER_PREF=low|high` when left at `None`).
    pub power_preference: wgpu::PowerPreference,
    /// Position in the filtered, ranked list (0 = the best), as `info --all` numbers it.
    pub index: Option<usize>,
}

impl AdapterOptions {
    /// Parses the CLI's `--adapter` selector: `[BACKEND:]NAME-OR-INDEX`, where a number is a
    /// position in the list `info --all` prints and anything else a part of the adapter's
    /// name; an optional prefix `vulkan:`, `metal:`, `dx12:` or `gl:` restricts the backend
    /// (e.g. `1`, `llvmpipe`, `vulkan:nvidia`, `gl:`).
    ///
    /// Errors: [`Error::InvalidParameter`] for an empty selector or an unknown backend.
    pub fn from_selector(selector: &str) -> Result<Self> {
        let selector = selector.trim();
        let mut options = Self::default();
        let rest = match selector.split_once(':') {
            Some((backend, rest)) => {
                let backends = match backend.trim().to_ascii_lowercase().as_str() {
                    "vulkan" | "vk" => wgpu::Backends::VULKAN,
                    "metal" | "mtl" => wgpu::Backends::METAL,
                    "dx12" | "d3d12" => wgpu::Backends::DX12,
                    "gl" | "gles" | "opengl" => wgpu::Backends::GL,
                    other => {
                        return Err(Error::invalid(
                            "adapter",
                            format!("unknown backend {other:?} (vulkan, metal, dx12 or gl)"),
                        ))
                    }
                };
                options.backends = Some(backends);
                rest.trim()
            }
            None => selector,
        };
        if rest.is_empty() && options.backends.is_none() {
            return Err(Error::invalid(
                "adapter",
                "empty selector: give an index from `info --all` or a part of a name",
            ));
        }
        if !rest.is_empty() {
            match rest.parse::<usize>() {
                Ok(index) => options.index = Some(index),
                Err(_) => options.name = Some(rest.to_string()),
            }
        }
        Ok(options)
    }
}

/// What the library knows about the device it runs on.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GpuInfo {
    /// Adapter name as the driver reports it (e.g. "NVIDIA H100", "llvmpipe (LLVM 15.0.6, 256 bits)").
    pub name: String,
    /// Backend: "Vulkan", "Metal", "Dx12", "Gl".
    pub backend: String,
    /// Discrete, integrated, virtual or CPU (software).
    pub device_type: String,
    /// Driver name and version, when the backend reports them.
    pub driver: String,
    /// Largest storage binding in bytes: the data are split into chunks no larger than this.
    pub max_storage_buffer_binding_size: u64,
    /// Largest buffer in bytes.
    pub max_buffer_size: u64,
    /// Largest dispatch along one grid dimension (2-D grids are used past it).
    pub max_compute_workgroups_per_dimension: u32,
    /// Largest workgroup.
    pub max_compute_invocations_per_workgroup: u32,
    /// Alignment of storage-buffer binding offsets.
    pub min_storage_buffer_offset_alignment: u32,
    /// Bytes of workgroup memory one workgroup may hold (kernels that keep a whole small
    /// matrix there run where it fits, e.g. the power iteration's Cholesky factor).
    #[cfg_attr(feature = "serde", serde(default))]
    pub max_compute_workgroup_storage_size: u32,
    /// The smallest subgroup (SIMD group: warp, wavefront) the adapter may run a kernel in,
    /// as the driver reports it (0: unknown). Kernels that exchange values within subgroups
    /// run only where this holds their lanes (see [`Gpu::subgroup_lanes`](crate::Gpu)).
    #[cfg_attr(feature = "serde", serde(default))]
    pub subgroup_min_size: u32,
}

impl GpuInfo {
    /// Loop back-edges one invocation may take in all on this adapter, summed over every
    /// loop of an entry point, before the driver cuts the loops short; `None` where no such
    /// cap is known.
    ///
    /// Mesa's llvmpipe (lavapipe, the software Vulkan driver of CI machines and of many
    /// machines without a GPU) keeps one counter per entry point, starting at 65535
    /// (gallivm's `LP_MAX_TGSI_LOOP_ITERATIONS`), and decrements it at every back-edge of
    /// every loop whose trip count is not a compile-time constant; once it reaches zero,
    /// every loop still to run stops after one iteration, without an error. A kernel whose
    /// invocation walks all N rows therefore returns wrong results past some N (measured:
    /// the nearest-neighbour search beyond ~14 000 rows). Kernels whose loop length grows
    /// with the input take at most this many back-edges per dispatch here and split the rest
    /// into more dispatches ([`crate::kernels::items_within_loop_budget`]). Any CPU adapter
    /// gets the same cap, to be safe.
    pub(crate) fn loop_back_edge_budget(&self) -> Option<u64> {
        (self.device_type == "Cpu" || self.name.contains("llvmpipe")).then_some(65535)
    }
}

impl std::fmt::Display for GpuInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, {}, max binding {} MiB)",
            self.name,
            self.backend,
            self.device_type,
            self.max_storage_buffer_binding_size >> 20
        )
    }
}

impl GpuInfo {
    /// What the crate reports of an adapter with these limits.
    pub(crate) fn new(a: wgpu::AdapterInfo, limits: &wgpu::Limits) -> Self {
        Self {
            name: a.name,
            backend: format!("{:?}", a.backend),
            device_type: format!("{:?}", a.device_type),
            driver: format!("{} {}", a.driver, a.driver_info).trim().to_string(),
            max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
            max_buffer_size: limits.max_buffer_size,
            max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
            min_storage_buffer_offset_alignment: limits.min_storage_buffer_offset_alignment,
            max_compute_workgroup_storage_size: limits.max_compute_workgroup_storage_size,
            subgroup_min_size: a.subgroup_min_size,
        }
    }
}

/// Rank of a device type for a power preference (lower is preferred).
fn device_type_rank(t: wgpu::DeviceType, power: wgpu::PowerPreference) -> u32 {
    use wgpu::DeviceType::*;
    let low_power = power == wgpu::PowerPreference::LowPower;
    match t {
        DiscreteGpu if low_power => 1,
        IntegratedGpu if low_power => 0,
        DiscreteGpu => 0,
        IntegratedGpu => 1,
        VirtualGpu => 2,
        Cpu => 3,
        Other => 4,
    }
}

/// The adapters `options` allow, best first: never empty.
pub(crate) async fn adapters(options: &AdapterOptions) -> Result<Vec<wgpu::Adapter>> {
    let wanted = options
        .backends
        .unwrap_or_else(|| wgpu::Backends::all().with_env());
    let native = wanted - wgpu::Backends::GL;
    let mut adapters = Vec::new();
    for backends in [native, wanted & wgpu::Backends::GL] {
        if backends.is_empty() || !adapters.is_empty() {
            continue;
        }
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle().with_env();
        desc.backends = backends;
        let instance = wgpu::Instance::new(desc);
        adapters = instance.enumerate_adapters(backends).await;
    }
    let seen: Vec<String> = adapters
        .iter()
        .map(|a| {
            let i = a.get_info();
            format!("{} ({:?})", i.name, i.backend)
        })
        .collect();
    let name = options
        .name
        .clone()
        .or_else(|| std::env::var("WGPU_ADAPTER_NAME").ok());
    if let Some(wanted) = &name {
        let wanted = wanted.to_lowercase();
        adapters.retain(|a| a.get_info().name.to_lowercase().contains(&wanted));
    }
    let power = match options.power_preference {
        wgpu::PowerPreference::None => wgpu::PowerPreference::from_env().unwrap_or_default(),
        chosen => chosen,
    };
    // A stable sort: adapters of equal rank keep the driver's order, so indices are stable.
    adapters.sort_by_key(|a| {
        let i = a.get_info();
        (
            u32::from(i.backend == wgpu::Backend::Gl),
            device_type_rank(i.device_type, power),
        )
    });
    let listed = || {
        if seen.is_empty() {
            "no adapter on any enabled backend".to_string()
        } else {
            format!("adapters seen: {}", seen.join(", "))
        }
    };
    if adapters.is_empty() {
        return Err(Error::NoAdapter {
            detail: match &name {
                Some(n) if !seen.is_empty() => format!("none is named like {n:?}; {}", listed()),
                _ => listed(),
            },
        });
    }
    if let Some(index) = options.index {
        if index >= adapters.len() {
            return Err(Error::NoAdapter {
                detail: format!(
                    "no adapter number {index}: there are {} (0 to {}); {}",
                    adapters.len(),
                    adapters.len() - 1,
                    listed()
                ),
            });
        }
        adapters = vec![adapters.swap_remove(index)];
    }
    Ok(adapters)
}

#[cfg(test)]
mod tests {
    use super::AdapterOptions;

    #[test]
    fn selectors_parse_into_options_and_bad_ones_are_refused() {
        let o = AdapterOptions::from_selector("2").unwrap();
        assert_eq!((o.index, o.name, o.backends), (Some(2), None, None));
        let o = AdapterOptions::from_selector("llvmpipe").unwrap();
        assert_eq!(o.name.as_deref(), Some("llvmpipe"));
        let o = AdapterOptions::from_selector("vulkan:NVIDIA H100").unwrap();
        assert_eq!(o.backends, Some(wgpu::Backends::VULKAN));
        assert_eq!(o.name.as_deref(), Some("NVIDIA H100"));
        let o = AdapterOptions::from_selector("gl:").unwrap();
        assert_eq!((o.backends, o.name), (Some(wgpu::Backends::GL), None));
        for bad in ["", "  ", "cuda:0", ":"] {
            assert!(AdapterOptions::from_selector(bad).is_err(), "{bad:?}");
        }
    }
}
