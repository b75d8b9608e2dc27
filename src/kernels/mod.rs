//! Host wrappers of the WGSL kernels: one file per shader, same name
//! (`assign.rs` <-> `shaders/assign.wgsl`). Each holds the `#[repr(C)]` twin of its shader's
//! parameter struct (a test checks the sizes against naga's layout) and functions that record
//! dispatches into a [`Batch`](crate::gpu::kernel::Batch).

pub(crate) mod assign;
pub(crate) mod centroid_update;
pub(crate) mod covariance;
pub(crate) mod gmm_estep;
pub(crate) mod gmm_mstep;
pub(crate) mod kmeans_pp;
pub(crate) mod projection;
pub(crate) mod reduce;
pub(crate) mod rows;
pub(crate) mod silhouette;

/// Workgroup size for kernels that give one invocation to each row.
pub(crate) const ROW_WG_SIZE: u32 = 64;

/// Workgroup size for kernels whose invocations stride over the D features of a row:
/// the smallest power of two covering D, between 32 and 256.
pub(crate) fn feature_wg_size(d: usize) -> u32 {
    (d.next_power_of_two() as u32).clamp(32, 256)
}

#[cfg(test)]
pub(crate) mod layout {
    /// Size in bytes of the WGSL struct `name` in `source`, as naga lays it out.
    pub(crate) fn wgsl_struct_size(source: &str, name: &str) -> u32 {
        let module = naga::front::wgsl::parse_str(source).expect("shader parses");
        let size = module
            .types
            .iter()
            .find_map(|(_, ty)| match (&ty.name, &ty.inner) {
                (Some(n), naga::TypeInner::Struct { span, .. }) if n == name => Some(*span),
                _ => None,
            });
        size.unwrap_or_else(|| panic!("no struct {name}"))
    }
}
