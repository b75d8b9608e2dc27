//! `evaluate`.

use wgpu_unsupervised::io;

use crate::common::{case, json_line, ok, sorted_keys, Case, Fixture};

#[test]
fn evaluate_iris_json_keys_with_and_without_truth() {
    let f = Fixture::new();
    let report = json_line(&f.run("evaluate --input {iris} --labels {iris_y} --json"));
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

    let report = json_line(&f.run(
        "evaluate --input {iris} --labels {iris_y} --truth {iris_y} --sample-size 60 --seed 4 \
         --json",
    ));
    for key in ["rand_index", "adjusted_rand_index"] {
        assert_eq!(report[key].as_f64(), Some(1.0), "{key}: {report}");
    }
    assert_eq!(report["silhouette_rows"], 60);
}

#[test]
fn evaluate_human_report_of_kmeans_labels() {
    let f = Fixture::new();
    ok(&f.run("kmeans --input {iris} --k 3 --output {dir}/labels.npy"));
    let text = ok(&f.run("evaluate --input {iris} --labels {dir}/labels.npy --truth {iris_y}"));
    for word in ["silhouette:", "davies-bouldin:", "adjusted rand index:"] {
        assert!(text.contains(word), "{text}");
    }
}

/// Labellings `evaluate` refuses: `{short}` has 4 labels, `{one}` 150 labels of one cluster;
/// `{iris}` is a matrix of floats, not labels.
const EVALUATE_REFUSES: &[Case] = &[
    case(
        "evaluate --input {iris} --labels {short}",
        2,
        &["4 labels", "150 rows"],
    ),
    case(
        "evaluate --input {iris} --labels {iris_y} --truth {short}",
        2,
        &["--truth"],
    ),
    case("evaluate --input {iris} --labels {one}", 2, &["1 clusters"]),
    case(
        "evaluate --input {iris} --labels {iris}",
        2,
        &["iris_X.npy"],
    ),
    case(
        "evaluate --input {iris} --labels {iris_y} --sample-size 1",
        2,
        &["--sample-size"],
    ),
    case(
        "evaluate --input {iris} --labels {dir}/none.npy",
        2,
        &["none.npy"],
    ),
];

#[test]
fn evaluate_refuses_bad_labels() {
    let mut f = Fixture::new();
    io::write_npy_u32(&f.file("short.npy"), &[0, 1, 0, 1]).unwrap();
    io::write_npy_u32(&f.file("one.npy"), &[7; 150]).unwrap();
    f.name("short", f.file("short.npy"));
    f.name("one", f.file("one.npy"));
    f.check(EVALUATE_REFUSES);
}
