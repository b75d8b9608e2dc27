//! `pca`.

use wgpu_unsupervised::io;

use crate::common::{
    case, check_svg, digits, fails, files_in, json_line, ok, read_2d, s, sorted_keys, usage, Case,
    Fixture,
};

/// Sample variance (ddof 1) of column `j` of an `n` x `d` row-major matrix.
fn column_variance(z: &[f32], n: usize, d: usize, j: usize) -> f64 {
    let mean = (0..n).map(|i| z[i * d + j] as f64).sum::<f64>() / n as f64;
    (0..n)
        .map(|i| (z[i * d + j] as f64 - mean).powi(2))
        .sum::<f64>()
        / (n - 1) as f64
}

#[test]
fn pca_count_json_report_and_projections() {
    let mut f = Fixture::new();
    f.blobs("x", 300, 8, 5, 21);
    let report = json_line(&f.run("pca --input {x} --components 3 --output {dir}/z.npy --json"));
    let mut expected = [
        "algorithm",
        "n",
        "d",
        "n_components",
        "explained_variance_ratio",
        "solver",
        "n_iter",
        "noise_variance",
        "fit_seconds",
        "adapter",
    ];
    expected.sort_unstable();
    assert_eq!(sorted_keys(&report), expected, "{report}");
    assert_eq!(report["algorithm"], "pca");
    assert_eq!(report["n"], 300);
    assert_eq!(report["d"], 8);
    assert_eq!(report["n_components"], 3);
    assert_eq!(report["solver"], "full");
    assert_eq!(report["n_iter"], 0);
    assert!(report["fit_seconds"].as_f64().unwrap() >= 0.0, "{report}");
    assert!(!report["adapter"].as_str().unwrap().is_empty(), "{report}");
    let ratios: Vec<f64> = report["explained_variance_ratio"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(ratios.len(), 3, "{report}");
    assert!(ratios.iter().all(|&r| r > 0.0), "{ratios:?}");
    assert!(ratios.windows(2).all(|w| w[0] >= w[1]), "{ratios:?}");
    assert!(ratios.iter().sum::<f64>() <= 1.0 + 1e-9, "{ratios:?}");

    let z = read_2d(&f.file("z.npy"), 300, 3);
    assert!(z.iter().all(|v| v.is_finite()));
}

#[test]
fn pca_fraction_on_digits_keeps_21_components_like_the_reference() {
    let f = Fixture::new();
    let report =
        json_line(&f.run("pca --input {digits} --components 0.9 --output {dir}/z.npy --json"));
    assert_eq!(report["n"], 1797);
    assert_eq!(report["d"], 64);
    assert_eq!(report["n_components"], 21, "{report}");
    let ratios: Vec<f64> = report["explained_variance_ratio"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let total: f64 = ratios.iter().sum();
    assert!(total > 0.9 && total <= 1.0, "{total}");
    assert!(
        total - ratios[20] <= 0.9,
        "20 components would do: {ratios:?}"
    );
    read_2d(&f.file("z.npy"), 1797, 21);

    // The f64 CPU reference keeps the same number, with the same ratios.
    let data = io::read_matrix(&digits()).unwrap();
    let x: Vec<f64> = data.data.iter().map(|&v| v as f64).collect();
    let params = wgpu_unsupervised::Pca::new(wgpu_unsupervised::Components::Fraction(0.9));
    let reference = wgpu_unsupervised::reference::pca::fit(&x, 64, &params).unwrap();
    assert_eq!(reference.n_components, 21);
    for (gpu, cpu) in ratios.iter().zip(&reference.explained_variance_ratio) {
        assert!((gpu - cpu).abs() <= 1e-4, "{ratios:?} vs {cpu}");
    }
}

#[test]
fn pca_whiten_gives_unit_variance_columns_and_a_human_report() {
    let mut f = Fixture::new();
    f.blobs("x", 300, 8, 4, 22);
    let text = ok(&f.run("pca --input {x} --components 4 --whiten --output {dir}/z.npy"));
    for word in [
        "adapter",
        "300 rows x 8 features",
        "4 of 8",
        "cumulative",
        "solver",
        "whitened",
        "fit time",
    ] {
        assert!(text.contains(word), "{word:?} missing from {text}");
    }
    assert!(text.contains(s(&f.file("z.npy"))), "{text}");
    let z = read_2d(&f.file("z.npy"), 300, 4);
    for j in 0..4 {
        let var = column_variance(&z, 300, 4, j);
        assert!((var - 1.0).abs() <= 1e-3, "column {j}: variance {var}");
    }
}

#[test]
fn pca_plot_writes_the_spectrum() {
    let f = Fixture::new();
    let text = ok(&f.run("pca --input {iris} --components 4 --plot {dir}/spectrum.svg"));
    assert!(text.contains(s(&f.file("spectrum.svg"))), "{text}");
    check_svg(&f.file("spectrum.svg"));
}

#[test]
fn pca_power_iteration_that_does_not_converge_exits_1_with_one_error_line() {
    // The GPU is opened before this error: on a headless machine a driver line once came
    // first on stderr (and had the same `error: ` form); now the program's line is the only
    // one.
    let mut f = Fixture::new();
    f.blobs("x", 200, 40, 6, 26);
    let line = fails(
        &f.run(
            "pca --input {x} --components 3 --solver power --max-iter 1 --tol 1e-12 \
             --output {dir}/z.npy --model {dir}/pca.json",
        ),
        1,
    );
    assert!(line.contains("did not converge"), "{line}");
    assert_eq!(files_in(f.path()), ["x.npy"]);
}

/// Command lines `pca` refuses. `{x}` has 20 rows of 4 features.
const PCA_REFUSES: &[Case] = &[
    // --components: a count >= 1 or a fraction in (0, 1].
    case(
        "pca --input {x} --components 0 --output {dir}/z.npy",
        2,
        &["components"],
    ),
    case(
        "pca --input {x} --components 1.5 --output {dir}/z.npy",
        2,
        &["components"],
    ),
    case(
        "pca --input {x} --components -1 --output {dir}/z.npy",
        2,
        &["components"],
    ),
    case(
        "pca --input {x} --components abc --output {dir}/z.npy",
        2,
        &["components"],
    ),
    case(
        "pca --input {x} --components 0.0 --output {dir}/z.npy",
        2,
        &["components"],
    ),
    case(
        "pca --input {x} --components nan --output {dir}/z.npy",
        2,
        &["components"],
    ),
    case(
        "pca --input {x} --components 5 --output {dir}/z.npy",
        2,
        &["components"],
    ),
    case("pca --input {x} --components 5", 2, &["min(N, D) = 4"]),
    // A fraction needs the whole spectrum.
    case(
        "pca --input {x} --components 0.5 --solver power",
        2,
        &["fraction", "--solver"],
    ),
    case(
        "pca --input {x} --components mle --solver matrix-free",
        2,
        &["mle", "--solver"],
    ),
    // Other parameters, named as the library names them.
    case("pca --input {x} --components 2 --ddof 2", 2, &["ddof"]),
    case("pca --input {x} --components 2 --tol -1", 2, &["tol"]),
    case(
        "pca --input {x} --components 2 --max-iter 0",
        2,
        &["max_iter"],
    ),
    usage(
        "pca --input {x} --components 2 --solver lanczos",
        &["lanczos"],
    ),
    usage("pca --input {x}", &["--components"]),
    // Outputs: projections as .npy or .csv, plots as .svg, no file named twice.
    case(
        "pca --input {x} --components 2 --output {dir}/z.json",
        2,
        &[".npy", ".csv"],
    ),
    case(
        "pca --input {x} --components 2 --plot {dir}/spectrum.png",
        2,
        &[".svg"],
    ),
    case(
        "pca --input {x} --components 2 --output {dir}/z.npy --model {dir}/z.npy",
        2,
        &["same file"],
    ),
    case(
        "pca --input {x} --components 2 --plot {dir}/absent/spectrum.svg",
        1,
        &["absent"],
    ),
];

#[test]
fn pca_refuses_bad_arguments_writing_nothing() {
    let mut f = Fixture::new();
    f.blobs("x", 20, 4, 2, 25);
    f.check(PCA_REFUSES);
}

/// `--components mle` and `--score` on Iris: scikit-learn 1.9.1's `PCA(n_components="mle")`
/// keeps 3 components and scores the data −2.5328088020291033.
#[test]
fn pca_mle_and_score_on_iris() {
    let f = Fixture::new();
    let report = json_line(&f.run("pca --input {iris} --components mle --score --json"));
    assert_eq!(report["n_components"], 3, "{report}");
    let score = report["score"].as_f64().unwrap();
    assert!((score + 2.532_808_802_029_103_3).abs() < 1e-4, "{report}");
    assert!(report["noise_variance"].as_f64().unwrap() > 0.0);
    let text = ok(&f.run("pca --input {iris} --components MLE --score"));
    assert!(text.contains("Minka"), "{text}");
    assert!(text.contains("score:"), "{text}");
}

/// Whitening rank-2 data with three components, as scikit-learn does: every solver fits,
/// writes finite projections, and warns in one line on stderr that component 3 is at the f32
/// noise floor; two components need no warning.
#[test]
fn pca_whiten_warns_about_noise_components_with_every_solver() {
    let mut f = Fixture::new();
    let x = f.file("rank2.csv");
    let rows: String = (0..40)
        .map(|i| {
            let (a, b) = ((i as f32 * 0.37).sin() * 3.0, (i as f32 * 0.91).cos());
            format!("{a},{b},{}\n", a + 2.0 * b)
        })
        .collect();
    std::fs::write(&x, rows).unwrap();
    f.name("x", x);
    for solver in ["full", "power", "matrix-free"] {
        let out = f.run(&format!(
            "pca --input {{x}} --components 3 --whiten --solver {solver} --output {{dir}}/z.npy"
        ));
        assert_eq!(out.status.code(), Some(0), "{solver}");
        let err = String::from_utf8_lossy(&out.stderr);
        let warnings: Vec<&str> = err.lines().filter(|l| l.contains("WARN")).collect();
        assert_eq!(warnings.len(), 1, "{solver}: {err}");
        assert!(
            warnings[0].contains("whitening components 3..=3")
                && warnings[0].contains("noise floor"),
            "{solver}: {err}"
        );
        let z = read_2d(&f.file("z.npy"), 40, 3);
        assert!(z.iter().all(|v| v.is_finite()), "{solver}");
        ok(&f.run(&format!(
            "pca --input {{x}} --components 2 --whiten --solver {solver}"
        )));
    }
}
