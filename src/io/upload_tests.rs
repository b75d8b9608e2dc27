//! A `.npy` file on its way to the device: read a piece at a time, each piece checked as it
//! is read.

use super::*;

#[test]
fn a_file_goes_to_the_device_a_piece_at_a_time_and_a_nan_in_it_is_placed() {
    use crate::gpu::GpuInput;
    let gpu = crate::gpu::tests::gpu();
    let dir = tempfile::tempdir().unwrap();
    let (n, d) = (1000usize, 3usize);
    let data: Vec<f32> = (0..n * d).map(|v| (v % 23) as f32 * 0.25 - 2.0).collect();
    let p = dir.path().join("x.npy");
    write_npy_f32(&p, &data, &[n as u64, d as u64]).unwrap();
    // Chunks of 111 rows: pieces straddle them.
    gpu.set_max_chunk_bytes(111 * d as u64 * 4);
    let rows = NpyRows::open(&p).unwrap();
    let on = rows.on_gpu(&gpu).unwrap();
    assert_eq!(on.n_chunks(), n.div_ceil(111));
    assert_eq!(on.to_host(&gpu).unwrap(), data);

    let mut bad = data.clone();
    bad[3 * 640 + 2] = f32::NEG_INFINITY;
    let pn = dir.path().join("inf.npy");
    write_npy_f32(&pn, &bad, &[n as u64, d as u64]).unwrap();
    let rows = NpyRows::open(&pn).unwrap();
    let at_641_3 = |e: Error| {
        assert!(
            matches!(
                e,
                Error::NonFiniteInFile {
                    row: 641,
                    col: 3,
                    ..
                }
            ),
            "{e}"
        )
    };
    at_641_3(rows.on_gpu(&gpu).unwrap_err());
    // A fit over the file reports the same place.
    at_641_3(crate::KMeans::new(2).fit(&gpu, &rows).unwrap_err());
}
