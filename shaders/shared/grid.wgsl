// Dispatch grids. A dispatch may need more workgroups than one grid dimension allows, so the
// host spreads it over grid_x x y workgroups (Gpu::grid), passes grid_x in the parameters,
// and every kernel numbers its workgroups the same way. The overhang of the last grid row
// gets indices past the work, which the kernels skip.

// This workgroup's index in the dispatch.
fn workgroup_index(wid: vec3<u32>, grid_x: u32) -> u32 {
    return wid.y * grid_x + wid.x;
}

// This invocation's index in the dispatch, when each workgroup covers `wg_size` consecutive
// items (one per invocation).
fn invocation_index(wid: vec3<u32>, grid_x: u32, wg_size: u32, lid: u32) -> u32 {
    return workgroup_index(wid, grid_x) * wg_size + lid;
}
