//! End-to-end tests of the `wgpu-unsupervised` program: the built binary is run on small files
//! in a temporary directory, and its exit status, stdout, stderr and output files are checked.
//! The fits need a wgpu adapter (CI installs lavapipe); data stay small because that adapter
//! is a software rasterizer.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use wgpu_unsupervised::{datasets, io};

/// Runs the program with `args` and returns what it did.
fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wgpu-unsupervised"))
        .args(args)
        .output()
        .expect("the wgpu-unsupervised binary runs")
}

/// The path as a `&str` (temporary directories have UTF-8 names here).
fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts success and returns stdout.
fn ok(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "expected success\nstdout: {}\nstderr: {}",
        stdout(out),
        stderr(out)
    );
    stdout(out)
}

/// Asserts the exit status `code`, nothing on stdout, and exactly one `error: ` line on
/// stderr (every failure tested here happens before the GPU is opened, so no driver output
/// can mix in); returns that line.
fn fails(out: &Output, code: i32) -> String {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(code),
        "expected exit {code}\nstdout: {}\nstderr: {err}",
        stdout(out)
    );
    assert!(out.stdout.is_empty(), "stdout: {}", stdout(out));
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one error line expected, got: {err:?}");
    assert!(lines[0].starts_with("error: "), "{err:?}");
    lines[0].to_string()
}

/// Parses stdout as exactly one line of JSON.
fn json_line(out: &Output) -> Value {
    let text = ok(out);
    assert!(text.ends_with('\n'), "{text:?}");
    assert_eq!(
        text.lines().count(),
        1,
        "exactly one line expected: {text:?}"
    );
    serde_json::from_str(text.trim_end()).unwrap_or_else(|e| panic!("{e}: {text:?}"))
}

/// Writes `n` x `d` Gaussian blobs around `centers` centres to `dir/name` (.npy, f4).
fn blobs_npy(dir: &Path, name: &str, n: usize, d: usize, centers: usize, seed: u64) -> PathBuf {
    let (x, _, _) = datasets::make_blobs(n, d, centers, 0.5, (-10.0, 10.0), seed).unwrap();
    let path = dir.join(name);
    io::write_npy_f32(&path, &x, &[n as u64, d as u64]).unwrap();
    path
}

/// Every file in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn kmeans_npy_json_report_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 300, 3, 4, 1);
    let labels = dir.path().join("labels.npy");
    let out = cli(&[
        "kmeans",
        "--input",
        s(&x),
        "--k",
        "4",
        "--seed",
        "5",
        "--n-init",
        "2",
        "--output",
        s(&labels),
        "--json",
    ]);
    let report = json_line(&out);
    let keys: Vec<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = [
        "algorithm",
        "n",
        "d",
        "k",
        "inertia",
        "n_iter",
        "converged",
        "fit_seconds",
        "adapter",
    ];
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    expected.sort_unstable();
    assert_eq!(sorted, expected, "{report}");
    assert_eq!(report["algorithm"], "kmeans");
    assert_eq!(report["n"], 300);
    assert_eq!(report["d"], 3);
    assert_eq!(report["k"], 4);
    let inertia = report["inertia"].as_f64().unwrap();
    assert!(inertia.is_finite() && inertia >= 0.0, "{report}");
    assert!(report["n_iter"].as_u64().unwrap() >= 1, "{report}");
    assert!(report["converged"].is_boolean(), "{report}");
    assert!(report["fit_seconds"].as_f64().unwrap() >= 0.0, "{report}");
    assert!(!report["adapter"].as_str().unwrap().is_empty(), "{report}");

    let labels = io::read_labels(&labels).unwrap();
    assert_eq!(labels.len(), 300);
    assert!(labels.iter().all(|&l| l < 4), "{labels:?}");
}

#[test]
fn kmeans_csv_with_header_and_human_report() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("points.csv");
    // Two well separated groups of six rows.
    let mut text = String::from("width,height\n");
    for i in 0..6 {
        text += &format!("{},{}\n", 0.1 * i as f32, 1.0 - 0.1 * i as f32);
    }
    for i in 0..6 {
        text += &format!("{},{}\n", 50.0 + 0.1 * i as f32, 40.0 + 0.2 * i as f32);
    }
    std::fs::write(&csv, text).unwrap();
    let labels_path = dir.path().join("labels.npy");
    let out = cli(&[
        "kmeans",
        "--input",
        s(&csv),
        "--k",
        "2",
        "--output",
        s(&labels_path),
    ]);
    let report = ok(&out);
    for word in ["adapter", "12 rows x 2 features", "inertia", "iterations"] {
        assert!(report.contains(word), "{word:?} missing from {report}");
    }
    assert!(report.contains(s(&labels_path)), "{report}");

    let labels = io::read_labels(&labels_path).unwrap();
    assert_eq!(labels.len(), 12);
    assert!(labels[..6].iter().all(|&l| l == labels[0]), "{labels:?}");
    assert!(labels[6..].iter().all(|&l| l == labels[6]), "{labels:?}");
    assert_ne!(labels[0], labels[6]);
}

#[test]
fn kmeans_random_init() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 200, 2, 3, 2);
    let out = cli(&[
        "kmeans",
        "--input",
        s(&x),
        "--k",
        "3",
        "--init",
        "random",
        "--seed",
        "11",
        "--max-iter",
        "100",
        "--tol",
        "0",
        "--json",
    ]);
    let report = json_line(&out);
    assert_eq!(report["k"], 3);
    assert_eq!(report["n"], 200);
    assert!(report["inertia"].as_f64().unwrap().is_finite());
    assert!(report["n_iter"].as_u64().unwrap() <= 100);
}

#[test]
fn model_then_predict_gives_the_fit_labels() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 250, 4, 5, 3);
    let fit_labels = dir.path().join("fit.npy");
    let model = dir.path().join("model.json");
    ok(&cli(&[
        "kmeans",
        "--input",
        s(&x),
        "--k",
        "5",
        "--output",
        s(&fit_labels),
        "--model",
        s(&model),
    ]));

    let file: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    assert_eq!(file["format"], "wgpu-unsupervised/kmeans");
    assert_eq!(file["version"], 1);
    assert!(file["model"].is_object());

    let predicted = dir.path().join("predicted.npy");
    let report = json_line(&cli(&[
        "predict",
        "--model",
        s(&model),
        "--input",
        s(&x),
        "--output",
        s(&predicted),
        "--json",
    ]));
    assert_eq!(report["algorithm"], "kmeans");
    assert_eq!(report["command"], "predict");
    assert_eq!(report["n"], 250);
    assert_eq!(report["d"], 4);
    assert_eq!(report["k"], 5);
    assert!(report["adapter"].is_string());
    assert!(report["seconds"].as_f64().unwrap() >= 0.0);

    assert_eq!(
        io::read_labels(&predicted).unwrap(),
        io::read_labels(&fit_labels).unwrap()
    );

    // The human report of predict names its output.
    let again = dir.path().join("again.npy");
    let text = ok(&cli(&[
        "predict",
        "--model",
        s(&model),
        "--input",
        s(&x),
        "--output",
        s(&again),
    ]));
    assert!(text.contains(s(&again)), "{text}");
    assert_eq!(
        io::read_labels(&again).unwrap(),
        io::read_labels(&fit_labels).unwrap()
    );
}

#[test]
fn info_human_and_json() {
    let text = ok(&cli(&["info"]));
    for word in ["adapter:", "backend:", "device type:", "driver:", "limits:"] {
        assert!(text.contains(word), "{word:?} missing from {text}");
    }

    let info = json_line(&cli(&["info", "--json"]));
    for key in [
        "name",
        "backend",
        "device_type",
        "driver",
        "max_storage_buffer_binding_size",
        "max_buffer_size",
    ] {
        assert!(info.get(key).is_some(), "{key} missing from {info}");
    }
    assert!(!info["name"].as_str().unwrap().is_empty());
    assert!(info["max_storage_buffer_binding_size"].as_u64().unwrap() > 0);
}

#[test]
fn json_output_is_exactly_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 120, 2, 2, 4);
    let model = dir.path().join("m.json");
    let out = cli(&[
        "kmeans",
        "--input",
        s(&x),
        "--k",
        "2",
        "--model",
        s(&model),
        "--json",
    ]);
    let text = ok(&out);
    assert_eq!(text.matches('\n').count(), 1, "{text:?}");
    assert!(text.starts_with('{') && text.ends_with("}\n"), "{text:?}");

    let labels = dir.path().join("l.npy");
    let out = cli(&[
        "predict",
        "--model",
        s(&model),
        "--input",
        s(&x),
        "--output",
        s(&labels),
        "--json",
    ]);
    let text = ok(&out);
    assert_eq!(text.matches('\n').count(), 1, "{text:?}");
    assert!(text.starts_with('{') && text.ends_with("}\n"), "{text:?}");
}

#[test]
fn missing_k_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 20, 2, 2, 5);
    let out = cli(&["kmeans", "--input", s(&x)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--k"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());

    let out = cli(&["cluster"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = cli(&["kmeans", "--input", s(&x), "--k", "two"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn k_larger_than_n_exits_2_naming_k_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 10, 2, 2, 6);
    let labels = dir.path().join("labels.npy");
    let model = dir.path().join("model.json");
    let line = fails(
        &cli(&[
            "kmeans",
            "--input",
            s(&x),
            "--k",
            "50",
            "--output",
            s(&labels),
            "--model",
            s(&model),
        ]),
        2,
    );
    assert!(line.contains("k = 50"), "{line}");
    assert!(line.contains("n = 10"), "{line}");
    assert_eq!(files_in(dir.path()), ["x.npy"]);
}

#[test]
fn invalid_parameters_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 20, 2, 2, 7);
    for (flag, value, name) in [
        ("--k", "0", "k"),
        ("--tol", "-1", "tol"),
        ("--n-init", "0", "n_init"),
        ("--max-iter", "0", "max_iter"),
    ] {
        let mut args = vec!["kmeans", "--input", s(&x)];
        if flag != "--k" {
            args.extend(["--k", "2"]);
        }
        args.extend([flag, value]);
        let line = fails(&cli(&args), 2);
        assert!(line.contains(name), "{line}");
    }
    // Labels are only written as .npy.
    let line = fails(
        &cli(&[
            "kmeans",
            "--input",
            s(&x),
            "--k",
            "2",
            "--output",
            s(&dir.path().join("labels.csv")),
        ]),
        2,
    );
    assert!(line.contains(".npy"), "{line}");
}

#[test]
fn missing_input_file_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere.npy");
    let line = fails(&cli(&["kmeans", "--input", s(&missing), "--k", "2"]), 2);
    assert!(line.contains("nowhere.npy"), "{line}");

    let wrong_kind = dir.path().join("x.txt");
    std::fs::write(&wrong_kind, "1,2\n3,4\n").unwrap();
    let line = fails(&cli(&["kmeans", "--input", s(&wrong_kind), "--k", "1"]), 2);
    assert!(line.contains("x.txt"), "{line}");
}

#[test]
fn csv_with_nan_exits_2_naming_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("bad.csv");
    std::fs::write(&csv, "a,b,c\n1,2,3\n4,5,6\n7,NaN,9\n").unwrap();
    let line = fails(&cli(&["kmeans", "--input", s(&csv), "--k", "2"]), 2);
    assert!(line.contains("row 2"), "{line}");
    assert!(line.contains("column 1"), "{line}");
}

/// Fits a 3-feature model into `dir/model.json` and returns its path.
fn fitted_model(dir: &Path) -> PathBuf {
    let x = blobs_npy(dir, "train.npy", 60, 3, 3, 8);
    let model = dir.join("model.json");
    ok(&cli(&[
        "kmeans",
        "--input",
        s(&x),
        "--k",
        "3",
        "--model",
        s(&model),
    ]));
    model
}

#[test]
fn predict_with_another_feature_count_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let model = fitted_model(dir.path());
    let x = blobs_npy(dir.path(), "x5.npy", 30, 5, 2, 9);
    let out = dir.path().join("labels.npy");
    let line = fails(
        &cli(&[
            "predict",
            "--model",
            s(&model),
            "--input",
            s(&x),
            "--output",
            s(&out),
        ]),
        2,
    );
    assert!(line.contains("feature"), "{line}");
    assert!(line.contains('3') && line.contains('5'), "{line}");
    assert!(!out.exists());
}

#[test]
fn corrupt_or_foreign_model_files_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let model = fitted_model(dir.path());
    let x = dir.path().join("train.npy");
    let out = dir.path().join("labels.npy");
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();

    let predict_with = |text: &str| {
        let path = dir.path().join("candidate.json");
        std::fs::write(&path, text).unwrap();
        fails(
            &cli(&[
                "predict",
                "--model",
                s(&path),
                "--input",
                s(&x),
                "--output",
                s(&out),
            ]),
            2,
        )
    };

    let line = predict_with("this is { not json");
    assert!(line.contains("candidate.json"), "{line}");
    let line = predict_with(&std::fs::read_to_string(&model).unwrap()[..40]);
    assert!(line.contains("candidate.json"), "{line}");

    let mut other = good.clone();
    other["format"] = "someone-else/model".into();
    let line = predict_with(&other.to_string());
    assert!(line.contains("format"), "{line}");

    let mut newer = good.clone();
    newer["version"] = 2.into();
    let line = predict_with(&newer.to_string());
    assert!(line.contains("version"), "{line}");

    let mut short = good.clone();
    short["model"]["centroids"]
        .as_array_mut()
        .unwrap()
        .truncate(4);
    let line = predict_with(&short.to_string());
    assert!(line.contains("inconsistent model"), "{line}");

    let mut nan = good.clone();
    nan["model"]["centroids"][0] = Value::Null;
    predict_with(&nan.to_string());

    let missing = dir.path().join("no-model.json");
    let line = fails(
        &cli(&[
            "predict",
            "--model",
            s(&missing),
            "--input",
            s(&x),
            "--output",
            s(&out),
        ]),
        2,
    );
    assert!(line.contains("no-model.json"), "{line}");
    assert!(!out.exists());
}

#[test]
fn unwritable_output_exits_1_without_partial_files() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 40, 2, 2, 10);
    let absent = dir.path().join("absent");
    let labels = absent.join("labels.npy");
    let line = fails(
        &cli(&[
            "kmeans",
            "--input",
            s(&x),
            "--k",
            "2",
            "--output",
            s(&labels),
        ]),
        1,
    );
    assert!(line.contains("absent"), "{line}");

    let model = absent.join("model.json");
    fails(
        &cli(&["kmeans", "--input", s(&x), "--k", "2", "--model", s(&model)]),
        1,
    );

    // An existing directory in place of the file is refused too.
    std::fs::create_dir(dir.path().join("taken.npy")).unwrap();
    fails(
        &cli(&[
            "kmeans",
            "--input",
            s(&x),
            "--k",
            "2",
            "--output",
            s(&dir.path().join("taken.npy")),
        ]),
        1,
    );

    assert!(!absent.exists());
    assert_eq!(files_in(dir.path()), ["taken.npy", "x.npy"]);
    assert!(files_in(&dir.path().join("taken.npy")).is_empty());
}

// ---------------------------------------------------------------------------------------
// pca, transform, and predict with a PCA model
// ---------------------------------------------------------------------------------------

/// The bundled digits matrix (1797 x 64).
fn digits() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/digits_X.npy")
}

/// Reads a 2-D .npy written by the program, checking its shape.
fn read_2d(path: &Path, n: usize, d: usize) -> Vec<f32> {
    let m = io::read_matrix(path).unwrap();
    assert_eq!((m.n_rows, m.n_features), (n, d), "{}", path.display());
    m.data
}

/// Sample variance (ddof 1) of column `j` of an `n` x `d` row-major matrix.
fn column_variance(z: &[f32], n: usize, d: usize, j: usize) -> f64 {
    let mean = (0..n).map(|i| z[i * d + j] as f64).sum::<f64>() / n as f64;
    (0..n)
        .map(|i| (z[i * d + j] as f64 - mean).powi(2))
        .sum::<f64>()
        / (n - 1) as f64
}

#[test]
fn pca_count_json_report_and_projections() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 300, 8, 5, 21);
    let z = dir.path().join("z.npy");
    let report = json_line(&cli(&[
        "pca",
        "--input",
        s(&x),
        "--components",
        "3",
        "--output",
        s(&z),
        "--json",
    ]));
    let mut keys: Vec<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    let mut expected = [
        "algorithm",
        "n",
        "d",
        "n_components",
        "explained_variance_ratio",
        "solver",
        "n_iter",
        "fit_seconds",
        "adapter",
    ];
    expected.sort_unstable();
    assert_eq!(keys, expected, "{report}");
    assert_eq!(report["algorithm"], "pca");
    assert_eq!(report["n"], 300);
    assert_eq!(report["d"], 8);
    assert_eq!(report["n_components"], 3);
    assert_eq!(report["solver"], "full");
    assert_eq!(report["n_iter"], 0);
    assert!(report["fit_seconds"].as_f64().unwrap() >= 0.0, "{report}");
    assert!(!report["adapter"].as_str().unwrap().is_empty(), "{report}");
    let ratios: Vec<f64> = report["explained_variance_ratio"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(ratios.len(), 3, "{report}");
    assert!(ratios.iter().all(|&r| r > 0.0), "{ratios:?}");
    assert!(ratios.windows(2).all(|w| w[0] >= w[1]), "{ratios:?}");
    assert!(ratios.iter().sum::<f64>() <= 1.0 + 1e-9, "{ratios:?}");

    let z = read_2d(&z, 300, 3);
    assert!(z.iter().all(|v| v.is_finite()));
}

#[test]
fn pca_fraction_on_digits_keeps_21_components_like_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let z = dir.path().join("z.npy");
    let report = json_line(&cli(&[
        "pca",
        "--input",
        s(&digits()),
        "--components",
        "0.9",
        "--output",
        s(&z),
        "--json",
    ]));
    assert_eq!(report["n"], 1797);
    assert_eq!(report["d"], 64);
    assert_eq!(report["n_components"], 21, "{report}");
    let ratios: Vec<f64> = report["explained_variance_ratio"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let total: f64 = ratios.iter().sum();
    assert!(total > 0.9 && total <= 1.0, "{total}");
    assert!(
        total - ratios[20] <= 0.9,
        "20 components would do: {ratios:?}"
    );
    read_2d(&z, 1797, 21);

    // The f64 CPU reference keeps the same number, with the same ratios.
    let data = io::read_matrix(&digits()).unwrap();
    let x: Vec<f64> = data.data.iter().map(|&v| v as f64).collect();
    let params = wgpu_unsupervised::Pca::new(wgpu_unsupervised::Components::Fraction(0.9));
    let reference = wgpu_unsupervised::reference::pca::fit(&x, 64, &params).unwrap();
    assert_eq!(reference.n_components, 21);
    for (gpu, cpu) in ratios.iter().zip(&reference.explained_variance_ratio) {
        assert!((gpu - cpu).abs() <= 1e-4, "{ratios:?} vs {cpu}");
    }
}

#[test]
fn pca_whiten_gives_unit_variance_columns_and_a_human_report() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 300, 8, 4, 22);
    let z = dir.path().join("z.npy");
    let text = ok(&cli(&[
        "pca",
        "--input",
        s(&x),
        "--components",
        "4",
        "--whiten",
        "--output",
        s(&z),
    ]));
    for word in [
        "adapter",
        "300 rows x 8 features",
        "4 of 8",
        "cumulative",
        "solver",
        "whitened",
        "fit time",
    ] {
        assert!(text.contains(word), "{word:?} missing from {text}");
    }
    assert!(text.contains(s(&z)), "{text}");
    let z = read_2d(&z, 300, 4);
    for j in 0..4 {
        let var = column_variance(&z, 300, 4, j);
        assert!((var - 1.0).abs() <= 1e-3, "column {j}: variance {var}");
    }
}

#[test]
fn pca_model_then_transform_and_predict_give_the_fit_projections() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 300, 8, 5, 23);
    let fit_z = dir.path().join("fit.npy");
    let model = dir.path().join("pca.json");
    ok(&cli(&[
        "pca",
        "--input",
        s(&x),
        "--components",
        "5",
        "--standardize",
        "--output",
        s(&fit_z),
        "--model",
        s(&model),
    ]));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    assert_eq!(file["format"], "wgpu-unsupervised/pca");
    assert_eq!(file["version"], 1);
    assert!(file["model"].is_object());
    let fit_z = read_2d(&fit_z, 300, 5);
    let close = |a: &[f32], b: &[f32]| {
        assert_eq!(a.len(), b.len());
        for (i, (p, q)) in a.iter().zip(b).enumerate() {
            assert!(
                (p - q).abs() <= 1e-5 * p.abs().max(1.0),
                "value {i}: {p} vs {q}"
            );
        }
    };

    let z = dir.path().join("z.npy");
    let report = json_line(&cli(&[
        "transform",
        "--model",
        s(&model),
        "--input",
        s(&x),
        "--output",
        s(&z),
        "--json",
    ]));
    assert_eq!(report["algorithm"], "pca");
    assert_eq!(report["command"], "transform");
    assert_eq!(report["inverse"], false);
    assert_eq!(report["n"], 300);
    assert_eq!(report["d"], 8);
    assert_eq!(report["n_components"], 5);
    assert!(report["seconds"].as_f64().unwrap() >= 0.0);
    close(&read_2d(&z, 300, 5), &fit_z);

    // predict dispatches on the model's format: projections for a PCA model.
    let p = dir.path().join("p.npy");
    let report = json_line(&cli(&[
        "predict",
        "--model",
        s(&model),
        "--input",
        s(&x),
        "--output",
        s(&p),
        "--json",
    ]));
    assert_eq!(report["algorithm"], "pca");
    assert_eq!(report["command"], "predict");
    close(&read_2d(&p, 300, 5), &fit_z);

    // The human report of transform names its output.
    let again = dir.path().join("again.npy");
    let text = ok(&cli(&[
        "transform",
        "--model",
        s(&model),
        "--input",
        s(&x),
        "--output",
        s(&again),
    ]));
    assert!(text.contains(s(&again)), "{text}");
}

#[test]
fn transform_inverse_with_all_components_reconstructs_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 300, 8, 3, 24);
    let z = dir.path().join("z.npy");
    let model = dir.path().join("pca.json");
    ok(&cli(&[
        "pca",
        "--input",
        s(&x),
        "--components",
        "8",
        "--output",
        s(&z),
        "--model",
        s(&model),
    ]));
    let x_hat = dir.path().join("x_hat.npy");
    let report = json_line(&cli(&[
        "transform",
        "--model",
        s(&model),
        "--input",
        s(&z),
        "--output",
        s(&x_hat),
        "--inverse",
        "--json",
    ]));
    assert_eq!(report["inverse"], true);
    assert_eq!(report["d"], 8);
    let x = read_2d(&x, 300, 8);
    let x_hat = read_2d(&x_hat, 300, 8);
    let scale = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    for (i, (a, b)) in x.iter().zip(&x_hat).enumerate() {
        assert!((a - b).abs() <= 1e-4 * scale, "value {i}: {a} vs {b}");
    }
}

#[test]
fn pca_invalid_components_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 20, 4, 2, 25);
    let z = dir.path().join("z.npy");
    for value in ["0", "1.5", "-1", "abc", "5", "0.0", "nan"] {
        let line = fails(
            &cli(&[
                "pca",
                "--input",
                s(&x),
                "--components",
                value,
                "--output",
                s(&z),
            ]),
            2,
        );
        assert!(line.contains("components"), "{value}: {line}");
    }
    // More components than min(N, D) names the bound.
    let line = fails(&cli(&["pca", "--input", s(&x), "--components", "5"]), 2);
    assert!(line.contains("min(N, D) = 4"), "{line}");
    // Other invalid parameters.
    for (flag, value, name) in [
        ("--ddof", "2", "ddof"),
        ("--tol", "-1", "tol"),
        ("--max-iter", "0", "max_iter"),
    ] {
        let line = fails(
            &cli(&["pca", "--input", s(&x), "--components", "2", flag, value]),
            2,
        );
        assert!(line.contains(name), "{line}");
    }
    // A fraction needs the full spectrum; projections are written only as .npy.
    fails(
        &cli(&[
            "pca",
            "--input",
            s(&x),
            "--components",
            "0.5",
            "--solver",
            "power",
        ]),
        2,
    );
    let line = fails(
        &cli(&[
            "pca",
            "--input",
            s(&x),
            "--components",
            "2",
            "--output",
            s(&dir.path().join("z.csv")),
        ]),
        2,
    );
    assert!(line.contains(".npy"), "{line}");
    assert_eq!(files_in(dir.path()), ["x.npy"]);
}

#[test]
fn pca_power_iteration_that_does_not_converge_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 200, 40, 6, 26);
    let z = dir.path().join("z.npy");
    let model = dir.path().join("pca.json");
    let out = cli(&[
        "pca",
        "--input",
        s(&x),
        "--components",
        "3",
        "--solver",
        "power",
        "--max-iter",
        "1",
        "--tol",
        "1e-12",
        "--output",
        s(&z),
        "--model",
        s(&model),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    // The GPU was opened, so a driver may have spoken too: look for our line among them.
    let line = err
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {err:?}"));
    assert!(line.contains("did not converge"), "{line}");
    assert_eq!(files_in(dir.path()), ["x.npy"]);
}

#[test]
fn transform_refuses_kmeans_models_and_wrong_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let kmeans_model = fitted_model(dir.path());
    let x = dir.path().join("train.npy");
    let z = dir.path().join("z.npy");
    let line = fails(
        &cli(&[
            "transform",
            "--model",
            s(&kmeans_model),
            "--input",
            s(&x),
            "--output",
            s(&z),
        ]),
        2,
    );
    assert!(line.contains("PCA model"), "{line}");
    assert!(!z.exists());

    // A 3-feature PCA model: 5 features forward or 3 columns backward are refused.
    let model = dir.path().join("pca.json");
    ok(&cli(&[
        "pca",
        "--input",
        s(&x),
        "--components",
        "2",
        "--model",
        s(&model),
    ]));
    let x5 = blobs_npy(dir.path(), "x5.npy", 30, 5, 2, 27);
    for (input, inverse) in [(&x5, false), (&x, true)] {
        let mut args = vec![
            "transform",
            "--model",
            s(&model),
            "--input",
            s(input),
            "--output",
            s(&z),
        ];
        if inverse {
            args.push("--inverse");
        }
        let line = fails(&cli(&args), 2);
        assert!(line.contains("feature count mismatch"), "{line}");
    }
    let line = fails(
        &cli(&[
            "predict",
            "--model",
            s(&model),
            "--input",
            s(&x5),
            "--output",
            s(&z),
        ]),
        2,
    );
    assert!(line.contains('3') && line.contains('5'), "{line}");

    // An unknown format is refused by both commands, naming the formats it knows.
    let mut other: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    other["format"] = "wgpu-unsupervised/spectral".into();
    let foreign = dir.path().join("foreign.json");
    std::fs::write(&foreign, other.to_string()).unwrap();
    for command in ["transform", "predict"] {
        let line = fails(
            &cli(&[
                command,
                "--model",
                s(&foreign),
                "--input",
                s(&x),
                "--output",
                s(&z),
            ]),
            2,
        );
        assert!(line.contains("wgpu-unsupervised/pca"), "{line}");
        assert!(line.contains("wgpu-unsupervised/gmm"), "{line}");
    }
    // An inconsistent PCA model is refused.
    let mut short: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    short["model"]["mean"].as_array_mut().unwrap().truncate(1);
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, short.to_string()).unwrap();
    let line = fails(
        &cli(&[
            "transform",
            "--model",
            s(&broken),
            "--input",
            s(&x),
            "--output",
            s(&z),
        ]),
        2,
    );
    assert!(line.contains("inconsistent model"), "{line}");
    assert!(!z.exists());
}

// ---------------------------------------------------------------------------------------
// gmm, and predict with a Gaussian-mixture model
// ---------------------------------------------------------------------------------------

/// The bundled iris matrix (150 x 4).
fn iris() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/iris_X.npy")
}

/// Sorted keys of a JSON object.
fn sorted_keys(report: &Value) -> Vec<String> {
    let mut keys: Vec<String> = report.as_object().unwrap().keys().cloned().collect();
    keys.sort_unstable();
    keys
}

/// Checks N x K responsibilities: in [0, 1], every row summing to 1 within 1e-4.
fn check_responsibilities(proba: &[f32], n: usize, k: usize) {
    assert_eq!(proba.len(), n * k);
    for (i, row) in proba.chunks_exact(k).enumerate() {
        assert!(
            row.iter()
                .all(|p| p.is_finite() && (0.0..=1.0 + 1e-6).contains(p)),
            "row {i}: {row:?}"
        );
        let sum: f32 = row.iter().sum();
        assert!((sum - 1.0).abs() <= 1e-4, "row {i} sums to {sum}: {row:?}");
    }
}

#[test]
fn gmm_iris_json_report_labels_and_proba() {
    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("labels.npy");
    let proba = dir.path().join("proba.npy");
    let report = json_line(&cli(&[
        "gmm",
        "--input",
        s(&iris()),
        "--k",
        "3",
        "--output",
        s(&labels),
        "--proba",
        s(&proba),
        "--json",
    ]));
    let mut expected = [
        "algorithm",
        "n",
        "d",
        "k",
        "covariance",
        "log_likelihood",
        "bic",
        "n_iter",
        "converged",
        "fit_seconds",
        "adapter",
    ];
    expected.sort_unstable();
    assert_eq!(sorted_keys(&report), expected, "{report}");
    assert_eq!(report["algorithm"], "gmm");
    assert_eq!(report["n"], 150);
    assert_eq!(report["d"], 4);
    assert_eq!(report["k"], 3);
    // The defaults: full covariances, max_iter 100.
    assert_eq!(report["covariance"], "full");
    let n_iter = report["n_iter"].as_u64().unwrap();
    assert!((1..=100).contains(&n_iter), "{report}");
    assert!(report["converged"].is_boolean(), "{report}");
    assert!(report["converged"] == true || n_iter == 100, "{report}");
    let log_likelihood = report["log_likelihood"].as_f64().unwrap();
    let bic = report["bic"].as_f64().unwrap();
    assert!(log_likelihood.is_finite(), "{report}");
    assert!(bic.is_finite(), "{report}");
    // BIC = -2 N ll + p log N with p = 3 * 10 + 3 * 4 + 2 = 44 free parameters.
    let expected_bic = -2.0 * 150.0 * log_likelihood + 44.0 * 150f64.ln();
    assert!(
        (bic - expected_bic).abs() <= 1e-6 * bic.abs().max(1.0),
        "{report}"
    );
    assert!(report["fit_seconds"].as_f64().unwrap() >= 0.0, "{report}");
    assert!(!report["adapter"].as_str().unwrap().is_empty(), "{report}");

    let labels = io::read_labels(&labels).unwrap();
    assert_eq!(labels.len(), 150);
    assert!(labels.iter().all(|&l| l < 3), "{labels:?}");
    // Setosa (the first 50 rows) is separated from the other species.
    assert!(labels[..50].iter().all(|&l| l == labels[0]), "{labels:?}");
    assert!(labels[50..].iter().all(|&l| l != labels[0]), "{labels:?}");

    let proba = read_2d(&proba, 150, 3);
    check_responsibilities(&proba, 150, 3);
    // The labels are the most probable components.
    for (i, row) in proba.chunks_exact(3).enumerate() {
        let best = row[labels[i] as usize];
        assert!(row.iter().all(|&p| p <= best + 1e-6), "row {i}: {row:?}");
    }
}

#[test]
fn gmm_every_covariance_type_and_a_human_report() {
    let dir = tempfile::tempdir().unwrap();
    for covariance in ["full", "tied", "diag", "spherical"] {
        let proba = dir.path().join(format!("{covariance}.npy"));
        let report = json_line(&cli(&[
            "gmm",
            "--input",
            s(&iris()),
            "--k",
            "3",
            "--covariance",
            covariance,
            "--max-iter",
            "200",
            "--seed",
            "3",
            "--proba",
            s(&proba),
            "--json",
        ]));
        assert_eq!(report["covariance"], covariance, "{report}");
        assert_eq!(report["k"], 3, "{report}");
        let n_iter = report["n_iter"].as_u64().unwrap();
        assert!((1..=200).contains(&n_iter), "{report}");
        assert!(report["converged"] == true || n_iter == 200, "{report}");
        assert!(
            report["log_likelihood"].as_f64().unwrap().is_finite(),
            "{report}"
        );
        assert!(report["bic"].as_f64().unwrap().is_finite(), "{report}");
        check_responsibilities(&read_2d(&proba, 150, 3), 150, 3);
    }

    // The human report, with the other options.
    let labels = dir.path().join("labels.npy");
    let model = dir.path().join("gmm.json");
    let text = ok(&cli(&[
        "gmm",
        "--input",
        s(&iris()),
        "--k",
        "2",
        "--covariance",
        "diag",
        "--init",
        "random",
        "--n-init",
        "2",
        "--tol",
        "1e-4",
        "--reg-covar",
        "1e-5",
        "--output",
        s(&labels),
        "--model",
        s(&model),
    ]));
    for word in [
        "adapter",
        "150 rows x 4 features",
        "covariance diag",
        "init random",
        "n_init 2",
        "iterations",
        "log-likelihood",
        "BIC",
        "AIC",
        "weights",
        "fit time",
        "not written (use --proba",
    ] {
        assert!(text.contains(word), "{word:?} missing from {text}");
    }
    assert!(text.contains(s(&labels)), "{text}");
    assert!(text.contains(s(&model)), "{text}");
    let labels = io::read_labels(&labels).unwrap();
    assert_eq!(labels.len(), 150);
    assert!(labels.iter().all(|&l| l < 2), "{labels:?}");
}

#[test]
fn gmm_model_then_predict_gives_the_fit_labels_and_proba() {
    let dir = tempfile::tempdir().unwrap();
    let fit_labels = dir.path().join("fit.npy");
    let fit_proba = dir.path().join("fit_proba.npy");
    let model = dir.path().join("gmm.json");
    ok(&cli(&[
        "gmm",
        "--input",
        s(&iris()),
        "--k",
        "3",
        "--init",
        "kmeans++",
        "--output",
        s(&fit_labels),
        "--proba",
        s(&fit_proba),
        "--model",
        s(&model),
    ]));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    assert_eq!(file["format"], "wgpu-unsupervised/gmm");
    assert_eq!(file["version"], 1);
    assert!(file["model"].is_object());

    let predicted = dir.path().join("predicted.npy");
    let proba = dir.path().join("proba.npy");
    let report = json_line(&cli(&[
        "predict",
        "--model",
        s(&model),
        "--input",
        s(&iris()),
        "--output",
        s(&predicted),
        "--proba",
        s(&proba),
        "--json",
    ]));
    assert_eq!(report["algorithm"], "gmm");
    assert_eq!(report["command"], "predict");
    assert_eq!(report["n"], 150);
    assert_eq!(report["d"], 4);
    assert_eq!(report["k"], 3);
    assert!(report["adapter"].is_string());
    assert!(report["seconds"].as_f64().unwrap() >= 0.0);
    assert_eq!(
        io::read_labels(&predicted).unwrap(),
        io::read_labels(&fit_labels).unwrap()
    );
    let fit_proba = read_2d(&fit_proba, 150, 3);
    let proba = read_2d(&proba, 150, 3);
    check_responsibilities(&proba, 150, 3);
    for (i, (p, q)) in proba.iter().zip(&fit_proba).enumerate() {
        assert!((p - q).abs() <= 1e-5, "value {i}: {p} vs {q}");
    }

    // Without --proba only the labels are written; the human report names them.
    let again = dir.path().join("again.npy");
    let text = ok(&cli(&[
        "predict",
        "--model",
        s(&model),
        "--input",
        s(&iris()),
        "--output",
        s(&again),
    ]));
    assert!(text.contains(s(&again)), "{text}");
    assert!(text.contains("Gaussian mixture"), "{text}");
    assert_eq!(
        io::read_labels(&again).unwrap(),
        io::read_labels(&fit_labels).unwrap()
    );

    // transform needs a PCA model; fewer features than the model's are refused.
    let z = dir.path().join("z.npy");
    let line = fails(
        &cli(&[
            "transform",
            "--model",
            s(&model),
            "--input",
            s(&iris()),
            "--output",
            s(&z),
        ]),
        2,
    );
    assert!(line.contains("PCA model"), "{line}");
    let x2 = blobs_npy(dir.path(), "x2.npy", 20, 2, 2, 31);
    let line = fails(
        &cli(&[
            "predict",
            "--model",
            s(&model),
            "--input",
            s(&x2),
            "--output",
            s(&z),
        ]),
        2,
    );
    assert!(line.contains("feature count mismatch"), "{line}");
    assert!(!z.exists());
}

#[test]
fn predict_proba_needs_a_gmm_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = fitted_model(dir.path());
    let x = dir.path().join("train.npy");
    let labels = dir.path().join("labels.npy");
    let proba = dir.path().join("proba.npy");
    let line = fails(
        &cli(&[
            "predict",
            "--model",
            s(&model),
            "--input",
            s(&x),
            "--output",
            s(&labels),
            "--proba",
            s(&proba),
        ]),
        2,
    );
    assert!(line.contains("--proba"), "{line}");
    assert!(line.contains("K-Means"), "{line}");
    assert!(line.contains("model.json"), "{line}");
    assert!(!labels.exists() && !proba.exists());
}

#[test]
fn corrupt_gmm_model_files_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("gmm.json");
    ok(&cli(&[
        "gmm",
        "--input",
        s(&iris()),
        "--k",
        "3",
        "--model",
        s(&model),
    ]));
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    let out = dir.path().join("labels.npy");
    let predict_with = |edit: &dyn Fn(&mut Value)| {
        let mut value = good.clone();
        edit(&mut value["model"]);
        let path = dir.path().join("edited.json");
        std::fs::write(&path, value.to_string()).unwrap();
        let line = fails(
            &cli(&[
                "predict",
                "--model",
                s(&path),
                "--input",
                s(&iris()),
                "--output",
                s(&out),
            ]),
            2,
        );
        assert!(line.contains("edited.json"), "{line}");
        line
    };

    // A weights array of the wrong length.
    let line = predict_with(&|m| {
        m["weights"].as_array_mut().unwrap().pop();
    });
    assert!(
        line.contains("inconsistent model") || line.contains("weights"),
        "{line}"
    );
    // Weights that do not sum to 1.
    let line = predict_with(&|m| m["weights"][0] = 0.9.into());
    assert!(line.contains("weights"), "{line}");
    // Means of the wrong length.
    let line = predict_with(&|m| {
        m["means"].as_array_mut().unwrap().truncate(5);
    });
    assert!(line.contains("means"), "{line}");
    // Full covariances declared diagonal: the sizes no longer fit.
    let line = predict_with(&|m| m["params"]["covariance_type"] = "Diag".into());
    assert!(line.contains("covariances"), "{line}");
    // A non-finite (null) mean.
    predict_with(&|m| m["means"][0] = Value::Null);
    // A covariance that is not positive definite.
    let line = predict_with(&|m| m["covariances"][0] = (-1.0).into());
    assert!(line.contains("inconsistent model"), "{line}");
    // Precision factors that do not match the covariances.
    let line = predict_with(&|m| {
        let v = m["precisions_cholesky"][0].as_f64().unwrap();
        m["precisions_cholesky"][0] = (2.0 * v).into();
    });
    assert!(line.contains("precisions_cholesky"), "{line}");
    assert!(!out.exists());
}

#[test]
fn gmm_invalid_arguments_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 10, 2, 2, 32);
    let labels = dir.path().join("labels.npy");
    let proba = dir.path().join("proba.npy");
    let model = dir.path().join("model.json");

    // k > n names both.
    let line = fails(
        &cli(&[
            "gmm",
            "--input",
            s(&x),
            "--k",
            "50",
            "--output",
            s(&labels),
            "--proba",
            s(&proba),
            "--model",
            s(&model),
        ]),
        2,
    );
    assert!(line.contains("k = 50"), "{line}");
    assert!(line.contains("n = 10"), "{line}");

    // Unknown choices are clap usage errors.
    for (flag, value) in [("--covariance", "banded"), ("--init", "farthest")] {
        let out = cli(&["gmm", "--input", s(&x), "--k", "2", flag, value]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(value), "{}", stderr(&out));
        assert!(out.stdout.is_empty());
    }

    // Invalid parameters name themselves.
    for (flag, value, name) in [
        ("--k", "0", "k"),
        ("--tol", "-1", "tol"),
        ("--reg-covar", "-1", "reg_covar"),
        ("--n-init", "0", "n_init"),
        ("--max-iter", "0", "max_iter"),
    ] {
        let mut args = vec!["gmm", "--input", s(&x)];
        if flag != "--k" {
            args.extend(["--k", "2"]);
        }
        args.extend([flag, value]);
        let line = fails(&cli(&args), 2);
        assert!(line.contains(name), "{line}");
    }

    // Outputs: .npy only, and all distinct.
    let line = fails(
        &cli(&[
            "gmm",
            "--input",
            s(&x),
            "--k",
            "2",
            "--proba",
            s(&dir.path().join("proba.csv")),
        ]),
        2,
    );
    assert!(line.contains("--proba") && line.contains(".npy"), "{line}");
    let line = fails(
        &cli(&[
            "gmm",
            "--input",
            s(&x),
            "--k",
            "2",
            "--output",
            s(&labels),
            "--proba",
            s(&labels),
        ]),
        2,
    );
    assert!(line.contains("same file"), "{line}");
    assert_eq!(files_in(dir.path()), ["x.npy"]);
}

/// The bundled iris species (150 labels, 3 classes).
fn iris_labels() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/iris_y.npy")
}

/// Checks that `path` holds one well-formed SVG document: an `<svg` root closed at the end,
/// balanced tags, and some text (axis labels).
fn check_svg(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let start = text.find("<svg").expect("an <svg> element");
    assert!(text[..start].trim().is_empty() || text[..start].trim().starts_with("<?xml"));
    assert!(
        text.trim_end().ends_with("</svg>"),
        "{}",
        &text[text.len() - 80..]
    );
    assert_eq!(text.matches("<svg").count(), text.matches("</svg>").count());
    assert!(text.contains("<text"), "no text in the plot");
    assert_eq!(text.matches('<').count(), text.matches('>').count());
}

#[test]
fn evaluate_iris_json_keys_with_and_without_truth() {
    let y = iris_labels();
    let report = json_line(&cli(&[
        "evaluate",
        "--input",
        s(&iris()),
        "--labels",
        s(&y),
        "--json",
    ]));
    assert_eq!(
        sorted_keys(&report),
        [
            "adapter",
            "calinski_harabasz",
            "d",
            "davies_bouldin",
            "inertia",
            "k",
            "n",
            "seconds",
            "silhouette",
            "silhouette_rows",
        ]
    );
    assert_eq!(report["n"], 150);
    assert_eq!(report["k"], 3);
    let sil = report["silhouette"].as_f64().unwrap();
    // scikit-learn: silhouette_score(iris, species) = 0.50347...
    assert!((sil - 0.5035).abs() < 1e-3, "{sil}");
    assert!(report["calinski_harabasz"].as_f64().unwrap() > 0.0);

    let report = json_line(&cli(&[
        "evaluate",
        "--input",
        s(&iris()),
        "--labels",
        s(&y),
        "--truth",
        s(&y),
        "--sample-size",
        "60",
        "--seed",
        "4",
        "--json",
    ]));
    for key in ["rand_index", "adjusted_rand_index"] {
        assert_eq!(report[key].as_f64(), Some(1.0), "{key}: {report}");
    }
    assert_eq!(report["silhouette_rows"], 60);
}

#[test]
fn evaluate_human_report_of_kmeans_labels() {
    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("labels.npy");
    ok(&cli(&[
        "kmeans",
        "--input",
        s(&iris()),
        "--k",
        "3",
        "--output",
        s(&labels),
    ]));
    let text = ok(&cli(&[
        "evaluate",
        "--input",
        s(&iris()),
        "--labels",
        s(&labels),
        "--truth",
        s(&iris_labels()),
    ]));
    for word in ["silhouette:", "davies-bouldin:", "adjusted rand index:"] {
        assert!(text.contains(word), "{text}");
    }
}

#[test]
fn evaluate_bad_labels_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.npy");
    io::write_npy_u32(&short, &[0, 1, 0, 1]).unwrap();
    let line = fails(
        &cli(&["evaluate", "--input", s(&iris()), "--labels", s(&short)]),
        2,
    );
    assert!(
        line.contains("4 labels") && line.contains("150 rows"),
        "{line}"
    );
    let line = fails(
        &cli(&[
            "evaluate",
            "--input",
            s(&iris()),
            "--labels",
            s(&iris_labels()),
            "--truth",
            s(&short),
        ]),
        2,
    );
    assert!(line.contains("--truth"), "{line}");
    let one = dir.path().join("one.npy");
    io::write_npy_u32(&one, &[7; 150]).unwrap();
    let line = fails(
        &cli(&["evaluate", "--input", s(&iris()), "--labels", s(&one)]),
        2,
    );
    assert!(line.contains("1 clusters"), "{line}");
    fails(
        &cli(&["evaluate", "--input", s(&iris()), "--labels", s(&iris())]),
        2,
    );
}

#[test]
fn select_k_gap_json_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 300, 2, 3, 5);
    let plot = dir.path().join("gap.svg");
    let report = json_line(&cli(&[
        "select-k",
        "--input",
        s(&x),
        "--algorithm",
        "kmeans",
        "--k-min",
        "1",
        "--k-max",
        "5",
        "--n-refs",
        "3",
        "--seed",
        "2",
        "--plot",
        s(&plot),
        "--json",
    ]));
    assert_eq!(report["algorithm"], "kmeans");
    assert_eq!(report["criterion"], "gap");
    assert_eq!(report["k"], serde_json::json!([1, 2, 3, 4, 5]));
    for key in ["values", "gap", "s_k"] {
        assert_eq!(report[key].as_array().unwrap().len(), 5, "{key}: {report}");
    }
    assert_eq!(report["n_refs"], 3);
    let k = report["suggested_k"].as_u64().unwrap();
    assert!((1..=5).contains(&k), "{report}");
    check_svg(&plot);
}

#[test]
fn select_k_elbow_bic_and_human_report() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("bic.svg");
    let report = json_line(&cli(&[
        "select-k",
        "--input",
        s(&iris()),
        "--algorithm",
        "gmm",
        "--k-max",
        "4",
        "--covariance",
        "diag",
        "--plot",
        s(&plot),
        "--json",
    ]));
    assert_eq!(report["criterion"], "bic");
    assert_eq!(report["values"].as_array().unwrap().len(), 4);
    assert!(report.get("gap").is_none() && report.get("s_k").is_none());
    check_svg(&plot);

    let report = json_line(&cli(&[
        "select-k",
        "--input",
        s(&iris()),
        "--algorithm",
        "kmeans",
        "--criterion",
        "elbow",
        "--k-min",
        "2",
        "--k-max",
        "6",
        "--n-init",
        "3",
        "--json",
    ]));
    assert_eq!(report["criterion"], "elbow");
    let values: Vec<f64> = report["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(values.len(), 5);
    assert!(values[0] > values[4], "{values:?}");

    let text = ok(&cli(&[
        "select-k",
        "--input",
        s(&iris()),
        "--algorithm",
        "gmm",
        "--criterion",
        "aic",
        "--k-max",
        "3",
    ]));
    assert!(
        text.contains("suggested k:") && text.contains("AIC"),
        "{text}"
    );
}

#[test]
fn pca_plot_writes_the_spectrum() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("spectrum.svg");
    ok(&cli(&[
        "pca",
        "--input",
        s(&iris()),
        "--components",
        "4",
        "--plot",
        s(&plot),
    ]));
    check_svg(&plot);
    let line = fails(
        &cli(&[
            "pca",
            "--input",
            s(&iris()),
            "--components",
            "2",
            "--plot",
            s(&dir.path().join("spectrum.png")),
        ]),
        2,
    );
    assert!(line.contains(".svg"), "{line}");
}

#[test]
fn select_k_bad_arguments_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("plot.svg");
    let x = iris();
    let base = ["select-k", "--input", s(&x), "--plot", s(&plot)];
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        cli(&args)
    };
    let line = fails(
        &run(&["--algorithm", "kmeans", "--k-min", "5", "--k-max", "3"]),
        2,
    );
    assert!(
        line.contains("--k-min") && line.contains("--k-max"),
        "{line}"
    );
    let line = fails(&run(&["--algorithm", "kmeans", "--k-max", "151"]), 2);
    assert!(line.contains("--k-max") && line.contains("150"), "{line}");
    fails(&run(&["--algorithm", "kmeans", "--k-min", "0"]), 2);
    let line = fails(&run(&["--algorithm", "kmeans", "--criterion", "bic"]), 2);
    assert!(line.contains("bic"), "{line}");
    fails(&run(&["--algorithm", "gmm", "--criterion", "gap"]), 2);
    fails(&run(&["--algorithm", "kmeans", "--covariance", "diag"]), 2);
    fails(&run(&["--algorithm", "gmm", "--n-refs", "3"]), 2);
    fails(&run(&["--algorithm", "kmeans", "--n-refs", "0"]), 2);
    assert_eq!(run(&["--algorithm", "spectral"]).status.code(), Some(2));
    let line = fails(
        &cli(&[
            "select-k",
            "--input",
            s(&iris()),
            "--algorithm",
            "kmeans",
            "--plot",
            s(&dir.path().join("plot.png")),
        ]),
        2,
    );
    assert!(line.contains(".svg"), "{line}");
    assert!(files_in(dir.path()).is_empty());
}
