//! `evaluate`.

use wgpu_unsupervised::io;

use crate::common::{case, cli, iris, iris_labels, json_line, ok, s, sorted_keys, Case, Fixture};

#[test]
fn evaluate_iris_json_keys_with_and_without_truth() {
    let y = iris_labels();
    let report = json_line(&cli(&[
        "evaluate",
        "--input",
        s(&iris()),
        "--labels",
        s(&y),
        "--json",
    ]));
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

    let report = json_line(&cli(&[
        "evaluate",
        "--input",
        s(&iris()),
        "--labels",
        s(&y),
        "--truth",
        s(&y),
        "--sample-size",
        "60",
        "--seed",
        "4",
        "--json",
    ]));
    for key in ["rand_index", "adjusted_rand_index"] {
        assert_eq!(report[key].as_f64(), Some(1.0), "{key}: {report}");
    }
    assert_eq!(report["silhouette_rows"], 60);
}

#[test]
fn evaluate_human_report_of_kmeans_labels() {
    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("labels.npy");
    ok(&cli(&[
        "kmeans",
        "--input",
        s(&iris()),
        "--k",
        "3",
        "--output",
        s(&labels),
    ]));
    let text = ok(&cli(&[
        "evaluate",
        "--input",
        s(&iris()),
        "--labels",
        s(&labels),
        "--truth",
        s(&iris_labels()),
    ]));
    for word in ["silhouette:", "davies-bouldin:", "adjusted rand index:"] {
        assert!(text.contains(word), "{text}");
    }
}

/// Labellings `evaluate` refuses: `{short}` has 4 labels, `{one}` 150 labels of one cluster,
/// `{y}` is the iris species; `{x}` is the iris matrix (150 x 4 floats, not labels).
const EVALUATE_REFUSES: &[Case] = &[
    case(
        "evaluate --input {x} --labels {short}",
        2,
        &["4 labels", "150 rows"],
    ),
    case(
        "evaluate --input {x} --labels {y} --truth {short}",
        2,
        &["--truth"],
    ),
    case("evaluate --input {x} --labels {one}", 2, &["1 clusters"]),
    case("evaluate --input {x} --labels {x}", 2, &["iris_X.npy"]),
    case(
        "evaluate --input {x} --labels {y} --sample-size 1",
        2,
        &["--sample-size"],
    ),
    case(
        "evaluate --input {x} --labels {dir}/none.npy",
        2,
        &["none.npy"],
    ),
];

#[test]
fn evaluate_refuses_bad_labels() {
    let mut fixture = Fixture::new();
    let short = fixture.path().join("short.npy");
    io::write_npy_u32(&short, &[0, 1, 0, 1]).unwrap();
    let one = fixture.path().join("one.npy");
    io::write_npy_u32(&one, &[7; 150]).unwrap();
    fixture
        .name("x", iris())
        .name("y", iris_labels())
        .name("short", short)
        .name("one", one);
    fixture.check(EVALUATE_REFUSES);
}
