//! Streaming from the command line: `--max-gpu-memory`, `pca --incremental`.

use crate::common::{json_line, usage_fails, Fixture};

fn number(report: &serde_json::Value, key: &str) -> f64 {
    report[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} in {report}"))
}

#[test]
fn kmeans_under_a_small_budget_streams_to_the_same_model() {
    let mut f = Fixture::new();
    f.blobs("x", 4000, 6, 5, 3);
    let args = "kmeans --input {x} --k 5 --init random --seed 2 --tol 0 --json";
    let resident = json_line(&f.run(args));
    // 4000 x 6 f32 take 96 KB: 64 KiB forces streaming.
    let streamed = json_line(&f.run(&format!("{args} --max-gpu-memory 64KiB")));
    let (a, b) = (number(&resident, "inertia"), number(&streamed, "inertia"));
    assert!((a - b).abs() / a < 1e-5, "{resident} vs {streamed}");
    assert_eq!(resident["n_iter"], streamed["n_iter"]);
    usage_fails(&f.run("kmeans --input {x} --k 5 --max-gpu-memory 12MB"));
    // A size past 2^64 bytes says so, rather than "must be at least 1 byte".
    let err = usage_fails(&f.run("kmeans --input {x} --k 5 --max-gpu-memory 99999999TiB"));
    assert!(
        err.contains("too large") && !err.contains("at least 1 byte"),
        "{err}"
    );
}

#[test]
fn pca_incremental_and_under_a_budget_equals_the_full_fit() {
    let mut f = Fixture::new();
    f.blobs("x", 3000, 8, 4, 4);
    let base = "pca --input {x} --components 3 --json";
    let full = json_line(&f.run(base));
    for extra in [
        "--incremental 250",
        "--max-gpu-memory 64KiB",
        "--incremental 999 --max-gpu-memory 1MiB",
    ] {
        let other = json_line(&f.run(&format!("{base} {extra} --output {{dir}}/z.npy")));
        let (a, b) = (
            full["explained_variance_ratio"].as_array().unwrap(),
            other["explained_variance_ratio"].as_array().unwrap(),
        );
        for (x, y) in a.iter().zip(b) {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((x - y).abs() < 1e-5, "{extra}: {full} vs {other}");
        }
        let z = crate::common::read_2d(&f.file("z.npy"), 3000, 3);
        assert!(z.iter().all(|v| v.is_finite()));
    }
    usage_fails(&f.run("pca --input {x} --components 3 --incremental 0"));
}

#[test]
fn kmeans_mini_batch_comes_close_to_lloyd() {
    let mut f = Fixture::new();
    f.blobs("x", 6000, 4, 3, 5);
    let lloyd = json_line(&f.run("kmeans --input {x} --k 3 --seed 1 --json"));
    let mb = json_line(
        &f.run("kmeans --input {x} --k 3 --seed 1 --mini-batch 256 --output {dir}/l.npy --json"),
    );
    let (a, b) = (number(&lloyd, "inertia"), number(&mb, "inertia"));
    assert!(b / a < 1.03, "{lloyd} vs {mb}");
    assert_eq!(
        wgpu_unsupervised::io::read_labels(&f.file("l.npy"))
            .unwrap()
            .len(),
        6000
    );
    usage_fails(&f.run("kmeans --input {x} --k 3 --mini-batch 0"));
}

#[test]
fn kmeans_sample_weights_count_as_repeated_rows() {
    let mut f = Fixture::new();
    // Two rows weighted 2 and the same rows written twice: the same inertia.
    let rows = "0,0\n1,0\n10,10\n11,10\n0,1\n";
    f.write("x", "x.csv", &format!("a,b\n{rows}"));
    f.write("w", "w.csv", "w\n2\n1\n1\n1\n2\n");
    f.write("rep", "rep.csv", &format!("a,b\n{rows}0,0\n0,1\n"));
    let weighted =
        json_line(&f.run("kmeans --input {x} --k 2 --n-init 5 --sample-weight {w} --json"));
    let repeated = json_line(&f.run("kmeans --input {rep} --k 2 --n-init 5 --json"));
    let (a, b) = (number(&weighted, "inertia"), number(&repeated, "inertia"));
    assert!(
        (a - b).abs() < 1e-4 * b.max(1.0),
        "{weighted} vs {repeated}"
    );
    f.write("short", "short.csv", "w\n1\n1\n");
    usage_fails(&f.run("kmeans --input {x} --k 2 --sample-weight {short}"));
    f.write("neg", "neg.csv", "w\n1\n1\n-1\n1\n1\n");
    usage_fails(&f.run("kmeans --input {x} --k 2 --sample-weight {neg}"));
}

#[test]
fn gmm_under_a_small_budget_streams_to_the_same_model() {
    let mut f = Fixture::new();
    f.blobs("x", 3000, 5, 3, 6);
    let args = "gmm --input {x} --k 3 --init random --seed 4 --covariance diag --json";
    let resident = json_line(&f.run(args));
    let streamed = json_line(&f.run(&format!(
        "{args} --max-gpu-memory 48KiB --proba {{dir}}/p.npy"
    )));
    let (a, b) = (
        number(&resident, "log_likelihood"),
        number(&streamed, "log_likelihood"),
    );
    assert!(
        (a - b).abs() < 1e-5 * a.abs().max(1.0),
        "{resident} vs {streamed}"
    );
    assert_eq!(resident["n_iter"], streamed["n_iter"]);
    let p = crate::common::read_2d(&f.file("p.npy"), 3000, 3);
    for row in p.chunks(3) {
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-4, "{row:?}");
    }
}

#[test]
fn gmm_sample_weights_count_as_repeated_rows() {
    let mut f = Fixture::new();
    let rows = "0,0\n1,0.5\n0.2,1\n10,10\n11,10.5\n10.3,9\n0.5,0.1\n";
    f.write("x", "x.csv", &format!("a,b\n{rows}"));
    f.write("w", "w.csv", "w\n2\n1\n1\n3\n1\n1\n1\n");
    f.write("rep", "rep.csv", &format!("a,b\n{rows}0,0\n10,10\n10,10\n"));
    let args = "--k 2 --covariance spherical --reg-covar 0.01 --n-init 3 --json";
    let weighted = json_line(&f.run(&format!("gmm --input {{x}} --sample-weight {{w}} {args}")));
    let repeated = json_line(&f.run(&format!("gmm --input {{rep}} {args}")));
    for key in ["log_likelihood", "bic"] {
        let (a, b) = (number(&weighted, key), number(&repeated, key));
        assert!(
            (a - b).abs() < 1e-3 * b.abs().max(1.0),
            "{key}: {weighted} vs {repeated}"
        );
    }
    f.write("short", "short.csv", "w\n1\n");
    usage_fails(&f.run("gmm --input {x} --k 2 --sample-weight {short}"));
}
