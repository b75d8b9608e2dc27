//! Input files that must not fool the program: corrupt `.npy` headers, endless or binary
//! inputs, CSV first lines that are data, directories and pipes, values that are not finite,
//! and a file cut short during the run. Every refusal names the file and the place as a person
//! counts it (lines, rows and columns from 1).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::common::{case, command, fails, json_line, s, stdout, Fixture, PREFIX};

/// A `.npy` file of `descr` and `shape` (as Python writes them) followed by `data`.
fn npy_bytes(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

/// Writes `bytes` to `dir/file`, known as `{name}`.
fn raw(f: &mut Fixture, name: &str, file: &str, bytes: &[u8]) -> PathBuf {
    let path = f.file(file);
    std::fs::write(&path, bytes).unwrap();
    f.name(name, path.clone());
    path
}

#[test]
fn corrupt_npy_headers_are_refused_for_every_dtype() {
    let mut f = Fixture::new();
    // The file: shape (2^63 + 50, 2) and 100 values, whose product wraps past 2^64.
    let huge = format!("({}, 2)", (1u64 << 63) + 50);
    for (name, descr, size) in [("f8", "<f8", 8), ("bf4", ">f4", 4), ("i1", "|i1", 1)] {
        raw(
            &mut f,
            name,
            &format!("{name}.npy"),
            &npy_bytes(descr, &huge, &vec![0; 100 * size]),
        );
    }
    // A plain mismatch: 3 x 2 promised, 50 values held (or 5).
    raw(
        &mut f,
        "long",
        "long.npy",
        &npy_bytes("<f8", "(3, 2)", &[0; 50 * 8]),
    );
    raw(
        &mut f,
        "short",
        "short.npy",
        &npy_bytes("|u1", "(3, 2)", &[0; 5]),
    );
    raw(&mut f, "cols", "cols.npy", &npy_bytes("<f4", "(5, 0)", &[]));
    raw(
        &mut f,
        "hdr",
        "hdr.npy",
        b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr'",
    );
    f.check(&[
        case("kmeans --input {f8} --k 2", 2, &["f8.npy", "2^64"]),
        case("kmeans --input {bf4} --k 2", 2, &["bf4.npy", "2^64"]),
        case("pca --input {i1} --components 1", 2, &["i1.npy", "2^64"]),
        case(
            "kmeans --input {long} --k 2",
            2,
            &["long.npy", "holds 400 bytes of data"],
        ),
        case(
            "kmeans --input {short} --k 2",
            2,
            &["short.npy", "holds 5 bytes"],
        ),
        // No columns is named as such (not "no rows"), with the file.
        case(
            "kmeans --input {cols} --k 2",
            2,
            &["cols.npy", "no columns"],
        ),
        case("kmeans --input {hdr} --k 2", 2, &["hdr.npy", "at most"]),
        case("evaluate --input {iris} --labels {f8}", 2, &["f8.npy"]),
    ]);
}

#[test]
#[cfg(unix)]
fn endless_and_binary_inputs_fail_at_once() {
    let mut f = Fixture::new();
    f.blobs("x", 50, 2, 2, 3);
    for (name, file, target) in [
        ("z", "z.csv", "/dev/zero"),
        ("u", "u.csv", "/dev/urandom"),
        ("zn", "zn.npy", "/dev/zero"),
        ("m", "m.json", "/dev/zero"),
    ] {
        let link = f.file(file);
        std::os::unix::fs::symlink(target, &link).unwrap();
        f.name(name, link);
    }
    f.check(&[
        case(
            "kmeans --input {z} --k 2",
            2,
            &["z.csv", "line 1", "NUL byte"],
        ),
        case("kmeans --input {u} --k 2", 2, &["u.csv", "line "]),
        case(
            "kmeans --input {zn} --k 2",
            2,
            &["zn.npy", "not a .npy file"],
        ),
        case(
            "predict --model {m} --input {x} --output {dir}/p.npy",
            2,
            &["m.json", "invalid JSON"],
        ),
        case(
            "sample --model {m} --n 3 --output {dir}/s.npy",
            2,
            &["m.json"],
        ),
        case(
            "evaluate --input {x} --labels {z}",
            2,
            &["z.csv", "NUL byte"],
        ),
        case(
            "kmeans --input {x} --k 2 --sample-weight {z}",
            2,
            &["z.csv"],
        ),
    ]);
}

#[test]
fn a_csv_first_line_with_a_number_is_data_and_missing_values_are_errors() {
    let mut f = Fixture::new();
    let body: String = (0..40)
        .map(|i| format!("{},{},{}\n", i % 7, (i * 3) % 5, i % 2))
        .collect();
    f.write("na", "na.csv", &format!("1,NA,3\n{body}"));
    f.write("empty", "empty.csv", &format!("1,,3\n{body}"));
    f.write("later", "later.csv", &format!("a,b,c\n{body}4,5,\n"));
    f.write("head", "head.csv", &format!("a,b,c\n{body}"));
    f.write("nohead", "nohead.csv", &format!("1,2,3\n{body}"));
    f.check(&[
        case(
            "kmeans --input {na} --k 2",
            2,
            &["na.csv: line 1, field 2", "missing value"],
        ),
        case(
            "kmeans --input {empty} --k 2",
            2,
            &["empty.csv: line 1, field 2 is empty"],
        ),
        case(
            "kmeans --input {later} --k 2",
            2,
            &["later.csv: line 42, field 3 is empty"],
        ),
    ]);
    // A header holds no number at all: all 40 data lines are kept, and so is a first line of
    // numbers.
    let report = json_line(&f.run("kmeans --input {head} --k 2 --json"));
    assert_eq!(report["n"], 40, "{report}");
    let report = json_line(&f.run("kmeans --input {nohead} --k 2 --json"));
    assert_eq!(report["n"], 41, "{report}");
}

#[test]
fn directories_and_pipes_as_inputs() {
    let mut f = Fixture::new();
    f.blobs("x", 40, 2, 2, 6);
    std::fs::create_dir(f.file("d.npy")).unwrap();
    f.name("d", f.file("d.npy"));
    f.model("km", "kmeans --input {x} --k 2");
    f.check(&[
        case("kmeans --input {d} --k 2", 2, &["d.npy: is a directory"]),
        case(
            "predict --model {d} --input {x} --output {dir}/l.npy",
            2,
            &["is a directory"],
        ),
        case(
            "predict --model {km} --input {d} --output {dir}/l.npy",
            2,
            &["is a directory"],
        ),
        case("evaluate --input {x} --labels {d}", 2, &["is a directory"]),
    ]);
    // A pipe is read as a stream (CSV here), once.
    #[cfg(unix)]
    {
        let fifo = f.file("p.csv");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, "a,b\n0,0\n0,1\n9,9\n9,8\n").unwrap())
        };
        let report = json_line(&crate::common::cli(&[
            "kmeans",
            "--input",
            s(&fifo),
            "--k",
            "2",
            "--json",
        ]));
        writer.join().unwrap();
        assert_eq!(
            (report["n"].as_u64(), report["d"].as_u64()),
            (Some(4), Some(2))
        );
    }
}

#[test]
fn values_that_are_not_finite_are_placed_in_their_file_from_one() {
    let mut f = Fixture::new();
    f.blobs("x", 30, 2, 2, 7);
    f.write("w", "w.csv", &format!("{}inf\n", "1\n".repeat(29)));
    f.write(
        "wneg",
        "wneg.csv",
        &format!("1\n1\n-2\n{}", "1\n".repeat(27)),
    );
    f.write("c", "c.csv", "0,0\n1,NaN\n");
    f.write("p", "p.csv", "1,0\n0,nan\n1,0\n0,1\n");
    let nan = [0.0f32, 0.0, f32::NAN, 1.0];
    let bytes: Vec<u8> = nan.iter().flat_map(|v| v.to_le_bytes()).collect();
    raw(&mut f, "cn", "c.npy", &npy_bytes("<f4", "(2, 2)", &bytes));
    f.check(&[
        case(
            "kmeans --input {x} --k 2 --sample-weight {w}",
            2,
            &["w.csv: line 30, field 1: inf"],
        ),
        case(
            "kmeans --input {x} --k 2 --sample-weight {wneg}",
            2,
            &["wneg.csv: row 3", "negative"],
        ),
        case(
            "kmeans --input {x} --k 2 --init-centroids {c}",
            2,
            &["c.csv: line 2, field 2: NaN"],
        ),
        case(
            "kmeans --input {x} --k 2 --init-centroids {cn}",
            2,
            &["c.npy: row 2, column 1: NaN"],
        ),
        case(
            "gmm --input {x} --k 2 --precisions-init {p}",
            2,
            &["p.csv: line 2, field 2: NaN"],
        ),
        case(
            "gmm --input {x} --k 2 --sample-weight {wneg}",
            2,
            &["wneg.csv: row 3"],
        ),
    ]);
}

/// Runs `args` with `--verbose`, truncates `input` to half its length once the first
/// iteration has been reported on stderr (the fit then has many passes over the file left),
/// and returns the exit status, stdout and stderr.
fn truncate_during_run(args: &[&str], input: &Path) -> (Option<i32>, String, String) {
    let mut child = command(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().expect("an iteration line").unwrap();
    let half = std::fs::metadata(input).unwrap().len() / 2;
    std::fs::OpenOptions::new()
        .write(true)
        .open(input)
        .unwrap()
        .set_len(half)
        .unwrap();
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let out = child.wait_with_output().unwrap();
    let stderr = std::iter::once(first)
        .chain(rest)
        .collect::<Vec<_>>()
        .join("\n");
    (out.status.code(), stdout(&out), stderr)
}

#[test]
fn an_input_cut_short_during_the_run_is_a_clear_error_not_a_signal() {
    let mut f = Fixture::new();
    let x = f.blobs("x", 4000, 6, 5, 3);
    // Streamed under a small budget, every pass of every restart reads the file again.
    let args = [
        "kmeans",
        "--input",
        s(&x),
        "--k",
        "5",
        "--init",
        "random",
        "--n-init",
        "300",
        "--max-gpu-memory",
        "64KiB",
        "--verbose",
        "--json",
    ];
    let (code, out, err) = truncate_during_run(&args, &x);
    assert_eq!(code, Some(2), "stderr: {err}");
    assert!(out.is_empty(), "{out}");
    let last = err.lines().last().unwrap();
    assert!(last.starts_with(PREFIX), "{err}");
    assert!(last.contains("x.npy") && last.contains("shrank"), "{last}");
    // And the same file, cut short before the run, is refused when it is opened.
    let error = fails(&f.run("kmeans --input {x} --k 5"), 2);
    assert!(error.contains("x.npy"), "{error}");
}
