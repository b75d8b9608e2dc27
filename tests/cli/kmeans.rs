//! `kmeans`.

use wgpu_unsupervised::io;

use crate::common::{
    case, files_in, json_line, ok, s, sorted_keys, stderr, stdout, usage, usage_fails, Case,
    Fixture,
};

#[test]
fn kmeans_npy_json_report_and_labels() {
    let mut f = Fixture::new();
    f.blobs("x", 300, 3, 4, 1);
    let report = json_line(
        &f.run("kmeans --input {x} --k 4 --seed 5 --n-init 2 --output {dir}/labels.npy --json"),
    );
    let mut expected = [
        "algorithm",
        "n",
        "d",
        "k",
        "metric",
        "init",
        "inertia",
        "n_iter",
        "converged",
        "fit_seconds",
        "init_seconds",
        "adapter",
    ];
    expected.sort_unstable();
    assert_eq!(sorted_keys(&report), expected, "{report}");
    assert_eq!(report["algorithm"], "kmeans");
    assert_eq!(report["n"], 300);
    assert_eq!(report["d"], 3);
    assert_eq!(report["k"], 4);
    assert_eq!(report["metric"], "euclidean");
    assert_eq!(report["init"], "k-means++");
    let inertia = report["inertia"].as_f64().unwrap();
    assert!(inertia.is_finite() && inertia >= 0.0, "{report}");
    assert!(report["n_iter"].as_u64().unwrap() >= 1, "{report}");
    assert!(report["converged"].is_boolean(), "{report}");
    assert!(report["fit_seconds"].as_f64().unwrap() >= 0.0, "{report}");
    assert!(!report["adapter"].as_str().unwrap().is_empty(), "{report}");

    let labels = io::read_labels(&f.file("labels.npy")).unwrap();
    assert_eq!(labels.len(), 300);
    assert!(labels.iter().all(|&l| l < 4), "{labels:?}");
}

#[test]
fn kmeans_csv_with_header_and_human_report() {
    let mut f = Fixture::new();
    // Two well separated groups of six rows.
    let mut text = String::from("width,height\n");
    for i in 0..6 {
        text += &format!("{},{}\n", 0.1 * i as f32, 1.0 - 0.1 * i as f32);
    }
    for i in 0..6 {
        text += &format!("{},{}\n", 50.0 + 0.1 * i as f32, 40.0 + 0.2 * i as f32);
    }
    f.write("csv", "points.csv", &text);
    let report = ok(&f.run("kmeans --input {csv} --k 2 --output {dir}/labels.npy"));
    for word in ["adapter", "12 rows x 2 features", "inertia", "iterations"] {
        assert!(report.contains(word), "{word:?} missing from {report}");
    }
    assert!(report.contains(s(&f.file("labels.npy"))), "{report}");

    let labels = io::read_labels(&f.file("labels.npy")).unwrap();
    assert_eq!(labels.len(), 12);
    assert!(labels[..6].iter().all(|&l| l == labels[0]), "{labels:?}");
    assert!(labels[6..].iter().all(|&l| l == labels[6]), "{labels:?}");
    assert_ne!(labels[0], labels[6]);
}

#[test]
fn kmeans_random_init_and_a_model_beside_the_json_report() {
    let mut f = Fixture::new();
    f.blobs("x", 200, 2, 3, 2);
    let report = json_line(&f.run(
        "kmeans --input {x} --k 3 --init random --seed 11 --max-iter 100 --tol 0 \
         --model {dir}/m.json --json",
    ));
    assert_eq!(report["k"], 3);
    assert_eq!(report["n"], 200);
    assert!(report["inertia"].as_f64().unwrap().is_finite());
    assert!(report["n_iter"].as_u64().unwrap() <= 100);
    assert!(f.file("m.json").exists());
}

#[test]
fn kmeans_fixed_iterations_runs_every_iteration_asked_for() {
    let mut f = Fixture::new();
    f.blobs("x", 300, 2, 3, 4);
    let run = |extra: &str| {
        json_line(&f.run(&format!(
            "kmeans --input {{x}} --k 3 --init random --seed 5 --max-iter 40 {extra} --json"
        )))
    };
    let early = run("");
    let fixed = run("--fixed-iterations");
    assert!(early["n_iter"].as_u64().unwrap() < 40, "{early}");
    assert_eq!(early["converged"], true);
    assert_eq!(fixed["n_iter"], 40);
    assert_eq!(fixed["converged"], false);
    let (a, b) = (
        early["inertia"].as_f64().unwrap(),
        fixed["inertia"].as_f64().unwrap(),
    );
    assert!((a - b).abs() <= 1e-5 * a, "{a} vs {b}");
    let refused =
        usage_fails(&f.run("kmeans --input {x} --k 3 --fixed-iterations --mini-batch 64"));
    assert!(refused.contains("--fixed-iterations"), "{refused}");
}

#[test]
fn kmeans_init_takes_the_library_spellings_and_help_lists_them() {
    let mut f = Fixture::new();
    f.blobs("x", 40, 2, 2, 7);
    for init in ["k-means++", "kmeans++", "RANDOM"] {
        let report = json_line(&f.run(&format!("kmeans --input {{x}} --k 2 --init {init} --json")));
        assert_eq!(report["k"], 2, "{init}: {report}");
    }
    let help = ok(&f.run("kmeans --help"));
    assert!(
        help.contains("[possible values: k-means++, random, k-means||]"),
        "{help}"
    );
}

/// Command lines `kmeans` refuses. `{x}` has 10 rows of 2 features.
const KMEANS_REFUSES: &[Case] = &[
    // The argument parser.
    usage("kmeans --input {x}", &["--k"]),
    usage("cluster", &["cluster"]),
    usage("kmeans --input {x} --k two", &["two"]),
    usage("kmeans --input {x} --k 2 --init farthest", &["farthest"]),
    // Parameters, named as the library names them.
    case(
        "kmeans --input {x} --k 50 --output {dir}/labels.npy --model {dir}/model.json",
        2,
        &["k = 50", "n = 10"],
    ),
    case("kmeans --input {x} --k 0", 2, &["k"]),
    case("kmeans --input {x} --k 2 --tol -1", 2, &["tol"]),
    case("kmeans --input {x} --k 2 --n-init 0", 2, &["n_init"]),
    case("kmeans --input {x} --k 2 --max-iter 0", 2, &["max_iter"]),
    // Inputs.
    case(
        "kmeans --input {dir}/nowhere.npy --k 2",
        2,
        &["nowhere.npy"],
    ),
    case("kmeans --input {txt} --k 1", 2, &["x.txt"]),
    // The file, and the place as a person counts it (header and blank lines included).
    case(
        "kmeans --input {nan} --k 2",
        2,
        &["bad.csv: line 4, field 2: NaN"],
    ),
    // Outputs: names (exit 2), then places that cannot be written (exit 1).
    case(
        "kmeans --input {x} --k 2 --output {dir}/labels.txt",
        2,
        &[".npy", ".csv"],
    ),
    case(
        "kmeans --input {x} --k 2 --output {dir}/l.npy --model {dir}/l.npy",
        2,
        &["same file"],
    ),
    case(
        "kmeans --input {x} --k 2 --output {dir}/absent/labels.npy",
        1,
        &["absent"],
    ),
    case(
        "kmeans --input {x} --k 2 --model {dir}/absent/model.json",
        1,
        &["absent"],
    ),
    case(
        "kmeans --input {x} --k 2 --output {dir}/taken.npy",
        1,
        &["directory"],
    ),
];

#[test]
fn kmeans_refuses_bad_arguments_inputs_and_outputs_writing_nothing() {
    let mut f = Fixture::new();
    f.blobs("x", 10, 2, 2, 6);
    f.write("txt", "x.txt", "1,2\n3,4\n");
    f.write("nan", "bad.csv", "a,b,c\n1,2,3\n4,5,6\n7,NaN,9\n");
    // An existing directory where an output should go.
    std::fs::create_dir(f.file("taken.npy")).unwrap();
    f.check(KMEANS_REFUSES);
    assert!(files_in(&f.file("taken.npy")).is_empty());
}

#[test]
fn kmeans_cosine_metric_report_and_refusals() {
    let mut f = Fixture::new();
    f.blobs("x", 200, 3, 3, 8);
    let report = json_line(&f.run(
        "kmeans --input {x} --k 3 --metric cosine --seed 2 --output {dir}/l.npy --model {dir}/m.json --json",
    ));
    assert_eq!(report["metric"], "cosine");
    let inertia = report["inertia"].as_f64().unwrap();
    // Σ(1 − cos) lies in [0, 2N].
    assert!((0.0..=400.0).contains(&inertia), "{report}");
    // The saved model predicts with its metric: the training labels back.
    ok(&f.run("predict --model {dir}/m.json --input {x} --output {dir}/p.npy"));
    assert_eq!(
        io::read_labels(&f.file("p.npy")).unwrap(),
        io::read_labels(&f.file("l.npy")).unwrap()
    );
    f.write("zero", "zero.csv", "1,2\n0,0\n3,1\n-1,2\n");
    f.check(&[
        case(
            "kmeans --input {zero} --k 2 --metric cosine",
            2,
            &["row 1", "zeros"],
        ),
        usage(
            "kmeans --input {x} --k 2 --metric manhattan",
            &["manhattan", "cosine"],
        ),
        usage(
            "kmeans --input {x} --k 2 --metric cosine --mini-batch 10",
            &["--mini-batch"],
        ),
    ]);
}

#[test]
fn kmeans_parallel_init_and_its_options() {
    let mut f = Fixture::new();
    f.blobs("x", 400, 3, 8, 3);
    for init in ["k-means||", "kmeans-parallel"] {
        let report = json_line(&f.run(&format!(
            "kmeans --input {{x}} --k 8 --init {init} --rounds 3 --oversampling 1.5 --seed 1 --json"
        )));
        let init_s = report["init_seconds"].as_f64().unwrap();
        assert!(
            init_s > 0.0 && init_s <= report["fit_seconds"].as_f64().unwrap(),
            "{report}"
        );
    }
    f.check(&[
        case(
            "kmeans --input {x} --k 3 --rounds 2",
            2,
            &["--rounds", "k-means||"],
        ),
        case(
            "kmeans --input {x} --k 3 --init kmeans-parallel --oversampling 0",
            2,
            &["oversampling"],
        ),
        case(
            "kmeans --input {x} --k 3 --init kmeans-parallel --rounds 0",
            2,
            &["rounds"],
        ),
    ]);
}

/// `--init-centroids`: Lloyd starts from the centres in the file (one run), and the file
/// must hold K x D values.
#[test]
fn kmeans_init_centroids_from_a_file() {
    let mut f = Fixture::new();
    f.blobs("x", 200, 2, 3, 41);
    // Three rows of the data as the starting centres: the fit equals the library's fit
    // from the same centres.
    let x = io::read_matrix(&f.file("x.npy")).unwrap();
    let start: Vec<f32> = [0usize, 70, 140]
        .iter()
        .flat_map(|&i| x.data[i * 2..i * 2 + 2].to_vec())
        .collect();
    let rows: String = start
        .chunks(2)
        .map(|c| format!("{},{}\n", c[0], c[1]))
        .collect();
    let c = f.file("c.csv");
    std::fs::write(&c, rows).unwrap();
    f.name("c", c);
    let report = json_line(
        &f.run("kmeans --input {x} --k 3 --init-centroids {c} --output {dir}/l.npy --json"),
    );
    assert_eq!(report["init"], "given centroids", "{report}");
    // --n-init beside given centres: one run all the same, and one line on stderr says so
    // (scikit-learn's test_warning_n_init_precomputed_centers).
    let warned = f.run("kmeans --input {x} --k 3 --init-centroids {c} --n-init 5 --json");
    assert_eq!(warned.status.code(), Some(0));
    let err = stderr(&warned);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("WARN") && err.contains("one run instead of n_init = 5"),
        "{err}"
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(stdout(&warned).trim()).unwrap()["inertia"],
        report["inertia"]
    );
    let gpu = crate::common::gpu();
    let m = wgpu_unsupervised::Matrix::new(&x.data, 2).unwrap();
    let want = wgpu_unsupervised::KMeans::new(3)
        .init(wgpu_unsupervised::KMeansInit::Centroids(
            start.iter().map(|&v| v as f64).collect(),
        ))
        .fit(&gpu, &m)
        .unwrap();
    assert_eq!(io::read_labels(&f.file("l.npy")).unwrap(), want.labels());
    assert_eq!(report["inertia"].as_f64().unwrap(), want.inertia());
    // Wrong shapes, and --init beside it, are refused.
    for (args, words) in [
        ("--k 2 --init-centroids {c}", &["3 x 2", "2 x 2"][..]),
        ("--k 3 --init-centroids {iris}", &["150 x 4"][..]),
        ("--k 3 --init-centroids {c} --init random", &["--init"][..]),
    ] {
        let out = f.run(&format!("kmeans --input {{x}} {args}"));
        assert_eq!(out.status.code(), Some(2), "{args}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(words.iter().all(|w| err.contains(w)), "{args}: {err}");
    }
}
