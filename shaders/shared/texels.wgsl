// Flat textures: a run of f32 values mirrored into a texture_2d_array<f32> of rgba32float
// texels, 4 values a texel, FLAT_ROW_TEXELS texels a texture row (256 bytes: the row alignment
// of buffer-to-texture copies, so any run copies in at most three commands) and
// FLAT_LAYER_ROWS rows a layer. Texel t holds values 4t .. 4t + 3 of the run.
//
// Why: on CPU-like adapters (lavapipe) a storage-buffer or workgroup-memory load is a loop
// over the SIMD lanes with a branch per lane, while a texel fetch is a plain gather: measured
// on lavapipe, the register-blocked product reads its operands 4x faster from textures than
// from storage. The host makes the mirror (src/gpu/texture.rs) only for the variants that
// read it; GPUs use the storage buffers.

const FLAT_ROW_TEXELS: u32 = 16u;
const FLAT_LAYER_ROWS: u32 = 8192u;
const FLAT_LAYER_TEXELS: u32 = FLAT_ROW_TEXELS * FLAT_LAYER_ROWS;

// Texel t of a flat texture: values 4t .. 4t + 3 of the run.
fn flat_texel(t: texture_2d_array<f32>, texel: u32) -> vec4<f32> {
    let row = texel / FLAT_ROW_TEXELS;
    return textureLoad(
        t,
        vec2<u32>(texel % FLAT_ROW_TEXELS, row % FLAT_LAYER_ROWS),
        texel / FLAT_LAYER_TEXELS,
        0,
    );
}
