//! Model files: a fitted model in a versioned JSON envelope (feature `io`).
//!
//! ```text
//! {"format":"wgpu-unsupervised/kmeans","version":1,"model":{ ...serde form of the model... }}
//! ```
//!
//! `format` names the model type ([`KMEANS_FORMAT`], [`PCA_FORMAT`], [`GMM_FORMAT`]) and
//! `version` the layout of `model` ([`MODEL_VERSION`], the only one this version reads).
//! Reading checks the envelope, then deserializes the model, which runs the model's
//! `validate` ([`KMeansModel::validate`], [`PcaModel::validate`],
//! [`GaussianMixtureModel::validate`]): an edited or truncated file is an error, never a model
//! that fails later. Files do not carry the training labels (a deserialized model's
//! `labels()` is empty); files written with them by earlier versions still load. A file is
//! parsed as it is read and may hold at most [`MAX_MODEL_FILE_BYTES`]: a larger file, or an
//! endless input such as a device, is refused without reading past that bound, and bytes that
//! cannot be JSON end the reading at once. A directory is refused with a message saying so.
//!
//! Writing is atomic (a temporary file in the target directory, then renamed), so a failed
//! save never leaves a partial file and never destroys the previous one. Floats are written
//! so that they read back bit for bit.
//!
//! ```no_run
//! use wgpu_unsupervised::{model_file::Model, KMeansModel};
//!
//! let model = KMeansModel::from_centroids(vec![0.0, 0.0, 5.0, 5.0], 2)?;
//! model.save("model.json")?;
//! let same = KMeansModel::load("model.json")?;        // this kind, or an error
//! match Model::load("model.json")? {                   // any kind
//!     Model::KMeans(m) => println!("{} clusters", m.k()),
//!     other => println!("a {} model", other.kind()),
//! }
//! # Ok::<(), wgpu_unsupervised::Error>(())
//! ```

use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::gmm::{GaussianMixtureModel, GaussianMixtureModelFields};
use crate::kmeans::{KMeansModel, KMeansModelFields};
use crate::pca::{PcaModel, PcaModelFields};

/// The `format` of a K-Means model file.
pub const KMEANS_FORMAT: &str = "wgpu-unsupervised/kmeans";

/// The `format` of a PCA model file.
pub const PCA_FORMAT: &str = "wgpu-unsupervised/pca";

/// The `format` of a Gaussian-mixture model file.
pub const GMM_FORMAT: &str = "wgpu-unsupervised/gmm";

/// The `version` written, and the only one read.
pub const MODEL_VERSION: u64 = 1;

/// A model read from a file, whichever its kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    /// Format [`KMEANS_FORMAT`].
    KMeans(KMeansModel),
    /// Format [`PCA_FORMAT`].
    Pca(PcaModel),
    /// Format [`GMM_FORMAT`].
    GaussianMixture(GaussianMixtureModel),
}

/// What the three model types share for files: their format and names.
trait FileKind: Serialize + Sized {
    /// The envelope's `format`.
    const FORMAT: &'static str;
    /// [`Model::kind`] of this type.
    const KIND: &'static str;
    /// The model type as a message names it.
    const NAME: &'static str;
    /// The model, if `model` holds this kind, else the other's name and format.
    fn from_model(model: Model) -> std::result::Result<Self, (&'static str, &'static str)>;
}

impl FileKind for KMeansModel {
    const FORMAT: &'static str = KMEANS_FORMAT;
    const KIND: &'static str = "kmeans";
    const NAME: &'static str = "K-Means";
    fn from_model(model: Model) -> std::result::Result<Self, (&'static str, &'static str)> {
        match model {
            Model::KMeans(m) => Ok(m),
            other => Err((other.name(), other.format())),
        }
    }
}

impl FileKind for PcaModel {
    const FORMAT: &'static str = PCA_FORMAT;
    const KIND: &'static str = "pca";
    const NAME: &'static str = "PCA";
    fn from_model(model: Model) -> std::result::Result<Self, (&'static str, &'static str)> {
        match model {
            Model::Pca(m) => Ok(m),
            other => Err((other.name(), other.format())),
        }
    }
}

impl FileKind for GaussianMixtureModel {
    const FORMAT: &'static str = GMM_FORMAT;
    const KIND: &'static str = "gmm";
    const NAME: &'static str = "Gaussian-mixture";
    fn from_model(model: Model) -> std::result::Result<Self, (&'static str, &'static str)> {
        match model {
            Model::GaussianMixture(m) => Ok(m),
            other => Err((other.name(), other.format())),
        }
    }
}

/// The envelope as written, borrowing the model.
#[derive(Serialize)]
struct EnvelopeOut<'a, M> {
    format: &'static str,
    version: u64,
    model: &'a M,
}

/// The JSON text of `model` in its envelope, with a final newline.
fn to_json<M: FileKind>(model: &M) -> String {
    let envelope = EnvelopeOut {
        format: M::FORMAT,
        version: MODEL_VERSION,
        model,
    };
    // Plain structs, vectors and finite floats (NaN is written as null): cannot fail.
    let text = serde_json::to_string(&envelope).expect("a model serializes to JSON");
    text + "\n"
}

/// Writes `model` in its envelope to `path`, atomically.
fn save_as<M: FileKind>(model: &M, path: &Path) -> Result<()> {
    crate::atomic::write_text(path, &to_json(model))
}

/// The largest model file read, in bytes (1 GiB). A model file holds a few numbers per
/// parameter, so this is far more than any model this library fits; anything larger, or an
/// endless input such as a device, is refused without reading past it.
pub const MAX_MODEL_FILE_BYTES: u64 = 1 << 30;

/// The JSON value in the file at `path`, read as a stream (a byte that cannot start JSON,
/// such as the NUL bytes of `/dev/zero`, ends the reading at once), at most
/// [`MAX_MODEL_FILE_BYTES`] of it.
fn read_json(path: &Path) -> Result<serde_json::Value> {
    use std::io::BufRead;
    use std::io::Read;
    let (mut reader, len) = crate::io::open(path)?;
    let too_large = || Error::Format {
        path: path.to_path_buf(),
        reason: format!(
            "not a model file: larger than {} MiB, the most a model file may hold",
            MAX_MODEL_FILE_BYTES >> 20
        ),
    };
    if len.is_some_and(|len| len > MAX_MODEL_FILE_BYTES) {
        return Err(too_large());
    }
    // Binary data is named as such, from its first bytes.
    let head = reader.fill_buf().map_err(|e| Error::io(path, e))?;
    if std::str::from_utf8(head).is_err_and(|e| e.error_len().is_some()) {
        return Err(Error::Format {
            path: path.to_path_buf(),
            reason: "not a model file: not UTF-8 text".into(),
        });
    }
    let mut limited = reader.take(MAX_MODEL_FILE_BYTES + 1);
    let value = serde_json::from_reader(&mut limited);
    if limited.limit() == 0 {
        return Err(too_large());
    }
    value.map_err(|e| match e.classify() {
        serde_json::error::Category::Io => Error::Io {
            path: path.to_path_buf(),
            source: e.into(),
        },
        _ => Error::Format {
            path: path.to_path_buf(),
            reason: format!("not a model file: invalid JSON ({e})"),
        },
    })
}

/// The model in the file at `path`, every failure an [`Error::Io`] or [`Error::Format`]
/// naming the file.
fn load_any(path: &Path) -> Result<Model> {
    Model::from_json_value(read_json(path)?).map_err(|e| match e {
        Error::ModelFormat { reason } => Error::Format {
            path: path.to_path_buf(),
            reason,
        },
        other => Error::Format {
            path: path.to_path_buf(),
            reason: without_fit_advice(other.to_string()),
        },
    })
}

/// A saved model is not fitted again when it is loaded, so the advice a fit gives for a
/// covariance that is not positive definite ("increase reg_covar") does not apply to it:
/// say instead what does.
fn without_fit_advice(reason: String) -> String {
    const ADVICE: &str = "; increase reg_covar";
    match reason.find(ADVICE) {
        Some(at) => format!(
            "{}; the file's covariances are not valid (refit the model, with a larger \
             --reg-covar / reg_covar if it was fitted with 0)",
            reason[..at].replace("invalid parameter `reg_covar`: ", "")
        ),
        None => reason,
    }
}

/// The model of kind `M` in the file at `path`; another kind is an [`Error::Format`].
fn load_as<M: FileKind>(path: &Path) -> Result<M> {
    M::from_model(load_any(path)?).map_err(|(name, format)| Error::Format {
        path: path.to_path_buf(),
        reason: format!(
            "a {name} model (format \"{format}\"), expected a {} model (format \"{}\")",
            M::NAME,
            M::FORMAT
        ),
    })
}

/// The validated model of kind `M` in `value` (a `model` field).
fn model_from_value<M, F>(value: serde_json::Value) -> Result<M>
where
    M: FileKind + TryFrom<F, Error = Error>,
    F: serde::de::DeserializeOwned,
{
    let fields: F = serde_json::from_value(value).map_err(|e| Error::ModelFormat {
        reason: format!("invalid {} model: {e}", M::NAME),
    })?;
    M::try_from(fields)
}

impl Model {
    /// Reads the model file at `path`: envelope, format, version, then the model and its
    /// `validate`.
    ///
    /// Errors: [`Error::Io`] when the file cannot be read; [`Error::Format`] naming the file
    /// for anything wrong inside it (not JSON, an unknown format or version, a missing or
    /// malformed model, an inconsistent model).
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        load_any(path.as_ref())
    }

    /// Writes the model to `path` in its envelope, atomically (a temporary file in the
    /// target directory, then renamed over `path`).
    ///
    /// Errors: [`Error::Io`] naming `path` when it cannot be written; an existing file is
    /// then left as it was.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        match self {
            Model::KMeans(m) => save_as(m, path),
            Model::Pca(m) => save_as(m, path),
            Model::GaussianMixture(m) => save_as(m, path),
        }
    }

    /// Parses the text of a model file (what [`Model::load`] reads).
    ///
    /// Errors: [`Error::ModelFormat`] for text that is not a JSON object, a missing or
    /// unknown `format`, a missing or other `version`, or a `model` that does not deserialize
    /// (missing fields, wrong types); [`Error::InvalidModel`] for a model whose parts do not
    /// fit together.
    pub fn from_json_str(text: &str) -> Result<Model> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| Error::ModelFormat {
                reason: format!("not a model file: invalid JSON ({e})"),
            })?;
        Self::from_json_value(value)
    }

    /// [`Model::from_json_str`] of parsed JSON.
    fn from_json_value(value: serde_json::Value) -> Result<Model> {
        let bad = |reason: String| Error::ModelFormat { reason };
        let serde_json::Value::Object(mut envelope) = value else {
            return Err(bad("not a model file: not a JSON object".into()));
        };
        let expected =
            format!("expected \"{KMEANS_FORMAT}\", \"{PCA_FORMAT}\" or \"{GMM_FORMAT}\"");
        let format = match envelope.get("format") {
            Some(serde_json::Value::String(f))
                if [KMEANS_FORMAT, PCA_FORMAT, GMM_FORMAT].contains(&f.as_str()) =>
            {
                f.clone()
            }
            Some(other) => {
                return Err(bad(format!(
                    "not a wgpu-unsupervised model: format is {other}, {expected}"
                )))
            }
            None => {
                return Err(bad(format!(
                    "not a model file: no \"format\" field ({expected})"
                )))
            }
        };
        match envelope.get("version") {
            Some(v) if v.as_u64() == Some(MODEL_VERSION) => {}
            Some(v) => {
                return Err(bad(format!(
                    "unsupported model version {v}: this version of wgpu-unsupervised reads \
                     version {MODEL_VERSION}"
                )))
            }
            None => return Err(bad("not a model file: no \"version\" field".into())),
        }
        let value = envelope
            .remove("model")
            .ok_or_else(|| bad("not a model file: no \"model\" field".into()))?;
        Ok(match format.as_str() {
            KMEANS_FORMAT => Model::KMeans(model_from_value::<_, KMeansModelFields>(value)?),
            PCA_FORMAT => Model::Pca(model_from_value::<_, PcaModelFields>(value)?),
            _ => Model::GaussianMixture(model_from_value::<_, GaussianMixtureModelFields>(value)?),
        })
    }

    /// The text [`Model::save`] writes: the envelope as one line of JSON and a newline.
    pub fn to_json_string(&self) -> String {
        match self {
            Model::KMeans(m) => to_json(m),
            Model::Pca(m) => to_json(m),
            Model::GaussianMixture(m) => to_json(m),
        }
    }

    /// The model type in one word: "kmeans", "pca" or "gmm" (the end of its format).
    pub fn kind(&self) -> &'static str {
        match self {
            Model::KMeans(_) => KMeansModel::KIND,
            Model::Pca(_) => PcaModel::KIND,
            Model::GaussianMixture(_) => GaussianMixtureModel::KIND,
        }
    }

    /// The envelope's `format`: [`KMEANS_FORMAT`], [`PCA_FORMAT`] or [`GMM_FORMAT`].
    pub fn format(&self) -> &'static str {
        match self {
            Model::KMeans(_) => KMeansModel::FORMAT,
            Model::Pca(_) => PcaModel::FORMAT,
            Model::GaussianMixture(_) => GaussianMixtureModel::FORMAT,
        }
    }

    /// The model type as messages name it: "K-Means", "PCA" or "Gaussian-mixture".
    pub fn name(&self) -> &'static str {
        match self {
            Model::KMeans(_) => KMeansModel::NAME,
            Model::Pca(_) => PcaModel::NAME,
            Model::GaussianMixture(_) => GaussianMixtureModel::NAME,
        }
    }
}

impl From<KMeansModel> for Model {
    fn from(m: KMeansModel) -> Self {
        Model::KMeans(m)
    }
}

impl From<PcaModel> for Model {
    fn from(m: PcaModel) -> Self {
        Model::Pca(m)
    }
}

impl From<GaussianMixtureModel> for Model {
    fn from(m: GaussianMixtureModel) -> Self {
        Model::GaussianMixture(m)
    }
}

impl KMeansModel {
    /// The text [`KMeansModel::save`] writes: the model in its envelope, one line of JSON and a
    /// newline (to write it with other files as one set, through `io::OutputSet::text`).
    pub fn to_json_string(&self) -> String {
        to_json(self)
    }

    /// Writes the model to a model file ([`crate::model_file`]), atomically.
    ///
    /// Errors: [`Error::Io`] naming `path` when it cannot be written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        save_as(self, path.as_ref())
    }

    /// Reads a K-Means model file ([`crate::model_file`]); a file holding another kind of
    /// model is an [`Error::Format`] naming both kinds.
    ///
    /// Errors: those of [`Model::load`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        load_as(path.as_ref())
    }
}

impl PcaModel {
    /// The text [`PcaModel::save`] writes: the model in its envelope, one line of JSON and a
    /// newline (to write it with other files as one set, through `io::OutputSet::text`).
    pub fn to_json_string(&self) -> String {
        to_json(self)
    }

    /// Writes the model to a model file ([`crate::model_file`]), atomically.
    ///
    /// Errors: [`Error::Io`] naming `path` when it cannot be written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        save_as(self, path.as_ref())
    }

    /// Reads a PCA model file ([`crate::model_file`]); a file holding another kind of model
    /// is an [`Error::Format`] naming both kinds.
    ///
    /// Errors: those of [`Model::load`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        load_as(path.as_ref())
    }
}

impl GaussianMixtureModel {
    /// The text [`GaussianMixtureModel::save`] writes: the model in its envelope, one line of JSON and a
    /// newline (to write it with other files as one set, through `io::OutputSet::text`).
    pub fn to_json_string(&self) -> String {
        to_json(self)
    }

    /// Writes the model to a model file ([`crate::model_file`]), atomically.
    ///
    /// Errors: [`Error::Io`] naming `path` when it cannot be written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        save_as(self, path.as_ref())
    }

    /// Reads a Gaussian-mixture model file ([`crate::model_file`]); a file holding another
    /// kind of model is an [`Error::Format`] naming both kinds.
    ///
    /// Errors: those of [`Model::load`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        load_as(path.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endless_huge_and_directory_model_files_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        // A file past the bound is refused by its size, without reading it (sparse here).
        let big = dir.path().join("big.json");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_MODEL_FILE_BYTES + 1)
            .unwrap();
        let e = Model::load(&big).unwrap_err();
        assert!(e.to_string().contains("larger than 1024 MiB"), "{e}");
        let e = Model::load(dir.path()).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        #[cfg(unix)]
        {
            // NUL bytes cannot start JSON: the endless device is refused at its first byte.
            let e = KMeansModel::load("/dev/zero").unwrap_err();
            assert!(
                matches!(&e, Error::Format { reason, .. } if reason.contains("invalid JSON")),
                "{e}"
            );
        }
        let model = KMeansModel::from_centroids(vec![0.0, 1.0], 2).unwrap();
        let path = dir.path().join("m.json");
        model.save(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            model.to_json_string()
        );
        assert_eq!(
            KMeansModel::load(&path).unwrap().centroids(),
            model.centroids()
        );
    }
}
