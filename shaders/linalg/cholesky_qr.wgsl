// Cholesky QR on the device: the block power iteration's steps between two host checks
// (src/pca/power.rs) orthonormalise their block here, without a round trip.
//
// Host wrapper: src/kernels/linalg/cholesky_qr.rs.
//
// W is d rows x p columns, row-major (the layout the tile core's S·V writes: column r is the
// image of the r-th vector). Its columns are made orthonormal as Q = W·T, T = D·L⁻ᵀ, where
// D = diag(G)^(−1/2) gives the columns unit length and L·Lᵀ = D·G·D is the Cholesky factor
// of their Gram matrix G = Wᵀ·W. Q keeps the span of every leading set of columns (Gram–Schmidt
// order), which is what lets the block converge vector by vector. The product W·T itself runs
// on the tile core (products/projection.wgsl).
//
// gram_columns: G[r][s] = Σ_j W[j][r]·W[j][s], one invocation per entry, in f32: the host's
//   f64 check at the end of the steps corrects what rounding leaves of orthonormality.
//   G[r][s] and G[s][r] take the same products in the same order: G is symmetric bit for bit.
// cholesky_inverse: one workgroup. Scales G to unit diagonal, factors it in place
//   (right-looking, a barrier between the phases of each column), then each invocation
//   solves L·x = e_c for its columns c of L⁻¹ and writes row c of T. A column of zero (or
//   non-finite) length, or a pivot below PIVOT_FLOOR (the column lies within about 10⁻² rad
//   of the span of the previous ones: f32 can no longer orthonormalise it), sets
//   `breakdown`; the factorisation goes on with a unit pivot so nothing turns NaN, and the
//   host discards these steps and takes them itself.
//
// cholesky_inverse_shared: the same, with L and L⁻¹ in workgroup memory where they fit
//   (below).
//
// @trusted: every index is an entry (r, s), r, s < p, of a p x p matrix, a column below p, or
//   an entry (j, r), j < d, r < p, of a d x p matrix, in buffers the host sizes from the same
//   d and p; the packed triangles' entries (r, s), s <= r < p, lie below TRI_LEN = p(p+1)/2

#import constants
#import grid

// Twin: CholeskyQrParams in src/kernels/linalg/cholesky_qr.rs.
struct CholeskyQrParams {
    d: u32,       // rows of W
    p: u32,       // columns of W
    grid_x: u32,
    _pad0: u32,
}

// Invocations of the one workgroup that factors G: enough to spread a trailing triangle of a
// few hundred columns (the host reads it to count the loops' back-edges).
const CHOLESKY_WG_SIZE: u32 = 256u;

// The smallest pivot of the unit-diagonal Gram matrix that f32 orthonormalises: below it the
// column keeps less than 1 % of its length past the previous columns.
const PIVOT_FLOOR: f32 = 1e-4;

@group(0) @binding(0) var<uniform> params: CholeskyQrParams;
@group(0) @binding(1) var<storage, read> columns: array<f32>;
@group(0) @binding(2) var<storage, read_write> gram: array<f32>;
@group(0) @binding(3) var<storage, read_write> col_scale: array<f32>;
@group(0) @binding(4) var<storage, read_write> transform: array<f32>;
@group(0) @binding(5) var<storage, read_write> breakdown: array<u32>;

@compute @workgroup_size(ROW_WG_SIZE)
fn gram_columns(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let p = params.p;
    let e = invocation_index(wid, params.grid_x, ROW_WG_SIZE, lid);
    if e >= p * p {
        return;
    }
    let r = e / p;
    let s = e % p;
    // Two chains of fused multiply-adds: half the dependent latency of one. Eight rows' loads
    // are issued before their products are added (each chain's order unchanged, so the same
    // bits): one at a time, each step waited on its loads.
    var even = 0.0;
    var odd = 0.0;
    var j = 0u;
    for (; j + 8u <= params.d; j += 8u) {
        let at = j * p;
        let a0 = vec4<f32>(columns[at + r], columns[at + 2u * p + r], columns[at + 4u * p + r], columns[at + 6u * p + r]);
        let b0 = vec4<f32>(columns[at + s], columns[at + 2u * p + s], columns[at + 4u * p + s], columns[at + 6u * p + s]);
        let a1 = vec4<f32>(columns[at + p + r], columns[at + 3u * p + r], columns[at + 5u * p + r], columns[at + 7u * p + r]);
        let b1 = vec4<f32>(columns[at + p + s], columns[at + 3u * p + s], columns[at + 5u * p + s], columns[at + 7u * p + s]);
        even = fma(a0.x, b0.x, even);
        odd = fma(a1.x, b1.x, odd);
        even = fma(a0.y, b0.y, even);
        odd = fma(a1.y, b1.y, odd);
        even = fma(a0.z, b0.z, even);
        odd = fma(a1.z, b1.z, odd);
        even = fma(a0.w, b0.w, even);
        odd = fma(a1.w, b1.w, odd);
    }
    for (; j + 1u < params.d; j += 2u) {
        even = fma(columns[j * p + r], columns[j * p + s], even);
        odd = fma(columns[(j + 1u) * p + r], columns[(j + 1u) * p + s], odd);
    }
    if j < params.d {
        even = fma(columns[j * p + r], columns[j * p + s], even);
    }
    gram[e] = even + odd;
}

@compute @workgroup_size(CHOLESKY_WG_SIZE)
fn cholesky_inverse(@builtin(local_invocation_index) lid: u32) {
    let p = params.p;
    // D: one over each column's length.
    for (var i = lid; i < p; i += CHOLESKY_WG_SIZE) {
        let g = gram[i * p + i];
        // NaN fails both tests.
        let usable = g > 0.0 && g <= F32_MAX;
        if !usable {
            breakdown[0] = 1u;
        }
        col_scale[i] = select(1.0, inverseSqrt(g), usable);
    }
    storageBarrier();
    // D·G·D, lower triangle.
    for (var e = lid; e < p * p; e += CHOLESKY_WG_SIZE) {
        let r = e / p;
        let s = e % p;
        if s <= r {
            gram[e] = gram[e] * col_scale[r] * col_scale[s];
        }
    }
    storageBarrier();
    // L, in place in the lower triangle.
    for (var k = 0u; k < p; k++) {
        let pivot = gram[k * p + k];
        let usable = pivot >= PIVOT_FLOOR;
        let l = sqrt(select(1.0, pivot, usable));
        // Every invocation has read the pivot before the first writes it.
        storageBarrier();
        if lid == 0u {
            gram[k * p + k] = l;
            if !usable {
                breakdown[0] = 1u;
            }
        }
        for (var i = k + 1u + lid; i < p; i += CHOLESKY_WG_SIZE) {
            gram[i * p + k] = gram[i * p + k] / l;
        }
        storageBarrier();
        // The trailing lower triangle loses the outer product of column k.
        let w = p - k - 1u;
        for (var e = lid; e < w * w; e += CHOLESKY_WG_SIZE) {
            let i = k + 1u + e / w;
            let j = k + 1u + e % w;
            if j <= i {
                gram[i * p + j] = gram[i * p + j] - gram[i * p + k] * gram[j * p + k];
            }
        }
        storageBarrier();
    }
    // Column c of L⁻¹ (forward substitution), as row c of T, then scaled by D_c:
    // T[c][r] = D_c·L⁻¹[r][c].
    for (var c = lid; c < p; c += CHOLESKY_WG_SIZE) {
        let row = c * p;
        for (var r = 0u; r < c; r++) {
            transform[row + r] = 0.0;
        }
        transform[row + c] = 1.0 / gram[c * p + c];
        for (var r = c + 1u; r < p; r++) {
            var acc = 0.0;
            for (var s = c; s < r; s++) {
                acc = fma(gram[r * p + s], transform[row + s], acc);
            }
            transform[row + r] = -acc / gram[r * p + r];
        }
        let scale = col_scale[c];
        for (var r = c; r < p; r++) {
            transform[row + r] = transform[row + r] * scale;
        }
    }
}

// The packed lower triangles (row r from r·(r+1)/2) of L and of X = L⁻¹, in workgroup
// memory: TRI_LEN = p·(p+1)/2, set by the host where 2·TRI_LEN floats fit the device's
// workgroup memory (40 KB at p = 100, under an H200's 48 KiB).
override TRI_LEN: u32 = 1u;

var<workgroup> l_tri: array<f32, TRI_LEN>;
var<workgroup> x_tri: array<f32, TRI_LEN>;

fn tri(r: u32, s: u32) -> u32 {
    return r * (r + 1u) / 2u + s;
}

// cholesky_inverse with L and L⁻¹ in workgroup memory: the same operations in the same order
// (the same bits), but each of the p elimination steps and each dependent step of the forward
// substitution reads workgroup memory instead of global memory just written (on an H200 the
// global form took 0.44-1.4 ms a call at p = 100). x_tri holds the column scales D until the
// substitution, which each invocation reads into a register first.
@compute @workgroup_size(CHOLESKY_WG_SIZE)
fn cholesky_inverse_shared(@builtin(local_invocation_index) lid: u32) {
    let p = params.p;
    for (var i = lid; i < p; i += CHOLESKY_WG_SIZE) {
        let g = gram[i * p + i];
        let usable = g > 0.0 && g <= F32_MAX;
        if !usable {
            breakdown[0] = 1u;
        }
        let scale = select(1.0, inverseSqrt(g), usable);
        col_scale[i] = scale;
        x_tri[i] = scale;
    }
    workgroupBarrier();
    for (var e = lid; e < p * p; e += CHOLESKY_WG_SIZE) {
        let r = e / p;
        let s = e % p;
        if s <= r {
            l_tri[tri(r, s)] = gram[e] * x_tri[r] * x_tri[s];
        }
    }
    workgroupBarrier();
    for (var k = 0u; k < p; k++) {
        let pivot = l_tri[tri(k, k)];
        let usable = pivot >= PIVOT_FLOOR;
        let l = sqrt(select(1.0, pivot, usable));
        workgroupBarrier();
        if lid == 0u {
            l_tri[tri(k, k)] = l;
            if !usable {
                breakdown[0] = 1u;
            }
        }
        for (var i = k + 1u + lid; i < p; i += CHOLESKY_WG_SIZE) {
            l_tri[tri(i, k)] = l_tri[tri(i, k)] / l;
        }
        workgroupBarrier();
        let w = p - k - 1u;
        for (var e = lid; e < w * w; e += CHOLESKY_WG_SIZE) {
            let i = k + 1u + e / w;
            let j = k + 1u + e % w;
            if j <= i {
                l_tri[tri(i, j)] = l_tri[tri(i, j)] - l_tri[tri(i, k)] * l_tri[tri(j, k)];
            }
        }
        workgroupBarrier();
    }
    // Invocation c solves column c (the host takes this kernel for p <= CHOLESKY_WG_SIZE):
    // its column scale first, before x_tri takes L⁻¹.
    let c = lid;
    let scale = select(1.0, x_tri[min(c, p - 1u)], c < p);
    workgroupBarrier();
    // Column c of L⁻¹ by forward substitution, then row c of T = D·L⁻ᵀ to global memory.
    if c < p {
        x_tri[tri(c, c)] = 1.0 / l_tri[tri(c, c)];
        for (var r = c + 1u; r < p; r++) {
            var acc = 0.0;
            for (var s = c; s < r; s++) {
                acc = fma(l_tri[tri(r, s)], x_tri[tri(s, c)], acc);
            }
            x_tri[tri(r, c)] = -acc / l_tri[tri(r, r)];
        }
        let row = c * p;
        for (var r = 0u; r < c; r++) {
            transform[row + r] = 0.0;
        }
        for (var r = c; r < p; r++) {
            transform[row + r] = x_tri[tri(r, c)] * scale;
        }
    }
}
