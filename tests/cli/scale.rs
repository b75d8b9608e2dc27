//! Issue 22's reproductions of data at extreme scales: two blobs of 50 rows multiplied by
//! 1e20 (squares overflow f32) and by 1e-30 (squares underflow) give the answers of the
//! unscaled blobs, in the data's units, through every command.

use wgpu_unsupervised::{datasets, io, metrics};

use crate::common::{json_line, ok, read_2d, Fixture};

/// The blobs times `c`, written as `{name}`; returns the true labels.
fn scaled_blobs(f: &mut Fixture, name: &str, c: f32) -> Vec<u32> {
    let (x, truth, _) = datasets::make_blobs(100, 2, 2, 0.5, (-10.0, 10.0), 4).unwrap();
    let x: Vec<f32> = x.iter().map(|v| v * c).collect();
    let path = f.file(&format!("{name}.npy"));
    io::write_npy_f32(&path, &x, &[100, 2]).unwrap();
    f.name(name, path);
    truth
}

fn number(report: &serde_json::Value, key: &str) -> f64 {
    report[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} in {report}"))
}

#[test]
fn every_command_answers_as_on_unscaled_data() {
    let mut f = Fixture::new();
    let truth = scaled_blobs(&mut f, "x1", 1.0);
    let base = json_line(&f.run("kmeans --input {x1} --k 2 --json"));
    let pca = json_line(&f.run("pca --input {x1} --components 2 --json"));
    io::write_npy_u32(&f.file("truth.npy"), &truth).unwrap();
    let eval = json_line(&f.run("evaluate --input {x1} --labels {dir}/truth.npy --json"));
    for c in [1e20f32, 1e-30] {
        let name = format!("x{c:e}");
        scaled_blobs(&mut f, &name, c);
        let input = format!("--input {{{name}}}");

        let report = json_line(&f.run(&format!(
            "kmeans {input} --k 2 --output {{dir}}/l.npy --json"
        )));
        let labels = io::read_labels(&f.file("l.npy")).unwrap();
        assert_eq!(
            metrics::adjusted_rand_index(&labels, &truth).unwrap(),
            1.0,
            "x{c:e}"
        );
        let inertia = number(&report, "inertia") / (c as f64 * c as f64);
        let want = number(&base, "inertia");
        assert!((inertia / want - 1.0).abs() < 1e-4, "x{c:e}: {report}");

        // reg_covar is in the data's squared units, as in scikit-learn: its default 1e-6
        // would swamp covariances of 1e-60, so it is scaled with the data here.
        let reg = 1e-6 * (c as f64).powi(2);
        ok(&f.run(&format!(
            "gmm {input} --k 2 --reg-covar {reg:e} --output {{dir}}/g.npy"
        )));
        let labels = io::read_labels(&f.file("g.npy")).unwrap();
        assert_eq!(
            metrics::adjusted_rand_index(&labels, &truth).unwrap(),
            1.0,
            "x{c:e}"
        );

        let report = json_line(&f.run(&format!("pca {input} --components 2 --json")));
        let ratio = report["explained_variance_ratio"][0].as_f64().unwrap();
        let want = pca["explained_variance_ratio"][0].as_f64().unwrap();
        assert!((ratio - want).abs() < 1e-5, "x{c:e}: {report}");

        let report = json_line(&f.run(&format!(
            "evaluate {input} --labels {{dir}}/truth.npy --json"
        )));
        for key in ["silhouette", "calinski_harabasz", "davies_bouldin"] {
            let (got, want) = (number(&report, key), number(&eval, key));
            assert!((got / want - 1.0).abs() < 1e-4, "x{c:e} {key}: {report}");
        }
        let report = json_line(&f.run(&format!(
            "select-k {input} --algorithm kmeans --k-max 4 --n-refs 3 --json"
        )));
        assert_eq!(report["suggested_k"], 2, "x{c:e}: {report}");
    }
}

#[test]
fn a_model_at_1e20_transforms_rows_at_1e_minus_30_to_finite_distances() {
    let mut f = Fixture::new();
    scaled_blobs(&mut f, "big", 1e20);
    scaled_blobs(&mut f, "small", 1e-30);
    f.model("model", "kmeans --input {big} --k 2");
    ok(&f.run("transform --model {model} --input {small} --output {dir}/d.npy"));
    let d = read_2d(&f.file("d.npy"), 100, 2);
    let model = wgpu_unsupervised::KMeansModel::load(f.file("model.json")).unwrap();
    for (i, row) in d.chunks(2).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            // The rows are ~0 beside the centroids: the distance is the centroid's norm.
            let c = &model.centroids()[j * 2..j * 2 + 2];
            let norm = ((c[0] as f64).powi(2) + (c[1] as f64).powi(2)).sqrt();
            assert!(v.is_finite(), "row {i}: {row:?}");
            assert!(
                (v as f64 / norm - 1.0).abs() < 1e-5,
                "row {i}: {row:?} against {norm}"
            );
        }
    }
}
