//! Temporary: the model-file envelope and the checks of a loaded model, until the library's
//! `model_file` module lands (then this file goes and the CLI uses `Model::load`/`save`).

use std::path::Path;

use serde::{Deserialize, Serialize};
use wgpu_unsupervised::io;
use wgpu_unsupervised::{CovarianceType, Error, GaussianMixtureModel, KMeansModel, PcaModel};

use crate::{CliResult, Failure};

/// The `format` field of a K-Means model file.
pub const KMEANS_FORMAT: &str = "wgpu-unsupervised/kmeans";

/// The `format` field of a PCA model file.
pub const PCA_FORMAT: &str = "wgpu-unsupervised/pca";

/// The `format` field of a Gaussian-mixture model file.
pub const GMM_FORMAT: &str = "wgpu-unsupervised/gmm";

/// The `version` field of a model file written by this program (the only one it reads).
pub const MODEL_VERSION: u64 = 1;

/// The model file: a format envelope around the serialized model (borrowed for writing).
#[derive(Serialize)]
struct ModelFileOut<'a, M> {
    /// [`KMEANS_FORMAT`], [`PCA_FORMAT`] or [`GMM_FORMAT`].
    format: &'static str,
    /// Always [`MODEL_VERSION`].
    version: u64,
    /// The fitted model.
    model: &'a M,
}

/// The envelope of a model file as read, before its fields are checked.
#[derive(Deserialize)]
struct ModelFileIn {
    /// Must be [`KMEANS_FORMAT`], [`PCA_FORMAT`] or [`GMM_FORMAT`].
    format: Option<serde_json::Value>,
    /// Must be [`MODEL_VERSION`].
    version: Option<serde_json::Value>,
    /// The model, deserialized once the envelope is accepted.
    model: Option<serde_json::Value>,
}

/// A model file's content, by format.
pub enum LoadedModel {
    /// Format [`KMEANS_FORMAT`].
    KMeans(KMeansModel),
    /// Format [`PCA_FORMAT`].
    Pca(Box<PcaModel>),
    /// Format [`GMM_FORMAT`].
    Gmm(Box<GaussianMixtureModel>),
}

/// Writes `model` in its envelope to `path`, atomically (exit 1 on failure).
pub fn write_model<M: Serialize>(path: &Path, format: &'static str, model: &M) -> CliResult {
    let file = ModelFileOut {
        format,
        version: MODEL_VERSION,
        model,
    };
    let text = serde_json::to_string(&file)
        .map_err(|e| Failure::runtime(format!("cannot serialize the model: {e}")))?;
    io::write_string(path, &(text + "\n")).map_err(Failure::output)
}

/// Reads and checks a model file: envelope, format, version, then the model's consistency.
/// Every failure is the file's fault (exit 2) and names the file.
pub fn load_model(path: &Path) -> CliResult<LoadedModel> {
    let bad = |reason: String| {
        Failure::from(Error::Format {
            path: path.to_path_buf(),
            reason,
        })
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::input(match e.kind() {
            std::io::ErrorKind::InvalidData => Error::Format {
                path: path.to_path_buf(),
                reason: "not a model file: not UTF-8 text".into(),
            },
            _ => Error::Io {
                path: path.to_path_buf(),
                source: e,
            },
        })
    })?;
    let envelope: ModelFileIn = serde_json::from_str(&text)
        .map_err(|e| bad(format!("not a model file: invalid JSON object ({e})")))?;
    let expected = format!("expected \"{KMEANS_FORMAT}\", \"{PCA_FORMAT}\" or \"{GMM_FORMAT}\"");
    let format = match &envelope.format {
        Some(serde_json::Value::String(f))
            if f == KMEANS_FORMAT || f == PCA_FORMAT || f == GMM_FORMAT =>
        {
            f.clone()
        }
        Some(other) => {
            return Err(bad(format!(
                "not a model of this program: format is {other}, {expected}"
            )))
        }
        None => {
            return Err(bad(format!(
                "not a model file: no \"format\" field ({expected})"
            )))
        }
    };
    match &envelope.version {
        Some(v) if v.as_u64() == Some(MODEL_VERSION) => {}
        Some(v) => {
            return Err(bad(format!(
                "unsupported model version {v}: this program reads version {MODEL_VERSION}"
            )))
        }
        None => return Err(bad("not a model file: no \"version\" field".into())),
    }
    let value = envelope
        .model
        .ok_or_else(|| bad("not a model file: no \"model\" field".into()))?;

    if format == PCA_FORMAT {
        let model: PcaModel =
            serde_json::from_value(value).map_err(|e| bad(format!("invalid PCA model: {e}")))?;
        check_pca_model(&model).map_err(|reason| bad(format!("inconsistent model: {reason}")))?;
        return Ok(LoadedModel::Pca(Box::new(model)));
    }
    if format == GMM_FORMAT {
        let model: GaussianMixtureModel = serde_json::from_value(value)
            .map_err(|e| bad(format!("invalid Gaussian-mixture model: {e}")))?;
        check_gmm_model(&model).map_err(|reason| bad(format!("inconsistent model: {reason}")))?;
        return Ok(LoadedModel::Gmm(Box::new(model)));
    }
    let model: KMeansModel =
        serde_json::from_value(value).map_err(|e| bad(format!("invalid model: {e}")))?;

    // The serde form is not validated on the way in: check the parts fit together.
    let (k, d) = (model.k(), model.n_features());
    if k == 0 || d == 0 || k.checked_mul(d) != Some(model.centroids().len()) {
        return Err(bad(format!(
            "inconsistent model: {} centroid values for k = {k} clusters of d = {d} features",
            model.centroids().len()
        )));
    }
    KMeansModel::from_centroids(model.centroids().to_vec(), d)
        .map_err(|e| bad(format!("inconsistent model: {e}")))?;
    Ok(LoadedModel::KMeans(model))
}

/// Checks that the parts of a deserialized PCA model fit together (the serde form is not
/// validated on the way in): sizes, finite values, positive scales, and variances that
/// whitening can divide by.
pub fn check_pca_model(model: &PcaModel) -> Result<(), String> {
    let (m, d, n) = (model.n_components(), model.n_features(), model.n_samples());
    if d == 0 || m == 0 || m > d || n < 2 || m > n {
        return Err(format!(
            "{m} components of {d} features fitted on {n} samples"
        ));
    }
    let lengths = [
        ("components", model.components().len(), m * d),
        ("explained_variance", model.explained_variance().len(), m),
        (
            "explained_variance_ratio",
            model.explained_variance_ratio().len(),
            m,
        ),
        ("mean", model.mean().len(), d),
        ("scale", model.scale().len(), d),
    ];
    for (name, found, expected) in lengths {
        if found != expected {
            return Err(format!(
                "{name} has {found} values, expected {expected} for {m} components of {d} features"
            ));
        }
    }
    let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
    if !finite(model.components()) || !finite(model.mean()) {
        return Err("non-finite components or mean".into());
    }
    if !model.scale().iter().all(|s| s.is_finite() && *s > 0.0) {
        return Err("scale values must be finite and > 0".into());
    }
    if !model
        .explained_variance()
        .iter()
        .all(|v| v.is_finite() && *v >= 0.0)
    {
        return Err("explained variances must be finite and >= 0".into());
    }
    if model.params().whiten && model.explained_variance().iter().any(|v| *v <= 0.0) {
        return Err("a whitening model with a zero-variance component".into());
    }
    Ok(())
}

/// Number of covariance (and precision-factor) values of a mixture of `k` components of `d`
/// features, or `None` when it overflows (a model file can claim any sizes).
pub fn gmm_covariance_len(covariance_type: CovarianceType, k: usize, d: usize) -> Option<usize> {
    match covariance_type {
        CovarianceType::Full => k.checked_mul(d)?.checked_mul(d),
        CovarianceType::Tied => d.checked_mul(d),
        CovarianceType::Diag => k.checked_mul(d),
        CovarianceType::Spherical => Some(k),
    }
}

/// Checks that the parts of a deserialized Gaussian-mixture model fit together (the serde
/// form is not validated on the way in): array sizes against K, D and the covariance type,
/// finite values, non-negative weights summing to 1, positive-definite covariances (rebuilt
/// with [`GaussianMixtureModel::from_parameters`]) and stored precision factors that agree
/// with the covariances.
pub fn check_gmm_model(model: &GaussianMixtureModel) -> Result<(), String> {
    let (k, d, covariance_type) = (model.k(), model.n_features(), model.covariance_type());
    let kind = covariance_type.name();
    if k == 0 || d == 0 {
        return Err(format!("{k} components of {d} features"));
    }
    if model.params().k != k {
        return Err(format!(
            "fitted with k = {} but has {k} weights",
            model.params().k
        ));
    }
    let means = k.checked_mul(d);
    let covariances = gmm_covariance_len(covariance_type, k, d);
    let (Some(means), Some(covariances)) = (means, covariances) else {
        return Err(format!("{k} components of {d} features: too large"));
    };
    let lengths = [
        ("means", model.means().len(), means),
        ("covariances", model.covariances().len(), covariances),
        (
            "precisions_cholesky",
            model.precisions_cholesky().len(),
            covariances,
        ),
    ];
    for (name, found, expected) in lengths {
        if found != expected {
            return Err(format!(
                "{name} has {found} values, expected {expected} for {k} components of {d} \
                 features with {kind} covariances"
            ));
        }
    }
    let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
    for (name, values) in [
        ("weights", model.weights()),
        ("means", model.means()),
        ("covariances", model.covariances()),
        ("precisions_cholesky", model.precisions_cholesky()),
    ] {
        if !finite(values) {
            return Err(format!("non-finite {name}"));
        }
    }
    let sum: f64 = model.weights().iter().sum();
    if model.weights().iter().any(|w| *w < 0.0) || (sum - 1.0).abs() > 1e-6 {
        return Err(format!(
            "weights must be non-negative and sum to 1 (they sum to {sum})"
        ));
    }
    if let Some(label) = model.labels().iter().find(|&&l| l as usize >= k) {
        return Err(format!(
            "training label {label} out of range for {k} components"
        ));
    }
    // Rebuilding validates the covariances (positive definite) and recomputes their
    // precision factors, which must match the stored ones (the ones predictions use).
    let rebuilt = GaussianMixtureModel::from_parameters(
        covariance_type,
        model.weights().to_vec(),
        model.means().to_vec(),
        model.covariances().to_vec(),
    )
    .map_err(|e| e.to_string())?;
    let block = match covariance_type {
        CovarianceType::Full | CovarianceType::Tied => d * d,
        CovarianceType::Diag => d,
        CovarianceType::Spherical => 1,
    };
    let stored = model.precisions_cholesky().chunks_exact(block);
    for (c, (stored, expected)) in stored
        .zip(rebuilt.precisions_cholesky().chunks_exact(block))
        .enumerate()
    {
        // Relative to the block's largest factor: rounding in an ill-conditioned Cholesky
        // is far below this, an edited value is not.
        let scale = expected.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if stored
            .iter()
            .zip(expected)
            .any(|(a, b)| (a - b).abs() > 1e-4 * scale)
        {
            let which = match covariance_type {
                CovarianceType::Tied => "the tied covariance".to_string(),
                _ => format!("component {c}"),
            };
            return Err(format!(
                "precisions_cholesky of {which} do not match its covariance"
            ));
        }
    }
    Ok(())
}
