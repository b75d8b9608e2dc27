use std::time::Instant;
use wgpu_unsupervised::*;
fn main() {
    let gpu = Gpu::new().unwrap();
    for &(n, d, k) in &[
        (100000usize, 16usize, 8usize),
        (100000, 16, 64),
        (100000, 64, 16),
        (10000, 128, 256),
    ] {
        let x = datasets::uniform(n, d, 1);
        let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let model = KMeansModel::from_centroids(x[..k * d].to_vec(), d).unwrap();
        let _ = model.predict(&gpu, &xg).unwrap();
        let t = Instant::now();
        for _ in 0..3 {
            let _ = model.predict(&gpu, &xg).unwrap();
        }
        let pred = t.elapsed().as_secs_f64() / 3.0 * 1e3;
        println!("n={n} d={d} k={k}: predict {pred:.2} ms");
    }
}
