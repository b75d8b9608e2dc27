//! Reading and writing matrices and labels through files: round trips, dtypes, CSV rules,
//! the errors' places and atomic writes.

use super::*;
use npyz::Order;
use std::fs;

fn write_npy<T: npyz::AutoSerialize + Copy>(path: &Path, data: &[T], shape: &[u64], order: Order) {
    let mut f = File::create(path).unwrap();
    let mut w = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(shape)
        .order(order)
        .writer(&mut f)
        .begin_nd()
        .unwrap();
    w.extend(data.iter().copied()).unwrap();
    w.finish().unwrap();
}

#[test]
fn npy_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.npy");
    let data = [1.5f32, -2.0, 3.25, 4.0, 5.0, 6.0];
    write_npy_f32(&p, &data, &[3, 2]).unwrap();
    let ds = read_matrix(&p).unwrap();
    assert_eq!((ds.n_rows, ds.n_features), (3, 2));
    assert_eq!(ds.data, data);

    let lp = dir.path().join("labels.npy");
    write_npy_u32(&lp, &[0, 2, 1, 7]).unwrap();
    assert_eq!(read_labels(&lp).unwrap(), vec![0, 2, 1, 7]);

    // Overwriting replaces the content.
    write_npy_u32(&lp, &[3]).unwrap();
    assert_eq!(read_labels(&lp).unwrap(), vec![3]);

    assert!(matches!(
        write_npy_f32(&p, &data, &[4, 2]),
        Err(Error::InvalidParameter { name: "shape", .. })
    ));
    assert_eq!(read_matrix(&p).unwrap().data, data);
}

#[test]
fn npy_dtypes_and_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f8.npy");
    write_npy(&p, &[0.1f64, 2.0, 1e10, -4.0], &[2, 2], Order::C);
    let ds = read_matrix(&p).unwrap();
    assert_eq!(ds.data, vec![0.1f32, 2.0, 1e10, -4.0]);

    let p = dir.path().join("i4.npy");
    write_npy(&p, &[1i32, -2, 3], &[3], Order::C);
    let ds = read_matrix(&p).unwrap();
    assert_eq!((ds.n_rows, ds.n_features), (3, 1));
    assert_eq!(ds.data, vec![1.0, -2.0, 3.0]);
    assert!(read_labels(&p).is_err()); // -2 is not a label

    let p = dir.path().join("i8.npy");
    write_npy(&p, &[5i64, 6], &[1, 2], Order::C);
    assert_eq!(read_matrix(&p).unwrap().data, vec![5.0, 6.0]);

    let p = dir.path().join("u1.npy");
    write_npy(&p, &[255u8, 0, 9], &[3], Order::C);
    assert_eq!(read_matrix(&p).unwrap().data, vec![255.0, 0.0, 9.0]);
    assert_eq!(read_labels(&p).unwrap(), vec![255, 0, 9]);

    let p = dir.path().join("i8labels.npy");
    write_npy(&p, &[1i64, 0, 2], &[3, 1], Order::C);
    assert_eq!(read_labels(&p).unwrap(), vec![1, 0, 2]);

    let p = dir.path().join("big.npy");
    write_npy(&p, &[1e300f64], &[1, 1], Order::C);
    let e = read_matrix(&p).unwrap_err();
    assert!(
        matches!(&e, Error::Format { reason, .. } if reason.contains("f32")),
        "{e}"
    );

    let p = dir.path().join("nan.npy");
    write_npy(&p, &[1.0f64, 2.0, 3.0, f64::NAN], &[2, 2], Order::C);
    let e = read_matrix(&p).unwrap_err();
    assert!(
        matches!(&e, Error::NonFiniteInFile { path, line: None, row: 2, col: 2, .. } if path == &p),
        "{e}"
    );
    assert!(matches!(read_labels(&p), Err(Error::Format { .. })));

    let p = dir.path().join("3d.npy");
    write_npy(&p, &[1.0f32; 8], &[2, 2, 2], Order::C);
    assert!(matches!(read_matrix(&p), Err(Error::Format { .. })));

    let p = dir.path().join("empty.npy");
    write_npy::<f32>(&p, &[], &[0, 3], Order::C);
    assert!(matches!(read_matrix(&p), Err(Error::EmptyData { .. })));

    let p = dir.path().join("junk.npy");
    fs::write(&p, b"not numpy at all").unwrap();
    assert!(matches!(read_matrix(&p), Err(Error::Format { .. })));
}

#[test]
fn fortran_order_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.npy");
    write_npy(
        &p,
        &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0],
        &[2, 3],
        Order::Fortran,
    );
    let e = read_matrix(&p).unwrap_err();
    assert!(
        matches!(&e, Error::Format { reason, .. } if reason.contains("Fortran")),
        "{e}"
    );
}

#[test]
fn csv_with_and_without_header() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.csv");
    fs::write(&p, "1,2,3\n\n4.5, -5e1 ,6\r\n").unwrap();
    let ds = read_matrix(&p).unwrap();
    assert_eq!((ds.n_rows, ds.n_features), (2, 3));
    assert_eq!(ds.data, vec![1.0, 2.0, 3.0, 4.5, -50.0, 6.0]);

    let p = dir.path().join("h.CSV");
    fs::write(&p, "\u{feff}\nsepal,petal\n1,2\n3,4\n\n").unwrap();
    let ds = read_matrix(&p).unwrap();
    assert_eq!((ds.n_rows, ds.n_features), (2, 2));
    assert_eq!(ds.data, vec![1.0, 2.0, 3.0, 4.0]);

    let p = dir.path().join("only_header.csv");
    fs::write(&p, "a,b\n\n").unwrap();
    assert!(matches!(read_matrix(&p), Err(Error::EmptyData { .. })));
    let p = dir.path().join("nothing.csv");
    fs::write(&p, "").unwrap();
    assert!(matches!(read_matrix(&p), Err(Error::EmptyData { .. })));
}

#[test]
fn csv_errors_name_the_place() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ragged.csv");
    fs::write(&p, "x,y\n1,2\n\n3,4,5\n").unwrap();
    let e = read_matrix(&p).unwrap_err();
    assert!(
        matches!(&e, Error::Format { reason, .. } if reason.contains("line 4")),
        "{e}"
    );

    let p = dir.path().join("nan.csv");
    fs::write(&p, "a,b\n1,2\n3,NaN\n").unwrap();
    let e = read_matrix(&p).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NonFiniteInFile {
                line: Some(3),
                row: 2,
                col: 2,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("nan.csv: line 3, field 2: NaN"),
        "{e}"
    );
    let p = dir.path().join("inf.csv");
    fs::write(&p, "1,2\n-inf,0\n").unwrap();
    assert!(matches!(
        read_matrix(&p),
        Err(Error::NonFiniteInFile {
            line: Some(2),
            row: 2,
            col: 1,
            ..
        })
    ));

    let p = dir.path().join("word.csv");
    fs::write(&p, "1,2\n3,four\n").unwrap();
    let e = read_matrix(&p).unwrap_err();
    assert!(
        matches!(&e, Error::Format { reason, .. } if reason.contains("line 2, field 2")),
        "{e}"
    );
}

#[test]
fn labels_csv() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("y.csv");
    fs::write(&p, "label\n0\n2\n\n1\n").unwrap();
    assert_eq!(read_labels(&p).unwrap(), vec![0, 2, 1]);
    fs::write(&p, "0\n-1\n").unwrap();
    let e = read_labels(&p).unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
    fs::write(&p, "0,1\n").unwrap();
    assert!(matches!(read_labels(&p), Err(Error::Format { .. })));
    fs::write(&p, "\n").unwrap();
    assert!(matches!(read_labels(&p), Err(Error::EmptyData { .. })));
}

#[test]
fn bad_paths() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.npy");
    let e = read_matrix(&missing).unwrap_err();
    assert!(
        matches!(&e, Error::Io { path, .. } if path == &missing),
        "{e}"
    );
    let e = read_matrix(&dir.path().join("x.txt")).unwrap_err();
    assert!(matches!(e, Error::Format { .. }), "{e}");
    let e = write_string(&dir.path().join("no/such/dir/out.txt"), "x").unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
}

#[test]
fn atomic_writes_leave_no_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("report.json");
    write_string(&p, "old").unwrap();
    write_string(&p, "new").unwrap();
    assert_eq!(fs::read_to_string(&p).unwrap(), "new");
    write_npy_f32(&dir.path().join("c.npy"), &[1.0], &[1, 1]).unwrap();
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["c.npy", "report.json"]);

    // Renaming over a directory fails: error with the path, nothing left behind.
    let blocked = dir.path().join("blocked");
    fs::create_dir(&blocked).unwrap();
    fs::write(blocked.join("inside"), "keep").unwrap();
    let e = write_string(&blocked, "x").unwrap_err();
    assert!(
        matches!(&e, Error::Io { path, .. } if path == &blocked),
        "{e}"
    );
    assert_eq!(fs::read_to_string(blocked.join("inside")).unwrap(), "keep");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 3);

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }
}

#[test]
fn native_f4_files_are_read_in_pieces_and_the_rest_read_whole() {
    use crate::source::RowSource;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.npy");
    let data: Vec<f32> = (0..3 * 1000).map(|v| (v % 17) as f32 - 8.5).collect();
    write_npy_f32(&p, &data, &[1000, 3]).unwrap();
    let rows = NpyRows::open(&p).unwrap();
    assert_eq!(rows.shape(), (1000, 3));
    assert_eq!(rows.read_all().unwrap(), data);
    assert_eq!(
        rows.gather(&[999, 0]).unwrap(),
        [&data[2997..], &data[..3]].concat()
    );
    let mut seen = Vec::new();
    rows.visit_rows(333, &mut |first, r| {
        assert_eq!(&data[first * 3..first * 3 + r.len()], r);
        seen.push(first);
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, vec![0, 333, 666, 999]);
    let input = open_matrix(&p).unwrap();
    assert!(matches!(input, InputMatrix::File(_)));
    assert!(input.in_memory().unwrap().is_none());
    assert_eq!(input.values().unwrap().as_ref(), &data[..]);

    // 1-D is N x 1; f8 is read whole and kept in f64; Fortran order is refused.
    let p1 = dir.path().join("v.npy");
    write_npy_f32(&p1, &data[..10], &[10]).unwrap();
    assert_eq!(NpyRows::open(&p1).unwrap().shape(), (10, 1));
    let p8 = dir.path().join("x8.npy");
    let wide: Vec<f64> = data.iter().map(|&v| v as f64).collect();
    write_npy(&p8, &wide, &[1000, 3], Order::C);
    assert!(matches!(NpyRows::open(&p8), Err(Error::Format { .. })));
    let read = open_matrix(&p8).unwrap();
    assert!(matches!(read, InputMatrix::Read64(_)));
    assert_eq!(read.wide().unwrap().unwrap().as_slice(), &wide[..]);
    assert!(read.in_memory().unwrap().is_none());
    assert_eq!(read.values().unwrap().as_ref(), &data[..]);
    assert_eq!(RowSource::f64_rows(&read).unwrap().as_ref(), &wide[..]);
    assert_eq!(read.shape(), (1000, 3));
    // f64 values beyond f32 are kept (the fits centre them); a NaN is refused with its place.
    let big = dir.path().join("big.npy");
    write_npy(&big, &[1e39f64, 1.0, 1e39 + 1e24, 2.0], &[2, 2], Order::C);
    assert_eq!(
        open_matrix(&big).unwrap().wide().unwrap().unwrap().row(1)[0],
        1e39 + 1e24
    );
    let nan = dir.path().join("nan.npy");
    write_npy(&nan, &[1.0f64, 1.0, f64::NAN, 2.0], &[2, 2], Order::C);
    assert!(matches!(
        open_matrix(&nan),
        Err(Error::NonFiniteInFile { row: 2, col: 1, .. })
    ));
    let pf = dir.path().join("xf.npy");
    write_npy(&pf, &data, &[1000, 3], Order::Fortran);
    assert!(matches!(open_matrix(&pf), Err(Error::Format { .. })));

    // Values are checked as they are read (placed from 1), by every way of reading them;
    // opening reads the header only. A short file is refused at once.
    let mut bad = data.clone();
    bad[3 * 500 + 1] = f32::NAN;
    bad[3 * 700] = f32::INFINITY;
    let pn = dir.path().join("nan.npy");
    write_npy_f32(&pn, &bad, &[1000, 3]).unwrap();
    let rows = NpyRows::open(&pn).unwrap();
    let at_501_2 = |e: Error| {
        assert!(
            matches!(
                e,
                Error::NonFiniteInFile {
                    row: 501,
                    col: 2,
                    ..
                }
            ),
            "{e}"
        )
    };
    at_501_2(rows.read_all().unwrap_err());
    at_501_2(rows.gather(&[3, 500]).unwrap_err());
    for piece in [1, 7, 1000] {
        at_501_2(rows.visit_rows(piece, &mut |_, _| Ok(())).unwrap_err());
    }
    assert_eq!(
        rows.gather(&[3, 499]).unwrap(),
        [&data[9..12], &data[1497..1500]].concat()
    );
    let bytes = fs::read(&p).unwrap();
    let pt = dir.path().join("short.npy");
    fs::write(&pt, &bytes[..bytes.len() - 4]).unwrap();
    assert!(open_matrix(&pt).is_err());
    let pe = dir.path().join("empty.npy");
    write_npy_f32(&pe, &[], &[0, 3]).unwrap();
    assert!(matches!(NpyRows::open(&pe), Err(Error::EmptyData { .. })));
    // No rows but no columns either: the columns are named first.
    let pc = dir.path().join("cols.npy");
    write_npy_f32(&pc, &[], &[5, 0]).unwrap();
    let e = open_matrix(&pc).unwrap_err();
    assert!(
        matches!(
            e,
            Error::EmptyData {
                missing: "columns",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_file_cut_short_while_it_is_read_is_an_error_not_a_signal() {
    use crate::source::RowSource;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.npy");
    let data: Vec<f32> = (0..4 * 5000).map(|v| v as f32).collect();
    write_npy_f32(&p, &data, &[5000, 4]).unwrap();
    let rows = NpyRows::open(&p).unwrap();
    // Another program truncates the file after it was opened and checked.
    let keep = fs::metadata(&p).unwrap().len() / 2;
    fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(keep)
        .unwrap();
    let shrank = |e: Error| {
        assert!(
            matches!(&e, Error::Format { path, reason } if path == &p && reason.contains("shrank")),
            "{e}"
        );
    };
    // The first rows are still there; the pass fails at the first piece past the new end.
    let mut pieces = 0;
    shrank(
        rows.visit_rows(1000, &mut |_, _| {
            pieces += 1;
            Ok(())
        })
        .unwrap_err(),
    );
    assert!((1..5).contains(&pieces), "{pieces}");
    shrank(rows.gather(&[0, 4999]).unwrap_err());
    shrank(rows.read_all().unwrap_err());
    assert_eq!(rows.gather(&[1]).unwrap(), &data[4..8]);
}

#[test]
fn directories_devices_and_pipes() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("d.npy");
    fs::create_dir(&sub).unwrap();
    for e in [
        read_matrix(&sub).unwrap_err(),
        open_matrix(&sub).unwrap_err(),
        read_labels(&sub).unwrap_err(),
    ] {
        assert!(e.to_string().contains("is a directory"), "{e}");
    }
    #[cfg(unix)]
    {
        // Endless inputs fail at once: NUL bytes (/dev/zero) and random bytes.
        for (device, name) in [("/dev/zero", "z"), ("/dev/urandom", "u")] {
            for ext in ["csv", "npy"] {
                let link = dir.path().join(format!("{name}.{ext}"));
                std::os::unix::fs::symlink(device, &link).unwrap();
                assert!(matches!(read_matrix(&link), Err(Error::Format { .. })));
                assert!(matches!(open_matrix(&link), Err(Error::Format { .. })));
                assert!(matches!(read_labels(&link), Err(Error::Format { .. })));
            }
        }
        // A pipe is read as a stream.
        let fifo = dir.path().join("p.csv");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::write(fifo, "a,b\n1,2\n3,4\n").unwrap())
        };
        let m = read_matrix(&fifo).unwrap();
        writer.join().unwrap();
        assert_eq!(
            (m.n_rows, m.n_features, m.data),
            (2, 2, vec![1.0, 2.0, 3.0, 4.0])
        );
    }
}

#[test]
fn csv_headers_hold_no_numbers_and_missing_values_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.csv");
    let body: String = (0..40)
        .map(|i| format!("{i},{},{}\n", i + 1, i + 2))
        .collect();
    // The cases: a first line with a number in it is data, not a header.
    for (first, field) in [
        ("1,NA,3", "field 2"),
        ("1,,3", "field 2"),
        ("x,2,y", "field 1"),
    ] {
        fs::write(&p, format!("{first}\n{body}")).unwrap();
        let e = read_matrix(&p).unwrap_err();
        let text = e.to_string();
        assert!(text.contains(&format!("line 1, {field}")), "{first}: {e}");
        assert!(text.contains("header"), "{first}: {e}");
    }
    // A missing value further down names its line.
    fs::write(&p, format!("x,y,z\n{body}4,,5\n")).unwrap();
    let e = read_matrix(&p).unwrap_err();
    assert!(e.to_string().contains("line 42, field 2 is empty"), "{e}");
    fs::write(&p, format!("{body}4,NA,5\n")).unwrap();
    let e = read_matrix(&p).unwrap_err();
    assert!(
        e.to_string()
            .contains("line 41, field 2: \"NA\" marks a missing value"),
        "{e}"
    );
    // A real header keeps every data line.
    fs::write(&p, format!("x,y,z\n{body}")).unwrap();
    assert_eq!(read_matrix(&p).unwrap().n_rows, 40);
    // Binary data and absurd fields end the reading at once.
    fs::write(&p, b"1,2\n3,\x004\n").unwrap();
    let e = read_matrix(&p).unwrap_err();
    assert!(e.to_string().contains("line 2: a NUL byte"), "{e}");
    fs::write(&p, "7".repeat(MAX_FIELD_BYTES + 1)).unwrap();
    let e = read_matrix(&p).unwrap_err();
    assert!(e.to_string().contains("longer than"), "{e}");
    fs::write(&p, b"1,2\n\xff\xfe,3\n").unwrap();
    let e = read_matrix(&p).unwrap_err();
    assert!(e.to_string().contains("line 2: not UTF-8"), "{e}");
}

#[test]
fn output_sets_write_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.npy"), dir.path().join("b.csv"));
    fs::write(&a, "old a").unwrap();
    // Dropped before the commit: nothing new, nothing changed, no temporary file.
    {
        let mut set = OutputSet::new();
        set.labels(&a, &[1, 2]).unwrap();
        set.matrix(&b, &[1.0, 2.0], 1, 2).unwrap();
        assert_eq!(set.targets().count(), 2);
    }
    assert_eq!(fs::read_to_string(&a).unwrap(), "old a");
    assert!(!b.exists());
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    // A rename that fails in the commit puts back what was renamed before it.
    let long = dir.path().join(format!("{}.npy", "n".repeat(300)));
    let mut set = OutputSet::new();
    set.labels(&a, &[1, 2]).unwrap();
    set.matrix(&b, &[1.0, 2.0], 1, 2).unwrap();
    set.labels(&long, &[3]).unwrap();
    let e = set.commit().unwrap_err();
    assert!(matches!(&e, Error::Io { path, .. } if path == &long), "{e}");
    assert_eq!(fs::read_to_string(&a).unwrap(), "old a");
    assert!(!b.exists());
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        1,
        "backups and temps removed"
    );
    // Committed: both written.
    let mut set = OutputSet::new();
    set.labels(&a, &[1, 2]).unwrap();
    set.matrix(&b, &[1.0, 2.0], 1, 2).unwrap();
    set.commit().unwrap();
    assert_eq!(read_labels(&a).unwrap(), vec![1, 2]);
    assert_eq!(read_matrix(&b).unwrap().data, vec![1.0, 2.0]);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    // A missing directory is named, never the temporary file's name.
    let e = write_labels(&dir.path().join("nodir/l.npy"), &[1]).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("nodir") && !text.contains("nodir/.tmp"),
        "{text}"
    );
    assert!(text.contains("No such file"), "{text}");
}

#[test]
fn csv_outputs_read_back_bitwise_and_the_extension_picks_the_format() {
    let dir = tempfile::tempdir().unwrap();
    // Values of every magnitude f32 has, signs, and ones with no short decimal form.
    let mut values: Vec<f32> = (0..60)
        .map(|i| {
            let u = crate::datasets::uniform(1, 1, i)[0];
            (u - 0.5) * 10f32.powi(i as i32 % 70 - 35)
        })
        .collect();
    values.extend([0.1, -0.0, 1.0 / 3.0, f32::MAX, f32::MIN_POSITIVE, 1e-45]);
    let (n, cols) = (11, 6);
    for name in ["m.csv", "m.CSV", "m.npy"] {
        let path = dir.path().join(name);
        write_matrix(&path, &values, n, cols).unwrap();
        let back = read_matrix(&path).unwrap();
        assert_eq!((back.n_rows, back.n_features), (n, cols), "{name}");
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back.data), bits(&values), "{name}");
    }
    let text = fs::read_to_string(dir.path().join("m.csv")).unwrap();
    assert_eq!(text.lines().count(), n);
    assert!(text.lines().all(|l| l.split(',').count() == cols), "{text}");

    let labels: Vec<u32> = vec![0, 3, 1, 4_000_000_000, 2];
    for name in ["y.csv", "y.npy"] {
        let path = dir.path().join(name);
        write_labels(&path, &labels).unwrap();
        assert_eq!(read_labels(&path).unwrap(), labels, "{name}");
    }
    assert_eq!(
        fs::read_to_string(dir.path().join("y.csv")).unwrap(),
        "0\n3\n1\n4000000000\n2\n"
    );

    for bad in ["z.txt", "z", "z.npz"] {
        let path = dir.path().join(bad);
        assert!(!is_output_path(&path), "{bad}");
        assert!(matches!(
            write_labels(&path, &labels),
            Err(Error::Format { .. })
        ));
        assert!(matches!(
            write_matrix(&path, &values, n, cols),
            Err(Error::Format { .. })
        ));
        assert!(!path.exists());
    }
    assert!(matches!(
        write_matrix(&dir.path().join("w.csv"), &values, n, cols + 1),
        Err(Error::InvalidParameter { .. })
    ));
}
