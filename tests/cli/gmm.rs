//! `gmm`.

use wgpu_unsupervised::io;

use crate::common::{case, json_line, ok, read_2d, s, sorted_keys, usage, Case, Fixture};

/// Checks N x K responsibilities: in [0, 1], every row summing to 1 within 1e-4.
pub fn check_responsibilities(proba: &[f32], n: usize, k: usize) {
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
    let f = Fixture::new();
    let report = json_line(
        &f.run("gmm --input {iris} --k 3 --output {dir}/labels.npy --proba {dir}/proba.npy --json"),
    );
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

    let labels = io::read_labels(&f.file("labels.npy")).unwrap();
    assert_eq!(labels.len(), 150);
    assert!(labels.iter().all(|&l| l < 3), "{labels:?}");
    // Setosa (the first 50 rows) is separated from the other species.
    assert!(labels[..50].iter().all(|&l| l == labels[0]), "{labels:?}");
    assert!(labels[50..].iter().all(|&l| l != labels[0]), "{labels:?}");

    let proba = read_2d(&f.file("proba.npy"), 150, 3);
    check_responsibilities(&proba, 150, 3);
    // The labels are the most probable components.
    for (i, row) in proba.chunks_exact(3).enumerate() {
        let best = row[labels[i] as usize];
        assert!(row.iter().all(|&p| p <= best + 1e-6), "row {i}: {row:?}");
    }
}

#[test]
fn gmm_every_covariance_type_and_a_human_report() {
    let f = Fixture::new();
    for covariance in ["full", "tied", "diag", "spherical"] {
        let report = json_line(&f.run(&format!(
            "gmm --input {{iris}} --k 3 --covariance {covariance} --max-iter 200 --seed 3 \
             --proba {{dir}}/{covariance}.npy --json"
        )));
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
        let proba = f.file(&format!("{covariance}.npy"));
        check_responsibilities(&read_2d(&proba, 150, 3), 150, 3);
    }

    // The human report, with the other options.
    let text = ok(&f.run(
        "gmm --input {iris} --k 2 --covariance diag --init random --n-init 2 --tol 1e-4 \
         --reg-covar 1e-5 --output {dir}/labels.npy --model {dir}/gmm.json",
    ));
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
    assert!(text.contains(s(&f.file("labels.npy"))), "{text}");
    assert!(text.contains(s(&f.file("gmm.json"))), "{text}");
    let labels = io::read_labels(&f.file("labels.npy")).unwrap();
    assert_eq!(labels.len(), 150);
    assert!(labels.iter().all(|&l| l < 2), "{labels:?}");
}

/// Command lines `gmm` refuses. `{x}` has 10 rows of 2 features.
const GMM_REFUSES: &[Case] = &[
    case(
        "gmm --input {x} --k 50 --output {dir}/labels.npy --proba {dir}/proba.npy \
         --model {dir}/model.json",
        2,
        &["k = 50", "n = 10"],
    ),
    // Unknown choices, refused by the argument parser with the names it knows.
    usage(
        "gmm --input {x} --k 2 --covariance banded",
        &["banded", "spherical"],
    ),
    usage(
        "gmm --input {x} --k 2 --init farthest",
        &["farthest", "kmeans++"],
    ),
    // Parameters, named as the library names them.
    case("gmm --input {x} --k 0", 2, &["k"]),
    case("gmm --input {x} --k 2 --tol -1", 2, &["tol"]),
    case("gmm --input {x} --k 2 --reg-covar -1", 2, &["reg_covar"]),
    case("gmm --input {x} --k 2 --n-init 0", 2, &["n_init"]),
    case("gmm --input {x} --k 2 --max-iter 0", 2, &["max_iter"]),
    // Outputs: .npy or .csv only, and all distinct.
    case(
        "gmm --input {x} --k 2 --proba {dir}/proba.tsv",
        2,
        &["--proba", ".npy", ".csv"],
    ),
    case(
        "gmm --input {x} --k 2 --output {dir}/labels.npy --proba {dir}/labels.npy",
        2,
        &["same file"],
    ),
    case(
        "gmm --input {x} --k 2 --proba {dir}/absent/proba.npy",
        1,
        &["absent"],
    ),
];

#[test]
fn gmm_refuses_bad_arguments_writing_nothing() {
    let mut f = Fixture::new();
    f.blobs("x", 10, 2, 2, 32);
    f.check(GMM_REFUSES);
}
