//! `select-k`.

use crate::common::{case, check_svg, json_line, ok, usage, Case, Fixture};

#[test]
fn select_k_gap_json_and_plot() {
    let mut f = Fixture::new();
    f.blobs("x", 300, 2, 3, 5);
    let report = json_line(&f.run(
        "select-k --input {iris} --algorithm kmeans --k-min 1 --k-max 5 --n-refs 3 --seed 2 \
         --plot {dir}/gap.svg --json",
    ));
    assert_eq!(report["algorithm"], "kmeans");
    assert_eq!(report["criterion"], "gap");
    assert_eq!(report["k"], serde_json::json!([1, 2, 3, 4, 5]));
    for key in ["values", "gap", "s_k"] {
        assert_eq!(report[key].as_array().unwrap().len(), 5, "{key}: {report}");
    }
    assert_eq!(report["n_refs"], 3);
    let k = report["suggested_k"].as_u64().unwrap();
    assert!((1..=5).contains(&k), "{report}");
    check_svg(&f.file("gap.svg"));
}

#[test]
fn select_k_elbow_bic_and_human_report() {
    let f = Fixture::new();
    let report = json_line(&f.run(
        "select-k --input {iris} --algorithm gmm --k-max 4 --covariance diag \
         --plot {dir}/bic.svg --json",
    ));
    assert_eq!(report["criterion"], "bic");
    assert_eq!(report["values"].as_array().unwrap().len(), 4);
    assert!(report.get("gap").is_none() && report.get("s_k").is_none());
    check_svg(&f.file("bic.svg"));

    let report = json_line(&f.run(
        "select-k --input {iris} --algorithm kmeans --criterion elbow --k-min 2 --k-max 6 \
         --n-init 3 --json",
    ));
    assert_eq!(report["criterion"], "elbow");
    let values: Vec<f64> = report["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(values.len(), 5);
    assert!(values[0] > values[4], "{values:?}");

    let text = ok(&f.run("select-k --input {iris} --algorithm gmm --criterion aic --k-max 3"));
    assert!(
        text.contains("suggested k:") && text.contains("AIC"),
        "{text}"
    );
}

/// Command lines `select-k` refuses; `{iris}` has 150 rows.
const SELECT_K_REFUSES: &[Case] = &[
    case(
        "select-k --input {iris} --plot {dir}/p.svg --algorithm kmeans --k-min 5 --k-max 3",
        2,
        &["--k-min", "--k-max"],
    ),
    case(
        "select-k --input {iris} --plot {dir}/p.svg --algorithm kmeans --k-max 151",
        2,
        &["--k-max", "150"],
    ),
    case(
        "select-k --input {iris} --plot {dir}/p.svg --algorithm kmeans --k-min 0",
        2,
        &["--k-min"],
    ),
    case(
        "select-k --input {iris} --plot {dir}/p.svg --algorithm kmeans --criterion bic",
        2,
        &["bic", "kmeans"],
    ),
    case(
        "select-k --input {iris} --plot {dir}/p.svg --algorithm gmm --criterion gap",
        2,
        &["gap", "gmm"],
    ),
    case(
        "select-k --input {iris} --plot {dir}/p.svg --algorithm kmeans --covariance diag",
        2,
        &["--covariance"],
    ),
    case(
        "select-k --input {iris} --plot {dir}/p.svg --algorithm gmm --n-refs 3",
        2,
        &["--n-refs"],
    ),
    case(
        "select-k --input {iris} --plot {dir}/p.svg --algorithm kmeans --n-refs 0",
        2,
        &["--n-refs"],
    ),
    usage(
        "select-k --input {iris} --plot {dir}/p.svg --algorithm spectral",
        &["spectral"],
    ),
    usage(
        "select-k --input {iris} --algorithm kmeans --criterion aicc",
        &["aicc"],
    ),
    usage("select-k --input {iris}", &["--algorithm"]),
    case(
        "select-k --input {iris} --algorithm kmeans --plot {dir}/plot.png",
        2,
        &[".svg"],
    ),
    case(
        "select-k --input {iris} --algorithm kmeans --plot {dir}/absent/plot.svg",
        1,
        &["absent"],
    ),
];

#[test]
fn select_k_refuses_bad_arguments_writing_nothing() {
    Fixture::new().check(SELECT_K_REFUSES);
}

#[test]
fn select_k_on_identical_rows_suggests_one_cluster() {
    let mut f = Fixture::new();
    f.write("same", "same.csv", &"2.5,-1,7\n".repeat(30));
    for algorithm in ["kmeans --criterion gap", "kmeans --criterion elbow", "gmm"] {
        let report = json_line(&f.run(&format!(
            "select-k --input {{same}} --algorithm {algorithm} --k-max 4 --n-init 1 --json"
        )));
        assert_eq!(report["n"], 30, "{report}");
        if algorithm.contains("gap") {
            assert_eq!(report["suggested_k"], 1, "{algorithm}: {report}");
            for key in ["gap", "s_k"] {
                let values = report[key].as_array().unwrap();
                assert!(
                    values.iter().all(|v| v.as_f64().is_some()),
                    "{key}: {report}"
                );
            }
        }
    }
}

#[test]
fn select_k_lowers_its_default_k_max_to_the_rows() {
    let mut f = Fixture::new();
    f.blobs("x", 9, 2, 3, 5);
    let report =
        json_line(&f.run("select-k --input {x} --algorithm kmeans --criterion elbow --json"));
    let k: Vec<u64> = report["k"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(k, (1..=9).collect::<Vec<u64>>(), "{report}");
    // Given explicitly, a --k-max past the rows is still refused, and so is a --k-min past
    // the lowered default.
    f.check(&[
        case(
            "select-k --input {x} --algorithm kmeans --k-max 10",
            2,
            &["--k-max 10", "9"],
        ),
        case(
            "select-k --input {x} --algorithm kmeans --k-min 10",
            2,
            &["--k-min 10", "9"],
        ),
    ]);
}
