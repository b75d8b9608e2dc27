//! `predict` and `transform`: applying saved models, and refusing models that do not fit.

use std::path::{Path, PathBuf};

use serde_json::Value;
use wgpu_unsupervised::io;

use crate::common::{blobs_npy, case, cli, iris, json_line, ok, read_2d, s, Case, Fixture};
use crate::gmm::check_responsibilities;

/// Fits a model with `args` (the command and its options, without `--model`) and returns the
/// path of the model file `dir/name`.
fn fit_model(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let model = dir.join(name);
    let mut args = args.to_vec();
    args.extend(["--model", s(&model)]);
    ok(&cli(&args));
    model
}

/// Reads a model file as JSON.
fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Asserts the envelope of a model file: `format`, version 1, a `model` object.
fn check_envelope(path: &Path, format: &str) {
    let file = read_json(path);
    assert_eq!(file["format"], format);
    assert_eq!(file["version"], 1);
    assert!(file["model"].is_object());
}

#[test]
fn kmeans_model_then_predict_gives_the_fit_labels() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 250, 4, 5, 3);
    let fit_labels = dir.path().join("fit.npy");
    let model = fit_model(
        dir.path(),
        "model.json",
        &[
            "kmeans",
            "--input",
            s(&x),
            "--k",
            "5",
            "--output",
            s(&fit_labels),
        ],
    );
    check_envelope(&model, "wgpu-unsupervised/kmeans");

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
    let fit_labels = io::read_labels(&fit_labels).unwrap();
    assert_eq!(io::read_labels(&predicted).unwrap(), fit_labels);

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
    assert_eq!(io::read_labels(&again).unwrap(), fit_labels);
}

#[test]
fn pca_model_then_transform_and_predict_give_the_fit_projections() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 300, 8, 5, 23);
    let fit_z = dir.path().join("fit.npy");
    let model = fit_model(
        dir.path(),
        "pca.json",
        &[
            "pca",
            "--input",
            s(&x),
            "--components",
            "5",
            "--standardize",
            "--output",
            s(&fit_z),
        ],
    );
    check_envelope(&model, "wgpu-unsupervised/pca");
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
    let model = fit_model(
        dir.path(),
        "pca.json",
        &[
            "pca",
            "--input",
            s(&x),
            "--components",
            "8",
            "--output",
            s(&z),
        ],
    );
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
fn gmm_model_then_predict_gives_the_fit_labels_and_proba() {
    let dir = tempfile::tempdir().unwrap();
    let fit_labels = dir.path().join("fit.npy");
    let fit_proba = dir.path().join("fit_proba.npy");
    let model = fit_model(
        dir.path(),
        "gmm.json",
        &[
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
        ],
    );
    check_envelope(&model, "wgpu-unsupervised/gmm");

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
    let fit_labels = io::read_labels(&fit_labels).unwrap();
    assert_eq!(io::read_labels(&predicted).unwrap(), fit_labels);
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
    assert_eq!(io::read_labels(&again).unwrap(), fit_labels);
}

/// Command lines `predict` and `transform` refuse. `{kmeans}` and `{pca}` (2 components)
/// were fitted on `{x3}` (3 features), `{gmm}` on iris (4 features); `{x5}` has 5 features,
/// `{x2}` 2; `{foreign}` is the PCA model with format "wgpu-unsupervised/spectral".
const APPLY_REFUSES: &[Case] = &[
    // The model must fit the data.
    case(
        "predict --model {kmeans} --input {x5} --output {dir}/out.npy",
        2,
        &["feature", "3", "5"],
    ),
    case(
        "predict --model {pca} --input {x5} --output {dir}/out.npy",
        2,
        &["feature", "3", "5"],
    ),
    case(
        "transform --model {pca} --input {x5} --output {dir}/out.npy",
        2,
        &["feature count mismatch"],
    ),
    case(
        "transform --model {pca} --input {x3} --output {dir}/out.npy --inverse",
        2,
        &["feature count mismatch", "M = 2"],
    ),
    case(
        "predict --model {gmm} --input {x2} --output {dir}/out.npy",
        2,
        &["feature count mismatch"],
    ),
    // And the command must fit the model.
    case(
        "predict --model {kmeans} --input {x3} --output {dir}/out.npy --proba {dir}/p.npy",
        2,
        &["--proba", "K-Means", "kmeans.json"],
    ),
    case(
        "predict --model {pca} --input {x3} --output {dir}/out.npy --proba {dir}/p.npy",
        2,
        &["--proba", "PCA", "pca.json"],
    ),
    case(
        "transform --model {kmeans} --input {x3} --output {dir}/out.npy",
        2,
        &["PCA model", "K-Means"],
    ),
    case(
        "transform --model {gmm} --input {iris} --output {dir}/out.npy",
        2,
        &["PCA model", "Gaussian-mixture"],
    ),
    // Model files that are missing or not ours.
    case(
        "predict --model {dir}/no-model.json --input {x3} --output {dir}/out.npy",
        2,
        &["no-model.json"],
    ),
    case(
        "predict --model {foreign} --input {x3} --output {dir}/out.npy",
        2,
        &["wgpu-unsupervised/pca", "wgpu-unsupervised/gmm"],
    ),
    case(
        "transform --model {foreign} --input {x3} --output {dir}/out.npy",
        2,
        &["wgpu-unsupervised/pca", "wgpu-unsupervised/gmm"],
    ),
    // Outputs.
    case(
        "predict --model {kmeans} --input {x3} --output {dir}/out.csv",
        2,
        &[".npy"],
    ),
    case(
        "predict --model {gmm} --input {iris} --output {dir}/o.npy --proba {dir}/o.npy",
        2,
        &["same file"],
    ),
    case(
        "transform --model {pca} --input {x3} --output {dir}/absent/z.npy",
        1,
        &["absent"],
    ),
];

#[test]
fn predict_and_transform_refuse_models_that_do_not_fit_writing_nothing() {
    let mut fixture = Fixture::new();
    let dir = fixture.path().to_path_buf();
    let x3 = blobs_npy(&dir, "x3.npy", 60, 3, 3, 8);
    let x5 = blobs_npy(&dir, "x5.npy", 30, 5, 2, 9);
    let x2 = blobs_npy(&dir, "x2.npy", 20, 2, 2, 31);
    let kmeans = fit_model(
        &dir,
        "kmeans.json",
        &["kmeans", "--input", s(&x3), "--k", "3"],
    );
    let pca = fit_model(
        &dir,
        "pca.json",
        &["pca", "--input", s(&x3), "--components", "2"],
    );
    let gmm = fit_model(
        &dir,
        "gmm.json",
        &["gmm", "--input", s(&iris()), "--k", "3"],
    );
    let mut other = read_json(&pca);
    other["format"] = "wgpu-unsupervised/spectral".into();
    let foreign = dir.join("foreign.json");
    std::fs::write(&foreign, other.to_string()).unwrap();
    fixture
        .name("x3", x3)
        .name("x5", x5)
        .name("x2", x2)
        .name("iris", iris())
        .name("kmeans", kmeans)
        .name("pca", pca)
        .name("gmm", gmm)
        .name("foreign", foreign);
    fixture.check(APPLY_REFUSES);
}

/// An edit of a valid model file, and the fragments the refusal must contain (besides the
/// file's name).
type Edit = (&'static str, fn(&mut Value), &'static [&'static str]);

/// Edits of a K-Means model file (the whole file: envelope and model).
const KMEANS_EDITS: &[Edit] = &[
    (
        "foreign format",
        |f| f["format"] = "someone-else/model".into(),
        &["format"],
    ),
    ("newer version", |f| f["version"] = 2.into(), &["version"]),
    ("no model", |f| f["model"] = Value::Null, &[]),
    (
        "short centroids",
        |f| truncate(&mut f["model"]["centroids"], 4),
        &["inconsistent model"],
    ),
    (
        "null centroid",
        |f| f["model"]["centroids"][0] = Value::Null,
        &[],
    ),
];

/// Edits of a PCA model file.
const PCA_EDITS: &[Edit] = &[
    (
        "short mean",
        |f| truncate(&mut f["model"]["mean"], 1),
        &["inconsistent model"],
    ),
    (
        "negative scale",
        |f| f["model"]["scale"][0] = (-1.0).into(),
        &["inconsistent model"],
    ),
];

/// Edits of a Gaussian-mixture model file.
const GMM_EDITS: &[Edit] = &[
    (
        "one weight short",
        |f| drop(pop(&mut f["model"]["weights"])),
        &["weights"],
    ),
    (
        "weights not summing to 1",
        |f| f["model"]["weights"][0] = 0.9.into(),
        &["weights"],
    ),
    (
        "short means",
        |f| truncate(&mut f["model"]["means"], 5),
        &["means"],
    ),
    (
        "full covariances declared diagonal",
        |f| f["model"]["params"]["covariance_type"] = "Diag".into(),
        &["covariances"],
    ),
    ("null mean", |f| f["model"]["means"][0] = Value::Null, &[]),
    (
        "covariance not positive definite",
        |f| f["model"]["covariances"][0] = (-1.0).into(),
        &["inconsistent model"],
    ),
    (
        "precision factors not matching the covariances",
        |f| {
            let v = f["model"]["precisions_cholesky"][0].as_f64().unwrap();
            f["model"]["precisions_cholesky"][0] = (2.0 * v).into();
        },
        &["precisions_cholesky"],
    ),
];

/// Keeps the first `len` values of a JSON array.
fn truncate(array: &mut Value, len: usize) {
    array.as_array_mut().unwrap().truncate(len);
}

/// Removes the last value of a JSON array.
fn pop(array: &mut Value) -> Option<Value> {
    array.as_array_mut().unwrap().pop()
}

/// Writes every edit of the model file `model` to `dir/edited.json` and checks that `predict`
/// refuses it (exit 2) naming the file and the fragments, writing nothing.
fn check_edits(dir: &Path, model: &Path, input: &Path, edits: &[Edit]) {
    let good = read_json(model);
    let edited = dir.join("edited.json");
    let out = dir.join("out.npy");
    for (what, edit, fragments) in edits {
        let mut file = good.clone();
        edit(&mut file);
        std::fs::write(&edited, file.to_string()).unwrap();
        let line = crate::common::fails(
            &cli(&[
                "predict",
                "--model",
                s(&edited),
                "--input",
                s(input),
                "--output",
                s(&out),
            ]),
            2,
        );
        for fragment in fragments.iter().chain(&["edited.json"]) {
            assert!(
                line.contains(fragment),
                "{what}: {fragment:?} missing from {line}"
            );
        }
        assert!(!out.exists(), "{what}");
    }
}

#[test]
fn edited_or_broken_model_files_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let x3 = blobs_npy(dir.path(), "x3.npy", 60, 3, 3, 8);
    let kmeans = fit_model(
        dir.path(),
        "kmeans.json",
        &["kmeans", "--input", s(&x3), "--k", "3"],
    );
    let pca = fit_model(
        dir.path(),
        "pca.json",
        &["pca", "--input", s(&x3), "--components", "2"],
    );
    let gmm = fit_model(
        dir.path(),
        "gmm.json",
        &["gmm", "--input", s(&iris()), "--k", "3"],
    );
    check_edits(dir.path(), &kmeans, &x3, KMEANS_EDITS);
    check_edits(dir.path(), &pca, &x3, PCA_EDITS);
    check_edits(dir.path(), &gmm, &iris(), GMM_EDITS);

    // Files that are not JSON, or not whole.
    let text = std::fs::read_to_string(&kmeans).unwrap();
    let mut fixture = Fixture::new();
    for (name, content) in [("garbage", "this is { not json"), ("cut", &text[..40])] {
        let path = fixture.path().join(format!("{name}.json"));
        std::fs::write(&path, content).unwrap();
        fixture.name(name, path);
    }
    fixture.name("x3", x3);
    fixture.check(&[
        case(
            "predict --model {garbage} --input {x3} --output {dir}/out.npy",
            2,
            &["garbage.json"],
        ),
        case(
            "predict --model {cut} --input {x3} --output {dir}/out.npy",
            2,
            &["cut.json"],
        ),
    ]);
}
