//! The CSV reader on arbitrary bytes: matrices and labels, never a panic, and whatever is
//! accepted is N x D finite values.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use wgpu_unsupervised::io::{read_labels_from, read_matrix_from, FileFormat};

fuzz_target!(|bytes: &[u8]| {
    if let Ok(m) = read_matrix_from(bytes, FileFormat::Csv, Path::new("fuzz.csv")) {
        assert_eq!(m.data.len(), m.n_rows * m.n_features);
        assert!(m.data.iter().all(|v| v.is_finite()));
    }
    let _ = read_labels_from(bytes, FileFormat::Csv, Path::new("fuzz.csv"));
});
