// Rayleigh–Ritz on the device, reduced to p x p matrices: the block power iteration's check
// (src/pca/power.rs) reads three p x p matrices instead of the two d x p blocks, and the host's
// f64 work per check no longer grows with d.
//
// Host wrapper: src/kernels/linalg/rayleigh_ritz.rs.
//
// Q (the block, orthonormal to f32 rounding) and W = S·Q are d rows x p columns, row-major
// (column r the r-th vector, the layout of the tile core's products). The host's Ritz pairs
// are those of the pencil (H, G) with
//   H = ½(QᵀW + WᵀQ)   the projected operator (QᵀSQ, symmetric by construction here),
//   G = QᵀQ            the block's Gram matrix (I up to the device's rounding),
//   E = R'ᵀR'          the Gram matrix of R' = W − Q·H, the part of W outside the block.
// For a Ritz pair (θ, y) of H·y = θ·G·y the residual S·Qy − θ·Qy is R'·y + θ·Q·(G − I)·y, so
// its length comes from E, H and G alone (src/linalg/subspace.rs, `projected_ritz`). R' is
// formed explicitly (T = Q·H on the tile core, then `residual_gram` subtracts it from W on the
// fly): E from WᵀW − 2H² + HGH would cancel to f32's rounding of θ₁², where the residuals the
// iteration stops at are 10⁻⁵·θ₁.
//
// project_block: one invocation per entry (r, s) of the p x p matrices, in f32. Entries (r, s)
//   and (s, r) take the same products in the same order: H and G are symmetric bit for bit.
// residual_gram: E[r][s] = Σ_j (W[j][r] − T[j][r])·(W[j][s] − T[j][s]), one invocation per
//   entry, symmetric bit for bit the same way.
//
// @trusted: every index is an entry (r, s), r, s < p, of a p x p matrix or an entry (j, r),
//   j < d, r < p, of a d x p matrix, in buffers the host sizes from the same d and p

#import constants
#import grid

// Twin: RayleighRitzParams in src/kernels/linalg/rayleigh_ritz.rs.
struct RayleighRitzParams {
    d: u32,       // rows of Q and W
    p: u32,       // columns of Q and W
    grid_x: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: RayleighRitzParams;
@group(0) @binding(1) var<storage, read> block: array<f32>;
@group(0) @binding(2) var<storage, read> image: array<f32>;
@group(0) @binding(3) var<storage, read> projection: array<f32>;
@group(0) @binding(4) var<storage, read_write> projected: array<f32>;
@group(0) @binding(5) var<storage, read_write> gram: array<f32>;
@group(0) @binding(6) var<storage, read_write> residual_gram_out: array<f32>;

// The entry (a, b), a ≤ b, that invocation e of a p x p grid computes (and writes at (r, s)
// and nowhere else): its lower index first, so that (r, s) and (s, r) compute the same sums.
fn ordered_entry(e: u32, p: u32) -> vec2<u32> {
    let r = e / p;
    let s = e % p;
    return vec2<u32>(min(r, s), max(r, s));
}

@compute @workgroup_size(ROW_WG_SIZE)
fn project_block(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params.p;
    let e = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if e >= p * p {
        return;
    }
    let ab = ordered_entry(e, p);
    let a = ab.x;
    let b = ab.y;
    // Three independent chains of fused multiply-adds.
    var qw = 0.0;
    var wq = 0.0;
    var qq = 0.0;
    for (var j = 0u; j < params.d; j++) {
        let row = j * p;
        let qa = block[row + a];
        let qb = block[row + b];
        qw = fma(qa, image[row + b], qw);
        wq = fma(image[row + a], qb, wq);
        qq = fma(qa, qb, qq);
    }
    projected[e] = 0.5 * (qw + wq);
    gram[e] = qq;
}

@compute @workgroup_size(ROW_WG_SIZE)
fn residual_gram(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params.p;
    let e = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if e >= p * p {
        return;
    }
    let ab = ordered_entry(e, p);
    let a = ab.x;
    let b = ab.y;
    // Two chains of fused multiply-adds: half the dependent latency of one.
    var even = 0.0;
    var odd = 0.0;
    var j = 0u;
    for (; j + 1u < params.d; j += 2u) {
        let r0 = j * p;
        let r1 = r0 + p;
        even = fma(image[r0 + a] - projection[r0 + a], image[r0 + b] - projection[r0 + b], even);
        odd = fma(image[r1 + a] - projection[r1 + a], image[r1 + b] - projection[r1 + b], odd);
    }
    if j < params.d {
        let r0 = j * p;
        even = fma(image[r0 + a] - projection[r0 + a], image[r0 + b] - projection[r0 + b], even);
    }
    residual_gram_out[e] = even + odd;
}
