// One row's E-step epilogue, shared by normalize_responsibilities (mixture/estep.wgsl) and
// estep_diag_tiled (mixture/estep_tiled.wgsl) so that both give the same bits: from the
// squared norms qᵢₖ in `resp`, aᵢₖ = cₖ − qᵢₖ/2, log p(xᵢ) = m + log Σₖ exp(aᵢₖ − m) with
// m = maxₖ aᵢₖ, the responsibilities rᵢₖ = exp(aᵢₖ − m)/Σ written over the norms, the label
// argmaxₖ aᵢₖ. The bindings they both read and write are declared here, once.

#import constants

@group(0) @binding(4) var<storage, read_write> resp: array<f32>;  // n_rows x K: q, then r
@group(0) @binding(5) var<storage, read> log_const: array<f32>;   // K values cₖ
@group(0) @binding(6) var<storage, read_write> log_density: array<f32>;
@group(0) @binding(7) var<storage, read_write> labels: array<u32>;

// Normalises row `row` (of K components) in place, writes its log p and label at `out_row`,
// and returns log p.
fn normalize_row(row: u32, k: u32, out_row: u32) -> f32 {
    let base = row * k;
    var best = 0u;
    var top = log_const[0] - 0.5 * resp[base];
    for (var c = 1u; c < k; c++) {
        let a = log_const[c] - 0.5 * resp[base + c];
        if a > top {
            top = a;
            best = c;
        }
    }
    var lse = top;
    if top < -F32_MAX {
        // Every aᵢₖ is −∞ (only with zero weights or overflowing norms): log p = −∞ and
        // uniform responsibilities, as the reference.
        for (var c = 0u; c < k; c++) {
            resp[base + c] = 1.0 / f32(k);
        }
    } else {
        var s = 0.0;
        for (var c = 0u; c < k; c++) {
            s += exp(log_const[c] - 0.5 * resp[base + c] - top);
        }
        lse = top + log(s);
        // exp(a − m) / s rather than exp(a − log p): the rounding of log p (of the order
        // of ε |m|) would otherwise keep the row from summing to 1.
        let inv = 1.0 / s;
        for (var c = 0u; c < k; c++) {
            resp[base + c] = exp(log_const[c] - 0.5 * resp[base + c] - top) * inv;
        }
    }
    log_density[out_row] = lse;
    labels[out_row] = best;
    return lse;
}
