//! Outputs as `.csv` or `.npy`: the extension picks the format, and both hold the same values.

use wgpu_unsupervised::io;

use crate::common::{case, json_line, ok, Fixture};

#[test]
fn labels_and_matrices_as_csv_hold_what_the_npy_holds() {
    let mut f = Fixture::new();
    f.blobs("x", 240, 4, 3, 12);
    f.name("km", f.file("km.json"));
    f.name("pca", f.file("pca.json"));
    ok(&f.run("kmeans --input {x} --k 3 --seed 2 --output {dir}/l.npy --model {km}"));
    ok(&f.run("kmeans --input {x} --k 3 --seed 2 --output {dir}/l.CSV"));
    let npy = io::read_labels(&f.file("l.npy")).unwrap();
    assert_eq!(io::read_labels(&f.file("l.CSV")).unwrap(), npy);
    let text = std::fs::read_to_string(f.file("l.CSV")).unwrap();
    assert_eq!(text.lines().count(), 240, "one label a line, no header");

    let bits = |path: &str| {
        let m = io::read_matrix(&f.file(path)).unwrap();
        let bits: Vec<u32> = m.data.iter().map(|v| v.to_bits()).collect();
        (m.n_rows, m.n_features, bits)
    };
    ok(&f.run("pca --input {x} --components 2 --output {dir}/z.npy --model {pca}"));
    ok(&f.run("pca --input {x} --components 2 --output {dir}/z.csv"));
    let (n, m, z) = bits("z.npy");
    assert_eq!((n, m), (240, 2));
    assert_eq!(
        bits("z.csv"),
        (n, m, z),
        "CSV projections read back bit for bit"
    );

    ok(&f.run("predict --model {km} --input {x} --output {dir}/p.csv"));
    assert_eq!(io::read_labels(&f.file("p.csv")).unwrap(), npy);
    ok(&f.run("transform --model {pca} --input {x} --output {dir}/t.csv"));
    assert_eq!(bits("t.csv"), bits("z.npy"));

    let report = json_line(
        &f.run("gmm --input {x} --k 3 --seed 1 --output {dir}/g.csv --proba {dir}/r.csv --json"),
    );
    assert_eq!(report["k"], 3);
    let (n, k, r) = bits("r.csv");
    assert_eq!((n, k), (240, 3));
    let r: Vec<f32> = r.into_iter().map(f32::from_bits).collect();
    for row in r.chunks(3) {
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5, "{row:?}");
    }
    assert_eq!(io::read_labels(&f.file("g.csv")).unwrap().len(), 240);
}

#[test]
fn other_extensions_are_refused_before_any_work() {
    let mut f = Fixture::new();
    f.blobs("x", 50, 2, 2, 3);
    f.check(&[
        case(
            "kmeans --input {x} --k 2 --output {dir}/l.tsv",
            2,
            &["--output", ".npy or .csv"],
        ),
        case(
            "pca --input {x} --components 1 --output {dir}/z",
            2,
            &["--output", ".npy or .csv"],
        ),
    ]);
}
