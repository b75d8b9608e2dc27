//! Where a fit from host data spends its time on a real GPU: the host-to-device copy of the
//! data by several strategies, and the same fits from a host `Matrix` and from a `GpuMatrix`.
//!
//! ```text
//! cargo run --release --example upload_probe [ROWS COLS]...
//! ```
//!
//! Each line is one strategy's seconds and GB/s. A diagnostic for the GPU run kit, not a test.

use std::time::Instant;

use wgpu_unsupervised::{
    Components, Gpu, GpuMatrix, KMeans, KMeansInit, Matrix, Pca, ProfileClock,
};

fn wait(gpu: &Gpu) {
    gpu.queue().submit([]);
    let _ = gpu.device().poll(wgpu::PollType::wait_indefinitely());
}

fn report(what: &str, bytes: usize, seconds: f64) {
    println!(
        "  {what:<44} {seconds:>9.4} s  {:>7.2} GB/s",
        bytes as f64 / seconds / 1e9
    );
}

fn destination(gpu: &Gpu, bytes: usize) -> wgpu::Buffer {
    gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("probe destination"),
        size: bytes as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// write_buffer in pieces of `piece` bytes, a submit after each.
fn write_pieces(gpu: &Gpu, dst: &wgpu::Buffer, bytes: &[u8], piece: usize) {
    for (i, part) in bytes.chunks(piece).enumerate() {
        gpu.queue().write_buffer(dst, (i * piece) as u64, part);
        gpu.queue().submit([]);
    }
    wait(gpu);
}

/// Pieces of `piece` bytes, each cut into `threads` parts copied on their own threads into
/// their own staging views (what `Gpu::write_bytes` does), a submit after each piece.
fn write_parallel(gpu: &Gpu, dst: &wgpu::Buffer, bytes: &[u8], piece: usize, threads: usize) {
    for (i, p) in bytes.chunks(piece).enumerate() {
        let part = p.len().div_ceil(threads).next_multiple_of(4);
        std::thread::scope(|scope| {
            for (j, sub) in p.chunks(part).enumerate() {
                let at = (i * piece + j * part) as u64;
                let size = wgpu::BufferSize::new(sub.len() as u64).expect("non-empty");
                let mut view = gpu.queue().write_buffer_with(dst, at, size).expect("view");
                scope.spawn(move || view.copy_from_slice(sub));
            }
        });
        gpu.queue().submit([]);
    }
    wait(gpu);
}

/// A profiled fit's wall, GPU and waiting time, submissions and readbacks, and its kernels.
fn host_line(what: &str, p: &wgpu_unsupervised::Profile) {
    println!(
        "  {what:<44} wall {:.4} s, GPU {:.4} s, waits {:.4} s, {} submissions, {} readbacks",
        p.wall_seconds,
        p.gpu_seconds(),
        p.host.wait_seconds,
        p.host.submissions,
        p.host.readbacks
    );
    for s in p.kernels() {
        println!(
            "      {:<32} {:>4} calls {:>9.3} ms",
            s.kernel,
            s.calls,
            s.seconds * 1e3
        );
    }
}

fn probe(gpu: &Gpu, n: usize, d: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ (n * d) as u64;
    let values: Vec<f32> = (0..n * d)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect();
    let bytes: &[u8] = bytemuck::cast_slice(&values);
    let size = bytes.len();
    println!("{n} x {d}: {:.1} MB", size as f64 / 1e6);

    let t = Instant::now();
    let copy = values.clone();
    report("host Vec clone", size, t.elapsed().as_secs_f64());
    drop(copy);
    let t = Instant::now();
    let x = Matrix::new(&values, d)?;
    report("Matrix::new (validation)", size, t.elapsed().as_secs_f64());

    for round in 0..3 {
        let t = Instant::now();
        let g = GpuMatrix::upload(gpu, &x)?;
        wait(gpu);
        report(
            &format!("GpuMatrix::upload #{round}"),
            size,
            t.elapsed().as_secs_f64(),
        );
        drop(g);
    }
    let dst = destination(gpu, size);
    for piece_mb in [16usize] {
        for round in 0..2 {
            let t = Instant::now();
            write_pieces(gpu, &dst, bytes, piece_mb << 20);
            report(
                &format!("write_buffer {piece_mb} MiB pieces #{round}"),
                size,
                t.elapsed().as_secs_f64(),
            );
        }
    }
    for piece_mb in [16usize, 64] {
        for threads in [1usize, 2, 4, 8, 16] {
            for round in 0..2 {
                let t = Instant::now();
                write_parallel(gpu, &dst, bytes, piece_mb << 20, threads);
                report(
                    &format!("{piece_mb} MiB pieces on {threads} threads #{round}"),
                    size,
                    t.elapsed().as_secs_f64(),
                );
            }
        }
    }
    drop(dst);

    let g = GpuMatrix::upload(gpu, &x)?;
    wait(gpu);
    for k in [10usize, 256] {
        let k = k.min(n);
        let init: Vec<f64> = values[..k * d].iter().map(|&v| f64::from(v)).collect();
        let kmeans = |it: usize| {
            KMeans::new(k)
                .init(KMeansInit::Centroids(init.clone()))
                .max_iter(it)
                .fixed_iterations(true)
        };
        kmeans(2).fit(gpu, &g)?;
        let t = Instant::now();
        kmeans(30).fit(gpu, &x)?;
        report(
            &format!("kmeans k={k} 30 it from Matrix"),
            size,
            t.elapsed().as_secs_f64(),
        );
        for it in [1usize, 10, 30] {
            let t = Instant::now();
            kmeans(it).fit(gpu, &g)?;
            report(
                &format!("kmeans k={k} {it} it from GpuMatrix"),
                size,
                t.elapsed().as_secs_f64(),
            );
        }
        let (_, p) = gpu.profile(ProfileClock::Auto, || kmeans(30).fit(gpu, &g))?;
        host_line(&format!("kmeans k={k} 30 it"), &p);
    }
    // A decaying spectrum (column j scaled by 0.95^j), for a power iteration that converges.
    let decayed: Vec<f32> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| (v - 0.5) * 0.95f32.powi((i % d) as i32))
        .collect();
    let xs = Matrix::new(&decayed, d)?;
    let gs = GpuMatrix::upload(gpu, &xs)?;
    wait(gpu);
    let pca = Pca::new(Components::Count(50.min(d)));
    let model = pca.fit(gpu, &gs)?;
    println!("  pca solver: {}", model.solver().name());
    for round in 0..2 {
        let t = Instant::now();
        pca.fit(gpu, &xs)?;
        report(
            &format!("pca 50 from Matrix #{round}"),
            size,
            t.elapsed().as_secs_f64(),
        );
        let t = Instant::now();
        pca.fit(gpu, &gs)?;
        report(
            &format!("pca 50 from GpuMatrix #{round}"),
            size,
            t.elapsed().as_secs_f64(),
        );
    }
    let (_, p) = gpu.profile(ProfileClock::Auto, || pca.fit(gpu, &gs))?;
    host_line("pca 50", &p);
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    wgpu_unsupervised::headless::avoid_window_system_probe();
    let gpu = Gpu::new()?;
    println!("adapter: {}", gpu.info());
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let shapes: Vec<(usize, usize)> = if args.len() >= 2 {
        args.chunks(2).map(|c| (c[0], c[1])).collect()
    } else {
        vec![(70_000, 784), (1_000_000, 256)]
    };
    for (n, d) in shapes {
        probe(&gpu, n, d)?;
    }
    Ok(())
}
