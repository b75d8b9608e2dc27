// Sizes and values shared by the kernels. The host reads them from the table that build.rs
// generates (src/gpu/shaders.rs), so each is written once, here.

// Workgroup size of the kernels that give one invocation to each row, block or element.
const ROW_WG_SIZE: u32 = 64u;

// Kernels whose invocations stride over the D features of a row (centroid_update's
// accumulate_cluster_partials, reduce's column_moments) take their workgroup size as this
// override: the host picks the smallest power of two covering D, from FEATURE_WG_MIN to
// FEATURE_WG_MAX (kernels::feature_wg_size), so a small D does not leave most invocations idle.
// The tests compile and run those kernels at every power of two in the range; their code may
// not depend on the value beyond striding by it.
override FEATURE_WG_SIZE: u32 = 64u;
const FEATURE_WG_MIN: u32 = 32u;
const FEATURE_WG_MAX: u32 = 256u;

// The largest finite f32: the start of minimum searches.
const F32_MAX: f32 = 3.4028235e38;
