//! The validation of Gaussian-mixture models (`model.rs`): valid models pass, every
//! inconsistency is named.

use super::*;
use crate::gmm::CovarianceType;

/// Two full-covariance components of two features with labels: a valid model.
fn valid() -> GaussianMixtureModel {
    let identity = [1.0, 0.0, 0.0, 1.0];
    let mut m = GaussianMixtureModel::from_parameters(
        CovarianceType::Full,
        vec![0.25, 0.75],
        vec![0.0, 0.0, 3.0, 3.0],
        [identity, identity].concat(),
    )
    .unwrap();
    m.labels = vec![0, 1, 1];
    m.lower_bound = -2.5;
    m.lower_bound_history = vec![-3.0, -2.5];
    m
}

/// The reason of the `InvalidModel` error of `edit` applied to a valid model.
fn reason(edit: impl FnOnce(&mut GaussianMixtureModel)) -> String {
    let mut m = valid();
    edit(&mut m);
    match m.validate() {
        Err(Error::InvalidModel {
            kind: "Gaussian mixture",
            reason,
        }) => reason,
        other => panic!("expected an inconsistent mixture, got {other:?}"),
    }
}

#[test]
fn valid_models_pass() {
    valid().validate().unwrap();
    let mut unknown_bound = valid();
    unknown_bound.lower_bound = f64::NAN;
    unknown_bound.validate().unwrap();
}

#[test]
fn every_inconsistency_is_reported() {
    assert!(reason(|m| m.n_features = 0).contains("of 0 features"));
    assert!(reason(|m| {
        m.weights.clear();
        m.params.k = 0;
    })
    .contains("0 components"));
    assert!(reason(|m| m.params.k = 3).contains("fitted with k = 3"));
    assert!(reason(|m| m.params.reg_covar = -1.0).contains("parameters"));
    assert!(reason(|m| m.n_features = usize::MAX).contains("too large"));
    assert!(reason(|m| m.means.truncate(3)).contains("means has 3"));
    assert!(reason(|m| m.covariances.truncate(4)).contains("covariances has 4"));
    assert!(reason(|m| m.precisions_cholesky.push(1.0)).contains("precisions_cholesky has 9"));
    assert!(
        reason(|m| m.params.covariance_type = CovarianceType::Diag).contains("diag covariances")
    );
    assert!(reason(|m| m.weights[0] = f64::NAN).contains("non-finite weights"));
    assert!(reason(|m| m.means[1] = f64::INFINITY).contains("non-finite means"));
    assert!(reason(|m| m.covariances[1] = f64::NAN).contains("non-finite covariances"));
    assert!(
        reason(|m| m.precisions_cholesky[0] = f64::NAN).contains("non-finite precisions_cholesky")
    );
    assert!(reason(|m| m.lower_bound_history[1] = f64::NAN).contains("history"));
    assert!(reason(|m| m.lower_bound = f64::NEG_INFINITY).contains("lower bound"));
    assert!(reason(|m| m.weights[0] = 0.5).contains("sum to 1"));
    assert!(reason(|m| m.weights = vec![-0.25, 1.25]).contains("non-negative"));
    assert!(reason(|m| m.labels[2] = 2).contains("label 2"));
    assert!(reason(|m| m.covariances[0] = -1.0).contains("not positive definite"));
    let doubled = |m: &mut GaussianMixtureModel| m.precisions_cholesky[4] *= 2.0;
    assert!(reason(doubled).contains("component 1 do not match"));
}
