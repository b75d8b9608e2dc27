//! Options whose value is one of a library enum's names (`--covariance`, `--init`, `--metric`,
//! `--solver`, `--criterion`).
//!
//! clap parses them with the enum's own `FromStr`, so the program accepts exactly the
//! spellings the library accepts (aliases included) and has no copy of the enums to keep in
//! step; the enum's names are listed in `--help` and in the error for an unknown value.

use std::ffi::OsStr;
use std::fmt::Display;
use std::marker::PhantomData;
use std::str::FromStr;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use wgpu_unsupervised::{CovarianceType, Criterion, GmmInit, KMeansInit, Metric, PcaSolver};

/// A clap value parser for the library enum `T` (see the module docs).
#[derive(Clone)]
pub struct LibraryEnum<T> {
    /// The names shown in `--help` and in errors.
    names: Vec<&'static str>,
    /// The enum parsed.
    parsed: PhantomData<fn() -> T>,
}

/// The value parser of an option taking one of `T`'s `names` (the names of its `ALL`).
pub fn library_enum<T>(names: impl IntoIterator<Item = &'static str>) -> LibraryEnum<T> {
    LibraryEnum {
        names: names.into_iter().collect(),
        parsed: PhantomData,
    }
}

impl<T> TypedValueParser for LibraryEnum<T>
where
    T: FromStr + Clone + Send + Sync + 'static,
    T::Err: Display,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let text = value.to_string_lossy();
        text.parse().map_err(|_| {
            // clap's own "invalid value" error, naming the option and the valid names.
            let mut error = clap::Error::new(ErrorKind::InvalidValue).with_cmd(cmd);
            if let Some(arg) = arg {
                error.insert(
                    ContextKind::InvalidArg,
                    ContextValue::String(arg.to_string()),
                );
            }
            error.insert(
                ContextKind::InvalidValue,
                ContextValue::String(text.into_owned()),
            );
            error.insert(
                ContextKind::ValidValue,
                ContextValue::Strings(self.names.iter().map(|n| n.to_string()).collect()),
            );
            error
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.names.iter().map(|n| PossibleValue::new(*n))))
    }
}

/// `--covariance` (`gmm`, `select-k`).
pub fn covariance() -> LibraryEnum<CovarianceType> {
    library_enum(CovarianceType::ALL.map(CovarianceType::name))
}

/// `kmeans --init`.
pub fn kmeans_init() -> LibraryEnum<KMeansInit> {
    library_enum(KMeansInit::ALL.iter().map(KMeansInit::name))
}

/// `kmeans --metric`.
pub fn kmeans_metric() -> LibraryEnum<Metric> {
    library_enum(Metric::ALL.iter().map(Metric::name))
}

/// `gmm --init`.
pub fn gmm_init() -> LibraryEnum<GmmInit> {
    library_enum(GmmInit::ALL.iter().map(GmmInit::name))
}

/// `pca --solver`.
pub fn pca_solver() -> LibraryEnum<PcaSolver> {
    library_enum(PcaSolver::ALL.map(PcaSolver::name))
}

/// `select-k --criterion`.
pub fn criterion() -> LibraryEnum<Criterion> {
    library_enum(Criterion::ALL.map(Criterion::name))
}

/// The value parser of `--max-gpu-memory`: the library's [`parse_memory_size`].
///
/// [`parse_memory_size`]: wgpu_unsupervised::gpu::parse_memory_size
pub fn memory_size(text: &str) -> Result<u64, String> {
    wgpu_unsupervised::gpu::parse_memory_size(text).map_err(|e| e.to_string())
}
