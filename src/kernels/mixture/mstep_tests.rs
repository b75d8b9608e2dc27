//! The M-step sums of a Gaussian mixture (`gmm_mstep`) have variants the autotuner chooses
//! between on CPU-like adapters: every variant must give the same bits (or the choice would
//! make a fit depend on timing), and those bits must be the sums.

use crate::gpu::batch::Batch;
use crate::gpu::device_buffer::DeviceBuffer;
use crate::gpu::shaders::EntryPoint;
use crate::gpu::tests::{gpu, random};
use crate::gpu::{Gpu, GpuMatrix};
use crate::kernels::mixture::estep::Segment;
use crate::kernels::mixture::mstep::{moments_lanes, record_sums, variants, Blocks, Moment, Sums};

/// One shape: rows, features, components, rows per block, rows per chunk, values before the
/// first row in the caller's buffer, seed.
struct Shape {
    n: usize,
    d: usize,
    k: usize,
    block_rows: usize,
    chunk_rows: usize,
    pad: usize,
    seed: u64,
}

/// The data of one shape on the device: the matrix (in chunks, starting `pad` values into its
/// buffer), per-segment responsibilities and the shifts.
struct Case {
    x: Vec<f32>,
    resp: Vec<f32>,
    shift: Vec<f32>,
    _buffer: DeviceBuffer<f32>,
    xg: GpuMatrix,
    /// (chunk, first row in it, rows, first block, responsibilities).
    segments: Vec<(usize, usize, usize, usize, DeviceBuffer<f32>)>,
    n_blocks: usize,
    shift_buf: DeviceBuffer<f32>,
}

fn case(gpu: &Gpu, s: &Shape) -> Case {
    let (n, d, k) = (s.n, s.d, s.k);
    // Values around 1 with a spread, so that x − s is not small and cancellation is mild.
    let x: Vec<f32> = random(n * d, s.seed)
        .iter()
        .map(|v| 4.0 * v - 1.0)
        .collect();
    let resp = random(n * k, s.seed + 1);
    let shift: Vec<f32> = random(k * d, s.seed + 2).iter().map(|v| v + 0.5).collect();
    let mut padded = random(s.pad, s.seed + 3);
    padded.extend_from_slice(&x);
    let buffer = DeviceBuffer::from_slice(gpu, "x", &padded);
    gpu.set_max_chunk_bytes((s.chunk_rows * d * 4) as u64);
    let xg = GpuMatrix::from_buffer_unchecked(gpu, buffer.raw(), 4 * s.pad as u64, n, d).unwrap();
    gpu.set_max_chunk_bytes(u64::MAX);
    // Two segments per chunk (the second starting inside the chunk), as a workspace cuts them.
    let mut segments = Vec::new();
    let mut n_blocks = 0;
    for (ci, c) in xg.chunks().iter().enumerate() {
        let half = c.n_rows.div_ceil(2);
        for (first, rows) in [(0, half), (half, c.n_rows - half)] {
            if rows == 0 {
                continue;
            }
            let global = c.row_start + first;
            let r = DeviceBuffer::from_slice(gpu, "resp", &resp[global * k..(global + rows) * k]);
            segments.push((ci, first, rows, n_blocks, r));
            n_blocks += rows.div_ceil(s.block_rows);
        }
    }
    let shift_buf = DeviceBuffer::from_slice(gpu, "shift", &shift);
    Case {
        x,
        resp,
        shift,
        _buffer: buffer,
        xg,
        segments,
        n_blocks,
        shift_buf,
    }
}

/// The per-block partials of `moment` by `variant` over every segment.
fn run(gpu: &Gpu, c: &Case, s: &Shape, moment: Moment, variant: &'static EntryPoint) -> Vec<f32> {
    let partials = DeviceBuffer::zeroed(gpu, "partials", c.n_blocks * moment.outputs(s.k, s.d));
    let sums = Sums {
        moment,
        shift: &c.shift_buf,
    };
    let mut batch = Batch::new(gpu, "mstep variant");
    for (ci, first, rows, block_offset, resp) in &c.segments {
        let seg = Segment {
            chunk: &c.xg.chunks()[*ci],
            first: *first,
            n_rows: *rows,
            resp,
        };
        let blocks = Blocks {
            block_rows: s.block_rows,
            block_offset: *block_offset,
            partials: &partials,
        };
        record_sums(gpu, &mut batch, variant, &seg, (s.d, s.k), &sums, &blocks).unwrap();
    }
    let h = batch.read_all(&partials);
    batch.finish().unwrap().f32s(h)
}

/// Whether output `o` of a block is one the host reads (the scatters' upper triangle).
fn read_by_host(moment: Moment, d: usize, o: usize) -> bool {
    let de = match moment {
        Moment::Scatter => d,
        Moment::AugmentedScatter => d + 1,
        _ => return true,
    };
    o % de >= o / de % de
}

/// Output `o` of one component's block in f64 over every row: the sum and the sum of the
/// terms' magnitudes (the scale of its rounding).
fn exact(c: &Case, s: &Shape, moment: Moment, o: usize) -> (f64, f64) {
    let (d, k) = (s.d, s.k);
    let per = moment.outputs(k, d) / k;
    let (comp, o) = (o / per, o % per);
    let dev = |row: usize, j: usize| {
        if j < d {
            c.x[row * d + j] as f64 - c.shift[comp * d + j] as f64
        } else {
            1.0
        }
    };
    let term = |row: usize| {
        let r = c.resp[row * k + comp] as f64;
        match moment {
            Moment::DiagonalMoments if o < d => r * dev(row, o),
            Moment::DiagonalMoments if o == d => r,
            Moment::DiagonalMoments => r * dev(row, o - d - 1).powi(2),
            _ => {
                let de = if moment == Moment::Scatter { d } else { d + 1 };
                r * dev(row, o / de) * dev(row, o % de)
            }
        }
    };
    (0..s.n)
        .map(term)
        .fold((0.0, 0.0), |(a, b), t| (a + t, b + t.abs()))
}

#[test]
fn mstep_variants_give_identical_bits_and_the_sums() {
    let gpu = gpu();
    let shape = |n, d, k, block_rows, chunk_rows, pad, seed| Shape {
        n,
        d,
        k,
        block_rows,
        chunk_rows,
        pad,
        seed,
    };
    // D below and past TILED_SCATTER_MIN_D, D + 1 past one workgroup of lanes (70) and a
    // multiple of 4 (vec4 slices: 8, 40, 64); blocks spanning two or three slices
    // (16384 / 70 = 234 rows per slice, 300 per block), slices holding many blocks (D = 3),
    // K past a workgroup of lanes (70), ragged chunk starts and several chunks.
    let shapes = [
        shape(300, 5, 3, 64, 130, 3, 1),
        shape(700, 40, 4, 256, 400, 0, 2),
        shape(650, 70, 2, 300, 500, 7, 3),
        shape(2000, 3, 5, 256, 2000, 1, 4),
        shape(400, 30, 70, 256, 170, 2, 5),
        shape(520, 64, 1, 600, 520, 0, 6),
        shape(90, 1, 2, 32, 40, 0, 7),
        shape(330, 8, 17, 100, 200, 0, 8),
        // The augmented scatter 128 wide: the tile core's 128 x 128 tiles (the plain one 127:
        // 64 x 64 tiles, the last one partly past D).
        shape(260, 127, 2, 256, 260, 0, 9),
        // The diagonal moments' 16 x 256 tile (K = 2 at D = 200); the 32 x 128 one is taken
        // at D = 70, K = 2 and D = 127, K = 2, the 64 x 64 one by the others.
        shape(300, 200, 2, 128, 300, 1, 10),
    ];
    let lanes: Vec<u32> = shapes.iter().map(|s| moments_lanes(s.d, s.k)).collect();
    assert!([4, 8, 16].iter().all(|l| lanes.contains(l)), "{lanes:?}");
    for s in &shapes {
        let c = case(&gpu, s);
        assert!(c.xg.chunks().len() > 1 || s.chunk_rows >= s.n);
        for moment in [
            Moment::Scatter,
            Moment::AugmentedScatter,
            Moment::DiagonalMoments,
        ] {
            let seg = Segment {
                chunk: &c.xg.chunks()[0],
                first: 0,
                n_rows: s.n,
                resp: &c.segments[0].4,
            };
            let names = variants(moment, &seg, (s.d, s.k));
            assert!(
                names.iter().any(|v| v.name.ends_with("_uniform")),
                "{names:?}"
            );
            let per = moment.outputs(s.k, s.d);
            let results: Vec<Vec<f32>> =
                names.iter().map(|&v| run(&gpu, &c, s, moment, v)).collect();
            let shown = format!("{moment:?} n {} d {} k {}", s.n, s.d, s.k);
            for (name, r) in names.iter().zip(&results).skip(1) {
                for (e, (a, b)) in results[0].iter().zip(r).enumerate() {
                    if read_by_host(moment, s.d, e % per % (per / s.k)) {
                        assert_eq!(
                            a.to_bits(),
                            b.to_bits(),
                            "{} vs {}: {shown}, block {} output {}",
                            name.name,
                            names[0].name,
                            e / per,
                            e % per
                        );
                    }
                }
            }
            // The blocks folded in f64 are the sums, to the f32 rounding of each block.
            for o in (0..per).filter(|&o| read_by_host(moment, s.d, o % (per / s.k))) {
                let got: f64 = (0..c.n_blocks)
                    .map(|b| results[0][b * per + o] as f64)
                    .sum();
                let (want, scale) = exact(&c, s, moment, o);
                assert!(
                    (got - want).abs() <= 1e-5 * scale.max(1e-30),
                    "{shown}, output {o}: {got} vs {want} (scale {scale})"
                );
            }
        }
    }
}
