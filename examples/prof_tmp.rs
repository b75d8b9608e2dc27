use std::time::Instant;
use wgpu_unsupervised::*;
fn main() {
    let gpu = Gpu::new().unwrap();
    for &(n, d, k) in &[(1000usize, 2usize, 256usize), (10000, 128, 256)] {
        let x = datasets::uniform(n, d, 1);
        let xg = GpuMatrix::upload(&gpu, &Matrix::new(&x, d).unwrap()).unwrap();
        let t = Instant::now();
        let _ = KMeans::new(k).seed(1).max_iter(1).fit(&gpu, &xg).unwrap();
        let pp = t.elapsed().as_secs_f64() * 1e3;
        println!("n={n} d={d} k={k}: kmeans++ fit(1 iter) {pp:.1} ms");
    }
}
