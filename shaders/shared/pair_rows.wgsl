// The two sets of rows of the pair kernels (affinity, silhouette): query rows and data rows,
// bound by name, and the same ranges again as vec4s (read only where a kernel's rows start on
// vec4 boundaries, so a row's features come four a load).

@group(0) @binding(1) var<storage, read> queries: array<f32>;
@group(0) @binding(2) var<storage, read> data: array<f32>;
@group(0) @binding(13) var<storage, read> queries4: array<vec4<f32>>;
@group(0) @binding(14) var<storage, read> data4: array<vec4<f32>>;

// Features j .. j + 3 (j a multiple of 4) of the query row whose first value is `start`, of
// `d` features: one vec4 load when `whole` (start and d multiples of 4), else zeros past d.
fn pair_query_quad(start: u32, j: u32, d: u32, whole: bool) -> vec4<f32> {
    if whole {
        return queries4[(start + j) / 4u];
    }
    var v = vec4<f32>();
    for (var t = 0u; t < 4u; t++) {
        if j + t < d {
            v[t] = queries[start + j + t];
        }
    }
    return v;
}

// The same for a data row.
fn pair_data_quad(start: u32, j: u32, d: u32, whole: bool) -> vec4<f32> {
    if whole {
        return data4[(start + j) / 4u];
    }
    var v = vec4<f32>();
    for (var t = 0u; t < 4u; t++) {
        if j + t < d {
            v[t] = data[start + j + t];
        }
    }
    return v;
}
