//! `gmm` from given starting parameters (`--weights-init`, `--means-init`,
//! `--precisions-init`, `--warm-start`) and `sample`.

use wgpu_unsupervised::{io, GaussianMixture, GaussianMixtureModel, Matrix};

use crate::common::{json_line, ok, read_2d, Fixture};

/// Writes `values` as a `rows` x `cols` .npy file.
fn write(f: &Fixture, name: &str, values: &[f64], rows: usize, cols: usize) {
    let v: Vec<f32> = values.iter().map(|&x| x as f32).collect();
    io::write_npy_f32(&f.file(name), &v, &[rows as u64, cols as u64]).unwrap();
}

/// The three parts from files give the library's fit from the same parts; `--warm-start`
/// continues a saved model as `GaussianMixture::warm_start` does.
#[test]
fn gmm_given_parts_and_warm_start_match_the_library() {
    let mut f = Fixture::new();
    let first = f.model(
        "first",
        "gmm --input {iris} --k 3 --covariance diag --max-iter 5",
    );
    let start = GaussianMixtureModel::load(&first).unwrap();
    let p = start.initial_parameters();
    write(&f, "w.npy", &p.weights, 3, 1);
    write(&f, "m.npy", &p.means, 3, 4);
    write(&f, "p.npy", &p.precisions, 3, 4);
    for (name, file) in [("w", "w.npy"), ("m", "m.npy"), ("p", "p.npy")] {
        let path = f.file(file);
        f.name(name, path);
    }
    let (rows, _) = wgpu_unsupervised::datasets::iris();
    let x = Matrix::new(&rows, 4).unwrap();
    let gpu = crate::common::gpu();
    let f32s = |v: &[f64]| v.iter().map(|&x| x as f32 as f64).collect::<Vec<_>>();
    let parts = GaussianMixture::new(3)
        .covariance(wgpu_unsupervised::CovarianceType::Diag)
        .weights_init(f32s(&p.weights))
        .means_init(f32s(&p.means))
        .precisions_init(f32s(&p.precisions))
        .fit(&gpu, &x)
        .unwrap();
    let report = json_line(&f.run(
        "gmm --input {iris} --k 3 --covariance diag --weights-init {w} --means-init {m} \
         --precisions-init {p} --output {dir}/l.npy --json",
    ));
    assert_eq!(
        report["log_likelihood"].as_f64().unwrap(),
        parts.score(&gpu, &x).unwrap()
    );
    assert_eq!(io::read_labels(&f.file("l.npy")).unwrap(), parts.labels());
    // Means alone are accepted too (the rest from --init).
    ok(&f.run("gmm --input {iris} --k 3 --covariance diag --means-init {m}"));

    let warm = GaussianMixture::new(3)
        .warm_start(&start)
        .fit(&gpu, &x)
        .unwrap();
    let report = json_line(&f.run("gmm --input {iris} --k 3 --warm-start {first} --json"));
    assert_eq!(report["covariance"], "diag", "{report}");
    assert_eq!(report["n_iter"].as_u64().unwrap() as usize, warm.n_iter());
    assert_eq!(
        report["log_likelihood"].as_f64().unwrap(),
        warm.score(&gpu, &x).unwrap()
    );

    // Refusals: parts of the wrong size, a model of another k, flags that conflict.
    for (args, words) in [
        ("--k 3 --means-init {w}", &["means have 3 values", "12"][..]),
        (
            "--k 3 --covariance diag --weights-init {m}",
            &["weights have 12"][..],
        ),
        (
            "--k 2 --warm-start {first}",
            &["3 components", "--k is 2"][..],
        ),
        ("--k 3 --warm-start {first} --init random", &["--init"][..]),
        ("--k 3 --warm-start {dir}/none.json", &["none.json"][..]),
    ] {
        let out = f.run(&format!("gmm --input {{iris}} {args}"));
        assert_eq!(out.status.code(), Some(2), "{args}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(words.iter().all(|w| err.contains(w)), "{args}: {err}");
    }
}

/// `sample` draws what the library draws, with the labels, and refuses other models.
#[test]
fn sample_writes_the_library_draws() {
    let mut f = Fixture::new();
    let model = f.model("model", "gmm --input {iris} --k 2 --seed 3");
    let report = json_line(&f.run(
        "sample --model {model} --n 500 --seed 9 --output {dir}/x.npy --labels {dir}/y.csv \
         --json",
    ));
    for (key, want) in [("n", 500), ("d", 4), ("k", 2), ("seed", 9)] {
        assert_eq!(report[key], want, "{report}");
    }
    assert_eq!(report["command"], "sample");
    let (rows, labels) = GaussianMixtureModel::load(&model)
        .unwrap()
        .sample(500, 9)
        .unwrap();
    let want: Vec<f32> = rows.iter().map(|&v| v as f32).collect();
    assert_eq!(read_2d(&f.file("x.npy"), 500, 4), want);
    assert_eq!(io::read_labels(&f.file("y.csv")).unwrap(), labels);
    let text = ok(&f.run("sample --model {model} --n 3 --output {dir}/few.csv"));
    assert!(text.contains("3 x 4"), "{text}");

    f.model("km", "kmeans --input {iris} --k 2");
    for (args, words) in [
        (
            "sample --model {km} --n 5 --output {dir}/a.npy",
            &["km.json"][..],
        ),
        (
            "sample --model {model} --n 0 --output {dir}/a.npy",
            &["--n"][..],
        ),
        (
            "sample --model {model} --n 5 --output {dir}/a.txt",
            &[".npy"][..],
        ),
    ] {
        let out = f.run(args);
        assert_eq!(out.status.code(), Some(2), "{args}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(words.iter().all(|w| err.contains(w)), "{args}: {err}");
    }
}
