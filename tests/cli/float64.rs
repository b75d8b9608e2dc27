//! f64 `.npy` inputs (`f8`) keep their digits: the fits, predictions and metrics centre them
//! in f64 before the f32 cast (module `origin`), so data with an offset of 10⁸ give the models
//! of the data without it; a precomputed f64 distance matrix is checked at f64's tolerance.

use std::path::PathBuf;

use npyz::WriterBuilder;
use wgpu_unsupervised::{datasets, io};

use crate::common::{json_line, ok, Fixture};

/// Writes row-major f64 `values` of `d` columns as an `f8` `.npy` file `{name}`.
fn write_f8(f: &mut Fixture, name: &str, values: &[f64], d: usize) -> PathBuf {
    let path = f.file(&format!("{name}.npy"));
    let mut out = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[(values.len() / d) as u64, d as u64])
        .writer(std::fs::File::create(&path).unwrap())
        .begin_nd()
        .unwrap();
    out.extend(values.iter().copied()).unwrap();
    out.finish().unwrap();
    f.name(name, path.clone());
    path
}

/// The inertia of `kmeans` on `{input}`, its labels written to `{dir}/input-labels.npy`.
fn fit(f: &Fixture, input: &str, seed: u64) -> f64 {
    let args = format!(
        "kmeans --input {{{input}}} --k 3 --seed {seed} --output {{dir}}/{input}-labels.npy --json"
    );
    json_line(&f.run(&args))["inertia"].as_f64().unwrap()
}

/// The first explained variance ratio of `pca` on `{input}`.
fn pca(f: &Fixture, input: &str) -> f64 {
    let report = json_line(&f.run(&format!("pca --input {{{input}}} --components 2 --json")));
    report["explained_variance_ratio"][0].as_f64().unwrap()
}

/// Calinski-Harabasz of the labels of `{dir}/x-labels.npy` on `{input}`.
fn ev(f: &Fixture, input: &str) -> f64 {
    let args = format!("evaluate --input {{{input}}} --labels {{dir}}/x-labels.npy --json");
    json_line(&f.run(&args))["calinski_harabasz"]
        .as_f64()
        .unwrap()
}

#[test]
fn offset_f64_files_fit_like_the_data_without_the_offset() {
    let mut f = Fixture::new();
    for seed in [1u64, 2] {
        let (x, _, _) = datasets::make_blobs(400, 3, 3, 0.8, (-5.0, 5.0), seed).unwrap();
        let x: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let shifted: Vec<f64> = x.iter().map(|v| v + 1e8).collect();
        write_f8(&mut f, "x", &x, 3);
        write_f8(&mut f, "xs", &shifted, 3);
        let (a, b) = (fit(&f, "x", seed), fit(&f, "xs", seed));
        assert!(
            (a - b).abs() < 1e-5 * a,
            "seed {seed}: inertia {b} with the offset, {a} without"
        );
        let la = io::read_labels(&f.file("x-labels.npy")).unwrap();
        let lb = io::read_labels(&f.file("xs-labels.npy")).unwrap();
        let differ = la.iter().zip(&lb).filter(|(p, q)| p != q).count();
        assert!(differ <= 2, "seed {seed}: {differ} labels differ");
        // The rows rounded to f32 first (the control) lose the clusters.
        let rounded: Vec<f64> = shifted.iter().map(|&v| v as f32 as f64).collect();
        write_f8(&mut f, "xr", &rounded, 3);
        let r = fit(&f, "xr", seed);
        let lr = io::read_labels(&f.file("xr-labels.npy")).unwrap();
        let ari = wgpu_unsupervised::metrics::adjusted_rand_index(&la, &lr).unwrap();
        assert!(
            ari < 0.9,
            "seed {seed}: rounded rows still agree (ARI {ari}, inertia {r})"
        );

        let (a, b) = (pca(&f, "x"), pca(&f, "xs"));
        assert!((a - b).abs() < 1e-5, "seed {seed}: PCA ratio {b} vs {a}");

        let model = f.model("m", &format!("kmeans --input {{xs}} --k 3 --seed {seed}"));
        assert!(std::fs::read_to_string(&model).unwrap().contains("origin"));
        ok(&f.run("predict --model {m} --input {xs} --output {dir}/p.npy"));
        let p = io::read_labels(&f.file("p.npy")).unwrap();
        assert_eq!(p, lb, "seed {seed}: predictions of the training file");

        let (a, b) = (ev(&f, "x"), ev(&f, "xs"));
        assert!(
            (a - b).abs() < 1e-6 * a,
            "seed {seed}: Calinski-Harabasz {b} vs {a}"
        );
    }
}

#[test]
fn precomputed_f64_distances_are_checked_at_f64_tolerance() {
    let mut f = Fixture::new();
    let n = 6;
    let mut d = vec![0.0f64; n * n];
    for i in 0..n {
        for j in 0..n {
            d[i * n + j] = (i as f64 - j as f64).abs() + if i / 3 == j / 3 { 0.0 } else { 5.0 };
        }
    }
    f.write("y", "y.csv", "0\n0\n0\n1\n1\n1\n");
    write_f8(&mut f, "d", &d, n);
    ok(&f.run("evaluate --input {d} --labels {y} --precomputed"));
    // 1e-6 on the diagonal: within f32's tolerance (100 eps = 1.2e-5), not f64's, as
    // scikit-learn decides by the matrix's dtype.
    d[2 * n + 2] = 1e-6;
    write_f8(&mut f, "d", &d, n);
    let out = f.run("evaluate --input {d} --labels {y} --precomputed");
    let err = crate::common::fails(&out, 2);
    assert!(err.contains("diagonal"), "{err}");
}
