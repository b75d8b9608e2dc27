// Runs of f32 values read as aligned vec4s, and sums over a vec4 in a fixed order.
//
// Why: rows of D values start at any offset e % 4 when D is not a multiple of 4, and on
// CPU-like adapters (lavapipe) every load is a gather of one value per lane (from storage, a
// loop over the lanes), so two aligned vec4 loads and a swizzle are far cheaper than four
// scalar loads.

// Values 4q + s .. 4q + s + 3 of a run, from its vec4s q (`lo`) and q + 1 (`hi`).
fn realign(lo: vec4<f32>, hi: vec4<f32>, s: u32) -> vec4<f32> {
    var v = lo;
    v = select(v, vec4<f32>(lo.yzw, hi.x), s == 1u);
    v = select(v, vec4<f32>(lo.zw, hi.xy), s == 2u);
    v = select(v, vec4<f32>(lo.w, hi.xyz), s == 3u);
    return v;
}

// acc + t.x² + t.y² + t.z² + t.w², one fma at a time in that order: the order in which the
// storage kernels add features one by one, so that the vec4 twins give the same bits.
fn fma_squares(t: vec4<f32>, acc: f32) -> f32 {
    var a = fma(t.x, t.x, acc);
    a = fma(t.y, t.y, a);
    a = fma(t.z, t.z, a);
    return fma(t.w, t.w, a);
}
