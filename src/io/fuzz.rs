//! Property-based fuzzing of the readers (proptest, a bounded number of cases per run, so it
//! is part of every `cargo test --features io`): the `.npy` and CSV readers and the model-file
//! parser, fed arbitrary bytes and mutations of valid files, must return a result or an error,
//! never panic, never allocate what the input does not back, and whatever they accept must be
//! consistent (N x D values, all finite). The same readers have cargo-fuzz targets in `fuzz/`
//! for open-ended runs (`cargo +nightly fuzz run npy`).

use std::path::Path;

use proptest::prelude::*;

use super::csv::write_csv_rows;
use super::{read_labels_from, read_matrix_from, Dataset, FileFormat};
use crate::model_file::Model;
use crate::npy::{npy_labels_from_reader, npy_matrix_from_reader};

/// Cases per property: enough to walk the header grammar, small enough for CI (well under a
/// second each).
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// What any accepted matrix must satisfy.
fn consistent(m: &Dataset) {
    assert!(m.n_rows > 0 && m.n_features > 0);
    assert_eq!(m.data.len(), m.n_rows * m.n_features);
    assert!(m.data.iter().all(|v| v.is_finite()));
}

/// Feeds `bytes` to every reader, as a stream and (for `.npy`) as a file of known length.
fn every_reader(bytes: &[u8]) {
    let name = Path::new("fuzz");
    for len in [None, Some(bytes.len() as u64)] {
        if let Ok(m) = npy_matrix_from_reader(bytes, len, name) {
            consistent(&m);
        }
        if let Ok(labels) = npy_labels_from_reader(bytes, len, name) {
            assert!(!labels.is_empty());
        }
    }
    if let Ok(m) = read_matrix_from(bytes, FileFormat::Csv, name) {
        consistent(&m);
    }
    if let Ok(labels) = read_labels_from(bytes, FileFormat::Csv, name) {
        assert!(!labels.is_empty());
    }
    let _ = Model::from_json_str(&String::from_utf8_lossy(bytes));
}

/// A `.npy` header dictionary from parts, padded as numpy pads it.
fn npy_file(version: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x93, b'N', b'U', b'M', b'P', b'Y', version, 0];
    let mut header = dict.to_string();
    let prefix = if version == 1 { 10 } else { 12 };
    while !(prefix + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    match version {
        1 => out.extend((header.len() as u16).to_le_bytes()),
        _ => out.extend((header.len() as u32).to_le_bytes()),
    }
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

/// Header pieces: plain and odd dtypes, shapes from empty to past 2^64 bytes.
fn dict() -> impl Strategy<Value = String> {
    let descr = prop::sample::select(vec![
        "<f4", ">f4", "<f8", ">f8", "|i1", "<i2", ">u2", "<i4", "<u4", "<i8", ">u8", "|u1", "<f2",
        "|b1", "<U3", "O", "f4", "=f8", "|f4", "<c8",
    ]);
    let dim = prop_oneof![
        0u64..6,
        Just(u64::MAX),
        Just(1u64 << 62),
        Just((1u64 << 63) + 50),
        any::<u64>(),
    ];
    let shape = prop::collection::vec(dim, 0..4);
    (descr, any::<bool>(), shape).prop_map(|(descr, fortran, shape)| {
        let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
        let shape = match dims.len() {
            1 => format!("({},)", dims[0]),
            _ => format!("({})", dims.join(", ")),
        };
        let order = if fortran { "True" } else { "False" };
        format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}")
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        every_reader(&bytes);
    }

    #[test]
    fn npy_headers_of_any_shape_and_dtype_are_read_or_refused(
        version in prop::sample::select(vec![1u8, 2, 3]),
        dict in dict(),
        data in prop::collection::vec(any::<u8>(), 0..160),
    ) {
        let bytes = npy_file(version, &dict, &data);
        every_reader(&bytes);
        // What is accepted holds exactly the values its data bytes hold.
        if let Ok(m) = npy_matrix_from_reader(&bytes[..], Some(bytes.len() as u64), Path::new("f")) {
            let size = data.len() / m.data.len();
            prop_assert!(data.len() % m.data.len() == 0 && [1, 2, 4, 8].contains(&size));
        }
    }

    #[test]
    fn mutated_valid_files_are_read_or_refused(
        rows in 1usize..6,
        cols in 1usize..5,
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let values: Vec<f32> = (0..rows * cols).map(|v| v as f32 - 3.5).collect();
        let mut npy = Vec::new();
        super::npy_f32(&mut npy, &values, &[rows as u64, cols as u64]).unwrap();
        let mut csv = Vec::new();
        write_csv_rows(&mut csv, &values, cols).unwrap();
        for file in [npy, csv] {
            // Unchanged, a valid file reads back exactly.
            let format = if file.starts_with(b"\x93NUMPY") { FileFormat::Npy } else { FileFormat::Csv };
            let m = read_matrix_from(&file[..], format, Path::new("f")).unwrap();
            prop_assert_eq!(&m.data, &values);
            let mut bad = file.clone();
            for (at, byte) in &flips {
                let i = at.index(bad.len());
                bad[i] = *byte;
            }
            every_reader(&bad);
            every_reader(&file[..cut.index(file.len())]);
        }
    }

    #[test]
    fn csv_round_trips_every_finite_f32(
        cols in 1usize..6,
        values in prop::collection::vec(any::<f32>().prop_filter("finite", |v| v.is_finite()), 1..60),
    ) {
        let rows = values.len() / cols;
        prop_assume!(rows > 0);
        let values = &values[..rows * cols];
        let mut text = Vec::new();
        write_csv_rows(&mut text, values, cols).unwrap();
        let m = read_matrix_from(&text[..], FileFormat::Csv, Path::new("f")).unwrap();
        prop_assert_eq!((m.n_rows, m.n_features), (rows, cols));
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&m.data), bits(values));
    }

    #[test]
    fn model_files_with_edited_bytes_are_read_or_refused(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let model = crate::KMeansModel::from_centroids(vec![0.0, 1.0, 5.0, 6.0], 2).unwrap();
        let text = model.to_json_string();
        let mut bytes = text.into_bytes();
        for (at, byte) in &flips {
            let i = at.index(bytes.len());
            bytes[i] = *byte;
        }
        if let Ok(Model::KMeans(m)) = Model::from_json_str(&String::from_utf8_lossy(&bytes)) {
            prop_assert!(m.validate().is_ok());
        }
    }
}
