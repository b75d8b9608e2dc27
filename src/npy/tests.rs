//! The `.npy` reader on crafted files: every dtype and byte order, corrupt shapes and
//! lengths, strict headers, empty shapes, non-finite values and labels.

use std::path::Path;

use super::header::Dtype;
use super::*;

/// A `.npy` file of `descr` and `shape` (Python text) followed by `data`.
pub(crate) fn npy_bytes(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
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

fn matrix(bytes: &[u8], known_len: bool) -> Result<Dataset> {
    let len = known_len.then_some(bytes.len() as u64);
    npy_matrix_from_reader(bytes, len, Path::new("t.npy"))
}

#[test]
fn every_dtype_and_byte_order_decodes() {
    let cases: [(&str, Vec<u8>, f32); 8] = [
        ("<f4", 1.5f32.to_le_bytes().to_vec(), 1.5),
        (">f4", 1.5f32.to_be_bytes().to_vec(), 1.5),
        (">f8", (-2.25f64).to_be_bytes().to_vec(), -2.25),
        ("|i1", vec![0xff], -1.0),
        ("<i2", (-300i16).to_le_bytes().to_vec(), -300.0),
        (">u2", 65535u16.to_be_bytes().to_vec(), 65535.0),
        ("<i8", (-7i64).to_le_bytes().to_vec(), -7.0),
        ("|u1", vec![200], 200.0),
    ];
    for (descr, bytes, want) in cases {
        for known in [true, false] {
            let m = matrix(&npy_bytes(descr, "(1,)", &bytes), known).unwrap();
            assert_eq!(m.data, vec![want], "{descr}");
        }
    }
}

#[test]
fn corrupt_shapes_and_lengths_are_refused_for_every_dtype() {
    // The case: rows x columns wraps past 2^64 for an 8-byte dtype.
    let data = vec![0u8; 100 * 8];
    let shape = format!("({}, 2)", (1u64 << 63) + 50);
    for descr in ["<f8", ">f4", "|i1", "<u2"] {
        for known in [true, false] {
            let e = matrix(&npy_bytes(descr, &shape, &data), known).unwrap_err();
            assert!(
                e.to_string().contains("2^64") || e.to_string().contains("too large"),
                "{descr}: {e}"
            );
        }
        // A plain mismatch: 3 x 2 promised, data for 50 values or for 5.
        for held in [50usize, 5] {
            let size = Dtype::parse(descr).unwrap().size;
            let bytes = npy_bytes(descr, "(3, 2)", &vec![0u8; held * size]);
            for known in [true, false] {
                let e = matrix(&bytes, known).unwrap_err();
                assert!(matches!(e, Error::Format { .. }), "{descr} {held}: {e}");
            }
        }
    }
}

#[test]
fn headers_are_parsed_strictly() {
    let f4 = 1.0f32.to_le_bytes();
    let good = npy_bytes("<f4", "(1, 1)", &f4);
    assert!(matrix(&good, true).is_ok());
    let bad_headers = [
        "{'descr': '<f4', 'fortran_order': False}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), 'extra': 1}",
        "{'descr': '<f4', 'fortran_order': 0, 'shape': (1, 1)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 1)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, 1)}",
        "{'descr': '<U4', 'fortran_order': False, 'shape': (1, 1)}",
        "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1, 1)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1)} junk",
        "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1, 1)}",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        "",
    ];
    for text in bad_headers {
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((text.len() as u16).to_le_bytes());
        bytes.extend(text.as_bytes());
        bytes.extend(f4);
        let e = matrix(&bytes, true).unwrap_err();
        assert!(matches!(e, Error::Format { .. }), "{text}: {e}");
    }
    // A header length past the bound is refused before anything is allocated.
    let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
    bytes.extend(u32::MAX.to_le_bytes());
    let e = matrix(&bytes, false).unwrap_err();
    assert!(e.to_string().contains("at most"), "{e}");
    // Not a .npy file at all, and one cut inside its header.
    assert!(matrix(&[0u8; 64], false).is_err());
    assert!(matrix(&good[..20], false).is_err());
}

#[test]
fn empty_shapes_name_what_is_missing() {
    let e = matrix(&npy_bytes("<f4", "(5, 0)", &[]), true).unwrap_err();
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
    let e = matrix(&npy_bytes("<f4", "(0, 5)", &[]), true).unwrap_err();
    assert!(
        matches!(
            e,
            Error::EmptyData {
                missing: "rows",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn non_finite_values_are_placed_from_one() {
    let mut data = Vec::new();
    for v in [1.0f64, 2.0, 3.0, f64::NAN] {
        data.extend(v.to_le_bytes());
    }
    let e = matrix(&npy_bytes("<f8", "(2, 2)", &data), true).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NonFiniteInFile {
                row: 2,
                col: 2,
                line: None,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().starts_with("t.npy: row 2, column 2: NaN"),
        "{e}"
    );
}

#[test]
fn labels_must_be_non_negative_integers() {
    let labels = |descr: &str, shape: &str, data: &[u8]| {
        let bytes = npy_bytes(descr, shape, data);
        npy_labels_from_reader(&bytes[..], Some(bytes.len() as u64), Path::new("y.npy"))
    };
    assert_eq!(labels("|u1", "(3,)", &[2, 0, 1]).unwrap(), vec![2, 0, 1]);
    assert_eq!(labels("|i1", "(2, 1)", &[1, 0]).unwrap(), vec![1, 0]);
    let e = labels("|i1", "(2,)", &[1, 0xff]).unwrap_err();
    assert!(e.to_string().contains("row 2: label -1"), "{e}");
    assert!(labels("<f4", "(1,)", &[0; 4]).is_err());
    assert!(labels("|u1", "(2, 2)", &[0; 4]).is_err());
    assert!(matches!(
        labels("|u1", "(0,)", &[]),
        Err(Error::EmptyData { .. })
    ));
    assert!(labels("|u1", "(4,)", &[0; 3]).is_err());
}
