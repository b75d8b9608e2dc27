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
    for key in [
        "rand_index",
        "adjusted_rand_index",
        "normalized_mutual_information",
        "adjusted_mutual_information",
        "homogeneity",
        "completeness",
        "v_measure",
        "fowlkes_mallows",
    ] {
        let v = report[key].as_f64().unwrap();
        assert!((v - 1.0).abs() < 1e-12, "{key}: {report}");
    }
    // Three equal classes: MI = ln 3 nats.
    let mi = report["mutual_information"].as_f64().unwrap();
    assert!((mi - 3f64.ln()).abs() < 1e-12, "{report}");
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

/// Labellings `evaluate` refuses: `{short}` has 4 labels;
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
    // Two sampled rows can never hold 2 clusters and fewer clusters than rows.
    case(
        "evaluate --input {iris} --labels {iris_y} --sample-size 2",
        2,
        &["--sample-size must be at least 3"],
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
    f.name("short", f.file("short.npy"));
    f.check(EVALUATE_REFUSES);
}

/// One cluster or all singletons: the silhouette, Calinski–Harabasz and Davies–Bouldin are
/// left out with the reason, the inertia and the agreement scores are reported.
#[test]
fn evaluate_reports_agreement_for_one_cluster_and_singletons() {
    let mut f = Fixture::new();
    io::write_npy_u32(&f.file("one.npy"), &[7; 150]).unwrap();
    let each: Vec<u32> = (0..150).collect();
    io::write_npy_u32(&f.file("each.npy"), &each).unwrap();
    f.name("one", f.file("one.npy"));
    f.name("each", f.file("each.npy"));
    for (labels, clusters) in [("{one}", 1), ("{each}", 150)] {
        let report = json_line(&f.run(&format!(
            "evaluate --input {{iris}} --labels {labels} --truth {{iris_y}} --json"
        )));
        for key in ["silhouette", "calinski_harabasz", "davies_bouldin"] {
            assert!(report.get(key).is_none(), "{key}: {report}");
            let reason = report["undefined"][key].as_str().unwrap();
            assert!(
                reason.contains(&format!("got {clusters} clusters for N = 150")),
                "{reason}"
            );
        }
        assert_eq!(report["k"], clusters);
        assert_eq!(report["silhouette_rows"], 0);
        // scikit-learn 1.9.1 against the Iris species: one cluster gives RI = 0.3288590604
        // (the pairs within a species), ARI 0; all singletons RI = 0.6711409396, ARI 0.
        let ri = report["rand_index"].as_f64().unwrap();
        let want = if clusters == 1 {
            0.328_859_060_402_684_6
        } else {
            0.671_140_939_597_315_4
        };
        assert!((ri - want).abs() < 1e-12, "{ri}");
        assert_eq!(report["adjusted_rand_index"].as_f64(), Some(0.0));
        assert!(report["inertia"].as_f64().unwrap() >= 0.0);
    }
    let text = ok(&f.run("evaluate --input {iris} --labels {one}"));
    assert!(text.contains("not defined"), "{text}");
    assert!(text.contains("inertia:"), "{text}");
}

/// Davies–Bouldin with two clusters on one centroid: a number (scikit-learn's convention),
/// never `null`.
#[test]
fn evaluate_davies_bouldin_with_a_shared_centroid() {
    let mut f = Fixture::new();
    let x = f.file("x.csv");
    std::fs::write(&x, "-1,0\n1,0\n0,-2\n0,2\n10,10\n11,10\n").unwrap();
    io::write_npy_u32(&f.file("y.npy"), &[0, 0, 1, 1, 2, 2]).unwrap();
    f.name("x", x);
    f.name("y", f.file("y.npy"));
    let report = json_line(&f.run("evaluate --input {x} --labels {y} --json"));
    // scikit-learn 1.9.1: davies_bouldin_score(X, y) = 0.14942528735632185.
    let db = report["davies_bouldin"].as_f64().unwrap();
    assert!((db - 0.149_425_287_356_321_85).abs() < 1e-9, "{report}");
}

/// `--precomputed`: the input is a distance matrix; the silhouette is scikit-learn's
/// (1.9.1, `silhouette_score(D, y, metric="precomputed")` = 0.7978250244379277 for these
/// Manhattan distances), the criteria that need coordinates are `undefined`.
#[test]
fn evaluate_precomputed_distances() {
    let mut f = Fixture::new();
    let pts = [
        [0.0f64, 0.0],
        [1.0, 0.0],
        [0.0, 2.0],
        [5.0, 5.0],
        [6.0, 5.0],
        [5.0, 7.0],
        [10.0, 0.0],
        [11.0, 1.0],
    ];
    let rows: String = pts
        .iter()
        .map(|a| {
            let row: Vec<String> = pts
                .iter()
                .map(|b| ((a[0] - b[0]).abs() + (a[1] - b[1]).abs()).to_string())
                .collect();
            row.join(",") + "\n"
        })
        .collect();
    std::fs::write(f.file("d.csv"), rows).unwrap();
    io::write_npy_u32(&f.file("y.npy"), &[0, 0, 0, 1, 1, 1, 2, 2]).unwrap();
    f.name("d", f.file("d.csv"));
    f.name("y", f.file("y.npy"));
    let report =
        json_line(&f.run("evaluate --input {d} --labels {y} --precomputed --truth {y} --json"));
    let s = report["silhouette"].as_f64().unwrap();
    assert!((s - 0.797_825_024_437_927_7).abs() < 1e-6, "{report}");
    for key in ["calinski_harabasz", "davies_bouldin", "inertia"] {
        assert!(report.get(key).is_none(), "{report}");
        assert!(report["undefined"][key]
            .as_str()
            .unwrap()
            .contains("coordinates"));
    }
    assert_eq!(report["fowlkes_mallows"].as_f64(), Some(1.0));
    // Not square, or with --sample-size: refused.
    for (args, words) in [
        (
            "evaluate --input {iris} --labels {iris_y} --precomputed",
            &["N x N", "150 x 4"][..],
        ),
        (
            "evaluate --input {d} --labels {y} --precomputed --sample-size 4",
            &["--sample-size"][..],
        ),
    ] {
        let out = f.run(args);
        assert_eq!(out.status.code(), Some(2), "{args}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(words.iter().all(|w| err.contains(w)), "{args}: {err}");
    }
}
