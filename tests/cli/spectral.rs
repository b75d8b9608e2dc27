//! `spectral`.

use wgpu_unsupervised::{datasets, io, metrics};

use crate::common::{case, json_line, ok, sorted_keys, usage, Fixture};

#[test]
fn spectral_separates_two_moons_with_a_json_report() {
    let mut f = Fixture::new();
    let (x, truth) = datasets::make_moons(200, 0.05, 3).unwrap();
    let path = f.file("moons.npy");
    io::write_matrix(&path, &x, 200, 2).unwrap();
    f.name("moons", path);
    let report = json_line(&f.run(
        "spectral --input {moons} --k 2 --affinity nearest-neighbors --n-neighbors 10 --seed 1 --output {dir}/l.csv --json",
    ));
    let mut expected = [
        "algorithm",
        "n",
        "d",
        "k",
        "affinity",
        "eigenvalues",
        "n_iter",
        "fit_seconds",
        "adapter",
    ];
    expected.sort_unstable();
    assert_eq!(sorted_keys(&report), expected, "{report}");
    assert_eq!(report["algorithm"], "spectral");
    assert_eq!(
        (report["n"].as_u64(), report["d"].as_u64()),
        (Some(200), Some(2))
    );
    assert_eq!(report["affinity"], "nearest-neighbors");
    assert_eq!(report["eigenvalues"].as_array().unwrap().len(), 2);
    let labels = io::read_labels(&f.file("l.csv")).unwrap();
    assert!(metrics::adjusted_rand_index(&labels, &truth).unwrap() > 0.98);

    let text = ok(&f.run("spectral --input {moons} --k 2 --gamma 20 --normalize-rows"));
    assert!(text.contains("rbf, gamma 20"), "{text}");
    assert!(text.contains("eigenvalues"), "{text}");
}

#[test]
fn spectral_refuses_options_of_the_other_graph_and_bad_values() {
    let mut f = Fixture::new();
    f.blobs("x", 30, 2, 2, 1);
    f.check(&[
        case(
            "spectral --input {x} --k 2 --affinity nearest-neighbors --gamma 1",
            2,
            &["--gamma", "rbf"],
        ),
        case(
            "spectral --input {x} --k 2 --n-neighbors 5",
            2,
            &["--n-neighbors"],
        ),
        case(
            "spectral --input {x} --k 2 --affinity nearest-neighbors --n-neighbors 31",
            2,
            &["n_neighbors"],
        ),
        case("spectral --input {x} --k 0", 2, &["k"]),
        case("spectral --input {x} --k 2 --gamma -1", 2, &["gamma"]),
        usage("spectral --input {x} --k 2 --affinity cosine", &["cosine"]),
    ]);
}
