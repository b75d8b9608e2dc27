//! Outputs: `.csv` or `.npy` (the extension picks the format, and both hold the same values),
//! never one of the command's inputs, written as one set after the work (or not at all), their
//! folders checked before it.

use wgpu_unsupervised::io;

use crate::common::{case, fails, json_line, ok, Fixture};

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

/// The bytes of every file in the fixture's directory (and one level below), by name.
fn contents(f: &Fixture) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in walk(f.path()) {
        if entry.is_file() {
            let name = entry.strip_prefix(f.path()).unwrap().display().to_string();
            out.push((name, std::fs::read(&entry).unwrap()));
        }
    }
    out.sort();
    out
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.is_symlink() {
            all.extend(walk(&path));
        } else {
            all.push(path);
        }
    }
    all
}

#[test]
fn an_output_that_is_an_input_is_refused_before_any_work() {
    let mut f = Fixture::new();
    f.blobs("x", 100, 2, 2, 5);
    std::fs::create_dir(f.file("out")).unwrap();
    let inner = crate::common::blobs_npy(&f.file("out"), "x.npy", 100, 2, 2, 5);
    f.name("inner", inner);
    f.write("w", "w.csv", &"1\n".repeat(100));
    f.model("km", "kmeans --input {x} --k 2");
    f.model("pca", "pca --input {x} --components 1");
    // Model files may have any name, so a model can collide with an array output too.
    let gm = f.file("g.npy");
    ok(&f.run(&format!("gmm --input {{x}} --k 2 --model {}", gm.display())));
    f.name("gm", gm);
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(f.file("x.npy"), f.file("link.npy")).unwrap();
        std::fs::hard_link(f.file("x.npy"), f.file("hard.npy")).unwrap();
    }
    let before = contents(&f);
    const SAME: &str = "is the same file as";
    let mut cases = vec![
        case(
            "kmeans --input {x} --k 2 --output {x}",
            2,
            &["--output", SAME, "--input"],
        ),
        case(
            "kmeans --input {x} --k 2 --model {x}",
            2,
            &["--model", SAME],
        ),
        // An equivalent spelling of the same path.
        case(
            "kmeans --input {inner} --k 2 --output {dir}/out/../out/./x.npy",
            2,
            &["--output", SAME],
        ),
        case("pca --input {x} --components 1 --output {x}", 2, &[SAME]),
        case("pca --input {x} --components 1 --model {x}", 2, &[SAME]),
        case(
            "transform --model {pca} --input {x} --output {x}",
            2,
            &[SAME],
        ),
        case("predict --model {km} --input {x} --output {x}", 2, &[SAME]),
        case(
            "predict --model {gm} --input {x} --output {gm}",
            2,
            &["--model", SAME],
        ),
        case("gmm --input {x} --k 2 --proba {x}", 2, &["--proba", SAME]),
        case(
            "kmeans --input {x} --k 2 --sample-weight {w} --output {w}",
            2,
            &["--sample-weight"],
        ),
        case("spectral --input {x} --k 2 --output {x}", 2, &[SAME]),
        case(
            "sample --model {gm} --n 5 --output {gm}",
            2,
            &["--model", SAME],
        ),
        // Two outputs naming one file, however spelled.
        case(
            "kmeans --input {x} --k 2 --output {dir}/l.npy --model {dir}/./l.npy",
            2,
            &["name the same file"],
        ),
    ];
    if cfg!(unix) {
        cases.push(case(
            "kmeans --input {x} --k 2 --output {dir}/link.npy",
            2,
            &[SAME],
        ));
        cases.push(case(
            "kmeans --input {x} --k 2 --output {dir}/hard.npy",
            2,
            &[SAME],
        ));
    }
    f.check(&cases);
    assert!(contents(&f) == before, "a refused command changed a file");
}

#[test]
fn outputs_are_written_as_one_set_or_not_at_all() {
    let mut f = Fixture::new();
    f.blobs("x", 120, 3, 2, 8);
    f.model("gm", "gmm --input {x} --k 2");
    // sample: a labels folder that does not exist is found before drawing, and the samples
    // are not written either; the message names the folder, never a temporary file.
    let out = f.run("sample --model {gm} --n 10 --output {dir}/s.npy --labels {dir}/nodir/l.npy");
    let error = fails(&out, 1);
    assert!(
        error.contains("nodir") && error.contains("does not exist"),
        "{error}"
    );
    assert!(!error.contains("nodir/.tmp"), "no temporary file: {error}");
    assert!(!f.file("s.npy").exists());
    // Found before the draws: an impossible --n would be the other error.
    let out = f.run("sample --model {gm} --n 1000000000000 --output {dir}/nodir/s.npy");
    assert!(fails(&out, 1).contains("does not exist"));

    // A rename that fails at the end (a name too long for the file system) puts back what
    // was already renamed: an existing model file keeps its content, nothing new is left.
    let long = format!("{}/{}.npy", f.path().display(), "z".repeat(300));
    std::fs::write(f.file("m.json"), "old model").unwrap();
    let before = contents(&f);
    for args in [
        format!("pca --input {{x}} --components 2 --model {{dir}}/m.json --output {long}"),
        format!("pca --input {{x}} --components 2 --output {long} --model {{dir}}/m.json"),
        format!(
            "gmm --input {{x}} --k 2 --model {{dir}}/m.json --output {{dir}}/l.npy --proba {long}"
        ),
        format!("kmeans --input {{x}} --k 2 --model {{dir}}/m.json --output {long}"),
    ] {
        let error = fails(&f.run(&args), 1);
        assert!(error.contains("zzz"), "{args}: {error}");
        assert!(contents(&f) == before, "{args} left or changed a file");
    }
    // The same commands with good names write every file.
    ok(&f.run(
        "gmm --input {x} --k 2 --model {dir}/m.json --output {dir}/l.npy --proba {dir}/p.npy",
    ));
    assert_ne!(std::fs::read(f.file("m.json")).unwrap(), b"old model");
    assert!(f.file("l.npy").exists() && f.file("p.npy").exists());
}

#[test]
fn every_command_checks_its_output_folders_before_the_work() {
    let mut f = Fixture::new();
    f.blobs("x", 60, 2, 2, 9);
    f.write("y", "y.csv", &"0\n1\n".repeat(30));
    f.model("km", "kmeans --input {x} --k 2");
    f.model("pca", "pca --input {x} --components 1");
    f.model("gm", "gmm --input {x} --k 2");
    std::fs::create_dir(f.file("d.npy")).unwrap();
    const MISSING: &str = "does not exist";
    f.check(&[
        case(
            "kmeans --input {x} --k 2 --output {dir}/no/l.npy",
            1,
            &["no/l.npy", MISSING],
        ),
        case(
            "kmeans --input {x} --k 2 --model {dir}/no/m.json",
            1,
            &[MISSING],
        ),
        case(
            "gmm --input {x} --k 2 --proba {dir}/no/p.npy",
            1,
            &[MISSING],
        ),
        case(
            "pca --input {x} --components 1 --plot {dir}/no/p.svg",
            1,
            &[MISSING],
        ),
        case(
            "spectral --input {x} --k 2 --output {dir}/no/l.npy",
            1,
            &[MISSING],
        ),
        case(
            "select-k --input {x} --algorithm kmeans --k-max 3 --plot {dir}/no/c.svg",
            1,
            &[MISSING],
        ),
        case(
            "predict --model {km} --input {x} --output {dir}/no/l.npy",
            1,
            &[MISSING],
        ),
        case(
            "transform --model {pca} --input {x} --output {dir}/no/z.npy",
            1,
            &[MISSING],
        ),
        case(
            "sample --model {gm} --n 5 --output {dir}/no/s.npy",
            1,
            &[MISSING],
        ),
        case(
            "kmeans --input {x} --k 2 --output {dir}/d.npy",
            1,
            &["d.npy", "is a directory"],
        ),
    ]);
}
