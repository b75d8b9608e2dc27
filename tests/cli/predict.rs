//! `predict` and `transform`: applying saved models, and refusing models that do not fit the
//! data or the command.

use std::path::Path;

use serde_json::Value;
use wgpu_unsupervised::io;

use crate::common::{case, json_line, ok, read_2d, s, Case, Fixture};
use crate::gmm::check_responsibilities;

/// Reads a model file as JSON.
pub fn read_json(path: &Path) -> Value {
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
    let mut f = Fixture::new();
    f.blobs("x", 250, 4, 5, 3);
    let model = f.model("model", "kmeans --input {x} --k 5 --output {dir}/fit.npy");
    check_envelope(&model, "wgpu-unsupervised/kmeans");

    let report = json_line(
        &f.run("predict --model {model} --input {x} --output {dir}/predicted.npy --json"),
    );
    assert_eq!(report["algorithm"], "kmeans");
    assert_eq!(report["command"], "predict");
    assert_eq!(report["n"], 250);
    assert_eq!(report["d"], 4);
    assert_eq!(report["k"], 5);
    assert!(report["adapter"].is_string());
    assert!(report["seconds"].as_f64().unwrap() >= 0.0);
    let fit_labels = io::read_labels(&f.file("fit.npy")).unwrap();
    assert_eq!(
        io::read_labels(&f.file("predicted.npy")).unwrap(),
        fit_labels
    );

    // The human report of predict names its output.
    let text = ok(&f.run("predict --model {model} --input {x} --output {dir}/again.npy"));
    assert!(text.contains(s(&f.file("again.npy"))), "{text}");
    assert_eq!(io::read_labels(&f.file("again.npy")).unwrap(), fit_labels);
}

/// `transform` with a K-Means model: distances to the centroids, as the library's.
#[test]
fn kmeans_model_then_transform_gives_distances_to_the_centroids() {
    let mut f = Fixture::new();
    f.blobs("x", 120, 3, 4, 12);
    let model = f.model(
        "model",
        "kmeans --input {x} --k 4 --output {dir}/labels.npy",
    );
    let report =
        json_line(&f.run("transform --model {model} --input {x} --output {dir}/d.npy --json"));
    assert_eq!(report["algorithm"], "kmeans");
    assert_eq!(report["command"], "transform");
    assert_eq!(report["n_components"], 4);
    assert_eq!(report["n_features"], 3);
    let distances = read_2d(&f.file("d.npy"), 120, 4);
    let gpu = crate::common::gpu();
    let loaded = wgpu_unsupervised::KMeansModel::load(&model).unwrap();
    let x = io::read_matrix(&f.file("x.npy")).unwrap();
    let want = loaded
        .transform(&gpu, &wgpu_unsupervised::Matrix::new(&x.data, 3).unwrap())
        .unwrap();
    assert_eq!(distances, want);
    // The nearest centroid is the fit's label.
    let labels = io::read_labels(&f.file("labels.npy")).unwrap();
    for (row, &l) in distances.chunks(4).zip(&labels) {
        let nearest = (0..4).min_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
        assert_eq!(nearest as u32, l);
    }
    let text = ok(&f.run("transform --model {model} --input {x} --output {dir}/d.csv"));
    assert!(text.contains("distances"), "{text}");
}

#[test]
fn pca_model_then_transform_and_predict_give_the_fit_projections() {
    let mut f = Fixture::new();
    f.blobs("x", 300, 8, 5, 23);
    let model = f.model(
        "pca",
        "pca --input {x} --components 5 --standardize --output {dir}/fit.npy",
    );
    check_envelope(&model, "wgpu-unsupervised/pca");
    let fit_z = read_2d(&f.file("fit.npy"), 300, 5);
    let close = |a: &[f32], b: &[f32]| {
        assert_eq!(a.len(), b.len());
        for (i, (p, q)) in a.iter().zip(b).enumerate() {
            assert!(
                (p - q).abs() <= 1e-5 * p.abs().max(1.0),
                "value {i}: {p} vs {q}"
            );
        }
    };

    let report =
        json_line(&f.run("transform --model {pca} --input {x} --output {dir}/z.npy --json"));
    assert_eq!(report["algorithm"], "pca");
    assert_eq!(report["command"], "transform");
    assert_eq!(report["inverse"], false);
    assert_eq!(report["n"], 300);
    assert_eq!(report["d"], 8);
    assert_eq!(report["n_components"], 5);
    assert!(report["seconds"].as_f64().unwrap() >= 0.0);
    close(&read_2d(&f.file("z.npy"), 300, 5), &fit_z);

    // predict dispatches on the model's format: projections for a PCA model.
    let report = json_line(&f.run("predict --model {pca} --input {x} --output {dir}/p.npy --json"));
    assert_eq!(report["algorithm"], "pca");
    assert_eq!(report["command"], "predict");
    close(&read_2d(&f.file("p.npy"), 300, 5), &fit_z);

    // The human report of transform names its output.
    let text = ok(&f.run("transform --model {pca} --input {x} --output {dir}/again.npy"));
    assert!(text.contains(s(&f.file("again.npy"))), "{text}");
}

#[test]
fn transform_inverse_with_all_components_reconstructs_the_input() {
    let mut f = Fixture::new();
    let x = f.blobs("x", 300, 8, 3, 24);
    f.model("pca", "pca --input {x} --components 8 --output {dir}/z.npy");
    let report = json_line(&f.run(
        "transform --model {pca} --input {dir}/z.npy --output {dir}/x_hat.npy --inverse --json",
    ));
    assert_eq!(report["inverse"], true);
    assert_eq!(report["d"], 8);
    let x = read_2d(&x, 300, 8);
    let x_hat = read_2d(&f.file("x_hat.npy"), 300, 8);
    let scale = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    for (i, (a, b)) in x.iter().zip(&x_hat).enumerate() {
        assert!((a - b).abs() <= 1e-4 * scale, "value {i}: {a} vs {b}");
    }
}

#[test]
fn gmm_model_then_predict_gives_the_fit_labels_and_proba() {
    let mut f = Fixture::new();
    let model = f.model(
        "gmm",
        "gmm --input {iris} --k 3 --init kmeans++ --output {dir}/fit.npy \
         --proba {dir}/fit_proba.npy",
    );
    check_envelope(&model, "wgpu-unsupervised/gmm");

    let report = json_line(&f.run(
        "predict --model {gmm} --input {iris} --output {dir}/predicted.npy \
         --proba {dir}/proba.npy --json",
    ));
    assert_eq!(report["algorithm"], "gmm");
    assert_eq!(report["command"], "predict");
    assert_eq!(report["n"], 150);
    assert_eq!(report["d"], 4);
    assert_eq!(report["k"], 3);
    assert!(report["adapter"].is_string());
    assert!(report["seconds"].as_f64().unwrap() >= 0.0);
    let fit_labels = io::read_labels(&f.file("fit.npy")).unwrap();
    assert_eq!(
        io::read_labels(&f.file("predicted.npy")).unwrap(),
        fit_labels
    );
    let fit_proba = read_2d(&f.file("fit_proba.npy"), 150, 3);
    let proba = read_2d(&f.file("proba.npy"), 150, 3);
    check_responsibilities(&proba, 150, 3);
    for (i, (p, q)) in proba.iter().zip(&fit_proba).enumerate() {
        assert!((p - q).abs() <= 1e-5, "value {i}: {p} vs {q}");
    }

    // Without --proba only the labels are written; the human report names them.
    let text = ok(&f.run("predict --model {gmm} --input {iris} --output {dir}/again.npy"));
    assert!(text.contains(s(&f.file("again.npy"))), "{text}");
    assert!(text.contains("Gaussian mixture"), "{text}");
    assert_eq!(io::read_labels(&f.file("again.npy")).unwrap(), fit_labels);
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
        "transform --model {kmeans} --input {x3} --output {dir}/out.npy --inverse",
        2,
        &["--inverse", "K-Means"],
    ),
    case(
        "transform --model {kmeans} --input {x5} --output {dir}/out.npy",
        2,
        &["feature", "3", "5"],
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
        "predict --model {kmeans} --input {x3} --output {dir}/out.txt",
        2,
        &[".npy", ".csv"],
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
    let mut f = Fixture::new();
    f.blobs("x3", 60, 3, 3, 8);
    f.blobs("x5", 30, 5, 2, 9);
    f.blobs("x2", 20, 2, 2, 31);
    f.model("kmeans", "kmeans --input {x3} --k 3");
    let pca = f.model("pca", "pca --input {x3} --components 2");
    f.model("gmm", "gmm --input {iris} --k 3");
    let mut other = read_json(&pca);
    other["format"] = "wgpu-unsupervised/spectral".into();
    f.write("foreign", "foreign.json", &other.to_string());
    f.check(APPLY_REFUSES);
}

#[test]
fn a_model_file_whose_covariance_is_not_positive_definite_is_not_met_with_fit_advice() {
    let mut f = Fixture::new();
    f.blobs("x", 80, 2, 2, 4);
    let model = f.model("gm", "gmm --input {x} --k 2");
    let mut json = read_json(&model);
    json["model"]["covariances"][0] = Value::from(-1.0);
    std::fs::write(f.file("bad.json"), json.to_string()).unwrap();
    f.name("bad", f.file("bad.json"));
    let refusals = [
        case(
            "predict --model {bad} --input {x} --output {dir}/l.npy",
            2,
            &["bad.json", "not positive definite"],
        ),
        case(
            "sample --model {bad} --n 4 --output {dir}/s.npy",
            2,
            &["bad.json", "not positive definite"],
        ),
    ];
    f.check(&refusals);
    for refusal in &refusals {
        let error = crate::common::fails(&f.run(refusal.args), 2);
        // predict and sample cannot regularise: no advice to raise reg_covar.
        assert!(!error.contains("increase reg_covar"), "{error}");
        assert!(error.contains("refit"), "{error}");
    }
}
