// The candidate search of the GEMM form (assign/tiled.wgsl, assign/texture.wgsl): per row the
// best candidate, the runner-up and a lower bound of every other one, and the tests that prove
// the candidate (or the pair) exact (the bound: src/kernels/assign/bound.rs).

#import constants
#import assign/params

// One row's search so far: the best candidate (lowest v, then lowest index), its v and slack,
// the runner-up's, and the lowest v − slack among the others.
struct Search {
    v: f32,
    k: u32,
    slack: f32,
    v2: f32,
    k2: u32,
    slack2: f32,
    others: f32,
}

fn search_start() -> Search {
    return Search(F32_MAX, 0xffffffffu, 0.0, F32_MAX, 0xffffffffu, 0.0, F32_MAX);
}

// Candidate k with v = ‖c′ₖ‖² − 2p (one fma) and its slack. Candidates of one invocation come
// in increasing k, so `<` keeps the lowest index among equal v.
fn search_add(s: Search, p: f32, k: u32, norms: vec4<f32>) -> Search {
    let v = fma(-2.0, p, norms.x);
    if v < s.v {
        return Search(v, k, norms.y, s.v, s.k, s.slack, min(s.others, s.v2 - s.slack2));
    }
    if v < s.v2 {
        return Search(s.v, s.k, s.slack, v, k, norms.y, min(s.others, s.v2 - s.slack2));
    }
    return Search(s.v, s.k, s.slack, s.v2, s.k2, s.slack2, min(s.others, v - norms.y));
}

// A lane's searches of its (up to) eight rows, reached by a constant index whatever the
// caller's loop: a run-time index would move all eight to local memory (block_quad in
// shared/gemm.wgsl says why); these switches fold away where the loop is unrolled.
fn search_of(all: ptr<function, array<Search, 8>>, i: u32) -> Search {
    switch i {
        case 0u: { return (*all)[0]; }
        case 1u: { return (*all)[1]; }
        case 2u: { return (*all)[2]; }
        case 3u: { return (*all)[3]; }
        case 4u: { return (*all)[4]; }
        case 5u: { return (*all)[5]; }
        case 6u: { return (*all)[6]; }
        case 7u: { return (*all)[7]; }
        default: { return search_start(); }
    }
}

fn search_set(all: ptr<function, array<Search, 8>>, i: u32, s: Search) {
    switch i {
        case 0u: { (*all)[0] = s; }
        case 1u: { (*all)[1] = s; }
        case 2u: { (*all)[2] = s; }
        case 3u: { (*all)[3] = s; }
        case 4u: { (*all)[4] = s; }
        case 5u: { (*all)[5] = s; }
        case 6u: { (*all)[6] = s; }
        case 7u: { (*all)[7] = s; }
        default: {}
    }
}

// Whether candidate (av, ak) comes before (bv, bk): lower v, then lower index.
fn search_before(av: f32, ak: u32, bv: f32, bk: u32) -> bool {
    return av < bv || (av == bv && ak < bk);
}

// Two searches over disjoint candidates, as one: the better best wins; the runner-up is the
// better of the loser's best and the winner's runner-up; every other candidate goes to the
// bound.
fn search_merge(a: Search, b: Search) -> Search {
    var w = b;
    var l = a;
    if search_before(a.v, a.k, b.v, b.k) {
        w = a;
        l = b;
    }
    let others = min(min(a.others, b.others), l.v2 - l.slack2);
    if search_before(l.v, l.k, w.v2, w.k2) {
        return Search(w.v, w.k, w.slack, l.v, l.k, l.slack, min(others, w.v2 - w.slack2));
    }
    return Search(w.v, w.k, w.slack, w.v2, w.k2, w.slack2, min(others, l.v - l.slack));
}

// A search as two vec4s (workgroup scratch between invocations): [0] best, [1] runner-up
// and bound.
fn search_pack_best(s: Search) -> vec4<f32> {
    return vec4<f32>(s.v, bitcast<f32>(s.k), s.slack, s.others);
}

fn search_pack_second(s: Search) -> vec4<f32> {
    return vec4<f32>(s.v2, bitcast<f32>(s.k2), s.slack2, 0.0);
}

fn search_unpack(best: vec4<f32>, second: vec4<f32>) -> Search {
    return Search(best.x, bitcast<u32>(best.y), best.z, second.x, bitcast<u32>(second.y), second.z, best.w);
}

// Whether the search proves its candidate the exact argmin for a row with ‖x′‖² = `norm`
// (false for near ties and for any non-finite value). The last term covers underflow: each
// of the 2D + 8 roundings may lose up to the smallest normal when results are subnormal (or
// flushed to zero), which no relative bound sees.
fn search_is_exact(s: Search, norm: f32) -> bool {
    let others = min(s.others, s.v2 - s.slack2);
    return s.k < params.k && others - (s.v + s.slack) > 2.0 * params.beta * norm + underflow_term();
}

// Whether the search proves the exact argmin one of its two candidates (the header): every
// other candidate's lower bound above the lower of their upper bounds.
fn search_pair_decides(s: Search, norm: f32) -> bool {
    let upper = min(s.v + s.slack, s.v2 + s.slack2);
    return s.k2 < params.k && s.others - upper > 2.0 * params.beta * norm + underflow_term();
}

// The underflow term of both tests (above).
fn underflow_term() -> f32 {
    return f32(2u * params.d + 8u) * 1.1754944e-38;
}


// d̂ = Σ (x_j − c_j)² (one fma chain in order) and ‖x − s‖² for row `row` and centroid k,
// from the storage buffers.
fn exact_from_storage(row: u32, k: u32) -> vec2<f32> {
    let base = params.x_offset + row * params.d;
    var dist = 0.0;
    var norm = 0.0;
    for (var j = 0u; j < params.d; j++) {
        let xv = x[base + j];
        let diff = xv - centroids[k * params.d + j];
        dist = fma(diff, diff, dist);
        let xs = xv - prepared[shift_base() + j / 4u][j % 4u];
        norm = fma(xs, xs, norm);
    }
    return vec2<f32>(dist, norm);
}
