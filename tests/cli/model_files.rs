//! Model files that were edited or broken: `predict` refuses each (exit 2), naming the file.

use std::path::Path;

use serde_json::Value;

use crate::common::{case, fails, Fixture};
use crate::predict::read_json;

/// An edit of a valid model file (the whole file: envelope and model), and the fragments the
/// refusal must contain besides the file's name.
type Edit = (&'static str, fn(&mut Value), &'static [&'static str]);

/// Edits of a K-Means model file.
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
        |f| truncate(&mut f["model"]["weights"], 2),
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

/// Writes every edit of the model file `model` to `edited.json` and checks that `predict` on
/// `{input}` refuses it, naming the file and the fragments, writing nothing.
fn check_edits(f: &mut Fixture, model: &Path, edits: &[Edit]) {
    let good = read_json(model);
    for (what, edit, fragments) in edits {
        let mut file = good.clone();
        edit(&mut file);
        f.write("edited", "edited.json", &file.to_string());
        let line = fails(
            &f.run("predict --model {edited} --input {input} --output {dir}/out.npy"),
            2,
        );
        for fragment in fragments.iter().chain(&["edited.json"]) {
            assert!(
                line.contains(fragment),
                "{what}: {fragment:?} missing from {line}"
            );
        }
        assert!(!f.file("out.npy").exists(), "{what}");
    }
}

#[test]
fn edited_model_files_exit_2_naming_the_file_and_the_fault() {
    let mut f = Fixture::new();
    let x3 = f.blobs("x3", 60, 3, 3, 8);
    let kmeans = f.model("kmeans", "kmeans --input {x3} --k 3");
    let pca = f.model("pca", "pca --input {x3} --components 2");
    let gmm = f.model("gmm", "gmm --input {iris} --k 3");
    f.name("input", x3);
    check_edits(&mut f, &kmeans, KMEANS_EDITS);
    check_edits(&mut f, &pca, PCA_EDITS);
    f.name("input", crate::common::iris());
    check_edits(&mut f, &gmm, GMM_EDITS);
}

#[test]
fn files_that_are_not_json_or_not_whole_exit_2_naming_the_file() {
    let mut f = Fixture::new();
    f.blobs("x3", 60, 3, 3, 8);
    let model = f.model("kmeans", "kmeans --input {x3} --k 3");
    let text = std::fs::read_to_string(model).unwrap();
    f.write("garbage", "garbage.json", "this is { not json");
    f.write("cut", "cut.json", &text[..40]);
    f.check(&[
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
