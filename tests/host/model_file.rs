//! Model files without a GPU: the envelope, every refusal of a bad file, the kinds, files
//! written with training labels by earlier versions, and validation on deserialize.
#![cfg(feature = "io")]

use serde_json::{json, Value};
use wgpu_unsupervised::model_file::{Model, GMM_FORMAT, KMEANS_FORMAT, MODEL_VERSION, PCA_FORMAT};
use wgpu_unsupervised::{CovarianceType, Error, GaussianMixtureModel, KMeansModel, PcaModel};

fn kmeans() -> KMeansModel {
    KMeansModel::from_centroids(vec![0.0, 0.0, 4.0, 4.0, -3.5, 1.25], 2).unwrap()
}

fn gmm() -> GaussianMixtureModel {
    GaussianMixtureModel::from_parameters(
        CovarianceType::Diag,
        vec![0.4, 0.6],
        vec![0.0, 1.0, 5.0, 5.0],
        vec![1.0, 2.0, 0.5, 0.25],
    )
    .unwrap()
}

/// A PCA model as written by `Pca::fit` (two components of three features).
fn pca_json() -> Value {
    json!({
        "params": {"components": {"Count": 2}, "whiten": false, "center": true,
                   "standardize": false, "solver": "Auto", "tol": 1e-5, "max_iter": 1000,
                   "seed": 0, "ddof": 1},
        "solver": "Full", "n_samples": 10, "n_features": 3, "n_components": 2,
        "components": [0.0, 1.0, 0.0, 1.0, 0.0, 0.0],
        "explained_variance": [3.0, 1.0], "explained_variance_ratio": [0.6, 0.2],
        "singular_values": [27f64.sqrt(), 3.0], "mean": [1.0, 2.0, 3.0],
        "scale": [1.0, 1.0, 1.0], "noise_variance": 1.0, "total_variance": 5.0, "n_iter": 0
    })
}

fn pca() -> PcaModel {
    serde_json::from_value(pca_json()).unwrap()
}

fn envelope(format: &str, model: Value) -> String {
    json!({"format": format, "version": MODEL_VERSION, "model": model}).to_string()
}

fn model_value(model: &Model) -> Value {
    serde_json::from_str::<Value>(&model.to_json_string()).unwrap()["model"].clone()
}

/// The message of a refused model file text.
fn refused(text: &str) -> Error {
    Model::from_json_str(text).expect_err("the text must be refused")
}

#[test]
fn every_kind_round_trips_through_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let models = [
        Model::from(kmeans()),
        Model::from(pca()),
        Model::from(gmm()),
    ];
    for (model, (kind, format)) in models.iter().zip([
        ("kmeans", KMEANS_FORMAT),
        ("pca", PCA_FORMAT),
        ("gmm", GMM_FORMAT),
    ]) {
        assert_eq!((model.kind(), model.format()), (kind, format));
        let path = dir.path().join(format!("{kind}.json"));
        model.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, model.to_json_string());
        assert!(text.ends_with('\n') && text.lines().count() == 1);
        let back = Model::load(&path).unwrap();
        // Models from parameters have an unknown (NaN) inertia or bound: compare the text.
        assert_eq!(back.to_json_string(), text, "{kind}");
        assert_eq!(back.kind(), kind);
    }
    // No temporary files are left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
}

#[test]
fn typed_save_and_load_refuse_other_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let (km, pc, gm) = (
        dir.path().join("km.json"),
        dir.path().join("pca.json"),
        dir.path().join("gmm.json"),
    );
    kmeans().save(&km).unwrap();
    pca().save(&pc).unwrap();
    gmm().save(&gm).unwrap();
    assert_eq!(
        KMeansModel::load(&km).unwrap().centroids(),
        kmeans().centroids()
    );
    assert_eq!(PcaModel::load(&pc).unwrap(), pca());
    assert_eq!(
        GaussianMixtureModel::load(&gm).unwrap().means(),
        gmm().means()
    );

    let e = KMeansModel::load(&pc).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::Format { .. }), "{e:?}");
    assert!(
        msg.contains("pca.json") && msg.contains("a PCA model"),
        "{msg}"
    );
    assert!(msg.contains(KMEANS_FORMAT), "{msg}");
    let msg = PcaModel::load(&gm).unwrap_err().to_string();
    assert!(
        msg.contains("Gaussian-mixture") && msg.contains(PCA_FORMAT),
        "{msg}"
    );
    let msg = GaussianMixtureModel::load(&km).unwrap_err().to_string();
    assert!(msg.contains("K-Means") && msg.contains(GMM_FORMAT), "{msg}");
}

#[test]
fn files_do_not_carry_labels_and_old_files_with_labels_load() {
    let text = Model::from(kmeans()).to_json_string();
    assert!(!text.contains("labels"), "{text}");
    assert!(!Model::from(gmm()).to_json_string().contains("labels"));

    let mut old: Value = serde_json::from_str(&text).unwrap();
    old["model"]["labels"] = json!([0, 1, 2, 2, 1]);
    match Model::from_json_str(&old.to_string()).unwrap() {
        Model::KMeans(m) => {
            assert!(m.labels().is_empty());
            assert_eq!(m.centroids(), kmeans().centroids());
        }
        other => panic!("expected K-Means, got {}", other.kind()),
    }
}

#[test]
fn envelope_problems_are_named() {
    let good = Model::from(kmeans());
    let value = model_value(&good);
    let cases: Vec<(String, &str)> = vec![
        ("this is { not json".into(), "invalid JSON"),
        ("[1, 2, 3]".into(), "not a JSON object"),
        (
            json!({"version": 1, "model": {}}).to_string(),
            "no \"format\"",
        ),
        (envelope("someone-else/model", value.clone()), "format is"),
        (
            json!({"format": 7, "version": 1}).to_string(),
            "format is 7",
        ),
        (
            json!({"format": KMEANS_FORMAT, "model": value.clone()}).to_string(),
            "no \"version\"",
        ),
        (
            json!({"format": KMEANS_FORMAT, "version": 2, "model": value.clone()}).to_string(),
            "unsupported model version 2",
        ),
        (
            json!({"format": KMEANS_FORMAT, "version": 1}).to_string(),
            "no \"model\"",
        ),
        (
            envelope(KMEANS_FORMAT, json!({"centroids": [1.0]})),
            "invalid K-Means model",
        ),
        (envelope(PCA_FORMAT, value.clone()), "invalid PCA model"),
        (
            envelope(GMM_FORMAT, value),
            "invalid Gaussian-mixture model",
        ),
    ];
    for (text, expected) in cases {
        let e = refused(&text);
        assert!(matches!(e, Error::ModelFormat { .. }), "{text}: {e:?}");
        assert!(e.to_string().contains(expected), "{text}: {e}");
    }
    // An unknown format lists the known ones.
    let e = refused(&envelope("wgpu-unsupervised/spectral", json!({}))).to_string();
    for format in [KMEANS_FORMAT, PCA_FORMAT, GMM_FORMAT] {
        assert!(e.contains(format), "{e}");
    }
}

#[test]
fn inconsistent_models_are_refused_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let edits: [(Model, &str, Value, &str); 3] = [
        (
            kmeans().into(),
            "centroids",
            json!([1.0, 2.0]),
            "2 centroid values",
        ),
        (pca().into(), "mean", json!([0.0]), "mean has 1 values"),
        (gmm().into(), "weights", json!([0.9, 0.6]), "sum to 1"),
    ];
    for (model, field, value, expected) in edits {
        let mut edited = model_value(&model);
        edited[field] = value;
        let text = envelope(model.format(), edited.clone());
        // Through the envelope: the structured error.
        let e = refused(&text);
        assert!(matches!(e, Error::InvalidModel { .. }), "{e:?}");
        assert!(e.to_string().contains("inconsistent model"), "{e}");
        assert!(e.to_string().contains(expected), "{e}");
        // Through a file: the same reason, naming the file.
        let path = dir.path().join(format!("edited-{}.json", model.kind()));
        std::fs::write(&path, &text).unwrap();
        let e = Model::load(&path).unwrap_err();
        assert!(matches!(e, Error::Format { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains("edited-") && msg.contains(expected), "{msg}");
        // Through plain serde, as a library user deserializes: validated too.
        let e = match model {
            Model::KMeans(_) => serde_json::from_value::<KMeansModel>(edited).map(drop),
            Model::Pca(_) => serde_json::from_value::<PcaModel>(edited).map(drop),
            Model::GaussianMixture(_) => {
                serde_json::from_value::<GaussianMixtureModel>(edited).map(drop)
            }
        }
        .unwrap_err();
        assert!(e.to_string().contains(expected), "{e}");
    }
}

#[test]
fn unreadable_files_are_io_or_format_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let e = Model::load(&missing).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("missing.json"));

    let binary = dir.path().join("binary.json");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x81]).unwrap();
    let e = Model::load(&binary).unwrap_err();
    assert!(e.to_string().contains("not UTF-8"), "{e}");

    let nowhere = dir.path().join("no-such-dir").join("model.json");
    let e = kmeans().save(&nowhere).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    assert!(!nowhere.exists());
}

#[test]
fn a_failed_save_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.json");
    kmeans().save(&path).unwrap();
    let before = std::fs::read_to_string(&path).unwrap();
    // A non-empty directory where the temporary file would be renamed to: the rename
    // fails, and the temporary file must not stay behind.
    let target = dir.path().join("taken");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("inside"), "x").unwrap();
    assert!(gmm().save(&target).is_err());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}
