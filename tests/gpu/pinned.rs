//! Results pinned bit for bit: Iris, Digits and generated blobs through every kernel family
//! (K-Means at small and large k, the three PCA solvers, all four GMM covariance types, the
//! silhouette), hashed and held against `tests/data/pinned.txt`.
//!
//! Refactors of the shaders or the host layer must not change a single bit on the adapter the
//! file was written on (its name is the first line). On any other adapter the hashes cannot be
//! expected to match, so the test checks the recorded summary figures (inertia, bound,
//! eigenvalues, silhouette) to a relative 1e-4 instead, and says so on stderr.
//!
//! `PIN_WRITE=1 cargo test --test gpu pinned` rewrites the file from the current code.

#![cfg(feature = "datasets")]

use wgpu_unsupervised::{
    datasets, metrics, Components, CovarianceType, GaussianMixture, KMeans, Matrix, Pca, PcaSolver,
};

/// FNV-1a over the bytes of the values: a stable fingerprint of every bit.
fn fnv<T: bytemuck::Pod>(values: &[T]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytemuck::cast_slice::<T, u8>(values) {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// One pinned quantity: its name, the hash of all its bits, and a few figures that any
/// adapter must reproduce within rounding.
struct Pin {
    name: String,
    hash: u64,
    summary: Vec<f64>,
}

fn pin<T: bytemuck::Pod>(name: &str, values: &[T], summary: Vec<f64>) -> Pin {
    Pin {
        name: name.to_string(),
        hash: fnv(values),
        summary,
    }
}

fn kmeans_pins(
    gpu: &wgpu_unsupervised::Gpu,
    tag: &str,
    x: &Matrix,
    k: usize,
    seed: u64,
) -> Vec<Pin> {
    let m = KMeans::new(k).n_init(2).seed(seed).fit(gpu, x).unwrap();
    let distances = m.transform(gpu, x).unwrap();
    vec![
        pin(&format!("{tag}.kmeans{k}.labels"), m.labels(), vec![]),
        pin(
            &format!("{tag}.kmeans{k}.centroids"),
            m.centroids(),
            vec![m.inertia()],
        ),
        pin(
            &format!("{tag}.kmeans{k}.inertia"),
            &[m.inertia()],
            vec![m.inertia()],
        ),
        pin(&format!("{tag}.kmeans{k}.transform"), &distances, vec![]),
    ]
}

fn pca_pins(gpu: &wgpu_unsupervised::Gpu, tag: &str, x: &Matrix, m: usize) -> Vec<Pin> {
    let mut pins = Vec::new();
    for (solver, name) in [
        (PcaSolver::Full, "full"),
        (PcaSolver::Power, "power"),
        (PcaSolver::MatrixFree, "matrixfree"),
    ] {
        let model = Pca::new(Components::Count(m))
            .solver(solver)
            .seed(5)
            .fit(gpu, x)
            .unwrap();
        let z = model.transform(gpu, x).unwrap();
        let back = model
            .inverse_transform(gpu, &Matrix::new(&z, m).unwrap())
            .unwrap();
        let ev = model.explained_variance().to_vec();
        pins.push(pin(
            &format!("{tag}.pca{m}.{name}.components"),
            model.components(),
            ev.clone(),
        ));
        pins.push(pin(
            &format!("{tag}.pca{m}.{name}.variance"),
            &ev,
            ev.clone(),
        ));
        pins.push(pin(&format!("{tag}.pca{m}.{name}.transform"), &z, vec![]));
        pins.push(pin(&format!("{tag}.pca{m}.{name}.inverse"), &back, vec![]));
    }
    pins
}

fn gmm_pins(
    gpu: &wgpu_unsupervised::Gpu,
    tag: &str,
    x: &Matrix,
    k: usize,
    cov: CovarianceType,
) -> Vec<Pin> {
    let m = GaussianMixture::new(k)
        .covariance(cov)
        .seed(1)
        .max_iter(30)
        .fit(gpu, x)
        .unwrap();
    let proba = m.predict_proba(gpu, x).unwrap();
    let name = cov.name();
    vec![
        pin(
            &format!("{tag}.gmm{k}.{name}.bound"),
            &[m.lower_bound()],
            vec![m.lower_bound()],
        ),
        pin(&format!("{tag}.gmm{k}.{name}.labels"), m.labels(), vec![]),
        pin(&format!("{tag}.gmm{k}.{name}.means"), m.means(), vec![]),
        pin(
            &format!("{tag}.gmm{k}.{name}.covariances"),
            m.covariances(),
            vec![],
        ),
        pin(&format!("{tag}.gmm{k}.{name}.proba"), &proba, vec![]),
    ]
}

fn silhouette_pin(gpu: &wgpu_unsupervised::Gpu, tag: &str, x: &Matrix, labels: &[u32]) -> Pin {
    let s = metrics::silhouette(gpu, x, labels, None, 0).unwrap();
    pin(&format!("{tag}.silhouette"), &s.samples, vec![s.score])
}

fn compute(gpu: &wgpu_unsupervised::Gpu) -> Vec<Pin> {
    let mut pins = Vec::new();

    let (iris, iris_y) = datasets::iris();
    let x = Matrix::new(&iris, 4).unwrap();
    pins.extend(kmeans_pins(gpu, "iris", &x, 3, 7));
    pins.extend(pca_pins(gpu, "iris", &x, 2));
    pins.extend(gmm_pins(gpu, "iris", &x, 3, CovarianceType::Full));
    pins.push(silhouette_pin(gpu, "iris", &x, &iris_y));

    let (digits, digits_y) = datasets::digits();
    let x = Matrix::new(&digits, 64).unwrap();
    pins.extend(kmeans_pins(gpu, "digits", &x, 10, 3));
    pins.extend(kmeans_pins(gpu, "digits", &x, 40, 4));
    pins.extend(pca_pins(gpu, "digits", &x, 10));
    pins.extend(gmm_pins(gpu, "digits", &x, 4, CovarianceType::Tied));
    pins.extend(gmm_pins(gpu, "digits", &x, 6, CovarianceType::Diag));
    pins.push(silhouette_pin(gpu, "digits", &x, &digits_y));

    let (blobs, blobs_y, _) = datasets::make_blobs(3000, 30, 5, 1.5, (-8.0, 8.0), 11).unwrap();
    let x = Matrix::new(&blobs, 30).unwrap();
    pins.extend(kmeans_pins(gpu, "blobs", &x, 5, 2));
    pins.extend(pca_pins(gpu, "blobs", &x, 4));
    pins.extend(gmm_pins(gpu, "blobs", &x, 5, CovarianceType::Full));
    pins.extend(gmm_pins(gpu, "blobs", &x, 5, CovarianceType::Spherical));
    pins.push(silhouette_pin(gpu, "blobs", &x, &blobs_y));
    pins
}

fn format_pins(adapter: &str, pins: &[Pin]) -> String {
    let mut out = format!("adapter {adapter}\n");
    for p in pins {
        out.push_str(&format!("{} {:016x}", p.name, p.hash));
        for v in &p.summary {
            out.push_str(&format!(" {v:e}"));
        }
        out.push('\n');
    }
    out
}

#[test]
fn results_are_pinned_bit_for_bit() {
    let gpu = crate::common::gpu();
    let adapter = gpu.info().name.clone();
    let pins = compute(&gpu);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pinned.txt");
    if std::env::var_os("PIN_WRITE").is_some() {
        std::fs::write(&path, format_pins(&adapter, &pins)).unwrap();
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    let pinned_adapter = lines.next().unwrap().strip_prefix("adapter ").unwrap();
    let exact = pinned_adapter == adapter;
    if !exact {
        eprintln!(
            "pinned on '{pinned_adapter}', running on '{adapter}': checking the summary figures \
             to 1e-4, not the bits"
        );
    }
    let recorded: Vec<(&str, &str, Vec<f64>)> = lines
        .map(|l| {
            let mut f = l.split_whitespace();
            let name = f.next().unwrap();
            let hash = f.next().unwrap();
            (name, hash, f.map(|v| v.parse().unwrap()).collect())
        })
        .collect();
    assert_eq!(recorded.len(), pins.len(), "pinned quantities changed");
    let mut changed = Vec::new();
    for (p, (name, hash, summary)) in pins.iter().zip(&recorded) {
        assert_eq!(p.name, *name);
        assert_eq!(p.summary.len(), summary.len(), "{name}");
        for (a, b) in p.summary.iter().zip(summary) {
            let rel = (a - b).abs() / b.abs().max(1e-12);
            assert!(rel <= 1e-4, "{name}: {a} against the pinned {b}");
        }
        if exact && format!("{:016x}", p.hash) != *hash {
            changed.push(*name);
        }
    }
    assert!(
        changed.is_empty(),
        "bits changed on the pinned adapter: {changed:?}"
    );
}
